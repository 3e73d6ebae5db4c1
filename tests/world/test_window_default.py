"""One default per fact: a session built in code and a scenario's ``world`` give a model the same window (1,000,000
for a ``[1m]`` id, as Claude Code 2.1.330-2.1.332's REPL reported ``context_window_size`` for
``claude-sonnet-4-5[1m]``; 200,000 with ``CLAUDE_CODE_DISABLE_1M_CONTEXT``); a window given wins."""

from __future__ import annotations

import pytest

from ctxsim.scenario import SessionScenario, parse_scenario
from ctxsim.world import ClaudeSettings, SessionBuilder


def _scenario_window(world: str) -> int:
    text = f"world: {{{world}}}\nqueries:\n  - steps:\n      - call: {{in: 3, cc: 100, cr: 12000, out: 50}}\n"
    scenario = parse_scenario(text, name="window")
    assert isinstance(scenario, SessionScenario)
    return scenario.session.window


@pytest.mark.parametrize(("model", "narrow", "window"), [
    ("claude-sonnet-4-5[1m]", False, 1_000_000),
    ("claude-sonnet-4-5[1m]", True, 200_000),
    ("claude-sonnet-4-5", False, 200_000),
])
def test_the_builder_gives_the_model_the_window_a_scenario_does(model: str, narrow: bool, window: int) -> None:
    built = SessionBuilder(model=model, settings=ClaudeSettings(disable_1m_context=narrow))
    assert built.window == window
    assert _scenario_window(f"model: \"{model}\", disable_1m_context: {str(narrow).lower()}") == window


def test_a_window_given_wins() -> None:
    assert SessionBuilder(model="claude-sonnet-4-5[1m]", window=300_000).window == 300_000
    assert _scenario_window("model: \"claude-sonnet-4-5[1m]\", window: 300000") == 300_000
