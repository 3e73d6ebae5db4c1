"""Hostile statusline commands (``cmd:``): output without end, numbers without end, children that escape, commands
that never exit. Each ends its point with one bounded ``ctxsim:`` line (or a good estimate), in bounded time, and
leaves nothing running."""

from __future__ import annotations

import time

import pytest
from _tally import Tally

from ctxsim.check import run_tracker
from ctxsim.trackers import CommandTracker
from ctxsim.world import Session, SessionBuilder


def session() -> Session:
    """Two calls: two points (and a result) for the command to answer."""
    builder = SessionBuilder(seed=25).query("Fix the failing test")
    builder.call(input=3, cache_creation=1_000, cache_read=4_000, blocks=("text", "tool_use"), results=(500,))
    builder.call(input=3, cache_creation=600, cache_read=5_000)
    return builder.build()


FAILING = [
    ("yes", "yes", "*printed more than 64 KiB on stdout and was killed; stderr was empty"),
    ("yes on stderr", "yes >&2", "*printed more than 64 KiB on stderr and was killed; stderr ends: ... | y | y*"),
    ("10 MB on one line", "head -c 10000000 /dev/zero | tr '\\0' 7", "*printed more than 64 KiB on stdout*"),
    ("5,000 digits", "head -c 5000 /dev/zero | tr '\\0' 9",
     "*printed nonsense: the last line is a number of 5,000 digits, not a number of tokens (at most 15 digits)*"),
    ("Arabic-Indic digits", "echo ١٢٣", "*printed nonsense: the last line '١٢٣' is not a bare integer*"),
    ("full-width digits", "echo １２３", "*printed nonsense: the last line '１２３' is not a bare integer*"),
    ("a 100,000-character line", "head -c 100000 /dev/zero | tr '\\0' x; echo",
     "*printed more than 64 KiB on stdout*"),
    ("a line of nonsense of 60 KiB", "head -c 60000 /dev/zero | tr '\\0' x; echo",
     "*printed nonsense: the last line 'xxx*... (59,800 more characters)' is not a bare integer*"),
    ("never exits", "sleep 3011", "*ran past its timeout of 1 s and was killed*"),
    ("stderr of many lines", "seq 1000 >&2; exit 3", "*exited with status 3; stderr ends: ...* | 999 | 1000"),
]


@pytest.mark.parametrize(("case", "command", "expected"), FAILING, ids=[c[0] for c in FAILING])
def test_a_hostile_command_is_one_bounded_line(hostile: Tally, case: str, command: str, expected: str) -> None:
    started = time.monotonic()
    report = run_tracker(CommandTracker(command, timeout=1, workers=2), session())
    hostile.hang(case, time.monotonic() - started, 10)
    assert report.error is not None, case
    line = hostile.line(case, report.error, f"ctxsim: command tracker * at point #1 (q1 call 1) {expected}")
    assert len(line) < 1200, f"{case}: a line of {len(line):,} characters"
    hostile.leaked(case, hostile.running("sleep 3011"))


REPEATS = 8
"""Runs of each escaping command (three points each)."""
ESCAPING = [
    ("a setsid child", "setsid sleep 3012 & echo 5000", "sleep 3012"),
    ("a background child holding stdout", "sleep 3013 & echo 5000", "sleep 3013"),
    ("a double fork", "(sleep 3014 &) ; echo 5000", "sleep 3014"),
    ("a setsid child forking in a loop", "setsid sh -c 'while :; do sleep 3015 & sleep 0.01; done' "
                                         ">/dev/null 2>&1 & echo 5000", "sleep 3015"),
    ("a setsid child closing its pipes", "setsid sh -c 'exec sleep 3016' </dev/null >/dev/null 2>&1 & echo 5000",
     "sleep 3016"),
]


@pytest.mark.parametrize(("case", "command", "marker"), ESCAPING, ids=[c[0] for c in ESCAPING])
def test_what_a_command_leaves_running_does_not_outlive_its_point(hostile: Tally, case: str, command: str,
                                                                  marker: str) -> None:
    hostile.case(case)
    for _ in range(REPEATS):  # an escape races the kill (a child in the middle of its exec): try it several times
        started = time.monotonic()
        report = run_tracker(CommandTracker(command, timeout=5), session())
        hostile.hang(case, time.monotonic() - started, 4)  # "exited" is the command's own exit, not its pipes closing
        assert report.error is None and [p.estimate for p in report.points] == [5000] * len(report.points), case
        hostile.leaked(case, hostile.running(marker))
