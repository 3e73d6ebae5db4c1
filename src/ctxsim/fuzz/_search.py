"""``ctxsim fuzz``: generated, faulted streams against a tracker until one breaks it, shrunk to a scenario file that
reproduces it through the real client (the :mod:`ctxsim.fuzz` face says how, and what the file carries)."""

from __future__ import annotations

import os
import shlex
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..processes import write_whole
from ..trackers import AnyTrackerFactory, make_tracker
from ._hypothesis import key_database_entries
from ._independent import independent_backend
from ._pool import in_workers, worker_database

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

    from ..check import Report

__all__ = ["FuzzResult", "Reproduction", "fuzz", "fuzz_workers", "import_root", "reproduce_command",
           "write_scenario"]


@dataclass
class FuzzResult:
    """What a fuzz run found."""

    examples: int
    """Streams checked (shrinking included)."""
    scenario: str | None = None
    """The shrunk counterexample as a scenario file's text, or None when nothing failed."""
    report: str = ""
    """The tracker's report on the shrunk counterexample."""
    found_at: int | None = None
    """Streams checked up to and including the first failing one (None when nothing failed)."""
    found_after: float | None = None
    """Seconds from the start of the run to the first failing stream (before shrinking)."""
    seconds: float = 0.0
    """Seconds the whole run took, shrinking included."""
    stream: Any = None
    """The shrunk counterexample (a :class:`ctxsim.strategies.MessageStream`), or None."""
    cause: Any = None
    """What the first failing stream's numbers are (a :class:`ctxsim.trackers.Reading`, a gauge's confusion, or
    None where none fits): shrinking kept it, so the counterexample shows the same bug."""
    shrink_stopped: float | None = None
    """Where shrinking was stopped at its time bound (:data:`SHRINK_SECONDS`), the seconds it had run; None when
    it ended on its own."""

    def timing(self) -> str:
        """``(first failing: #22, 0.29 s in; run 0.54 s)``: when the first failure came, and the whole run (and
        that shrinking was stopped at its bound, when it was)."""
        stopped = (f"; shrinking stopped at its {self.shrink_stopped:.0f} s bound, the counterexample may not be "
                   f"the smallest" if self.shrink_stopped is not None else "")
        return (f"(first failing: #{self.found_at}, {self.found_after or 0:.2f} s in; run {self.seconds:.2f} s"
                f"{stopped})")


def fuzz(factory: AnyTrackerFactory, *, examples: int = 200, tolerance: int = 0, seed: int = 0,
         progress: TextIO | None = sys.stderr, database: ExampleDatabase | None = None,
         key: str = "", shrink_seconds: float | None = None) -> FuzzResult:
    """Check fresh trackers from ``factory`` on up to ``examples`` generated streams; shrink the first failure.

    Streams are of shapes Claude Code produces (:func:`ctxsim.strategies.sessions`), with faults real on the surface
    the tracker reads and written into it (:func:`ctxsim.surfaces.carried_on`: the SDK stream, or for a statusline
    command the transcript and payload): a fault the tracker's input cannot carry is never drawn, and a stream
    holding one (a counterexample replayed from the database) never counts as failing, so shrinking drops it; after
    shrinking, every fault the counterexample still fails without, the same way, is dropped too (one that changes
    nothing the tracker reads on that stream). A counterexample shows the bug at its size: Hypothesis is steered
    towards larger errors (``target``), and a stream fails only where the tracker is off by more than the tolerance
    plus 1% of the window (:data:`MARGIN`) and, once one has, by more than half the first failing stream's error,
    so shrinking cannot reduce a large error to an off-by-one; only when no stream breaks that does a second pass
    look for smaller errors. A tracker that raises counts as failing (its report says where). The report's table
    names the likely cause (:func:`ctxsim.check.likely_causes`).

    Shrinking keeps the bug: a smaller stream counts as failing only where the formula its numbers fit
    (:func:`ctxsim.check.diagnose`; for a gauge, its confusion) is the first failing stream's, so the counterexample
    names the same cause (:attr:`FuzzResult.cause`). The first failure is the first stream whose failing numbers
    name a cause (a formula, a confusion, a crash or stall): a stream that fails only where nothing tells the
    tracker's formula (a zeroed error result it shows as 0, a point that is not knowable) is taken only when no
    stream of the run names one, in a second run over the same streams. It is bounded in time: past
    ``shrink_seconds`` (default :data:`SHRINK_SECONDS`) after the first failure no smaller stream is taken, the
    smallest so far is the counterexample, and :attr:`FuzzResult.shrink_stopped` (and :meth:`FuzzResult.timing`) say so.

    Deterministic for a given ``seed`` and the same code: besides the seed, Hypothesis draws some values from the
    literals of the local (not installed) modules loaded when it runs, such as the tracker's own module, so editing
    or importing one may change the streams.

    With a ``database``, the run first replays what it holds under this run's key (``key``: the tracker as named on
    the command line; the tolerance is added), and the shrunk counterexample is saved there.
    """
    from ..runner import freeze_imports, thaw_imports
    from ..strategies import scenario_text

    result = FuzzResult(0)
    started = time.monotonic()
    froze = freeze_imports()  # the imports out of the cyclic collector's way for the loop
    try:
        bound = SHRINK_SECONDS if shrink_seconds is None else shrink_seconds
        found = None
        for margin in (MARGIN, 0.0):  # the second margin only where every failure was small: look for those
            found, below, unnamed = _pass(factory, result, examples, tolerance, seed, progress, database, key,
                                          started, margin, bound, named=True)
            if found is None and unnamed:  # no failure named a cause: take the first of those that did not
                found, below, _ = _pass(factory, result, examples, tolerance, seed, progress, database, key,
                                        started, margin, bound, named=False)
            if found is not None or not below:
                break
    finally:
        if froze:
            thaw_imports()
    if found is not None:
        stream, report = found
        result.stream = stream
        result.scenario = scenario_text(stream)
        result.report = _explained(report, stream)
    result.seconds = time.monotonic() - started
    return result


