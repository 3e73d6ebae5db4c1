"""Likely causes: what a failing tracker's numbers are, named by the fields they fit.

A failure's ``likely cause`` column (``pytest --ctx-scenarios``, ``ctxsim run``, ``ctxsim fuzz``) says, at each
failing point:

- where the truth is not knowable: ``return None here`` and why (:func:`not_knowable`);
- for a statusline command, where Claude Code's own payload is wrong and the command shows what it says: that
  the payload is wrong there, its figure, the truth and what to read instead (:func:`payload_wrong`);
- for a gauge showing another quantity or dividing by another window: which (:attr:`ctxsim.check.Report.confusion`);
- else the formula the tracker's numbers are (:func:`ctxsim.check.diagnose`): every reading of the stream's usage
  fields (:func:`ctxsim.trackers.every_reading`: which message, which keys, summed or last, main chain or every
  message, what at a compaction, which window) is fitted against the tracker's estimates, and the one that gives
  them, the simplest of those that agree at the most points, is named in the user's words, with the catalogue
  entries that share it and what the stream cannot tell it from; a reading that gives only some of the failing
  numbers says how many.

``benchmarks/bench_causes.py`` measures how often a cause is named and how often it is right, over every catalogue
entry, every tracker mutant and every port of a real tracker (:mod:`ctxsim.tools.ports`), buggy and fixed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ._fit import Diagnosis, Readings, diagnose

if TYPE_CHECKING:
    from ..wire import Script
    from ._report import Report

__all__ = ["FEATURES", "explain", "features", "likely_causes", "not_knowable", "payload_wrong"]

FEATURES: Mapping[str, str] = {
    "compaction": "a compact_boundary",
    "subagent": "a subagent's call (parent_tool_use_id set)",
    "synthetic": "a made-up <synthetic> assistant message (an API error, an interrupt)",
    "several-calls": "more than one main-chain call",
    "per-block-rows": "a main-chain call written as several assistant messages (one per content block, or copies)",
    "cache-miss": "a main-chain call reading less from the cache than the one before it",
    "window-mismatch": "a result reporting another context window than the session's, or a model switch",
    "reset": "a new conversation (/clear, or a new session id)",
}
"""What a stream can show that a catalogued bug is about, by name (:attr:`ctxsim.trackers.catalogue.Entry.about`)."""

_WHY = {
    "reset": "a new conversation began and no call has shown its size yet",
    "compaction": "the compaction states no size the context can be read from",
    "call": "this call's usage cannot be read, and no other message of it tells its size",
    "subagent": "the main call before it could not be read",
    "result": "the main call before it could not be read",
}
"""Why a point of each kind may be not knowable, where its truth does not say (:attr:`ctxsim.world.Truth.why`)."""


def features(scripts: Iterable[Script], window: int) -> frozenset[str]:
    """The :data:`FEATURES` the frames of ``scripts`` show (``window``: the session's)."""
    out: set[str] = set()
    rows: dict[object, int] = {}
    models: set[object] = set()
    sessions: set[object] = set()
    last_read: int | None = None
    for script in scripts:
        for frame in script.frames:
            data = frame.data
            kind = data.get("type")
            if kind == "system" and data.get("subtype") == "compact_boundary":
                out.add("compaction")
            elif kind == "system" and data.get("subtype") == "init":
                sessions.add(data.get("session_id"))
            elif kind == "conversation_reset":
                out.add("reset")
            elif kind == "result":
                usage = data.get("modelUsage")
                windows = {v.get("contextWindow") for v in usage.values() if isinstance(v, dict)} if isinstance(
                    usage, dict) else set()
                if windows - {None, window}:
                    out.add("window-mismatch")
            elif kind == "assistant":
                message = data.get("message")
                if not isinstance(message, dict):
                    continue
                if data.get("parent_tool_use_id") is not None:
                    out.add("subagent")
                elif message.get("model") == "<synthetic>":
                    out.add("synthetic")
                else:
                    models.add(message.get("model"))
                    ident = message.get("id")
                    rows[ident] = rows.get(ident, 0) + 1
                    usage = message.get("usage")
                    read = usage.get("cache_read_input_tokens") if isinstance(usage, dict) else None
                    if type(read) is int:
                        if last_read is not None and read < last_read:
                            out.add("cache-miss")
                        last_read = read
    out |= {"several-calls"} if len(rows) > 1 else set()
    out |= {"per-block-rows"} if any(n > 1 for n in rows.values()) else set()
    out |= {"window-mismatch"} if len(models) > 1 else set()
    out |= {"reset"} if len(sessions - {None}) > 1 else set()
    return frozenset(out)


def not_knowable(report: Report) -> dict[int, str]:
    """At each failing point whose truth is not knowable, by observation index: ``return None here`` and why."""
    out: dict[int, str] = {}
    for p in report.failures:
        truth = p.observation.truth
        if not truth.knowable:
            band = f"; or answer within {truth.unseen[0]:,}..{truth.unseen[1]:,}" if truth.unseen else ""
            why = truth.why or _WHY.get(p.observation.kind, "")
            out[p.observation.index] = f"not knowable: return None here ({why}{band})"
    return out


def payload_wrong(report: Report) -> dict[int, str]:
    """For a statusline command's report (its :attr:`~ctxsim.check.Report.shown`: what Claude Code's payload said at
    each point), at each failing point where the payload itself is off the truth and the command shows what it
    says, by observation index: that Claude Code's own payload is wrong there, by how much, and what to read
    instead."""
    shown = report.shown
    out: dict[int, str] = {}
    if shown is None:
        return out
    for p in report.failures:
        figure = shown.get(p.observation.label, -1)
        if figure == -1 or not p.observation.truth.knowable:
            continue
        truth = p.observation.truth
        payload_ok = figure is not None and truth.prompt - report.tolerance <= figure <= (
            truth.next_request + report.tolerance)
        echoed = (figure is None and p.estimate is None) or (figure is not None and p.estimate is not None and abs(
            p.estimate - figure) <= max(report.tolerance, figure // 100))
        if payload_ok or not echoed:
            continue
        said = "null" if figure is None else f"{figure:,}"
        head = (f"Claude Code's own payload is wrong here: its current_usage says {said}, the context is "
                f"{truth.prompt:,}")
        if report.session.usage == "inclusive" and figure is not None and figure > truth.next_request:
            out[p.observation.index] = (f"{head} (it adds the cache counts a gateway's input_tokens already holds); "
                                        f"read input_tokens alone where CTXSIM_USAGE is inclusive")
        elif figure is None or figure == 0:
            out[p.observation.index] = (f"{head} (after /compact it has no usage until the next call); read the "
                                        f"transcript's compact_boundary postTokens plus the system prompt and tools")
        else:
            out[p.observation.index] = f"{head}; read the transcript's last main-chain assistant usage instead"
    return out


def likely_causes(report: Report, scripts: Callable[[], Iterable[Script]]) -> dict[int, str]:
    """The ``likely cause`` column of ``report``'s failing points, by observation index (see the module): not
    knowable, Claude Code's payload wrong, a gauge's confusion, or the formula the tracker's numbers fit
    (:func:`explain`). ``scripts`` makes fresh scripts of the stream the report was run over (faults applied)."""
    return explain(report, scripts)[0]


def explain(report: Report, scripts: Callable[[], Iterable[Script]]) -> tuple[dict[int, str], Diagnosis | None]:
    """:func:`likely_causes`, and the :class:`~ctxsim.check.Diagnosis` its formula comes from (None where none
    fits, or the failure is explained otherwise)."""
    out = {**not_knowable(report), **payload_wrong(report)}
    rest = [p for p in report.failures if p.observation.index not in out]
    if not rest:
        return out, None
    confused = report.confusion
    if confused is not None:
        out.update({p.observation.index: confused.removeprefix("ctxsim: ") for p in rest})
        return out, None
    diagnosis = diagnose(report, Readings(scripts()), exclude=out)
    if diagnosis is not None:
        text = diagnosis.text()
        out.update({p.observation.index: text for p in rest if p.observation.index in diagnosis.explained})
    return out, diagnosis
