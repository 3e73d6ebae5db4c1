"""The statusline payload as a fault makes Claude Code show it: :func:`apply_statusline` and :data:`PAYLOAD_FORMS`.

Claude Code computes the payload it pipes to a statusline command from the usage it wrote for the session's latest
main-chain call and from the model in force, so a fault of that usage or that model reaches the payload as Claude
Code would show it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ..faults import FaultPlan, ModelSwitch, WrongContextWindow, is_count, switch_moment
from ..wire import TranscriptRender
from ..world import display_name

__all__ = ["PAYLOAD_FORMS", "apply_statusline"]

PAYLOAD_FORMS = ("usage_iterations", "cache_read_drop", "uncached_gateway_usage", "nested_cache_creation",
                 "model_switch", "wrong_context_window")
"""The faults :func:`apply_statusline` gives the statusline payload a form of."""


def apply_statusline(plan: FaultPlan, transcript: TranscriptRender,
                     payloads: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The statusline payloads Claude Code pipes at the points of ``transcript`` (the plan's transcript form
    applied, :func:`ctxsim.faults.apply_transcript`), ``payloads[i]`` the payload at its point ``i``
    (:func:`ctxsim.wire.statusline_payloads`), with what ``plan`` changes in them; ``payloads`` itself is left as
    it was. A call the API reported over several inference iterations (``usage_iterations``): where the payload's
    ``current_usage`` is that call's (the latest main-chain row of the file in force), it is the row's top-level
    usage, the iterations' sum, as Claude Code adds it up (its own gauge inflates: Bugs in the wild B10), and the
    percentages follow. A cache miss (``cache_read_drop``) or a gateway's usage without cache fields
    (``uncached_gateway_usage``): ``current_usage`` is the row's split of the same prompt, a count the API left out
    shown as 0. A cache write given only in the nested breakdown (``nested_cache_creation``): ``current_usage`` is
    the row's top-level counts, its ``cache_creation_input_tokens`` 0, so Claude Code's own gauge reads low by the
    write (inferred from its 2.1.152 changelog, which fixed that count "reporting as 0": no capture holds such a
    payload; ``current_usage`` has no nested breakdown). A model switch (``model_switch``): from the switch on,
    ``model`` is the new one and ``context_window_size`` its window, the percentages of it (as a ``/model`` switch
    was recorded; one by ``set_model`` or an auto-update is inferred to show the same). A wrong window
    (``wrong_context_window``): ``context_window_size`` is the window reported, and the percentages are of it."""
    out = [copy.deepcopy(dict(p)) for p in payloads]
    if not set(PAYLOAD_FORMS) & set(plan.names):
        return out
    _with_usage_shown(transcript, out)
    for fault in plan.faults:
        if isinstance(fault, ModelSwitch):
            _with_model_switched(transcript, out, fault)
    for fault in plan.faults:
        if isinstance(fault, WrongContextWindow):
            _with_window_reported(out, fault.reported)
    return out


def _with_model_switched(transcript: TranscriptRender, payloads: list[dict[str, Any]], switch: ModelSwitch) -> None:
    """``payloads`` (edited in place) from ``switch``'s moment on (:func:`ctxsim.faults.switch_moment`; the
    transcript's points carry the window it switched to): its model the ``model`` ``id`` and ``display_name``,
    ``context_window_size`` that window, the percentages of it, ``current_usage`` as it was, as Claude Code shows a
    ``/model`` switch (its 2.1.332 REPL recording of one: the same 62,003 tokens 31% of 200,000, then 6% of
    1,000,000)."""
    from ..wire import context_window

    moment = switch_moment(transcript, switch.at)
    if moment is None:
        return
    for point, payload in zip(transcript.points, payloads):
        if point.written < moment:
            continue
        payload["model"] = {"id": switch.to_model, "display_name": display_name(switch.to_model)}
        shown = payload.get("context_window")
        if isinstance(shown, dict):
            current = shown.get("current_usage")
            redone = context_window(dict(current) if isinstance(current, dict) else None, point.observation.window)
            payload["context_window"] = {**shown, **{k: redone[k] for k in _WINDOW_KEYS}}


