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

from ..trackers import AnyTrackerFactory, make_tracker

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

__all__ = ["FuzzResult", "Reproduction", "fuzz", "fuzz_workers", "reproduce_command", "write_scenario"]


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

    def timing(self) -> str:
        """``(first failing: #22, 0.29 s in; run 0.54 s)``: when the first failure came, and the whole run."""
        return f"(first failing: #{self.found_at}, {self.found_after or 0:.2f} s in; run {self.seconds:.2f} s)"


def fuzz(factory: AnyTrackerFactory, *, examples: int = 200, tolerance: int = 0, seed: int = 0,
         progress: TextIO | None = sys.stderr, database: ExampleDatabase | None = None,
         key: str = "") -> FuzzResult:
    """Check fresh trackers from ``factory`` on up to ``examples`` generated streams; shrink the first failure.

    Deterministic for a given ``seed`` and the same code: besides the seed, Hypothesis draws some values from the
    literals of the local (not installed) modules loaded when it runs, such as the tracker's own module, so editing
    or importing one may change the streams. A tracker that raises counts as failing (its report says where).

    With a ``database``, the run first replays what it holds under this run's key (``key``: the tracker as named on
    the command line; the tolerance is added), and the shrunk counterexample is saved there.
    """
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings

    from ..check import run_tracker_parsed
    from ..runner import freeze_imports, thaw_imports
    from ..strategies import message_streams, scenario_text

    result = FuzzResult(0)
    started = time.monotonic()
    step = max(1, examples // 10)
    failing: list[tuple[Any, str]] = []

    def check(stream: Any) -> None:
        result.examples += 1
        if progress is not None and result.examples % step == 0 and not failing:
            print(f"ctxsim fuzz: {result.examples} streams checked, {time.monotonic() - started:.1f}s",
                  file=progress)
        tracker = make_tracker(factory, stream.session)
        report = run_tracker_parsed(tracker, stream.session, stream.scripts, tolerance=tolerance, faults=stream.plan)
        if not report.ok:
            if not failing:
                result.found_at, result.found_after = result.examples, time.monotonic() - started
            failing.append((stream, str(report)))
            raise AssertionError(report.summary())

    # The database key: this function's source (so one ctxsim version), the tracker and the tolerance.
    check._hypothesis_internal_add_digest = f"{key}|tolerance={tolerance}".encode()  # type: ignore[attr-defined]
    phases = (Phase.generate, Phase.shrink) if database is None else (Phase.reuse, Phase.generate, Phase.shrink)
    # settings outside @seed: @seed alone turns the database off, settings applied after it give it back
    prop = settings(max_examples=examples, deadline=None, database=database, print_blob=False,
                    report_multiple_bugs=False, suppress_health_check=list(HealthCheck), phases=phases)(
        hypothesis_seed(seed)(given(message_streams())(check)))

    froze = freeze_imports()  # the imports out of the cyclic collector's way for the loop
    try:
        prop()
    except AssertionError:
        stream, report = failing[-1]  # Hypothesis replays the shrunk example last
        result.stream = stream
        result.scenario = scenario_text(stream)
        result.report = report
    finally:
        if froze:
            thaw_imports()
    result.seconds = time.monotonic() - started
    return result


def _worker(spec: str, search: list[str], examples: int, tolerance: int, seed: int, db: str | None) -> FuzzResult:
    """One worker process of :func:`fuzz_workers`: resolve the tracker and open the database here (neither
    crosses a process boundary), then fuzz."""
    from ..strategies import example_database
    from ..trackers import resolve

    database = example_database(db) if db else None
    return fuzz(resolve(spec, search=search).factory, examples=examples, tolerance=tolerance, seed=seed,
                progress=None, database=database, key=spec)


def fuzz_workers(spec: str, *, workers: int, examples: int = 200, tolerance: int = 0, seed: int = 0,
                 db: str | None = None, search: Sequence[str] = (), timeout: float = 3600.0) -> FuzzResult:
    """Fuzz the tracker ``spec`` (a catalogue name or ``module:factory``, imported from ``search`` in each worker)
    in ``workers`` processes at once, worker ``i`` with seed ``seed + i`` and its share of ``examples``, all on the
    example database ``db`` (a ``redis://`` URL or a directory: :func:`ctxsim.strategies.example_database`).

    Returns the result of the first worker (by number, so the same seeds give the same answer) that found a
    counterexample, else the last; ``examples`` is the sum over the workers. Every worker is waited for, at most
    ``timeout`` seconds in all, then stopped (``TimeoutError`` says so).
    """
    import multiprocessing

    share = [examples // workers + (1 if i < examples % workers else 0) for i in range(workers)]
    jobs = [(spec, list(search), n, tolerance, seed + i, db) for i, n in enumerate(share) if n > 0]
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no state of the caller's threads
    started = time.monotonic()
    with context.Pool(len(jobs)) as pool:  # leaving it terminates every worker, also on error or interrupt
        pending = pool.starmap_async(_worker, jobs)
        try:
            results: list[FuzzResult] = pending.get(timeout)
        except multiprocessing.TimeoutError:
            raise TimeoutError(f"ctxsim: fuzz: the {len(jobs)} workers were still running after {timeout:g} s; "
                               f"stopped") from None
    found = next((r for r in results if r.scenario is not None), results[-1])
    found.examples = sum(r.examples for r in results)
    found.seconds = time.monotonic() - started
    return found


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
    """The directory the tracker's module was found from (the fuzz run's working directory), for
    ``module:factory`` specs."""

    def command(self) -> str:
        """The ``ctxsim fuzz`` command that found it."""
        return (f"ctxsim fuzz --tracker {shlex.quote(self.tracker)} --tolerance {self.tolerance} --seed {self.seed} "
                f"--examples {self.examples}")


def write_scenario(result: FuzzResult, path: Path, reproduction: Reproduction | None = None) -> Path:
    """Write the counterexample of ``result`` to ``path`` (its directory is created). With ``reproduction``, the
    file carries the run's options: ``source`` is the fuzz command, ``expect`` its tolerance and that the tracker
    under test must track the stream (so the reproduction fails, as the fuzz run did), the header the exact command
    that reruns it (:func:`reproduce_command`)."""
    assert result.scenario is not None, "ctxsim: fuzz found nothing to write"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = result.scenario
    if reproduction is not None and result.stream is not None:
        from ..strategies import scenario_text

        comment = (f"Found by: {reproduction.command()} (backend {reproduction.backend}).\n"
                   f"Reproduce it, from any directory:\n  {reproduce_command(path, reproduction)}")
        text = scenario_text(result.stream, source=reproduction.command(), comment=comment) + (
            f"expect:\n  tolerance: {reproduction.tolerance}\n  reference: pass\n  ctx_tracker: pass\n")
    path.write_text(text, encoding="utf-8")
    return path


def reproduce_command(path: Path, reproduction: Reproduction) -> str:
    """The command that runs exactly the scenario at ``path`` against the tracker, from any directory: the file
    alone is collected (given by absolute path), its directory is the rootdir and the conftest boundary (no other
    ``conftest.py`` is loaded), no ini file is read (``-c`` the null device: no other project's ``addopts``), and no
    cache is written; a ``module:factory`` tracker is found from the directory the fuzz run found it from."""
    target = path.resolve()
    where = target.parent
    parts = ["pytest", "-p", "no:cacheprovider", f"--rootdir={where}", f"--confcutdir={where}", "-c", os.devnull,
             f"--ctx-backend={reproduction.backend}", f"--ctx-scenarios={target}",
             f"--ctx-tracker={reproduction.tracker}", str(target)]
    command = " ".join(shlex.quote(p) for p in parts)
    if reproduction.search and ":" in reproduction.tracker:
        command = f"PYTHONPATH={shlex.quote(reproduction.search)} {command}"
    return command
