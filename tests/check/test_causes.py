"""Likely causes (ctxsim.check._causes, ctxsim.check._fit): a failure is named by the formula its numbers fit."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage

from ctxsim.check import Readings, diagnose, features, likely_causes, run_tracker_parsed
from ctxsim.corpus import bundled_dir
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers import Reading
from ctxsim.trackers.catalogue import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]
COMPACTION_ENTRIES = {"claude-code-statusline", "ccstatusline"}


def _scenario(name: str) -> SessionScenario:
    scenario = load_scenario(bundled_dir() / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    return scenario


def _prompt(usage: dict[str, Any]) -> int:
    return int(usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
               + usage.get("cache_read_input_tokens", 0))


class SumsEveryRow:
    """Written here, not from the catalogue: every assistant message's prompt added to a running total."""

    def __init__(self) -> None:
        self.total = 0

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.usage:
            self.total += _prompt(message.usage)

    def context_tokens(self) -> int | None:
        return self.total


class ResultUsageAsContext:
    """Written here: the latest ResultMessage.usage read as the context (PR #298's bug), judged at every point."""

    def __init__(self) -> None:
        self.value: int | None = None

    def observe(self, message: object) -> None:
        if isinstance(message, ResultMessage) and message.usage:
            self.value = _prompt(message.usage)

    def context_tokens(self) -> int | None:
        return self.value


def _causes(scenario: SessionScenario, tracker: object) -> dict[int, str]:
    report = run_tracker_parsed(tracker, scenario.session, scenario.scripts(), tolerance=scenario.tolerance)
    assert not report.ok, "the tracker must fail here for its cause to be asked"
    return likely_causes(report, scenario.scripts)


@pytest.mark.parametrize("name", ["advisor-iterations", "gateway-inclusive-usage-aider-5516", "b12-input-tokens-only"])
def test_a_running_total_is_never_said_to_be_a_compaction_bug_where_there_is_none(name: str) -> None:
    scenario = _scenario(name)
    assert "compaction" not in features(scenario.scripts(), scenario.session.window)
    causes = _causes(scenario, SumsEveryRow())
    assert not [c for c in causes.values() if "/compact" in c or any(f"({e})" in c for e in COMPACTION_ENTRIES)]


def test_a_running_total_over_every_row_is_named_where_only_that_formula_fits() -> None:
    causes = _causes(_scenario("b04-summing-every-row"), SumsEveryRow())
    assert causes and all(c.startswith("your number is a running total over every main-chain assistant message "
                                       "(every row,") for c in causes.values()), causes
    assert all("every-row-totals" in c for c in causes.values())


def test_result_usage_read_as_the_context_is_named_on_the_scenario_of_its_report() -> None:
    scenario = _scenario("b08-result-usage-as-context")
    report = run_tracker_parsed(ResultUsageAsContext(), scenario.session, scenario.scripts(), tolerance=0)
    diagnosis = diagnose(report, Readings(scenario.scripts()))
    assert diagnosis is not None and not diagnosis.partial
    assert diagnosis.reading == Reading("result")
    assert "result-usage-as-context" in diagnosis.examples
    assert diagnosis.text().startswith("your number is the latest result message's usage: input + cache writes + "
                                       "cache reads, which Claude Code sums over the query's calls")


def test_a_near_miss_is_not_a_fit() -> None:
    # the result's reading, one token in a hundred off everywhere: no reading gives those numbers
    scenario = _scenario("b08-result-usage-as-context")
    report = run_tracker_parsed(ResultUsageAsContext(), scenario.session, scenario.scripts(), tolerance=0)
    report.points = [dataclasses.replace(p, estimate=None if p.estimate is None else p.estimate * 101 // 100)
                     for p in report.points]
    assert diagnose(report, Readings(scenario.scripts())) is None


def test_what_the_stream_cannot_tell_apart_is_named_together() -> None:
    # on a stream without a compaction, "unknown after a compaction" is the plain latest call: both tie, the
    # simpler is named and the other said to be indistinguishable
    scenario = _scenario("b12-input-tokens-only")
    report = run_tracker_parsed(CATALOGUE["input-only"].factory(), scenario.session, scenario.scripts(),
                                tolerance=scenario.tolerance)
    diagnosis = diagnose(report, Readings(scenario.scripts()))
    assert diagnosis is not None
    assert Reading("row", keys=("in",), after_compaction="unknown") in diagnosis.ties
    assert diagnosis.reading.complexity <= min(r.complexity for r in diagnosis.ties)
    assert "this stream cannot tell it from" in diagnosis.text()


def test_a_fit_that_explains_some_failing_points_says_how_many() -> None:
    scenario = _scenario("b11-cumulative-statusline-totals")
    report = run_tracker_parsed(SumsEveryRow(), scenario.session, scenario.scripts(), tolerance=scenario.tolerance)
    failing = [p for p in report.failures if p.observation.truth.knowable]
    assert len(failing) >= 3, "the scenario must fail this tracker at three points or more"
    first = failing[0].observation.index
    # the tracker's number at the first failing point made something no reading gives
    report.points = [dataclasses.replace(p, estimate=987_654) if p.observation.index == first else p
                     for p in report.points]
    diagnosis = diagnose(report, Readings(scenario.scripts()))
    assert diagnosis is not None and diagnosis.partial and first not in diagnosis.explained
    assert f"explains {len(failing) - 1} of the {len(failing)} failing points" in diagnosis.text()


def test_every_about_names_a_feature() -> None:
    from ctxsim.check import FEATURES

    for entry in CATALOGUE.values():
        assert entry.about <= FEATURES.keys(), entry.name
        assert entry.variant_of in ("", *CATALOGUE), entry.name


@pytest.mark.slow
def test_the_benchmark_meets_its_recall_precision_and_fairness_targets() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_causes.py")], capture_output=True,
                          text=True, timeout=600, check=False)
    tail = done.stdout.strip().splitlines()[-3:]
    assert done.returncode == 0 and all(line.endswith("PASS)") for line in tail), (
        done.stdout[-3000:] + done.stderr[-2000:])
