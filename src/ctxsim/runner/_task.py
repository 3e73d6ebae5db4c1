"""A task scenario run by a restart loop: the loop checks, the scenario's expectations, and the timeline.

:func:`run_task` works the task of a :class:`~ctxsim.scenario.TaskScenario` (its ``task`` section) through a restart
loop against the fake agent, with :func:`ctxsim.loops.run_loop`: the reference loop
(:func:`ctxsim.reference.run_with_restarts`, as :func:`reference_loop`), or a loop of
:mod:`ctxsim.loops`. The :class:`TaskRun` it returns holds the loop checks' verdict and what happened,
counted from the fake agent's own record (restarts, steps per session, steps redone and skipped) and from the
loop's result (the checkpoint fallbacks); :meth:`TaskRun.problems` compares them with the numbers the scenario's
author wrote, each problem naming its ``expect`` key and line. :meth:`TaskRun.timeline` is the table people read
(``ctxsim run``, a failing ``pytest --ctx-scenarios`` item): every turn of every session, with its prompt, the
steps done, the true context, the policy's zone and what the loop did next.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..agent import ConnectionRecord, FakeAgent, TurnRecord
from ..loops import CATALOGUE as LOOPS, INVARIANTS, LoopReport, LoopRig, LoopSpec, run_loop
from ..processes import described
from ..reference import (
    WIND_DOWN_PROMPT,
    Action,
    Checkpoint,
    PressurePolicy,
    RestartResult,
    run_with_restarts,
)
from ..scenario import Scenario, TaskScenario
from ..trackers import TrackerFactory
from ._scenario import MANY_POINTS, percent

__all__ = ["REFERENCE_LOOP", "Problem", "TaskRun", "agent_timeline", "corpus_loop_verdicts", "describe_task",
           "explain_task", "reference_loop", "run_task"]

REFERENCE_LOOP = TaskScenario.reference
"""How items and reports name :func:`reference_loop`."""


def reference_loop(rig: LoopRig) -> Any:
    """The reference restart loop, :func:`ctxsim.reference.run_with_restarts`, built from the rig's parts so the
    loop checks can watch them (an awaitable of its :class:`~ctxsim.reference.RestartResult`)."""
    return run_with_restarts(rig.prompt, options=rig.options, policy=rig.make_policy(),
                             tracker_factory=rig.make_tracker, lifecycle_factory=rig.make_lifecycle,
                             max_restarts=rig.max_restarts)


@dataclass(frozen=True)
class Problem:
    """One expectation of the scenario the run did not meet."""

    key: str
    """The expectation's key path (``expect.restarts``, ``expect.steps.redone``)."""
    line: int
    """Its line in the scenario file."""
    message: str
    """What was expected and what happened, in a sentence."""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


