"""``ctxsim fuzz``: generated, faulted streams against a tracker until one breaks it, shrunk to a scenario file.

Hypothesis draws sessions and fault plans (:func:`ctxsim.strategies.message_streams`), each is checked with the
SDK's parser against the truth (:func:`ctxsim.check.run_tracker_parsed`, the fast path), and the first failure is
shrunk to a few calls. The shrunk stream is written as a scenario file that carries every option that shaped the
verdict (the tolerance in ``expect.tolerance``, the window in ``world``, the tracker spec, seed and backend in
``source`` and the header) and reproduces it through the real client, from any directory, beside any broken test or
conftest (:func:`reproduce_command`)::

    pytest -p no:cacheprovider --rootdir=DIR --confcutdir=DIR -c /dev/null --ctx-backend=inprocess \
        --ctx-scenarios=DIR/ctxsim-fuzz-mytracker.yaml --ctx-tracker=mytracker:MyTracker DIR/ctxsim-fuzz-mytracker.yaml

For long campaigns, write the same property as a ``@given`` test (README) and run it under HypoFuzz or
``pytest -n``; this command is the quick way to ask "can ctxsim break my tracker?".
"""

from __future__ import annotations

import os
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .trackers.base import TrackerFactory

__all__ = ["FuzzResult", "Reproduction", "fuzz", "reproduce_command", "write_scenario"]


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


def fuzz(factory: TrackerFactory, *, examples: int = 200, tolerance: int = 0, seed: int = 0,
         progress: TextIO | None = sys.stderr) -> FuzzResult:
    """Check fresh trackers from ``factory`` on up to ``examples`` generated streams; shrink the first failure.

    Deterministic for a given ``seed`` and the same code: besides the seed, Hypothesis draws some values from the
    literals of the local (not installed) modules loaded when it runs, such as the tracker's own module, so editing
    or importing one may change the streams. A tracker that raises counts as failing (its report says where).
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hypothesis_seed

    from ._lazy import freeze_imports, thaw_imports
    from .check import run_tracker_parsed
    from .strategies import message_streams, scenario_text

    result = FuzzResult(0)
    started = time.monotonic()
    step = max(1, examples // 10)
    failing: list[tuple[Any, str]] = []

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, print_blob=False, report_multiple_bugs=False,
              suppress_health_check=list(HealthCheck), phases=(Phase.generate, Phase.shrink))
    @given(message_streams())
    def prop(stream: Any) -> None:
        result.examples += 1
        if progress is not None and result.examples % step == 0 and not failing:
            print(f"ctxsim fuzz: {result.examples} streams checked, {time.monotonic() - started:.1f}s",
                  file=progress)
        report = run_tracker_parsed(factory(), stream.session, stream.scripts, tolerance=tolerance)
        if not report.ok:
            if not failing:
                result.found_at, result.found_after = result.examples, time.monotonic() - started
            failing.append((stream, str(report)))
            raise AssertionError(report.summary())

    froze = freeze_imports()  # the imports' objects out of the cyclic collector's way for the loop (ctxsim._lazy)
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
        from .strategies import scenario_text

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
