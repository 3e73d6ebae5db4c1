"""Likely causes: which catalogued bug a failing run shows, named only when that is specific.

A failure's ``likely cause`` column (``pytest --ctx-scenarios``, ``ctxsim run``, ``ctxsim fuzz``) names a catalogued
bug (:data:`ctxsim.trackers.CATALOGUE`) only when both hold:

1. **the formula matches**: the catalogued tracker, run over the same stream (one fed only results read at every
   point), gives the tracker's estimate at *every* failing point (within the tolerance and 1%, off the same way),
   and fails at exactly those of the tracker's points; of several such entries, the one that agrees with the
   tracker at the most points, and none when two agree at as many (the stream cannot tell them apart);
2. **the stream has what the bug is about**: the entry's :attr:`~ctxsim.trackers.Entry.about` names features
   (:data:`FEATURES`: a compaction, a subagent, several calls...) and the stream shows at least one of them.

Otherwise the column says nothing at that point: a wrong cause is worse than none. At a point whose truth is not
knowable it says ``return None here`` and why; for a statusline command, at a point where Claude Code's own payload
is wrong and the command shows what the payload says, it says so, with the payload's figure, the truth and what to
read instead (:func:`payload_wrong`).

``benchmarks/bench_causes.py`` measures the precision of the named causes over every catalogue entry and every
tracker mutant (each knows its cause, :attr:`ctxsim.trackers.mutants.Mutant.cause`) across the corpus.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..trackers import CATALOGUE, ResultsOnly, make_tracker
from ._run import run_tracker_parsed

if TYPE_CHECKING:
    from ..faults import FaultPlan
    from ..wire import Script
    from ..world import Session
    from ._report import Point, Report

__all__ = ["FEATURES", "catalogue_runs", "features", "likely_causes", "name_cause", "not_knowable", "payload_wrong"]

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
"""What a stream can show that a catalogued bug is about, by name (:attr:`ctxsim.trackers.Entry.about`)."""

_EVERY_KIND = frozenset({"call", "subagent", "compaction", "reset", "result"})

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


def catalogue_runs(session: Session, scripts: Callable[[], Iterable[Script]], tolerance: int,
                   faults: FaultPlan | None = None) -> dict[str, Report]:
    """Every catalogued buggy tracker over fresh ``scripts()`` of ``session`` (:func:`ctxsim.check.run_tracker_parsed`,
    the fast path), by name; one fed only results is read at every point, as a tracker fed everything would be."""
    out: dict[str, Report] = {}
    for name, entry in CATALOGUE.items():
        if name == "reference":
            continue
        tracker = make_tracker(entry.factory, session)  # a gauge is told the session's world
        if isinstance(tracker, ResultsOnly):
            tracker = dataclasses.replace(tracker, judged_at=_EVERY_KIND)
        out[name] = run_tracker_parsed(tracker, session, scripts(), tolerance=tolerance, faults=faults)
    return out


def _agree(mine: Point, theirs: Point, tolerance: int) -> bool:
    """Both estimates unknown, or within the tolerance and 1% of each other."""
    if mine.estimate is None or theirs.estimate is None:
        return mine.estimate is None and theirs.estimate is None
    return abs(theirs.estimate - mine.estimate) <= max(tolerance, abs(mine.estimate) // 100)


def name_cause(report: Report, runs: Mapping[str, Report], shown: frozenset[str]) -> str | None:
    """The catalogue entry whose bug ``report``'s failure is, by the two rules of this module (``runs``:
    :func:`catalogue_runs` of the same stream; ``shown``: its :func:`features`), or None when none is specific."""
    failing = [p for p in report.failures if p.observation.truth.knowable]
    if not failing or report.crash is not None or report.stall is not None:
        return None
    mine = {p.observation.index for p in failing}
    judged = {p.observation.index for p in report.points}
    scored: list[tuple[int, str]] = []
    for name, other in runs.items():
        about = CATALOGUE[name].about
        if (about and not about & shown) or other.crash is not None or name == report.tracker:
            continue
        theirs = {q.observation.index: q for q in other.points}
        if not judged <= theirs.keys():
            continue
        if any(theirs[p.observation.index].ok or not _agree(p, theirs[p.observation.index], report.tolerance)
               or (p.error or 0) * (theirs[p.observation.index].error or 0) < 0 for p in failing):
            continue
        if {i for i in judged if not theirs[i].ok and theirs[i].observation.truth.knowable} != mine:
            continue
        scored.append((sum(_agree(p, theirs[p.observation.index], report.tolerance) for p in report.points), name))
    scored.sort(key=lambda s: -s[0])
    if not scored or (len(scored) > 1 and scored[0][0] == scored[1][0]):
        return None
    return scored[0][1]


def _clause(name: str) -> str:
    """``<the entry's bug, first clause> (<its name>)``."""
    clause = CATALOGUE[name].bug.split(";")[0].strip()  # whole: a table wraps it, never cuts it
    return f"{clause} ({name})"


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
    knowable, Claude Code's payload wrong, or the catalogued bug named when specific. ``scripts`` makes fresh
    scripts of the stream the report was run over (faults applied). Costs one fast run per catalogue entry: call it
    for a failure to explain, not in a loop."""
    out = {**not_knowable(report), **payload_wrong(report)}
    if not [p for p in report.failures if p.observation.index not in out]:
        return out
    shown = features(scripts(), report.session.window)
    runs = catalogue_runs(report.session, scripts, report.tolerance)
    name = name_cause(report, runs, shown)
    if name is not None:
        text = _clause(name)
        out.update({p.observation.index: text for p in report.failures if p.observation.index not in out})
    return out
