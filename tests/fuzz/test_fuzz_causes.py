"""The fuzz's counterexample shows the tracker's own bug: for every catalogue entry whose numbers a reading says, and
every port of a real tracker, the first counterexample (seed 0) names the entry's own reading, shrinking having kept
it (``ctxsim.fuzz.fuzz``: the cause of the first failing stream is the cause of every smaller one it takes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ctxsim.check import Readings, diagnose, not_knowable, run_tracker_parsed
from ctxsim.fuzz import fuzz
from ctxsim.tools.ports import PORTS
from ctxsim.trackers import CATALOGUE, Reading, make_tracker

SUBJECTS: list[tuple[str, Callable[..., Any], Reading]] = [
    *((f"entry {name}", e.factory, e.reading) for name, e in CATALOGUE.items() if e.reading is not None),
    *((f"port {p.name}", p.buggy, p.buggy_reading) for p in PORTS.values()),
]


UNNAMED_SINCE_SETTINGS = frozenset({
    "entry mala-cache-read-pressure", "entry arbiter-msgid", "entry arbiter-uuid", "entry ccusage-fallback",
    "entry cumulative-statusline-totals", "entry ccusage-both-ids-totals", "entry result-usage-as-context",
    "entry accumulated-cache-read-capped", "entry every-row-totals", "entry ccstatusline-totals",
    "port openclaw-summed-prompt", "port hapi-latest-line"})
"""Since the tracker fuzz draws every stream afresh with Claude Code's settings, its first counterexample for these
(seed 0) is a stream whose only failing point is a query's zeroed error result, where the diagnosis names no cause:
the shrink keeps the cause only once one is named. Known, and expected to fail that way until it is fixed."""


@pytest.mark.slow
@pytest.mark.parametrize(("label", "factory", "reading"), SUBJECTS, ids=[s[0] for s in SUBJECTS])
def test_the_first_counterexample_names_the_tracker_s_own_cause(
        label: str, factory: Callable[..., Any], reading: Reading, request: pytest.FixtureRequest) -> None:
    if label in UNNAMED_SINCE_SETTINGS:
        request.applymarker(pytest.mark.xfail(raises=AssertionError, strict=False,
                                              reason="the first counterexample's only failing point is a zeroed "
                                                     "error result, which names no cause (see UNNAMED_SINCE_SETTINGS)"))
    result = fuzz(factory, examples=200, seed=0, progress=None)
    assert result.stream is not None, f"{label}: no counterexample in 200 streams"
    assert result.shrink_stopped is None, f"{label}: shrinking hit its time bound"
    stream = result.stream
    report = run_tracker_parsed(make_tracker(factory, stream.session), stream.session, stream.scripts,
                                faults=stream.plan)
    diagnosis = diagnose(report, Readings(stream.scripts), exclude=not_knowable(report))
    assert diagnosis is not None, f"{label}: no cause named on\n{result.scenario}\n{result.report}"
    assert reading in diagnosis.ties, f"{label}: {diagnosis.text()}\n{result.scenario}"


def test_shrinking_past_its_time_bound_keeps_the_smallest_so_far_and_says_so() -> None:
    result = fuzz(CATALOGUE["cumulative-statusline-totals"].factory, examples=50, seed=0, progress=None,
                  shrink_seconds=0.0)
    assert result.stream is not None and result.shrink_stopped == 0.0
    assert "shrinking stopped at its 0 s bound" in result.timing()
    assert result.report.startswith("ctxsim: cumulative-statusline-totals is off")