_WINDOW_KEYS = ("context_window_size", "used_percentage", "remaining_percentage")


def _with_window_reported(payloads: list[dict[str, Any]], reported: int | None) -> None:
    """``payloads`` (edited in place) with the ``context_window_size`` a wrong window makes Claude Code report
    (``reported``; None: the other of 200k and 1M), ``current_usage`` as it was, the percentages of that window
    (anthropics/claude-code#76751: 80% at 160,781 on a 1M session, then pegged at 100%)."""
    from ..wire import context_window

    for payload in payloads:
        shown = payload.get("context_window")
        if not isinstance(shown, dict) or not is_count(shown.get("context_window_size")):
            continue
        window = reported or (200_000 if shown["context_window_size"] >= 1_000_000 else 1_000_000)
        current = shown.get("current_usage")
        redone = context_window(dict(current) if isinstance(current, dict) else None, window)
        payload["context_window"] = {**shown, **{k: redone[k] for k in _WINDOW_KEYS}}


def _with_usage_shown(transcript: TranscriptRender, out: list[dict[str, Any]]) -> None:
    """``out`` (edited in place) with the ``current_usage`` Claude Code shows for the latest main-chain row of the
    file in force at each point (:func:`_as_shown`)."""
    from ..wire import context_window, exceeds_200k_tokens

    for point, payload in zip(transcript.points, out):
        shown = payload.get("context_window")
        current = shown.get("current_usage") if isinstance(shown, dict) else None
        file = transcript.files.get(point.transcript)
        if not isinstance(current, dict) or file is None:
            continue
        usage = _latest_main_usage(file.rows[:point.rows.get(file.path, 0)])
        copied = _as_shown(usage, current) if usage is not None else None
        if copied is None:
            continue
        assert isinstance(shown, dict)
        payload["context_window"] = context_window(copied, shown["context_window_size"])
        payload["exceeds_200k_tokens"] = exceeds_200k_tokens(copied)


def _as_shown(usage: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, int] | None:
    """The ``current_usage`` Claude Code shows for the call whose row has ``usage`` where the unfaulted payload
    shows ``current``, or None where the payload is not that call's or is as it was: a call over several iterations
    shows its top-level sum; a call whose usage splits the same prompt otherwise (a cache miss, a gateway without
    cache fields, a cache write only in the nested breakdown) shows the API's top-level split, a count the API left
    out as 0."""
    iterations = usage.get("iterations")
    steps = [i for i in iterations if isinstance(i, dict) and i.get("type") == "message"] if isinstance(
        iterations, list) else []
    if len(steps) >= 2:
        if any(current.get(k) != steps[-1].get(k) for k in _PROMPT_KEYS):
            return None
        return {k: usage[k] for k in ("input_tokens", "output_tokens", *_PROMPT_KEYS[1:])}
    copied = {k: usage.get(k, 0) for k in ("input_tokens", "output_tokens", *_PROMPT_KEYS[1:])}
    if not all(is_count(v) for v in copied.values()) or not all(is_count(current.get(k)) for k in _PROMPT_KEYS):
        return None
    nested = usage.get("cache_creation")
    written = sum(v for v in nested.values() if is_count(v)) if isinstance(nested, dict) and not copied[
        "cache_creation_input_tokens"] else 0  # a write only in the breakdown: the top level's 0 shown
    if sum(copied[k] for k in _PROMPT_KEYS) + written != sum(current[k] for k in _PROMPT_KEYS) or all(
            copied[k] == current[k] for k in _PROMPT_KEYS):
        return None
    return {**copied, "output_tokens": current.get("output_tokens", copied["output_tokens"])}


_PROMPT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _latest_main_usage(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The usage of the latest main-chain, non-synthetic ``assistant`` row of ``rows`` (None: none has one)."""
    for row in reversed(rows):
        message = row.get("message")
        if (row.get("type") == "assistant" and not row.get("isSidechain") and isinstance(message, dict)
                and message.get("model") != "<synthetic>" and isinstance(message.get("usage"), dict)):
            return dict(message["usage"])
    return None