@dataclass(frozen=True)
class TaskRun:
    """One restart loop over a task scenario: the loop checks' report, and what happened, counted."""

    scenario: TaskScenario
    loop: str
    """:data:`REFERENCE_LOOP` or a catalogued loop's name."""
    tracker: str
    """The tracker the loop was given (``reference`` for :class:`ctxsim.reference.ContextTracker`)."""
    report: LoopReport

    # what happened ----------------------------------------------------------------------------------------------

    @property
    def restarts(self) -> int:
        """New working sessions after the first, from the fake agent's record."""
        return self.report.restarts

    @property
    def per_session(self) -> tuple[int, ...]:
        """Steps performed in each working session, in order."""
        return tuple(sum(len(t.steps) for t in c.work_turns) for c in self.report.sessions)

    @property
    def done_once(self) -> int:
        """Steps performed exactly once."""
        return sum(1 for n in self.report.agent.counts().values() if n == 1)

    @property
    def checkpoints(self) -> list[Checkpoint] | None:
        """The checkpoints the loop took, in order; None when it returned none (it raised, or is not the
        reference loop)."""
        returned = self.report.returned
        return list(returned.checkpoints) if isinstance(returned, RestartResult) else None

    @property
    def invariants_kept(self) -> bool:
        """The loop checks found no broken invariant."""
        return self.report.ok

    # the verdict ------------------------------------------------------------------------------------------------

    def problems(self) -> list[Problem]:
        """Every stated expectation of the scenario that this run does not meet (empty when all hold)."""
        expect, lines = self.scenario.loop_expect, self.scenario.lines
        out: list[Problem] = []

        def differ(key: str, expected: Any, actual: Any, what: str) -> None:
            if expected is not None and expected != actual:
                out.append(Problem(key, lines.get(key, 1), f"{key}: {_shown(expected)}, but {what} {_shown(actual)}"))

        report = self.report
        if report.ok != self.scenario.expect_reference:
            said = "pass" if self.scenario.expect_reference else "fail"
            did = "kept every invariant" if report.ok else f"broke {', '.join(map(repr, sorted(report.broken)))}"
            default = "" if "expect.reference" in lines else " (the default)"
            out.append(Problem("expect.reference", self.scenario.line_of(REFERENCE_LOOP),
                               f"expect.reference: {said}{default}: the loop checks must find "
                               f"{'no broken invariant' if said == 'pass' else 'a broken invariant'}, but the loop "
                               f"{did}"))
        differ("expect.restarts", expect.restarts, self.restarts, "the loop made")
        if expect.checkpoint is not None:
            taken = self.checkpoints
            if taken is None:
                error = self.report.error
                why = f"it raised {described(error)}" if error is not None else "it returned none"
                out.append(Problem("expect.checkpoint", lines.get("expect.checkpoint", 1),
                                   f"expect.checkpoint: {_shown(expect.checkpoint)}, but the loop's checkpoints are "
                                   f"unknown ({why})"))
            else:
                differ("expect.checkpoint", expect.checkpoint, tuple(c.fallback for c in taken),
                       "the loop's checkpoints took")
        steps = expect.steps
        if steps is not None:
            agent = self.report.agent
            differ("expect.steps.done_once", steps.done_once, self.done_once, "steps done once:")
            differ("expect.steps.redone", steps.redone, agent.redone, "steps redone:")
            differ("expect.steps.skipped", steps.skipped, len(agent.skipped), "steps skipped:")
            differ("expect.steps.per_session", steps.per_session, self.per_session, "steps per session:")
        return out

    def meets(self) -> bool:
        """Every stated expectation holds, ``expect.reference`` included (every invariant kept, unless ``fail``)."""
        return not self.problems()

    def verdict(self, expected: str) -> tuple[bool, str]:
        """Whether this run is what the scenario expects of it, and what it did, in words.

        ``expected`` is ``meet`` (the reference loop, or the tracker under test that must pass), ``miss`` (a
        tracker under test that must fail), ``caught`` (a loop of ``expect.loop.fail``: the checks must report
        the invariant the catalogue says it breaks), ``kept`` (a loop of ``expect.loop.pass``) or ``none``."""
        broken = ", ".join(repr(b) for b in sorted(self.report.broken))
        if expected in ("caught", "kept"):
            if expected == "kept":
                return self.report.ok, ("keeps every invariant" if self.report.ok else f"breaks {broken}")
            invariant = LOOPS[self.loop].invariant
            if invariant in self.report.broken:
                return True, f"the loop checks catch it breaking {invariant!r} ({INVARIANTS[invariant]})"
            if self.report.ok:
                return False, f"NOT caught: it keeps every invariant, but it should break {invariant!r}"
            return False, f"caught for {broken}, but not for {invariant!r} ({INVARIANTS[invariant]})"
        problems = self.problems()
        met = not problems
        does = "meets the scenario's expectations" if met else (
            f"does not meet the scenario's expectations ({_plural(len(problems), 'unmet expectation')}"
            + (f"; broke {broken}" if broken else "") + ")")
        if expected == "none":
            return True, f"{does} (the scenario expects nothing of it: expect.ctx_tracker: skip)"
        return met == (expected == "meet"), does

    # reading it -------------------------------------------------------------------------------------------------

    def shown(self, title: str, expected: str, where: str, *, full: bool = False,
              timeline: bool = False) -> tuple[bool, str]:
        """What ``ctxsim run`` prints for this run: whether it is what was ``expected`` (:meth:`verdict`), and
        the verdict, the unmet expectations at ``where`` (the scenario's path), the broken invariants, the summary
        and the timeline (always for the reference loop and trackers, for other loops with ``full`` or
        ``timeline``)."""
        met, does = self.verdict(expected)
        lines = [f"\n== {title}: {does}: {'OK' if met else 'NOT AS EXPECTED'}"]
        if expected in ("meet", "miss"):
            lines += [f"{where}:{problem.line}: {problem.message}" for problem in self.problems()]
        if not self.report.ok:
            lines.append(str(self.report))
        lines.append(self.summary())
        if expected not in ("caught", "kept") or full or timeline:
            lines.append(self.timeline(full=full))
        return met, "\n".join(lines)

    def summary(self) -> str:
        """Three lines: the steps, the restarts and checkpoints, the loop checks' verdict."""
        report, agent = self.report, self.report.agent
        task, policy = agent.task, report.rig.policy
        effective = policy.effective_window(task.window)
        checkpoints = self.checkpoints
        taken = (", ".join(c.fallback for c in checkpoints) if checkpoints is not None else
                 "not returned by the loop")
        steps = (f"{self.loop} (tracker {self.tracker}): {_plural(len(task.steps), 'step')}: {self.done_once} done "
                 f"once, {agent.redone} redone, {len(agent.skipped)} skipped; steps per session: "
                 f"{', '.join(map(str, self.per_session)) or 'none'}")
        restarts = (f"{_plural(self.restarts, 'restart')} for {_plural(report.crossings, 'true threshold crossing')} "
                    f"(threshold {report.threshold:,} tokens = {percent(policy.restart_at)} of the effective window "
                    f"{effective:,}); checkpoints: {taken if self.restarts or checkpoints else 'none'}")
        lines = [steps, restarts]
        if report.error is not None:
            lines.append(f"the loop raised {described(report.error)}")
        lines.append("loop checks: every invariant kept" if report.ok else
                     f"loop checks: broke {', '.join(sorted(report.broken))}")
        return "\n".join(lines)

    def timeline(self, *, full: bool = False) -> str:
        """Every turn of every session: prompt, steps, true context, zone, what the loop did next.

        Past :data:`ctxsim.runner.MANY_POINTS` turns only the turns where something happens are shown (a
        session's first and last turns, zone changes, checkpoints, rejections, a loop's ``/compact``) unless
        ``full``."""
        return agent_timeline(self.report.agent, self.report.rig.policy, checkpoints=self.checkpoints, full=full)


