"""``ctxsim fuzz``: generated, faulted streams against a tracker until one breaks it, shrunk to a scenario file.

Hypothesis draws sessions and fault plans (:func:`ctxsim.strategies.message_streams`), each is checked with the
SDK's parser against the truth (:func:`ctxsim.check.run_tracker_parsed`, the fast path), and the first failure is
shrunk to a few calls. The shrunk stream is written as a scenario file that reproduces it through the real client::

    pytest --ctx-scenarios=ctxsim-fuzz-mytracker.yaml --ctx-tracker=mytracker:MyTracker

For long campaigns, write the same property as a ``@given`` test (README) and run it under HypoFuzz or
``pytest -n``; this command is the quick way to ask "can ctxsim break my tracker?".
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .trackers.base import AnyTrackerFactory

__all__ = ["FuzzResult", "fuzz"]


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

    def timing(self) -> str:
        """``(first failing: #22, 0.29 s in; run 0.54 s)``: when the first failure came, and the whole run."""
        return f"(first failing: #{self.found_at}, {self.found_after or 0:.2f} s in; run {self.seconds:.2f} s)"


def fuzz(factory: AnyTrackerFactory, *, examples: int = 200, tolerance: int = 0, seed: int = 0,
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
        report = run_tracker_parsed(factory(), stream.session, stream.scripts, tolerance=tolerance, faults=stream.plan)
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
        result.scenario = scenario_text(stream)
        result.report = report
    finally:
        if froze:
            thaw_imports()
    result.seconds = time.monotonic() - started
    return result


def write_scenario(result: FuzzResult, path: Path) -> Path:
    """Write the counterexample of ``result`` to ``path`` (its directory is created)."""
    assert result.scenario is not None, "ctxsim: fuzz found nothing to write"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(result.scenario, encoding="utf-8")
    return path
