"""``ctxsim fuzz --loop``: generated tasks and faults against a restart loop until an invariant breaks.

Hypothesis draws task scenarios (:func:`ctxsim.strategies.task_scenarios`: steps and sizes, traced or untraced work,
compactions, cleared tool results, garbled usage, every checkpoint reply the fake agent knows, windows of 200k and
1M), drawn for the policy the loop declares when it declares one. Each is worked through by the loop under test
against the fake agent, with the reference tracker (or the one given), and judged by every invariant of
:mod:`ctxsim.loops` (:data:`ctxsim.loops.INVARIANTS`), exactly as ``pytest --ctx-scenarios --ctx-loop`` judges a
task scenario of the corpus. The first failure is shrunk and written as a task scenario file that reproduces it
from any directory (:meth:`LoopReproduction.pytest_command`); the report is the corpus's: the broken invariants,
the summary and the turn timeline (:func:`ctxsim.runner.explain_task`).

From a test, the same property (:func:`tasks_for`, :func:`check_loop_task`)::

    from hypothesis import given, settings
    from ctxsim.fuzz import check_loop_task, tasks_for
    from my_agent import restart_loop

    @settings(max_examples=200, deadline=None)
    @given(tasks_for(restart_loop))
    def test_restart_loop_keeps_every_invariant(task):
        check_loop_task(restart_loop, task)
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..loops import LoopSpec, declared_policy, declared_prompts
from ..processes import write_whole
from ..runner import TaskRun, explain_task, run_task
from ..strategies import GeneratedTask, task_scenarios
from ..trackers import TrackerSpec, make_tracker
from ._hypothesis import key_database_entries
from ._independent import independent_backend
from ._pool import in_workers, worker_database

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase
    from hypothesis.strategies import SearchStrategy

__all__ = ["LoopFuzzResult", "LoopReproduction", "LoopTaskFailed", "check_loop_task", "fuzz_loop",
           "fuzz_loop_workers", "loop_spec", "tasks_for", "write_loop_scenario"]

AnyLoop = LoopSpec | Callable[..., Any]
"""A loop as a resolved spec (:func:`ctxsim.loops.resolve_loop`) or the function itself."""


class LoopTaskFailed(AssertionError):
    """A restart loop broke an invariant on a generated task; the message is the corpus's report of the run."""

    def __init__(self, message: str, run: TaskRun) -> None:
        super().__init__(message)
        self.run = run


LoopTaskFailed.__module__ = "ctxsim.fuzz"


def loop_spec(loop: AnyLoop) -> LoopSpec:
    """``loop`` as a :class:`~ctxsim.loops.LoopSpec`, with the policy and prompts it declares."""
    if isinstance(loop, LoopSpec):
        return loop
    name = getattr(loop, "__name__", None) or type(loop).__name__
    return LoopSpec(f"{getattr(loop, '__module__', '?')}:{name}", name, loop, declared_policy(loop),
                    declared_prompts(loop))


def tasks_for(loop: AnyLoop, **knobs: Any) -> SearchStrategy[GeneratedTask]:
    """:func:`ctxsim.strategies.task_scenarios` for ``loop``: drawn for the policy it declares (a loop restarts by
    its own policy, so the generator's guarantees must hold for that one), else with policies drawn too."""
    return task_scenarios(policy=loop_spec(loop).policy, **knobs)


def _run(loop: LoopSpec, task: GeneratedTask, tracker: TrackerSpec | None) -> TaskRun:
    scenario = task.scenario
    made = None
    if tracker is not None and tracker.fed_messages is not None:
        made = partial(make_tracker, tracker.fed_messages, scenario.session)
    return run_task(scenario, loop=loop, tracker_factory=made, tracker=tracker.name if tracker else "reference")


def _explain(run: TaskRun, where: str, verbosity: int = 0) -> str:
    does = run.verdict("kept")[1]
    head = f"{where}: {run.loop} (tracker {run.tracker}) on generated task {run.scenario.name!r}: {does}"
    return explain_task(run, head, verbosity=verbosity, expectations=False)


