"""The reference pressure policy: thresholds of the effective window, zones, firing once per crossing."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, strategies as st

from ctxsim.reference import Action, PressurePolicy

C, M, W, R = Action.CONTINUE, Action.MASK, Action.WIND_DOWN, Action.RESTART


def decisions(policy: PressurePolicy, tokens: list[int | None], **kwargs: int) -> list[Action]:
    return [policy.decide(t, **kwargs) for t in tokens]


def test_seed003_threshold_edges_89_90_91_percent() -> None:
    # 90% of a 200,000 window is 180,000 tokens exactly; 89% and 91% are 178,000 and 182,000.
    assert PressurePolicy().threshold_tokens() == 180_000
    assert decisions(PressurePolicy(), [178_000, 179_999]) == [C, C]
    assert decisions(PressurePolicy(), [180_000]) == [R]
    assert decisions(PressurePolicy(), [178_000, 182_000]) == [C, R]


def test_fires_once_per_crossing_and_reset_rearms() -> None:
    policy = PressurePolicy()
    assert decisions(policy, [150_000, 181_000, 185_000, 190_000]) == [C, R, C, C]
    policy.reset()  # a restart (or a compaction)
    assert decisions(policy, [181_000]) == [R]


def test_percent_of_the_effective_window() -> None:
    # Claude Code's autocompact buffer: 33k of 200k reserved leaves 167k, so 90% is ceil(150,300).
    policy = PressurePolicy(window=200_000, reserve=33_000)
    assert policy.effective_window() == 167_000
    assert policy.threshold_tokens() == 150_300
    assert policy.pressure(83_500) == 0.5
    assert decisions(policy, [150_299, 150_300]) == [C, R]


def test_hysteresis_rearms_only_below_threshold_minus_hysteresis() -> None:
    policy = PressurePolicy(hysteresis=0.05)  # re-arm below 85%: 170,000 tokens
    assert decisions(policy, [180_000, 170_000, 185_000]) == [R, C, C]
    assert decisions(policy, [169_999, 180_000]) == [C, R]
    no_band = PressurePolicy(hysteresis=0)
    assert decisions(no_band, [180_000, 179_999, 180_000]) == [R, C, R]


def test_graduated_zones_of_seed004() -> None:
    policy = PressurePolicy(mask_at=0.70, restart_at=0.90, wind_down=True)
    # 69%, 70%, 85%, then >= 90% (wind down), >= 90% again (restart), still above (mask: the event has fired)
    assert decisions(policy, [138_000, 140_000, 170_000, 180_000, 182_000, 184_000]) == [C, M, M, W, R, M]
    policy.reset()
    assert decisions(policy, [181_000]) == [W]


def test_graduated_repeat_after_falling_back_is_a_restart() -> None:
    policy = PressurePolicy(mask_at=0.70, restart_at=0.90, wind_down=True)
    # wound down at 90%, masking brought it back to 80%, then it crossed again: the repeat restarts
    assert decisions(policy, [180_000, 160_000, 181_000]) == [W, M, R]


def test_seed002_tool_count_fallback() -> None:
    policy = PressurePolicy(restart_at=0.80, max_tool_calls=100)
    assert policy.decide(10_000, tool_calls=99) is C
    assert policy.decide(10_000, tool_calls=100) is R
    assert policy.decide(10_000, tool_calls=101) is C  # once
    policy.reset()
    assert policy.decide(None, tool_calls=100) is R  # the fallback works without a token count


def test_unknown_tokens_never_fire_and_a_threshold_above_100_percent_never_does() -> None:
    assert decisions(PressurePolicy(), [None, None]) == [C, C]
    assert decisions(PressurePolicy(restart_at=1.1), [200_000, 219_999]) == [C, C]


def test_window_comes_from_the_policy_else_the_caller_else_200k() -> None:
    assert PressurePolicy().decide(90_000, window=100_000) is R
    assert PressurePolicy(window=200_000).decide(90_000, window=100_000) is C  # a configured window wins
    assert PressurePolicy().threshold_tokens() == 180_000


def test_fresh_copies_settings_without_history() -> None:
    policy = PressurePolicy(restart_at=0.5, window=1_000)
    assert policy.decide(600) is R
    copy = policy.fresh()
    assert (copy.restart_at, copy.window) == (0.5, 1_000)
    assert copy.decide(600) is R
    assert policy.decide(600) is C


@pytest.mark.parametrize(("settings", "message"), [
    ({"restart_at": 0}, "restart_at must be above 0"),
    ({"restart_at": float("nan")}, "restart_at must be a finite number"),
    ({"mask_at": 0.95}, "mask_at must lie between 0 and restart_at"),
    ({"window": 100_000, "reserve": 100_000}, "reserve must be 0 or more and below the window"),
    ({"reserve": -1}, "reserve must be 0 or more"),
    ({"hysteresis": -0.1}, "hysteresis must be 0 or more"),
    ({"max_tool_calls": 0}, "max_tool_calls must be 1 or more"),
])
def test_bad_settings_are_one_clear_error(settings: dict, message: str) -> None:
    with pytest.raises(ValueError, match=f"^ctxsim: PressurePolicy.{message}"):
        PressurePolicy(**settings)


@given(st.lists(st.integers(0, 250_000), max_size=60), st.sampled_from([0.0, 0.02, 0.05]))
def test_restart_fires_exactly_at_armed_crossings(tokens: list[int], hysteresis: float) -> None:
    policy = PressurePolicy(hysteresis=hysteresis)
    threshold = 180_000  # 90% of 200,000
    rearm = math.ceil((Fraction("0.9") - Fraction(str(hysteresis))) * 200_000)
    armed = True
    for t in tokens:
        armed = armed or t < rearm
        fired = policy.decide(t) is R
        assert fired == (armed and t >= threshold), (t, armed)
        if fired:
            armed = False
        assert not (fired and t < threshold)
