"""Quantities: a gauge's number judged as the quantity it declares (% of the window, % until autocompact, tokens
left), an undeclared tracker's as what its scenario asks, and the verdict naming the confusion when a gauge shows
another, on the corpus's window scenarios. Every expected
number here is worked by hand from the scenario's calls (as in each scenario's description), not taken from the
reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxsim.check import loop_fitness, run_tracker
from ctxsim.reference import ContextTracker
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers.catalogue import Gauge, reference_for
from ctxsim.world import SessionBuilder, in_quantity, tokens_band

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _scenario(name: str) -> SessionScenario:
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    return scenario


def _gauge(quantity: str, window: int, threshold: int, shows: str | None = None) -> Gauge:
    return Gauge(ContextTracker(), quantity, window, threshold, shows=shows)  # type: ignore[arg-type]


class _Undeclared:
    """A tracker that says nothing of what its number means (the reference's tokens, no ``quantity``)."""

    def __init__(self) -> None:
        self.inner = ContextTracker()

    def observe(self, message: object) -> None:
        self.inner.observe(message)

    def context_tokens(self) -> int | None:
        return self.inner.context_tokens()


def test_the_arithmetic_worked_by_hand() -> None:
    assert in_quantity(483_500, "percent_of_window", 1_000_000, 967_000) == 48.35
    assert in_quantity(483_500, "percent_until_autocompact", 1_000_000, 967_000) == 50.0
    assert in_quantity(483_500, "tokens_left", 1_000_000, 967_000) == 516_500
    assert tokens_band(75, "percent_of_window", 200_000, 167_000) == (149_000, 151_000)
    assert tokens_band(10, "percent_until_autocompact", 200_000, 167_000) == (149_465, 151_135)
    assert tokens_band(49_997, "tokens_left", 200_000, 167_000) == (150_003, 150_003)


def test_declaring_until_autocompact_and_showing_percent_of_window_fails_naming_it() -> None:
    scenario = _scenario("percent-until-autocompact")
    session = scenario.session
    assert (session.quantity, session.auto_compact_threshold) == ("percent_until_autocompact", 167_000)
    assert run_tracker(reference_for(session), session, tolerance=scenario.tolerance).ok
    report = run_tracker(_gauge("percent_until_autocompact", 200_000, 167_000, shows="percent_of_window"), session,
                         tolerance=scenario.tolerance)
    assert [p.shown for p in report.points] == [61, 61, 75, 75]  # 122,003 and 150,003 of 200,000
    assert not report.ok
    assert report.confusion == ("ctxsim: the gauge shows % of the window where it is judged on % until "
                                "autocompact")
    assert report.confusion in str(report)
    right = run_tracker(_gauge("percent_until_autocompact", 200_000, 167_000), session, tolerance=scenario.tolerance)
    assert right.ok and [p.shown for p in right.points] == [27, 27, 10, 10]


def test_a_gauge_is_judged_on_the_quantity_it_declares_whatever_the_scenario_asks() -> None:
    scenario = _scenario("percent-until-autocompact")
    report = run_tracker(_gauge("percent_of_window", 200_000, 167_000), scenario.session,
                         tolerance=scenario.tolerance)
    assert report.ok and report.quantity == "percent_of_window"
    assert [p.shown for p in report.points] == [61, 61, 75, 75]


def test_a_1m_session_divided_by_200k_fails_naming_the_window() -> None:
    scenario = _scenario("window-1m-suffix")
    session = scenario.session
    assert (session.window, session.model) == (1_000_000, "claude-sonnet-4-5[1m]")  # from the [1m] suffix
    assert run_tracker(reference_for(session), session, tolerance=scenario.tolerance).ok
    report = run_tracker(_gauge("percent_of_window", 200_000, 167_000), session, tolerance=scenario.tolerance)
    assert [p.shown for p in report.points if "call" in p.observation.label] == [201, 485, 21]
    assert report.confusion == "ctxsim: the gauge divides by 200,000 on a 1,000,000 window"
    right = run_tracker(_gauge("percent_of_window", 1_000_000, 967_000), session, tolerance=scenario.tolerance)
    assert right.ok and [p.shown for p in right.points if "call" in p.observation.label] == [40, 97, 4]


def test_a_1m_model_with_1m_disabled_divided_by_1m_fails_naming_the_window() -> None:
    scenario = _scenario("window-1m-disabled")
    session = scenario.session
    assert session.window == 200_000
    report = run_tracker(_gauge("percent_of_window", 1_000_000, 967_000), session, tolerance=scenario.tolerance)
    assert [p.shown for p in report.points][:1] == [15]
    assert report.confusion == "ctxsim: the gauge divides by 1,000,000 on a 200,000 window"


def test_counting_to_the_model_window_s_autocompact_point_under_an_autocompact_window_is_named() -> None:
    scenario = _scenario("autocompact-window-setting")
    session = scenario.session
    assert (session.window, session.auto_compact_window, session.auto_compact_threshold) == (200_000, 100_000,
                                                                                             67_000)
    assert run_tracker(reference_for(session), session, tolerance=scenario.tolerance).ok
    report = run_tracker(_gauge("percent_until_autocompact", 200_000, 167_000), session,
                         tolerance=scenario.tolerance)
    assert [p.shown for p in report.points if "call" in p.observation.label] == [81, 58, 91]
    assert report.confusion == ("ctxsim: the gauge counts to an autocompact point of 167,000 where the session "
                                "compacts at 67,000")


def test_counting_to_an_autocompact_window_that_auto_compact_off_ignores_is_named() -> None:
    scenario = _scenario("autocompact-window-disabled")
    session = scenario.session
    assert (session.auto_compact_window, session.auto_compact_threshold) == (100_000, 180_000)
    # the autocompact window less the output reserve: 100,000 - 20,000 = 80,000; 32,003 tokens leave 60%
    report = run_tracker(_gauge("percent_until_autocompact", 200_000, 80_000), session, tolerance=scenario.tolerance)
    assert [p.shown for p in report.points if "call" in p.observation.label] == [60, 0, -1]
    assert report.confusion == ("ctxsim: the gauge counts to the point of the autocompact window (80,000 of "
                                "100,000) though auto-compact is off (the context may grow to 180,000)")


def test_an_undeclared_tracker_is_read_as_tokens_whatever_the_scenario_asks() -> None:
    scenario = _scenario("percent-until-autocompact")
    session = scenario.session
    plain = run_tracker(ContextTracker(), session, tolerance=scenario.tolerance)  # it declares tokens
    assert plain.ok and plain.quantity == "tokens"
    undeclared = run_tracker(_Undeclared(), session, tolerance=scenario.tolerance)
    assert undeclared.ok and undeclared.quantity == "tokens"
    tokens = run_tracker(_gauge("percent_until_autocompact", 200_000, 167_000, shows="tokens"), session,
                         tolerance=scenario.tolerance)
    assert tokens.confusion == "ctxsim: the gauge shows tokens where it is judged on % until autocompact"


def test_loop_fitness_names_the_quantity_of_a_gauge_and_passes_tokens() -> None:
    session = _scenario("percent-until-autocompact").session
    assert loop_fitness(_Undeclared(), session) is None and loop_fitness(ContextTracker(), session) is None
    assert loop_fitness(_gauge("tokens_left", 200_000, 167_000), session) == (
        "ctxsim: the tracker declares tokens left, not tokens: a restart loop reads its number as the tokens in the "
        "context")


def test_a_declared_quantity_is_read_when_the_scenario_asks_tokens() -> None:
    session = (SessionBuilder(window=1_000_000).query("a").call(input=3, cache_creation=0, cache_read=300_000)
               .build())
    assert session.quantity == "tokens"
    assert run_tracker(_gauge("tokens_left", 1_000_000, 967_000), session).ok  # 699,997 tokens left
    wrong = run_tracker(_gauge("tokens_left", 200_000, 167_000), session)
    assert not wrong.ok and wrong.confusion == "ctxsim: the gauge subtracts from 200,000 on a 1,000,000 window"


@pytest.mark.parametrize("name", ["window-1m-suffix", "window-1m-disabled", "percent-until-autocompact",
                                  "autocompact-window-setting"])
def test_no_confusion_is_named_where_the_gauge_is_right(name: str) -> None:
    scenario = _scenario(name)
    report = run_tracker(reference_for(scenario.session), scenario.session, tolerance=scenario.tolerance)
    assert report.ok and report.confusion is None