def check_loop_task(loop: AnyLoop, task: GeneratedTask, *, tracker: TrackerSpec | None = None) -> TaskRun:
    """Work ``task`` through ``loop`` against the fake agent; raise :class:`LoopTaskFailed` (the broken invariants,
    the summary and the turn timeline, as the corpus prints them) unless it keeps every invariant. ``tracker``: the
    tracker the loop is given (default: the reference tracker)."""
    __tracebackhide__ = True
    run = _run(loop_spec(loop), task, tracker)
    if not run.report.ok:
        raise LoopTaskFailed(_explain(run, "ctxsim"), run)
    return run


@dataclass
class LoopFuzzResult:
    """What a loop fuzz run found."""

    examples: int
    """Tasks checked (shrinking included)."""
    task: GeneratedTask | None = None
    """The shrunk counterexample, or None when the loop kept every invariant on every task."""
    report: str = ""
    """The corpus's report of the loop on it (broken invariants, summary, timeline)."""
    broken: tuple[str, ...] = ()
    """The invariants it broke there."""
    found_at: int | None = None
    """Tasks checked up to and including the first failing one."""
    found_after: float | None = None
    """Seconds from the start of the run to the first failing task (before shrinking)."""
    seconds: float = 0.0
    """Seconds the whole run took, shrinking included."""

    def timing(self) -> str:
        """``(first failing: #22, 0.29 s in; run 0.54 s)``."""
        return f"(first failing: #{self.found_at}, {self.found_after or 0:.2f} s in; run {self.seconds:.2f} s)"


