"""A tracker that asks the CLI (``client.get_context_usage()``, a fix seen in the wild) is judged like any other:
the oracle hands it the client it tracks, and compares what the CLI answers with the truth, never with itself."""

from __future__ import annotations

from typing import Any

import pytest

from ctxsim.check import arun_tracker
from ctxsim.corpus import bundled_dir
from ctxsim.scenario import SessionScenario, load_scenario


class AsksTheCli:
    """Written here: the context is what the CLI's get_context_usage() says (totalTokens), minus ``short``, asked
    once each query has ended (while the CLI streams, its answer is its own state, which may be a call ahead of the
    message the app is reading)."""

    judged_at = frozenset({"result"})

    def __init__(self, short: int = 0) -> None:
        self.client: Any = None
        self.short = short
        self.asked = 0

    def bind_client(self, client: Any) -> None:
        self.client = client

    def observe(self, message: object) -> None:
        pass

    async def context_tokens(self) -> int | None:
        self.asked += 1
        usage = await self.client.get_context_usage()
        return int(usage["totalTokens"]) - self.short


def _scenario(name: str) -> SessionScenario:
    scenario = load_scenario(bundled_dir() / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    return scenario


@pytest.mark.anyio
@pytest.mark.parametrize("name", ["b08-result-usage-as-context", "compaction"])
async def test_a_tracker_asking_the_cli_is_judged_after_each_query_against_the_truth(name: str) -> None:
    scenario = _scenario(name)
    tracker = AsksTheCli()
    report = await arun_tracker(tracker, scenario.session, scripts=scenario.scripts(), tolerance=scenario.tolerance)
    assert report.crash is None and report.stall is None, str(report)
    assert report.points and tracker.asked == len(report.points)
    assert report.ok, str(report)


@pytest.mark.anyio
async def test_a_cli_answer_off_the_truth_fails_like_any_estimate() -> None:
    scenario = _scenario("b08-result-usage-as-context")
    report = await arun_tracker(AsksTheCli(short=5_000), scenario.session, scripts=scenario.scripts(),
                                tolerance=scenario.tolerance)
    assert not report.ok and report.how == "under"
    assert all(p.error is not None and p.error <= -5_000 + scenario.tolerance for p in report.failures)