def agent_timeline(agent: FakeAgent, policy: PressurePolicy | None = None, *,
                   checkpoints: Sequence[Checkpoint] | None = None, full: bool = False) -> str:
    """The turn timeline of what ``agent`` answered (:meth:`TaskRun.timeline`'s table), zones by ``policy``
    (default: restart at 90%), ``checkpoints`` the loop took (when known)."""
    rows = list(_rows(agent, policy or PressurePolicy(window=agent.task.window), checkpoints))
    turns = sum(1 for r in rows if r[0] == "turn")
    elide = turns > MANY_POINTS and not full
    out = []
    skipped = 0
    for kind, cells, keep in rows:
        if kind == "turn" and elide and not keep:
            skipped += 1
            continue
        if skipped:
            out.append(f"        ... {_plural(skipped, 'turn')} like the ones around ...")
            skipped = 0
        out.append(cells if kind == "head" else _format(cells))  # "columns" and "turn" rows are cells
    if elide:
        out.append(f"({turns} turns; only those where something happens are shown)")
    return "\n".join(out)


def _rows(agent: FakeAgent, policy: PressurePolicy,
          checkpoints: Sequence[Checkpoint] | None) -> Iterator[tuple[str, Any, bool]]:
    window = agent.task.window
    effective = policy.effective_window(window)
    marker = agent.prompts.done_marker
    taken = iter(checkpoints or ())
    numbers = {c.index: k for k, c in enumerate((c for c in agent.connections if c.work_turns), 1)}
    connections = agent.connections
    for n, connection in enumerate(connections):
        yield "head", _heading(connection, numbers, connections), True
        yield "columns", _HEADER, True
        zone = None
        for j, turn in enumerate(connection.turns):
            later = connection.turns[j + 1] if j + 1 < len(connection.turns) else None
            if turn.kind == "checkpoint":
                fallback = next(taken, None)
                note = f"agent wrote {turn.degradation}" + (f", loop took {fallback.fallback}" if fallback else "")
                then = "new session" if n + 1 < len(connections) else "loop ended"
                yield "turn", (turn.index, "checkpoint", "-", turn.peak_prompt, turn.peak_prompt / effective,
                               "REJECTED" if turn.rejected else "", f"{note}; {then}"), True
                continue
            level = "REJECTED" if turn.rejected else _zone(policy.zone(turn.peak_prompt, window), policy)
            then = _then(turn, later, n + 1 < len(connections), marker)
            prompt: str = ("wind-down" if turn.prompt == WIND_DOWN_PROMPT else "/compact" if turn.kind == "compact"
                           else turn.kind)
            # the context the row shows is the one after the compaction (for /compact: what it left)
            prompt += " +compact" if turn.compacted and turn.kind != "compact" else ""
            prompt += " +garbled" if turn.unreadable else ""  # no tracker knows the context at its end
            prompt += " +cleared" if turn.cleared else ""  # old tool results cleared: the context fell, no compaction
            keep = (j == 0 or later is None or later.kind == "checkpoint" or level != zone or then != "continue"
                    or turn.kind == "compact")
            zone = level
            yield "turn", (turn.index, prompt, _steps(turn.steps), turn.peak_prompt,
                           turn.peak_prompt / effective, level, then), keep


