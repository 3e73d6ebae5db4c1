"""Errors past 1,000% of the window print as "off the scale", not as a 12-digit percentage."""

from __future__ import annotations

from ctxsim.check import run_tracker
from ctxsim.score._board import shown_error
from ctxsim.world import SessionBuilder


def test_the_scoreboard_says_off_the_scale() -> None:
    assert shown_error(999_999_999_994.0, 1) == "off the scale"
    assert shown_error(3.14159, 1) == "3.1%" and shown_error(1_000.0, 2) == "1000.00%"


def test_the_timeline_says_off_the_scale() -> None:
    class Huge:
        def observe(self, message: object) -> None: ...
        def context_tokens(self) -> int: return 10**15

    report = run_tracker(Huge(), SessionBuilder(seed=1).query("x").call().build())
    assert "(off the scale)" in report.table() and "%)" not in report.table().split("\n", 1)[1]
