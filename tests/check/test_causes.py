"""Likely causes (ctxsim.check._causes): a catalogued bug is named only when it is specific."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage

from ctxsim.check import Report, catalogue_runs, features, likely_causes, name_cause, run_tracker_parsed
from ctxsim.corpus import bundled_dir
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers import CATALOGUE

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


def test_a_running_total_is_named_where_only_that_formula_fits() -> None:
    causes = _causes(_scenario("b04-summing-every-row"), SumsEveryRow())
    assert causes and all(c.endswith("(every-row-totals)") for c in causes.values()), causes


def test_result_usage_read_as_the_context_is_named_on_the_scenario_of_its_report() -> None:
    scenario = _scenario("b08-result-usage-as-context")
    report = run_tracker_parsed(ResultUsageAsContext(), scenario.session, scenario.scripts(), tolerance=0)
    runs = catalogue_runs(scenario.session, scenario.scripts, 0)
    assert name_cause(report, runs, features(scenario.scripts(), scenario.session.window)) == \
        "result-usage-as-context"


def _null_after_compact() -> tuple[Report, dict[str, Report], frozenset[str]]:
    """The compaction scenario's failure of the null-after-/compact gauge, run as a tracker under test: its report,
    the catalogue's runs and the stream's features."""
    scenario = _scenario("compaction")
    report = run_tracker_parsed(CATALOGUE["claude-code-statusline"].factory(), scenario.session, scenario.scripts(),
                                tolerance=scenario.tolerance)
    report.tracker = "mine"
    runs = catalogue_runs(scenario.session, scenario.scripts, scenario.tolerance)
    return report, runs, features(scenario.scripts(), scenario.session.window)


def test_a_cause_the_stream_does_not_show_is_not_named() -> None:
    # said on the same stream with its compaction taken out of what it shows: the formula still matches, the
    # feature is missing
    report, runs, shown = _null_after_compact()
    assert name_cause(report, runs, shown) == "claude-code-statusline"
    assert name_cause(report, runs, shown - {"compaction"}) is None


def test_two_entries_the_stream_cannot_tell_apart_name_neither() -> None:
    report, runs, shown = _null_after_compact()
    twin = dict(runs, **{"ccstatusline": runs["claude-code-statusline"]})  # both formulas agree everywhere
    assert name_cause(report, twin, shown) is None


def test_every_about_names_a_feature() -> None:
    from ctxsim.check import FEATURES

    for entry in CATALOGUE.values():
        assert entry.about <= FEATURES.keys(), entry.name
        assert entry.variant_of in ("", *CATALOGUE), entry.name


def test_the_benchmark_reports_a_precision_of_at_least_95_percent() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_causes.py")], capture_output=True,
                          text=True, timeout=300, check=False)
    last = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0 and "(target >= 95%: PASS)" in last, done.stdout[-2000:] + done.stderr[-2000:]