MARGIN = 0.01
"""A fuzzed stream fails where the tracker is off by more than the tolerance plus this share of the window."""

SHRINK_SECONDS = 60.0
"""How long shrinking may run after the first failure before the smallest stream so far is taken."""


def _cause(report: Report, stream: Any) -> Any:
    """What ``report``'s failing numbers are, as shrinking compares it: the reading named
    (:func:`ctxsim.check.diagnose`), a gauge's confusion, or None where none fits (a crash, a stall)."""
    from ..check import Readings, diagnose, not_knowable

    if report.crash is not None or report.stall is not None or report.error is not None:
        return ("crash", report.how)
    confused = report.confusion
    if confused is not None:
        return confused
    diagnosis = diagnose(report, Readings(stream.scripts), exclude=not_knowable(report))
    return None if diagnosis is None else frozenset(diagnosis.ties)


def _same_cause(first: Any, other: Any) -> bool:
    """Two streams' causes (:func:`_cause`) name the same bug: the same confusion or crash, or readings in common
    (a smaller stream may tell fewer readings apart, never other ones)."""
    if isinstance(first, frozenset) and isinstance(other, frozenset):
        return bool(first & other)
    return bool(first == other)


def _pass(factory: AnyTrackerFactory, result: FuzzResult, examples: int, tolerance: int, seed: int,
          progress: TextIO | None, database: ExampleDatabase | None, key: str, started: float,
          margin: float, bound: float, *, named: bool) -> tuple[tuple[Any, Report] | None, int, int]:
    """One Hypothesis run: the shrunk failing ``(stream, report)`` (None: none failed by more than the tolerance
    plus ``margin`` of the window), how many streams failed by less, and how many failed by more with no cause
    named; shrinking keeps the first failure's cause and stops taking smaller streams ``bound`` seconds after it.
    ``named``: only a stream whose failure names a cause (:func:`_cause`) counts as the first failure, so the
    counterexample shows what the tracker's numbers are wherever any stream of the run could."""
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings, target

    from ..check import run_tracker_parsed
    from ..strategies import fault_plans, message_streams
    from ..surfaces import carried_on

    step = max(1, examples // 10)
    failing: list[tuple[Any, Report]] = []
    below = [0]
    unnamed = [0]
    floor = [0]
    """Half the first failing stream's error, once there is one: what shrinking keeps the error above (a stream
    that passed before was below it, so every verdict stays the same)."""
    first: dict[str, Any] = {}
    """The first failure's cause and when it came."""

    def check(stream: Any) -> None:
        result.examples += 1
        if progress is not None and result.examples % step == 0 and not failing:
            print(f"ctxsim fuzz: {result.examples} streams checked, {time.monotonic() - started:.1f}s",
                  file=progress)
        if any(not carried_on(f.name) & reads for f in stream.plan.faults):
            return  # a fault the tracker's input cannot carry: never the counterexample
        tracker = make_tracker(factory, stream.session)
        report = run_tracker_parsed(tracker, stream.session, stream.scripts, tolerance=tolerance, faults=stream.plan)
        if report.ok:
            return
        worst = _worst(report)
        target(float(min(worst, stream.session.window)), label="tokens off")
        if worst <= max(tolerance + margin * stream.session.window, floor[0]):
            below[0] += 0 if failing else 1
            return
        if not failing:
            cause = _cause(report, stream)
            if named and cause is None:
                unnamed[0] += 1
                return  # a failure that names nothing is the counterexample only where none names a cause
            result.found_at, result.found_after = result.examples, time.monotonic() - started
            floor[0] = worst // 2 if margin else 0
            first.update(cause=cause, at=time.monotonic())
            result.cause = cause
        elif time.monotonic() - first["at"] > bound:
            if result.shrink_stopped is None:
                result.shrink_stopped = bound
                if progress is not None:
                    print(f"ctxsim fuzz: shrinking stopped at its {bound:.0f} s bound; the smallest stream so far is "
                          f"the counterexample", file=progress)
            if stream.scripts != failing[-1][0].scripts:
                return  # past the bound only the smallest so far fails (Hypothesis replays it last)
        elif not _same_cause(first["cause"], _cause(report, stream)):
            return  # another bug: shrinking keeps the first one's
        failing.append((stream, report))
        raise AssertionError(report.summary())

    # The database key: this function's source (so one ctxsim version), the tracker and the tolerance.
    key_database_entries(check, f"{key}|tolerance={tolerance}")
    phases = (Phase.generate, Phase.target, Phase.shrink) if database is None else (
        Phase.reuse, Phase.generate, Phase.target, Phase.shrink)
    reads = _reads(factory)
    streams = message_streams(faults=fault_plans(faults=_faults(factory, reads)))
    # settings outside @seed: @seed alone turns the database off, settings applied after it give it back
    prop = settings(max_examples=examples, deadline=None, database=database, print_blob=False,
                    report_multiple_bugs=False, suppress_health_check=list(HealthCheck), phases=phases,
                    backend=independent_backend())(
        hypothesis_seed(seed)(given(streams)(check)))
    try:
        prop()
    except AssertionError:  # Hypothesis replays the shrunk example last
        if result.shrink_stopped is not None:
            return failing[-1], below[0], unnamed[0]
        bar = max(tolerance + margin * failing[-1][0].session.window, floor[0])
        return _without_idle_faults(failing[-1], factory, result, tolerance, bar, first["cause"]), below[0], unnamed[0]
    return None, below[0], unnamed[0]


def _without_idle_faults(found: tuple[Any, Report], factory: AnyTrackerFactory, result: FuzzResult, tolerance: int,
                         bar: float, cause: Any) -> tuple[Any, Report]:
    """``found`` (the shrunk failing stream and its report) without every fault it still fails without, by more
    than ``bar`` tokens and with the same ``cause``: a fault that changes nothing the tracker reads on this stream
    (a replay with no later call to follow, a fault real where the tracker does not look) is not part of the bug.
    Hypothesis cannot drop a fault from the middle of a plan (its size and its picks shrink apart), so each is
    tried alone, until none can go."""
    from ..check import run_tracker_parsed
    from ..faults import FaultPlan, apply
    from ..strategies import MessageStream
    from ..wire import render

    stream, report = found
    dropped = True
    while dropped:
        dropped = False
        for index in range(len(stream.plan.faults)):
            plan = FaultPlan(stream.plan.faults[:index] + stream.plan.faults[index + 1:], stream.plan.seed)
            smaller = MessageStream(stream.session, plan, stream.partial, tuple(
                apply(plan, render(stream.session, include_partial_messages=stream.partial))))
            result.examples += 1
            other = run_tracker_parsed(make_tracker(factory, smaller.session), smaller.session, smaller.scripts,
                                       tolerance=tolerance, faults=plan)
            if not other.ok and _worst(other) > bar and _same_cause(cause, _cause(other, smaller)):
                stream, report, dropped = smaller, other, True
                break
    return stream, report


def _worst(report: Report) -> int:
    """How far off the tracker is at its worst point, in tokens (a crash, a stall or no estimate where the truth is
    knowable: as far as can be)."""
    if report.crash is not None or report.stall is not None or report.error is not None:
        return sys.maxsize
    return max((sys.maxsize if p.error is None else abs(p.error) for p in report.failures), default=0)


def _reads(factory: AnyTrackerFactory) -> frozenset[str]:
    """The surfaces a tracker from ``factory`` reads (:func:`ctxsim.trackers.feeding`)."""
    from ..trackers import feeding

    return feeding(make_tracker(factory)).reads


def _faults(factory: AnyTrackerFactory, reads: frozenset[str]) -> list[str]:
    """The faults a tracker from ``factory`` meets, in the registry's order: those real on the surfaces it
    ``reads`` and written into one of them (:func:`ctxsim.surfaces.carried_on`). A gauge whose number is not tokens
    does not meet ``model_switch``, a switch to a model whose name says nothing of its window: no stream tells a
    gauge that window before the next result; the world's own ``/model`` switches
    (:func:`ctxsim.strategies.sessions`) test the denominator instead."""
    from ..check import loop_fitness
    from ..faults import REGISTRY
    from ..surfaces import carried_on

    gauge = loop_fitness(make_tracker(factory)) is not None
    return [name for name in REGISTRY if carried_on(name) & reads and not (gauge and name == "model_switch")]


def _explained(report: Report, stream: Any) -> str:
    """``report`` as the fuzz run prints it: the summary, the timeline with the likely cause, the diagnosis."""
    from ..check import likely_causes

    likely = likely_causes(report, lambda: list(stream.scripts)) if report.failures else None
    table = [report.table(likely=likely)] if report.points else []
    return "\n".join([report.summary(), *table, *report.diagnosis()])


def _worker(spec: str, search: list[str], examples: int, tolerance: int, seed: int, db: str | None,
            env: tuple[str, ...] = ()) -> FuzzResult:
    """One worker process of :func:`fuzz_workers`: resolve the tracker and open the database here (neither
    crosses a process boundary), then fuzz."""
    from ..trackers import passed_environment, resolve

    database = worker_database(db)
    tracker = resolve(spec, search=search, env=passed_environment(env))
    return fuzz(tracker.factory, examples=examples, tolerance=tolerance, seed=seed, progress=None, database=database,
                key=spec)


def fuzz_workers(spec: str, *, workers: int, examples: int = 200, tolerance: int = 0, seed: int = 0,
                 db: str | None = None, search: Sequence[str] = (), timeout: float = 3600.0,
                 env: Sequence[str] = ()) -> FuzzResult:
    """Fuzz the tracker ``spec`` (a catalogue name or ``module:factory``, imported from ``search`` in each worker)
    in ``workers`` processes at once, worker ``i`` with seed ``seed + i`` and its share of ``examples``, all on the
    example database ``db`` (a ``redis://`` URL or a directory: :func:`ctxsim.strategies.example_database`).
    ``env``: the variables passed through to a command, by name (:func:`ctxsim.trackers.passed_environment`).

    Returns the result of the first worker (by number, so the same seeds give the same answer) that found a
    counterexample, else the last; ``examples`` is the sum over the workers. Every worker is waited for, at most
    ``timeout`` seconds in all, then stopped (``TimeoutError`` says so).
    """
    return in_workers(_worker, lambda i, n: (spec, list(search), n, tolerance, seed + i, db, tuple(env)),
                      workers=workers, examples=examples, found=lambda r: r.scenario is not None, timeout=timeout)


@dataclass(frozen=True)
class Reproduction:
    """Every option of a fuzz run that shaped its verdict, to write into the counterexample."""

    tracker: str
    """The tracker spec as given (a catalogue name or ``module:factory``)."""
    tolerance: int = 0
    seed: int = 0
    examples: int = 200
    backend: str = "inprocess"
    """How the reproduction plays the stream (``--ctx-backend``); the fuzzer's parser path gives the verdict the
    in-process client gives."""
    search: str = ""
    """The directory the tracker's module was found from (:func:`import_root`: an entry of the ``PYTHONPATH`` or the
    fuzz run's working directory), for ``module:factory`` specs."""
    cwd: str = ""
    """The directory a ``cmd:`` or ``stream:`` command ran in (the fuzz run's working directory): the reproduction
    runs it there, so a relative ``./gauge`` or ``node bin/gauge.mjs`` is found from any directory."""
    env: tuple[str, ...] = ()
    """The variables passed through to a command (``--env``), by name: the reproduction passes the same names."""

    def command(self) -> str:
        """The ``ctxsim fuzz`` command that found it."""
        env = "".join(f" --env {shlex.quote(name)}" for name in self.env)
        return (f"ctxsim fuzz --tracker {shlex.quote(self.tracker)} --tolerance {self.tolerance} --seed {self.seed} "
                f"--examples {self.examples}{env}")


def write_scenario(result: FuzzResult, path: Path, reproduction: Reproduction | None = None) -> Path:
    """Write the counterexample of ``result`` to ``path`` (its directory is created). With ``reproduction``, the
    file carries the run's options: ``source`` is the fuzz command, ``expect`` its tolerance and that the tracker
    under test must track the stream (so the reproduction fails, as the fuzz run did), the header the exact command
    that reruns it (:func:`reproduce_command`). The file is written whole or not at all: a full disk or a target that
    is not a file raises :class:`OSError` with one ``ctxsim:`` line, and leaves no partial file."""
    assert result.scenario is not None, "ctxsim: fuzz found nothing to write"
    text = result.scenario
    if reproduction is not None and result.stream is not None:
        from ..strategies import scenario_text

        comment = (f"Found by: {reproduction.command()} (backend {reproduction.backend}).\n"
                   f"Reproduce it, from any directory:\n  {reproduce_command(path, reproduction)}")
        text = scenario_text(result.stream, source=reproduction.command(), comment=comment) + (
            f"expect:\n  tolerance: {reproduction.tolerance}\n  reference: pass\n  ctx_tracker: pass\n")
    write_whole({path: text}, who="ctxsim: fuzz")
    return path


def import_root(spec: str) -> str:
    """The directory the module of ``spec`` (``module:factory``, already imported) was found from: the ``sys.path``
    entry (the ``PYTHONPATH``, the working directory) its top-level package sits in, absolute; empty for a module
    installed in the environment or of ctxsim itself (importable anywhere) or a spec without a module."""
    import sysconfig

    name = spec.partition(":")[0] if ":" in spec and not spec.startswith(("cmd", "stream")) else ""
    if name.partition(".")[0] == "ctxsim":
        return ""  # ctxsim's own modules (its mutants): importable wherever ctxsim is
    module = sys.modules.get(name)
    where = getattr(module, "__file__", None) if module is not None else None
    if not where:
        return ""
    path = Path(where).resolve()
    depth = name.count(".") + (2 if path.name == "__init__.py" else 1)
    root = path.parents[depth - 1]
    installed = {Path(p).resolve() for k, p in sysconfig.get_paths().items() if k in ("purelib", "platlib")}
    return "" if root in installed else str(root)


def reproduce_command(path: Path, reproduction: Reproduction) -> str:
    """The command that runs exactly the scenario at ``path`` against the tracker, from any directory: the file
    alone is collected (given by absolute path), its directory is the rootdir and the conftest boundary (no other
    ``conftest.py`` is loaded), no ini file is read (``-c`` the null device: no other project's ``addopts``), and no
    cache is written; a ``module:factory`` tracker is found from the directory the fuzz run found it from, a
    ``cmd:`` or ``stream:`` command runs in the directory it ran in (its ``cwd`` option) with the same variables
    passed through (``--ctx-env``)."""
    from ..trackers import anchored_spec

    target = path.resolve()
    where = target.parent
    tracker = anchored_spec(reproduction.tracker, reproduction.cwd) if reproduction.cwd else reproduction.tracker
    parts = ["pytest", "-p", "no:cacheprovider", f"--rootdir={where}", f"--confcutdir={where}", "-c", os.devnull,
             f"--ctx-backend={reproduction.backend}", f"--ctx-scenarios={target}", f"--ctx-tracker={tracker}",
             *(f"--ctx-env={name}" for name in reproduction.env), str(target)]
    command = " ".join(shlex.quote(p) for p in parts)
    if reproduction.search and ":" in reproduction.tracker and not reproduction.tracker.startswith(("cmd", "stream")):
        command = f"PYTHONPATH={shlex.quote(reproduction.search)} {command}"
    return command
