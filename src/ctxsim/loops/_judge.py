"""What a restart loop did, judged: the invariants, the report of one run and the error that lists what broke.

A run (:mod:`ctxsim.loops`) leaves a :class:`LoopReport` of the fake agent's connections, the rig's probes and
what the loop returned or raised; :func:`judge` fills its ``violations``, one :class:`Violation` per broken
invariant, each judged from the world's truth, never from what the loop says of itself:

================ ================================================================================================
invariant        what it means
================ ================================================================================================
steps-once       every task step done exactly once (asserted when every checkpoint is lossless; otherwise
                 :attr:`LoopReport.redone` and :attr:`LoopReport.skipped` say what the degradations cost)
new-session      each restart starts a new session, with a new session id (no ``resume`` of the old one)
tracker-reset    a tracker made by :meth:`LoopRig.make_tracker` never carries one session's state into the next
restart-count    one restart per true threshold crossing (from the world's truth, not from the loop), none
                 without one, and a ``continuation_count`` the loop returns agrees; a session reaching the
                 policy's ``max_tool_calls`` is a crossing, and under a graduated policy the restart follows a
                 wind-down turn (never at the first turn whose context reached the threshold); a crossing the
                 context falls back from (compaction, tool results cleared) before the loop acts is discharged,
                 by the loop's own ``/compact`` too (under a graduated policy, sent as the wind-down turn; a
                 compaction re-arms the wind-down, as a fresh session does); a ``/compact`` sent once the restart
                 is owed is a compaction instead of a restart, and never counts as a step
checkpoint       at each restart the checkpoint is requested once, on the old session, and its own usage triggers
                 no further restart
termination      the loop ends, within its bound of ``max_restarts`` restarts
fresh-lifecycle  each session runs under a fresh lifecycle (no "cannot start from state X")
declared-prompts every prompt is one the loop declared (:class:`~ctxsim.agent.LoopPrompts`) or Claude Code's own
                 ``/compact``: the fake agent never guesses, so a prompt it cannot classify is reported, quoted,
                 instead of every other check
================ ================================================================================================
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agent import ConnectionRecord, FakeAgent
from ..processes import described
from ._crossings import deadline, last_fall, restarted_at_first_reach
from ._rig import LoopRig

__all__ = ["INVARIANTS", "LoopCheckError", "LoopReport", "Violation", "judge"]

INVARIANTS: dict[str, str] = {
    "steps-once": "every task step is done exactly once",
    "new-session": "each restart starts a new session with a new session id",
    "tracker-reset": "tracker state is reset for each session",
    "restart-count": "one restart per true threshold crossing, and none without one",
    "checkpoint": "the checkpoint is requested once per restart, on the old session, and its own usage "
                  "triggers no restart",
    "termination": "the loop ends, within its bound on restarts",
    "fresh-lifecycle": "each session runs under a fresh lifecycle",
    "declared-prompts": "every prompt the loop sends is one it declared (LoopPrompts), or /compact",
}
"""Every invariant the checks judge, by name."""

_CANNOT_START = re.compile(r"cannot start from state", re.IGNORECASE)


# --- the report -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Violation:
    """One broken invariant."""

    invariant: str
    detail: str

    def line(self, loop: str) -> str:
        """``ctxsim: <loop> broke invariant '<name>' (<what it means>): <detail>``."""
        return f"ctxsim: {loop} broke invariant {self.invariant!r} ({INVARIANTS[self.invariant]}): {self.detail}"


@dataclass
class LoopReport:
    """What a loop did with the fake agent, judged against the truth."""

    name: str
    agent: FakeAgent
    rig: LoopRig
    threshold: int
    """The restart threshold in tokens the crossings were computed against."""
    returned: Any = None
    error: BaseException | None = None
    violations: list[Violation] = field(default_factory=list)

    @property
    def sessions(self) -> list[ConnectionRecord]:
        """The connections that did work (answered a prompt other than a checkpoint request)."""
        return [c for c in self.agent.connections if c.work_turns]

    @property
    def restarts(self) -> int:
        """New working sessions after the first."""
        return max(0, len(self.sessions) - 1)

    @property
    def crossings(self) -> int:
        """Sessions whose truth crossed the threshold with work left to do: the restarts a loop owes."""
        marker, tools = self.agent.prompts.done_marker, self.rig.policy.max_tool_calls
        return sum(1 for c in self.sessions if deadline(c, self.threshold, self.grace, marker, tools) is not None)

    @property
    def grace(self) -> int:
        """Work turns a loop may send after a crossing: one (the wind-down) for a graduated policy."""
        return 1 if self.rig.policy.wind_down else 0

    @property
    def redone(self) -> int:
        """Step performances beyond the first."""
        return self.agent.redone

    @property
    def skipped(self) -> list[str]:
        """Steps never performed."""
        return self.agent.skipped

    @property
    def broken(self) -> set[str]:
        """The names of the broken invariants."""
        return {v.invariant for v in self.violations}

    @property
    def ok(self) -> bool:
        """No invariant broken."""
        return not self.violations

    def __str__(self) -> str:
        if self.ok:
            return (f"ctxsim: {self.name} kept every invariant: {len(self.agent.task.steps)} steps, "
                    f"{self.restarts} restarts for {self.crossings} threshold crossings")
        return "\n".join(v.line(self.name) for v in self.violations)


class LoopCheckError(AssertionError):
    """A restart loop broke invariants: the message lists them, one ``ctxsim:`` line each."""
    __module__ = "ctxsim.loops"  # its public name, as tracebacks and reprs show it

    def __init__(self, report: LoopReport) -> None:
        super().__init__(str(report))
        self.report = report


# --- judging ------------------------------------------------------------------------------------------------------


def _percent(tokens: int, report: LoopReport) -> str:
    effective = report.rig.policy.effective_window(report.agent.task.window)
    return f"{tokens:,} tokens, {100 * tokens / effective:.0f}% of the effective window"


def _judge_restarts(report: LoopReport) -> list[Violation]:
    out: list[Violation] = []
    sessions, threshold, grace = report.sessions, report.threshold, report.grace
    tools = report.rig.policy.max_tool_calls
    for k, connection in enumerate(sessions, 1):
        owed = deadline(connection, threshold, grace, report.agent.prompts.done_marker, tools)
        fall = last_fall(connection)
        peak = max((t.peak_next for t in connection.work_turns[fall:]), default=0)
        restarted = k < len(sessions)
        if restarted and owed is None and peak < threshold:
            out.append(Violation("restart-count", f"session {k} (connection {connection.index}) was restarted "
                                 f"without crossing the threshold of {threshold:,} tokens: its context peaked at "
                                 f"{_percent(peak, report)}"
                                 + (f" since it fell in work turn {fall + 1}" if fall else "")
                                 + (f" after {sum(len(t.steps) for t in connection.work_turns)} tool calls "
                                    f"(max_tool_calls={tools})" if tools is not None else "")))
        if restarted and grace and restarted_at_first_reach(connection, threshold, tools):
            out.append(Violation("restart-count", f"session {k} (connection {connection.index}) was restarted at "
                                 f"work turn {len(connection.work_turns)}, the first whose context reached the "
                                 f"threshold of {threshold:,} tokens, without the wind-down turn its graduated "
                                 f"policy owes first (wind down the first time, restart when it repeats)"))
        if owed is not None:
            last, reached = owed
            late = len(connection.work_turns) - 1 - last
            after = connection.work_turns[last + 1] if late > 0 else None
            if after is not None and after.kind == "compact":
                out.append(Violation("restart-count", f"session {k} {reached} but the loop compacted instead of "
                                     f"restarting: it sent /compact as work turn {last + 2}, when it owed the "
                                     f"restart (a compaction discharges a crossing only before the restart is "
                                     f"owed{': as the wind-down turn' if grace else ''})"))
            elif late > 0:
                out.append(Violation("restart-count", f"session {k} {reached} but the loop sent {late} more work "
                                     f"turn(s) before acting"))
            elif not restarted and report.error is None:
                out.append(Violation("restart-count", f"session {k} {reached} and the loop ended without "
                                     f"restarting"))
    if out:
        out.insert(0, Violation("restart-count", f"{report.restarts} restart(s) for {report.crossings} true "
                                f"threshold crossing(s) (threshold {threshold:,} tokens)"))
    count = getattr(report.returned, "continuation_count", report.returned)
    if type(count) is int and count != report.restarts:
        out.append(Violation("restart-count", f"the loop reports continuation_count={count} but started "
                             f"{report.restarts} new session(s) for {report.crossings} true crossing(s)"))
    return out


def _listed(items: Sequence[str], limit: int = 4) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def _judge_sessions(report: LoopReport) -> list[Violation]:
    resumed, reused = [], []
    seen: set[str] = set()
    for connection in report.agent.connections:
        if connection.resumed is not None:
            resumed.append(f"connection {connection.index} resumed {connection.resumed!r}")
        elif connection.session_id in seen:
            reused.append(f"connection {connection.index} reused {connection.session_id!r}")
        seen.add(connection.session_id)
    out = []
    if resumed:
        out.append(Violation("new-session", f"{len(resumed)} connection(s) continued an old session "
                             f"(options.resume / continue_conversation) instead of starting a new one "
                             f"({_listed(resumed)}): clear the session id before restarting"))
    if reused:
        out.append(Violation("new-session", f"session ids were reused ({_listed(reused)})"))
    return out


def _judge_checkpoints(report: LoopReport) -> list[Violation]:
    fresh, repeated, worked_on, missing = [], [], [], []
    for connection in report.agent.connections:
        asked = connection.checkpoint_turns
        if asked and connection.turns[0].kind == "checkpoint":
            carried = connection.turns[0].message_session_id
            note = f" with query(session_id={carried!r})" if carried and carried != "default" else ""
            fresh.append(f"connection {connection.index}{note}")
        if len(asked) > 1:
            repeated.append(f"connection {connection.index} got {len(asked)}")
        if asked and connection.turns[-1].kind != "checkpoint":
            worked_on.append(f"connection {connection.index}")
    for k, connection in enumerate(report.sessions[:-1], 1):
        if not connection.checkpoint_turns:
            missing.append(f"session {k} (connection {connection.index})")
    out = []
    if fresh:
        out.append(Violation("checkpoint", f"the checkpoint was requested on a new, empty session "
                             f"({_listed(fresh)}), which has nothing to checkpoint and resumes nothing: ask the "
                             f"old session, on the same client, before it closes"))
    if missing:
        out.append(Violation("checkpoint", f"restarted without a checkpoint request on the old session: "
                             f"{_listed(missing)}"))
    if repeated:
        out.append(Violation("checkpoint", f"several checkpoint requests on one session ({_listed(repeated)}): "
                             f"the checkpoint turn's own usage triggered another restart"))
    if worked_on:
        out.append(Violation("checkpoint", f"work went on after the checkpoint request ({_listed(worked_on)})"))
    return out


def _judge_trackers(report: LoopReport) -> list[Violation]:
    out = []
    for probe in report.rig.trackers:
        for old, new, tokens in probe.carried:
            held = "unknown" if tokens is None else f"{tokens:,} tokens"
            out.append(Violation("tracker-reset", f"tracker #{probe.index} went on from session {old!r} into "
                                 f"session {new!r} without reset() (it held {held}): make a new tracker or "
                                 f"reset it for each session"))
    return out


def _judge_end(report: LoopReport) -> list[Violation]:
    out: list[Violation] = []
    error, bound = report.error, report.rig.max_restarts
    if report.rig.lifecycle_errors or (error is not None and _CANNOT_START.search(str(error))):
        detail = "; ".join(report.rig.lifecycle_errors) or f"{type(error).__name__}: {error}"
        out.append(Violation("fresh-lifecycle", f"a finished lifecycle was started again ({detail}): make a "
                             f"new lifecycle for each session"))
    if report.restarts > bound:
        out.append(Violation("termination", f"the loop made {report.restarts} restarts, past its bound of "
                             f"max_restarts={bound}"))
    if report.agent.bound_errors:
        out.append(Violation("termination", report.agent.bound_errors[0].removeprefix("ctxsim: ")))
    elif isinstance(error, TimeoutError):
        out.append(Violation("termination", "the loop hung (it did not return before the hang guard)"))
    elif error is not None and not out and not report.agent.finished and report.restarts < bound:
        out.append(Violation("termination", f"the loop raised {described(error)} before the task "
                             f"was done and before its bound of max_restarts={bound}"))
    return out


def _judge_steps(report: LoopReport) -> list[Violation]:
    counts = report.agent.counts()
    again = {s: n for s, n in counts.items() if n > 1}
    never = [s for s, n in counts.items() if n == 0]
    if not again and not never:
        return []
    parts = []
    if again:
        parts.append(f"redone {sum(n - 1 for n in again.values())} time(s): "
                     + ", ".join(f"{s} x{n}" for s, n in again.items()))
    if never:
        parts.append(f"never done: {', '.join(never)}")
    return [Violation("steps-once", "; ".join(parts))]


def judge(report: LoopReport, *, lossless: bool) -> None:
    """Fill ``report.violations`` with every broken invariant (``steps-once`` only when ``lossless``: every
    checkpoint kept everything)."""
    if report.agent.unclassified:  # the run says nothing about the loop until the agent understands it
        report.violations = [Violation("declared-prompts", report.agent.unclassified[0].removeprefix("ctxsim: "))]
        return
    report.violations = [
        *(_judge_steps(report) if lossless else []),
        *_judge_sessions(report),
        *_judge_trackers(report),
        *_judge_restarts(report),
        *_judge_checkpoints(report),
        *_judge_end(report),
    ]
