"""The fuzz's counterexample shows the tracker's own bug: for every catalogue entry whose numbers a reading says, and
every port of a real tracker, the first counterexample (seed 0) names the entry's own reading, shrinking having kept
it (``ctxsim.fuzz.fuzz``: the cause of the first failing stream is the cause of every smaller one it takes)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from ctxsim.check import Readings, diagnose, not_knowable, run_tracker_parsed
from ctxsim.faults import FaultPlan, apply_transcript
from ctxsim.fuzz import fuzz
from ctxsim.reference import ContextTracker
from ctxsim.tools.ports import PORTS
from ctxsim.trackers import Reading, make_tracker
from ctxsim.trackers.catalogue import CATALOGUE
from ctxsim.wire import render_transcript

SUBJECTS: list[tuple[str, Callable[..., Any], Reading]] = [
    *((f"entry {name}", e.factory, e.reading) for name, e in CATALOGUE.items() if e.reading is not None),
    *((f"port {p.name}", p.buggy, p.buggy_reading) for p in PORTS.values()),
]


@pytest.mark.slow
@pytest.mark.parametrize(("label", "factory", "reading"), SUBJECTS, ids=[s[0] for s in SUBJECTS])
def test_the_first_counterexample_names_the_tracker_s_own_cause(
        label: str, factory: Callable[..., Any], reading: Reading) -> None:
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


def test_a_failure_that_names_nothing_is_not_the_counterexample_where_a_later_one_names_the_cause() -> None:
    # seed 0: the first stream this tracker fails on has one failing point, a query's zeroed error result, which
    # every reading of the result shows as 0 (nothing tells the formula there); a later stream names it
    entry = CATALOGUE["result-usage-as-context"]
    result = fuzz(entry.factory, examples=200, seed=0, progress=None)
    assert result.stream is not None
    assert isinstance(result.cause, frozenset) and entry.reading in result.cause
    assert "your number is" in result.report and "zeroed_error_result" not in (result.scenario or "")


class _SevenSevens(ContextTracker):
    """Always 777,777 tokens: no reading of a short stream gives that, so no failure of it names a cause."""

    def context_tokens(self) -> int | None:
        return 777_777


def test_where_no_failure_names_a_cause_the_first_unnamed_one_is_the_counterexample() -> None:
    result = fuzz(_SevenSevens, examples=30, seed=0, progress=None)
    assert result.stream is not None and result.cause is None
    assert result.report.startswith("ctxsim: ") and "your number is" not in result.report


class _LastRowOfTheFile:
    """A statusline-style tracker in Python: the last assistant row of the session's file at each point, input +
    cache writes + cache reads off its top level, with no isSidechain or <synthetic> filter (ccline's formula)."""

    def estimate_points(self, session: Any, observations: Any, faults: Any) -> list[int | None]:
        from ctxsim.faults import apply_transcript
        from ctxsim.wire import render_transcript

        transcript = render_transcript(session)
        if faults is not None and faults.faults:
            transcript = apply_transcript(faults, transcript)
        at = {p.observation.label: p for p in transcript.points}
        out: list[int | None] = []
        for observation in observations:
            point = at[observation.label]
            file = transcript.files[point.transcript]
            usage = next((r["message"].get("usage") for r in reversed(file.rows[:point.rows.get(file.path, 0)])
                          if r.get("type") == "assistant" and isinstance(r["message"].get("usage"), dict)), None)
            out.append(None if usage is None else sum(
                v for k, v in usage.items() if k.endswith("input_tokens") and isinstance(v, int)))
        return out


@pytest.mark.parametrize("seed", [0, 1])
def test_a_statusline_tracker_s_counterexample_holds_only_faults_its_transcript_or_payload_carries(seed: int) -> None:
    # seed 1 drew duplicate_blocks beside usage_iterations when every fault declared on the transcript was drawn:
    # real there, but ctxsim writes it on the SDK stream only, so the tracker's input was the same without it
    result = fuzz(_LastRowOfTheFile, examples=100, seed=seed, progress=None)
    assert result.stream is not None
    plan = result.stream.plan
    session = result.stream.session
    plain = render_transcript(session)
    for fault in plan.faults:  # each, alone, changes what the tracker reads
        faulted = apply_transcript(FaultPlan((fault,), plan.seed), plain)
        rows = [f.rows for f in faulted.files.values()], [p.rows for p in faulted.points]
        assert rows != ([f.rows for f in plain.files.values()], [p.rows for p in plain.points]), fault.name
