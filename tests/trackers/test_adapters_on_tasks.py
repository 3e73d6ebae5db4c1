"""Every adapter ctxsim documents works on every kind of scenario it runs, task scenarios included: a restart loop
feeds its tracker messages itself (``observe``), so a :class:`RawDicts` tracker gets each message's line rebuilt."""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage
from claude_agent_sdk._internal.message_parser import parse_message

from ctxsim.check import run_tracker_parsed
from ctxsim.corpus import bundled_scenarios
from ctxsim.reference import ContextTracker
from ctxsim.runner import run_task
from ctxsim.scenario import SessionScenario, TaskScenario, load_scenario
from ctxsim.trackers import FromRatio, RawDicts
from ctxsim.trackers._frames import frame_of
from ctxsim.wire import render

TASKS = [s for s in (load_scenario(p) for p in bundled_scenarios()) if isinstance(s, TaskScenario)]


class ParsesLines:
    """A tracker fed raw lines: it parses each with the SDK's own parser and hands the message to the reference."""

    def __init__(self) -> None:
        self.reference = ContextTracker()

    def observe(self, line: dict[str, Any]) -> None:
        assert isinstance(line, dict), f"fed {type(line).__name__}, not a line"
        message = parse_message(line)
        if message is not None:
            self.reference.observe(message)

    def context_tokens(self) -> int | None:
        return self.reference.context_tokens()


class Ratio:
    """The reference read as a share of the window."""

    def __init__(self, window: int = 200_000) -> None:
        self.reference, self.window = ContextTracker(), window

    def observe(self, message: object) -> None:
        self.reference.observe(message)

    def pressure_ratio(self) -> float | None:
        tokens = self.reference.context_tokens()
        return None if tokens is None else tokens / self.window


def test_there_are_task_scenarios() -> None:
    assert len(TASKS) >= 10


@pytest.mark.parametrize("scenario", TASKS, ids=lambda s: s.name)
def test_a_raw_dicts_reference_meets_every_task_scenario(scenario: TaskScenario) -> None:
    run = run_task(scenario, tracker_factory=lambda: RawDicts(ParsesLines()), tracker="raw-reference")
    met, does = run.verdict("meet")
    assert met, does


@pytest.mark.parametrize("scenario", TASKS[:6], ids=lambda s: s.name)
def test_a_from_ratio_reference_meets_task_scenarios(scenario: TaskScenario) -> None:
    window = scenario.session.window
    run = run_task(scenario, tracker_factory=lambda: FromRatio(Ratio(window), window), tracker="ratio-reference")
    met, does = run.verdict("meet")
    assert met, does


def test_a_rebuilt_line_parses_back_to_the_message_it_came_from() -> None:
    scenario = next(s for s in (load_scenario(p) for p in bundled_scenarios())
                    if isinstance(s, SessionScenario) and s.name == "seed001-subagent-max-cache-read")
    count = 0
    for script in render(scenario.session, include_partial_messages=True):
        for frame in script.frames:
            message = parse_message(frame.data)
            if isinstance(message, (AssistantMessage, ResultMessage)) or type(message).__name__ == "StreamEvent":
                assert parse_message(frame_of(message)) == message
                count += 1
    assert count > 10


def test_the_rebuilt_lines_track_a_session_as_the_real_ones_do() -> None:
    scenario = next(s for s in (load_scenario(p) for p in bundled_scenarios())
                    if isinstance(s, SessionScenario) and s.name == "compaction")

    class ViaObserve(RawDicts):  # fed messages, as a loop feeds them: observe rebuilds the line
        observe_frame = None  # type: ignore[assignment]

    report = run_tracker_parsed(ViaObserve(ParsesLines()), scenario.session, scenario.scripts(),
                                tolerance=scenario.tolerance)
    assert report.ok, str(report)