_HEADER = ("turn", "prompt", "steps", "context", "% eff.", "zone", "then")
_WIDTHS = (5, 13, 10, 9, 7, 10, 0)


def _format(cells: tuple[Any, ...]) -> str:
    out = []
    for k, (cell, width) in enumerate(zip(cells, _WIDTHS)):
        if cell is None:
            text = ""
        elif isinstance(cell, float):
            text = f"{cell * 100:.2f}%"
        elif isinstance(cell, int) and k == 3:
            text = f"{cell:,}"
        else:
            text = str(cell)
        out.append(text.rjust(width) if k in (0, 3, 4) else text.ljust(width))
    return "  ".join(out).rstrip()


def _heading(connection: ConnectionRecord, numbers: dict[int, int], connections: list[ConnectionRecord]) -> str:
    number = numbers.get(connection.index)
    what = f"session {number}" if number is not None else "a session without work"
    resumed = ""
    if connection.resumed is not None:
        first = next((c.index for c in connections if c.session_id == connection.resumed), None)
        resumed = f", RESUMES connection {first}'s session" if first is not None else ", resumes an old session"
    return f"-- {what} (connection {connection.index}, session id {connection.session_id[:8]}{resumed}) --"


def _zone(action: Action, policy: PressurePolicy) -> str:
    if action is Action.RESTART:
        return f">= {percent(policy.restart_at)}"
    return str(action.value)


def _then(turn: TurnRecord, later: TurnRecord | None, more: bool, marker: str) -> str:
    if turn.reply.startswith(marker):
        return "task complete"
    if later is None:
        return "new session" if more else "loop ended"
    if later.kind in ("checkpoint", "compact"):
        return later.kind
    return "wind down" if later.prompt == WIND_DOWN_PROMPT else "continue"


def _steps(steps: list[str]) -> str:
    if not steps:
        return "-"
    return " ".join(steps) if len(steps) <= 2 else f"{steps[0]}..{steps[-1]}"


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)


def describe_task(scenario: TaskScenario) -> str:
    """The task, the policy and the checkpoint plan of a task scenario, in a line or two."""
    if not isinstance(scenario, TaskScenario):
        raise ValueError(f"ctxsim: describe_task: scenario {scenario.name!r} has no task")
    spec = scenario.task
    task, policy = spec.task, spec.policy
    sizes = sorted({s.tokens for s in task.steps})
    tokens = f"{sizes[0]:,} tokens each" if len(sizes) == 1 else f"{sizes[0]:,} to {sizes[-1]:,} tokens"
    effective = policy.effective_window(task.window)
    reserve = f" (window {task.window:,} - reserve {policy.reserve:,})" if policy.reserve else ""
    threshold = f"{percent(policy.restart_at)} ({policy.threshold_tokens(window=task.window):,} tokens)"
    if policy.wind_down:
        mask = (f"mask from {percent(policy.mask_at)} "
                f"({policy.threshold_tokens(policy.mask_at, task.window):,}), ") if policy.mask_at else ""
        rule = f"graduated zones: {mask}wind down at {threshold}, restart when it repeats"
    else:
        rule = f"restart at {threshold}"
    if policy.max_tool_calls is not None:
        rule += f", or once a session has made {policy.max_tool_calls} tool calls"
    plan = spec.checkpoints
    if isinstance(plan, str):
        checkpoints = plan
    elif isinstance(plan, tuple):
        checkpoints = ", ".join(plan) + ", then well_formed"
    else:
        checkpoints = ", ".join(f"restart {k}: {v}" for k, v in sorted(plan.items())) + ", else well_formed"
    return (f"task of {_plural(len(task.steps), 'step')} ({tokens}, {task.steps_per_turn} per turn), baseline "
            f"{task.baseline:,}, effective window {effective:,}{reserve}; {rule}; checkpoints: {checkpoints}; "
            f"max_restarts {spec.max_restarts}")


