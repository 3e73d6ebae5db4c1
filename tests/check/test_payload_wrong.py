"""A statusline command that shows what Claude Code's own payload says is judged with a verdict that says where the
payload itself is wrong: the payload's figure, the truth, and what to read instead."""

from __future__ import annotations

import sys

from ctxsim.check import likely_causes, payload_wrong
from ctxsim.corpus import bundled_dir
from ctxsim.runner import explain, run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers import CommandTracker

ECHO = ("import json,sys; u=json.load(sys.stdin)['context_window']['current_usage']; "
        "print(u['input_tokens']+u['cache_creation_input_tokens']+u['cache_read_input_tokens'] if u else '')")


def _echo(**options: object) -> CommandTracker:
    return CommandTracker(f"{sys.executable} -c \"{ECHO}\"", name="payload-echo", **options)  # type: ignore[arg-type]


def _scenario(name: str) -> SessionScenario:
    scenario = load_scenario(bundled_dir() / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    return scenario


def test_an_inclusive_gateway_double_counted_by_claude_code_is_named_as_its_bug() -> None:
    scenario = _scenario("gateway-inclusive-usage-aider-5516")
    run = run_scenario(scenario, _echo())
    assert not run.ok
    wrong = payload_wrong(run.report)
    assert wrong and len(wrong) == len(run.report.failures)
    first = run.report.failures[0]
    text = wrong[first.observation.index]
    assert f"its current_usage says {first.estimate:,}, the context is {first.low:,}" in text
    assert "read input_tokens alone where CTXSIM_USAGE is inclusive" in text
    assert likely_causes(run.report, scenario.scripts)[first.observation.index] == text
    shown = explain(run, "head")
    assert "verdict: payload-echo is off only where Claude Code's own statusline payload is wrong" in shown


def test_zero_after_compact_is_named_as_claude_codes() -> None:
    scenario = _scenario("compaction")
    run = run_scenario(scenario, _echo(after_compaction="zero"))
    wrong = payload_wrong(run.report)
    compaction = next(p for p in run.report.failures if p.observation.kind == "compaction")
    assert "its current_usage says 0" in wrong[compaction.observation.index]
    assert "after /compact it has no usage until the next call" in wrong[compaction.observation.index]


def test_a_command_that_does_not_show_the_payload_is_not_excused() -> None:
    scenario = _scenario("gateway-inclusive-usage-aider-5516")
    run = run_scenario(scenario, CommandTracker("echo 5", name="five"))
    assert not run.ok and payload_wrong(run.report) == {}
    assert "Claude Code's own statusline payload" not in explain(run, "head")