def fuzz_loop(loop: AnyLoop, *, examples: int = 200, seed: int = 0, tracker: TrackerSpec | None = None,
              progress: TextIO | None = sys.stderr, database: ExampleDatabase | None = None,
              key: str = "", independent: bool = True) -> LoopFuzzResult:
    """Work up to ``examples`` generated tasks through ``loop``; shrink the first that breaks an invariant.

    ``independent``: draw every task afresh (:mod:`ctxsim.fuzz`, the default) rather than with
    Hypothesis' default engine, which mostly mutates tasks already drawn.

    Deterministic for a given ``seed`` and the same code (as :func:`ctxsim.fuzz.fuzz`). With a ``database`` the
    run first replays what it holds under ``key`` (the loop and tracker as named on the command line) and saves the
    shrunk counterexample there. A loop that raises is judged like any other run (``termination``).
    """
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings

    from ..runner import freeze_imports, thaw_imports

    spec = loop_spec(loop)
    result = LoopFuzzResult(0)
    started = time.monotonic()
    step = max(1, examples // 10)
    failing: list[tuple[GeneratedTask, TaskRun]] = []

    def check(task: GeneratedTask) -> None:
        result.examples += 1
        if progress is not None and result.examples % step == 0 and not failing:
            print(f"ctxsim fuzz: {result.examples} tasks checked, {time.monotonic() - started:.1f}s", file=progress)
        run = _run(spec, task, tracker)
        if not run.report.ok:
            if not failing:
                result.found_at, result.found_after = result.examples, time.monotonic() - started
            failing.append((task, run))
            raise AssertionError(", ".join(sorted(run.report.broken)))

    key_database_entries(check, f"loop|{key or spec.spec}")
    phases = (Phase.generate, Phase.shrink) if database is None else (Phase.reuse, Phase.generate, Phase.shrink)
    prop = settings(max_examples=examples, deadline=None, database=database, print_blob=False,
                    backend=independent_backend() if independent else "hypothesis",
                    report_multiple_bugs=False, suppress_health_check=list(HealthCheck), phases=phases)(
        hypothesis_seed(seed)(given(tasks_for(spec))(check)))
    froze = freeze_imports()
    try:
        prop()
    except AssertionError:
        task, run = failing[-1]  # Hypothesis replays the shrunk example last
        result.task, result.broken = task, tuple(sorted(run.report.broken))
        result.report = _explain(run, "ctxsim fuzz")
    finally:
        if froze:
            thaw_imports()
    result.seconds = time.monotonic() - started
    return result


def _worker(spec: str, tracker: str | None, search: list[str], examples: int, seed: int,
            db: str | None) -> LoopFuzzResult:
    """One worker process of :func:`fuzz_loop_workers`: resolve the loop, the tracker and the database here."""
    from ..loops import resolve_loop
    from ..trackers import resolve

    database = worker_database(db)
    made = resolve(tracker, search=search) if tracker else None
    return fuzz_loop(resolve_loop(spec, search=search), examples=examples, seed=seed, tracker=made, progress=None,
                     database=database, key=f"{spec}|{tracker or 'reference'}")


def fuzz_loop_workers(spec: str, *, workers: int, tracker: str | None = None, examples: int = 200, seed: int = 0,
                      db: str | None = None, search: Sequence[str] = (), timeout: float = 3600.0) -> LoopFuzzResult:
    """Fuzz the loop ``spec`` (with the tracker spec ``tracker``) in ``workers`` processes, worker ``i`` with seed
    ``seed + i`` and its share of ``examples``, all on the example database ``db``; as
    :func:`ctxsim.fuzz.fuzz_workers` does for a tracker (the first worker by number that found a counterexample,
    else the last; every worker waited for, at most ``timeout`` seconds in all)."""
    return in_workers(_worker, lambda i, n: (spec, tracker, list(search), n, seed + i, db), workers=workers,
                      examples=examples, found=lambda r: r.task is not None, timeout=timeout)


@dataclass(frozen=True)
class LoopReproduction:
    """Every option of a loop fuzz run that shaped its verdict, written into the counterexample."""

    loop: str
    """The loop spec as given (``module:function`` or a catalogued loop)."""
    tracker: str | None = None
    """The tracker spec as given; None for the reference tracker."""
    seed: int = 0
    examples: int = 200
    search: str = ""
    """Where the loop's and the tracker's modules were found from (:func:`ctxsim.fuzz.import_root` of each, else
    the fuzz run's working directory), joined by ``os.pathsep``: the reproduction's ``PYTHONPATH``."""

    def command(self) -> str:
        """The ``ctxsim fuzz`` command that found it."""
        tracker = f" --tracker {shlex.quote(self.tracker)}" if self.tracker else ""
        return (f"ctxsim fuzz --loop {shlex.quote(self.loop)}{tracker} --seed {self.seed} "
                f"--examples {self.examples}")

    def pytest_command(self, path: Path) -> str:
        """The command that runs exactly the scenario at ``path`` against the loop, from any directory: the file
        alone, its directory the rootdir and conftest boundary, no ini file, no cache; the loop's (and tracker's)
        module found from :attr:`search` through ``PYTHONPATH``."""
        target = path.resolve()
        where = target.parent
        parts = ["pytest", "-p", "no:cacheprovider", f"--rootdir={where}", f"--confcutdir={where}", "-c",
                 os.devnull, "--ctx-backend=inprocess", f"--ctx-scenarios={target}", f"--ctx-loop={self.loop}"]
        if self.tracker:
            parts.append(f"--ctx-tracker={self.tracker}")
        command = " ".join(shlex.quote(p) for p in [*parts, str(target)])
        custom = ":" in self.loop or (self.tracker is not None and ":" in self.tracker)
        return f"PYTHONPATH={shlex.quote(self.search)} {command}" if self.search and custom else command


def write_loop_scenario(result: LoopFuzzResult, path: Path, reproduction: LoopReproduction) -> Path:
    """Write the counterexample of ``result`` to ``path`` (its directory created): the task scenario under the name
    it was run with (the agent's session ids derive from it), its header the command that found it and the one that
    reproduces it; ``expect.reference: pass`` (the reference loop keeps every invariant on it) and no other
    expectation (the numbers are for a person to work out). Written whole or not at all (:func:`write_scenario`)."""
    assert result.task is not None, "ctxsim: fuzz found nothing to write"
    comment = (f"{result.task.comment}\nFound by: {reproduction.command()}; broke {', '.join(result.broken)}.\n"
               f"Reproduce it, from any directory:\n  {reproduction.pytest_command(path)}")
    write_whole({path: result.task.text(source=reproduction.command(), comment=comment)}, who="ctxsim: fuzz")
    return path