def run_task(scenario: TaskScenario, *, loop: str | LoopSpec = REFERENCE_LOOP,
             tracker_factory: TrackerFactory | None = None, tracker: str = "reference",
             async_backend: str = "asyncio") -> TaskRun:
    """Work ``scenario``'s task through ``loop`` (:data:`REFERENCE_LOOP`, a catalogued loop's name, or a loop of
    yours resolved by :func:`ctxsim.loops.resolve_loop`) against the fake agent, judged by the loop checks.
    A loop of yours runs with the policy it declares (else the scenario's, handed to it in the rig) and the prompts
    it declares (else design 003's). ``tracker_factory`` makes the tracker the loop is given (default: the reference
    tracker), ``tracker`` names it in reports. Raises ``ValueError`` for a scenario without a task (a
    :class:`~ctxsim.scenario.SessionScenario`: :func:`ctxsim.runner.run_scenario` runs those)."""
    if not isinstance(scenario, TaskScenario):
        raise ValueError(f"ctxsim: run_task: scenario {scenario.name!r} has no task")
    spec = scenario.task
    setup: dict[str, Any] = {"checkpoints": spec.checkpoints, "policy": spec.policy, "max_restarts": spec.max_restarts,
                             "include_partial_messages": spec.partial}
    if isinstance(loop, LoopSpec):
        function, name = loop.loop, loop.name
        setup.update(policy=loop.policy or spec.policy, prompts=loop.prompts)
    else:
        function, name = (reference_loop if loop == REFERENCE_LOOP else LOOPS[loop].loop), loop
    if tracker_factory is not None:
        setup["tracker_factory"] = tracker_factory
    report = run_loop(function, spec.task, async_backend=async_backend, name=name, **setup)
    return TaskRun(scenario, name, tracker, report)


def corpus_loop_verdicts(scenarios: Iterable[Scenario], loop: LoopSpec) -> dict[str, tuple[bool, str]]:
    """What ``pytest --ctx-scenarios --ctx-loop`` says of a restart loop on each task scenario (the others are left
    out): ``scenario name -> (every invariant kept, what it did)``. The loop counterpart of
    :func:`ctxsim.runner.corpus_verdicts`."""
    return {s.name: run_task(s, loop=loop).verdict("kept") for s in scenarios if isinstance(s, TaskScenario)}


def explain_task(run: TaskRun, head: str, *, verbosity: int = 0, shown: Callable[[Path], str] = str,
                 expectations: bool = True) -> str:
    """What a reader needs when ``run`` did not do what was expected: ``head``, with ``verbosity`` > 0 the
    scenario's source and description, every unmet expectation with its ``file:line`` (when ``expectations``:
    they are the reference loop's, not a catalogued loop's), the broken invariants, the summary and the timeline
    (every turn with ``verbosity`` >= 2)."""
    scenario = run.scenario
    lines = [head]
    if verbosity > 0:
        lines += [f"source: {scenario.source}"] if scenario.source else []
        lines += [f"description: {scenario.description}"] if scenario.description else []
    if expectations:
        where = shown(scenario.path)
        lines += [f"{where}:{p.line}: {p.message}" for p in run.problems()]
    if not run.report.ok:
        lines.append(str(run.report))
    lines += [run.summary(), run.timeline(full=verbosity >= 2)]
    return "\n".join(lines)
