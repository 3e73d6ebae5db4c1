"""Every field fidelity compares is really seen: a divergence planted in the fake for that field alone is named.

For each field of :data:`ctxsim.lab._projection.FIELDS` and each tracked frame key of
:data:`ctxsim.wire.TRACKED`, a *planter* below changes that one thing in the frames the in-process fake
writes (through the same tap the fidelity run uses), a captured session is replayed with it, and the comparison
with the capture must report that field by name. A field added to the projection without a planter here fails
:func:`test_every_projected_field_has_a_planted_divergence`. No CLI is needed: the captures ship in the package.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from claude_agent_sdk._errors import MessageParseError  # the parser's own error (not exported)

from ctxsim.lab._fidelity import play_inprocess
from ctxsim.lab._projection import CATEGORIES, FIELDS, Difference, compare, compare_keys, compare_raw, field_pattern
from ctxsim.lab._record import Capture, captured_versions, load_captures
from ctxsim.wire import RAW_FIELDS, TRACKED, frame_kind

Frame = dict[str, Any]
Planter = Callable[[Frame], Frame]

NEWEST = captured_versions()[-1]
CAPTURES = {c.name: c for c in load_captures() if c.cli_version == NEWEST}


def _on(kind: str, change: Callable[[Frame], None]) -> Planter:
    """A planter that applies ``change`` to a copy of every frame of ``kind`` (others pass unchanged)."""

    def plant(frame: Frame) -> Frame:
        if frame_kind(frame) != kind and not (kind == "result" and frame.get("type") == "result"):
            return frame
        changed = copy.deepcopy(frame)
        change(changed)
        return changed

    return plant


def _control(subtype: str, change: Callable[[dict[str, Any]], None]) -> Planter:
    """A planter for the CLI's control requests of ``subtype`` (hooks, permission prompts): ``change`` gets the
    request body."""

    def plant(frame: Frame) -> Frame:
        request = frame.get("request")
        if frame.get("type") != "control_request" or not isinstance(request, dict):
            return frame
        if request.get("subtype") != subtype:
            return frame
        changed = copy.deepcopy(frame)
        change(changed["request"])
        return changed

    return plant


def _context_usage(change: Callable[[dict[str, Any]], None]) -> Planter:
    """A planter for the answers to ``get_context_usage``."""

    def plant(frame: Frame) -> Frame:
        body = (frame.get("response") or {}).get("response") if frame.get("type") == "control_response" else None
        if not isinstance(body, dict) or "totalTokens" not in body:
            return frame
        changed = copy.deepcopy(frame)
        change(changed["response"]["response"])
        return changed

    return plant


def _add(path: str, amount: int | float) -> Callable[[Frame], None]:
    def change(frame: Frame) -> None:
        *parents, key = path.split(".")
        target = frame
        for part in parents:
            target = target[part]
        target[key] = (target.get(key) or 0) + amount

    return change


def _set(path: str, value: Any) -> Callable[[Frame], None]:
    def change(frame: Frame) -> None:
        *parents, key = path.split(".")
        target = frame
        for part in parents:
            target = target[part]
        target[key] = value

    return change


_counter = iter(range(10**9))


def _fresh_session(frame: Frame) -> None:
    frame["session_id"] = f"planted-{next(_counter)}"


def _delete(path: str) -> Callable[[Frame], None]:
    """Remove the key at ``path`` (``*``: under every entry of a dict; ``name[]``: under every item of a list)."""

    def remove(target: Any, parts: list[str]) -> None:
        head, *rest = parts
        if not isinstance(target, dict):
            return
        if head == "*" and not rest:
            target.clear()  # ``modelUsage.*``: no model left
            return
        if head == "*":
            children: list[Any] = list(target.values())
        elif head.endswith("[]"):
            children = list(target.get(head[:-2]) or [])
        elif not rest:
            target.pop(head, None)
            return
        else:
            children = [target.get(head)]
        for child in children:
            if rest:
                remove(child, rest)

    return lambda frame: remove(frame, path.split("."))


def _model_usage(key: str) -> Callable[[Frame], None]:
    def change(frame: Frame) -> None:
        for usage in frame["modelUsage"].values():
            usage[key] = usage.get(key, 0) + 1000

    return change


def _block_to_thinking(frame: Frame) -> None:
    frame["message"]["content"] = [{"type": "thinking", "thinking": "planted", "signature": "planted"}]


def _flip_error(frame: Frame) -> None:
    for block in frame["message"]["content"]:
        block["is_error"] = not block.get("is_error")


def _error_text(frame: Frame) -> None:
    for block in frame["message"]["content"]:
        if block.get("is_error"):
            block["content"] = "planted error text"


def _tool_result_id(frame: Frame) -> None:
    for block in frame["message"]["content"]:
        block["tool_use_id"] = "toolu_planted"


def _flip_trigger(frame: Frame) -> None:
    meta = frame["compact_metadata"]
    meta["trigger"] = "auto" if meta["trigger"] == "manual" else "manual"


def _category(ident: str) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        for category in body["categories"]:
            if category["id"] == ident:
                category["tokens"] += 1000

    return change


def _api_usage(key: str) -> Callable[[dict[str, Any]], None]:
    def change(body: dict[str, Any]) -> None:
        if body.get("apiUsage"):
            body["apiUsage"][key] += 1000

    return change


def _hook_input(key: str, value: Any) -> Planter:
    return _control("hook_callback", lambda request: request["input"].__setitem__(key, value))


USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")

PLANTED: dict[tuple[str, str], tuple[str, Planter]] = {
    # (kind, field): (the captured session it shows in, what is planted)
    ("assistant", "message_id"): ("several-queries", _on("assistant", _set("message.id", "msg_planted"))),
    ("assistant", "parent_tool_use_id"): ("several-queries", _on("assistant", _set("parent_tool_use_id", "toolu_x"))),
    ("assistant", "model"): ("several-queries", _on("assistant", _set("message.model", "claude-planted"))),
    # The first divergence issue 18 names: every per-block message carries the call's stop_reason.
    ("assistant", "stop_reason"): ("several-queries", _on("assistant", _set("message.stop_reason", "end_turn"))),
    ("assistant", "error"): ("several-queries", _on("assistant", _set("error", "rate_limit"))),
    ("assistant", "uuid"): ("several-queries", _on("assistant", _set("uuid", "planted-uuid"))),
    ("assistant", "session_id"): ("several-queries", _on("assistant", _fresh_session)),
    **{("assistant", f"usage.{k}"): ("several-queries", _on("assistant", _add(f"message.usage.{k}", 1000)))
       for k in USAGE},
    ("assistant", "blocks"): ("several-queries", _on("assistant", _block_to_thinking)),
    ("user", "parent_tool_use_id"): ("several-queries", _on("user", _set("parent_tool_use_id", "toolu_x"))),
    ("user", "tool_results"): ("several-queries", _on("user", _tool_result_id)),
    ("user", "is_error"): ("several-queries", _on("user", _flip_error)),
    ("user", "error_texts"): ("hook-deny", _on("user", _error_text)),
    ("result", "subtype"): ("several-queries", _on("result", _set("subtype", "error_during_execution"))),
    ("result", "is_error"): ("several-queries", _on("result", _set("is_error", True))),
    ("result", "session_id"): ("several-queries", _on("result", _fresh_session)),
    **{("result", f"usage.{k}"): ("several-queries", _on("result", _add(f"usage.{k}", 1000))) for k in USAGE},
    ("result", "total_cost_usd"): ("several-queries", _on("result", _add("total_cost_usd", 1.0))),
    **{("result", f"model_usage[*].{k}"): ("several-queries", _on("result", _model_usage(k)))
       for k in ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "contextWindow",
                 "maxOutputTokens")},
    ("result", "num_turns"): ("parallel-tools", _on("result", _add("num_turns", 1))),
    ("result", "stop_reason"): ("several-queries", _on("result", _set("stop_reason", "max_tokens"))),
    ("result", "terminal_reason"): ("compact", _on("result", _set("terminal_reason", "completed"))),
    ("system/init", "session_id"): ("several-queries", _on("system/init", _fresh_session)),
    ("system/compact_boundary", "trigger"): ("compact", _on("system/compact_boundary", _flip_trigger)),
    ("system/compact_boundary", "pre_tokens"): ("compact", _on("system/compact_boundary",
                                                               _add("compact_metadata.pre_tokens", 1000))),
    ("system/compact_boundary", "post_tokens"): ("compact", _on("system/compact_boundary",
                                                                _add("compact_metadata.post_tokens", 1000))),
    ("system/compact_boundary", "cumulative_dropped_tokens"): ("compact", _on(
        "system/compact_boundary", _add("compact_metadata.cumulative_dropped_tokens", 1000))),
    ("system/compact_boundary", "preserved_messages"): ("compact", _on(
        "system/compact_boundary", _delete("compact_metadata.preserved_messages"))),
    ("system/compact_boundary", "logical_parent"): ("compact", _on(
        "system/compact_boundary", _set("logical_parent_uuid", "planted-uuid"))),
    ("stream_event/message_start", "message_id"): ("partial-messages", _on(
        "stream_event/message_start", _set("event.message.id", "msg_planted"))),
    ("stream_event/message_start", "parent_tool_use_id"): ("partial-messages", _on(
        "stream_event/message_start", _set("parent_tool_use_id", "toolu_x"))),
    **{("stream_event/message_start", f"usage.{k}"): ("partial-messages", _on(
        "stream_event/message_start", _add(f"event.message.usage.{k}", 1000))) for k in USAGE},
    ("stream_event/message_delta", "parent_tool_use_id"): ("partial-messages", _on(
        "stream_event/message_delta", _set("parent_tool_use_id", "toolu_x"))),
    ("stream_event/message_delta", "stop_reason"): ("partial-messages", _on(
        "stream_event/message_delta", _set("event.delta.stop_reason", "max_tokens"))),
    # The second divergence issue 18 names: message_delta's input count shifted by 777.
    **{("stream_event/message_delta", f"usage.{k}"): ("partial-messages", _on(
        "stream_event/message_delta", _add(f"event.usage.{k}", 777))) for k in USAGE},
    **{("context_usage", k): ("several-queries", _context_usage(_add(k, 1000)))
       for k in ("totalTokens", "maxTokens", "rawMaxTokens", "percentage", "autoCompactThreshold")},
    ("context_usage", "isAutoCompactEnabled"): ("several-queries", _context_usage(
        _set("isAutoCompactEnabled", False))),
    ("context_usage", "autocompactSource"): ("several-queries", _context_usage(_set("autocompactSource", "env"))),
    ("context_usage", "categories"): ("several-queries", _context_usage(
        lambda body: body["categories"].__setitem__(0, {**body["categories"][0], "kind": "planted"}))),
    **{("context_usage", f"category.{c}"): ("autocompact", _context_usage(_category(c))) for c in CATEGORIES},
    **{("context_usage", f"apiUsage.{k}"): ("several-queries", _context_usage(_api_usage(k))) for k in USAGE},
    ("hook", "event"): ("hook-deny", _hook_input("hook_event_name", "Planted")),
    ("hook", "keys"): ("hook-deny", _hook_input("planted_key", 1)),
    ("hook", "prompt"): ("hook-deny", _hook_input("prompt", "planted prompt")),
    ("hook", "tool_name"): ("hook-deny", _hook_input("tool_name", "Planted")),
    ("hook", "agent_type"): ("hook-deny", _hook_input("agent_type", "planted")),
    ("hook", "trigger"): ("compact", _hook_input("trigger", "planted")),
    ("hook", "custom_instructions"): ("compact", _hook_input("custom_instructions", "planted")),
    ("hook", "stop_hook_active"): ("hook-deny", _hook_input("stop_hook_active", "planted")),
    ("hook", "last_assistant_message"): ("hook-deny", _hook_input("last_assistant_message", "planted")),
    ("hook", "tool_use_id"): ("hook-deny", _control("hook_callback", _set("tool_use_id", "toolu_planted"))),
    ("can_use_tool", "tool_name"): ("permissions", _control("can_use_tool", _set("tool_name", "Planted"))),
    ("can_use_tool", "tool_input"): ("permissions", _control("can_use_tool", _set("input", {"planted": 1}))),
    ("can_use_tool", "tool_use_id"): ("permissions", _control("can_use_tool", _set("tool_use_id", "toolu_x"))),
}
"""A planted divergence for every projected field, and the captured session where that field shows."""

PLANTED_KEYS: dict[tuple[str, str], str] = {
    ("result/success" if kind == "result" else kind, path): session for kind, paths in TRACKED.items()
    for path in paths
    for session in [{"system/compact_boundary": "compact", "stream_event/message_start": "partial-messages",
                     "stream_event/message_delta": "partial-messages", "conversation_reset": "clear",
                     "user": "hook-deny"}.get(kind, "several-queries")]
    if path != "type" and not (kind == "assistant" and path == "error")
}
"""Every tracked key of every tracked frame kind (results as ``result/success``; but ``type``, which names the kind,
and the assistant's ``error``, which the CLI writes only on an error), deleted from the fake's frames of that kind,
in a captured session whose frames carry it."""


def _replay(capture: Capture, edit: Planter) -> list[Difference]:
    played = anyio.run(lambda: play_inprocess(capture.session,
                                              include_partial_messages=capture.include_partial_messages,
                                              hooks=capture.hooks, edit=edit))
    return (compare(capture.steps, played.steps, initial=(capture.initial, played.initial))
            + compare_keys(capture.frame_keys, played.frame_keys) + compare_raw(capture.raw, played.raw))


def test_every_projected_field_has_a_planted_divergence() -> None:
    projected = {(kind, name) for kind, names in FIELDS.items() for name in names}
    assert projected == set(PLANTED), (f"fields without a planted divergence: {sorted(projected - set(PLANTED))}; "
                                       f"planted but not projected: {sorted(set(PLANTED) - projected)}")


def test_the_fake_unplanted_matches_the_newest_capture() -> None:
    """The control: with nothing planted, no tracked difference (so each test below sees only its own)."""
    for capture in CAPTURES.values():
        assert not [d for d in _replay(capture, lambda frame: frame) if d.tracked], capture.name


@pytest.mark.parametrize(("kind", "name"), sorted(PLANTED), ids=[f"{k}:{n}" for k, n in sorted(PLANTED)])
def test_a_planted_divergence_is_named(kind: str, name: str) -> None:
    session, plant = PLANTED[(kind, name)]
    differences = _replay(CAPTURES[session], plant)
    named = [d for d in differences if d.kind == kind and field_pattern(d.field) == name and d.tracked]
    assert named, (f"planting {name} on {kind} frames of {session!r} was not reported; differences seen: "
                   + "; ".join(map(str, differences[:8])))


@pytest.mark.parametrize(("kind", "path"), sorted(PLANTED_KEYS), ids=[f"{k}:{p}" for k, p in sorted(PLANTED_KEYS)])
def test_a_tracked_key_gone_from_the_fake_is_named(kind: str, path: str) -> None:
    """Removed from the fake's frames, a tracked key is a tracked difference; a key that names the frame's kind
    (``subtype``, ``event.type``) takes the kind with it; a key the SDK's own parser requires makes the play fail
    with the parser's error naming it (a CLI that dropped it fails every fidelity run outright)."""
    capture = CAPTURES[PLANTED_KEYS[(kind, path)]]
    assert path in capture.frame_keys.get(kind, ()), f"the CLI wrote no {path} on {kind} frames of {capture.name!r}"
    key = path.rsplit(".", 1)[-1].removesuffix("[]")
    try:
        differences = _replay(capture, _on(kind, _delete(path)))
    except MessageParseError as exc:
        assert f"'{key}'" in str(exc), exc
        return
    if path in ("subtype", "event.type"):
        assert any(d.kind == f"frames {kind}" and d.field == "(frame kind)" and d.tracked for d in differences)
        return
    assert any(d.kind == f"frames {kind}" and d.field == f"keys: {path}" and d.tracked for d in differences), (
        f"removing {path} from the fake's {kind} frames was not reported as a tracked key")


PLANTED_RAW: dict[tuple[str, str], Planter] = {
    ("assistant", "request_id"): _on("assistant", _set("request_id", "req_planted")),
}
"""A planted divergence for every raw-frame value compared (:data:`~ctxsim.wire.RAW_FIELDS`)."""


def test_every_raw_field_has_a_planted_divergence() -> None:
    assert {(kind, name) for kind, names in RAW_FIELDS.items() for name in names} == set(PLANTED_RAW)


@pytest.mark.parametrize(("kind", "name"), sorted(PLANTED_RAW), ids=[f"{k}:{n}" for k, n in sorted(PLANTED_RAW)])
def test_a_planted_raw_value_is_named(kind: str, name: str) -> None:
    differences = _replay(CAPTURES["several-queries"], PLANTED_RAW[(kind, name)])
    assert [d.field for d in differences if d.tracked] and all(
        d.kind == f"frames {kind}" and d.field == name for d in differences if d.tracked)


def test_an_untracked_key_is_drift_not_a_failure() -> None:
    differences = _replay(CAPTURES["several-queries"], _on("assistant", _set("ctxsim_planted", 1)))
    planted = [d for d in differences if d.field == "keys: ctxsim_planted"]
    assert planted and not any(d.tracked for d in planted)
    assert not [d for d in differences if d.tracked]
