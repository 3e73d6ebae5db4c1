"""Commands that leave their tree and drop the point's token (``setsid env -u CTXSIM_POINT ...``): what a ``cmd:`` or
``stream:`` tracker's command starts is found by ancestry, not by its environment, and none of it outlives the run,
not even as a zombie; what the caller started itself (the test's own children, in its session or in one of their
own) is never touched."""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from _tally import Tally

from ctxsim.check import run_tracker
from ctxsim.trackers import CommandTracker, StreamTracker
from ctxsim.world import Session, SessionBuilder

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ctxsim: ancestry is read from Linux's /proc")


def session() -> Session:
    """Two calls: two points for a command, a handful of messages for a stream."""
    builder = SessionBuilder(seed=40).query("Fix the failing test")
    builder.call(input=3, cache_creation=1_000, cache_read=4_000, blocks=("text", "tool_use"), results=(500,))
    builder.call(input=3, cache_creation=600, cache_read=5_000)
    return builder.build()


def _alive(pid: int) -> str | None:
    """``pid``'s state letter while it exists (``Z``: a zombie not reaped), None once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return None


def _gone_within(pids: list[int], limit: float = 2.0) -> list[str]:
    """The pids of ``pids`` still there (running, or a zombie) ``limit`` seconds on, as ``pid state``."""
    deadline = time.monotonic() + limit
    while True:
        left = [f"{pid} {state}" for pid in pids if (state := _alive(pid)) is not None]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.02)


_MARKS = itertools.count(uuid.uuid4().int % 5000)


def _seconds() -> int:
    """A sleep's length no other case (nor an earlier run) uses: what finds its processes by command line."""
    return 4000 + next(_MARKS) % 5000


def _pids(path: Path) -> list[int]:
    return [int(line) for line in path.read_text().split()] if path.exists() else []


@pytest.fixture
def pids(tmp_path: Path) -> Iterator[Path]:
    """Where the escapes write their pids; those still running after the case (it failed) are ended."""
    path = tmp_path / "pids"
    yield path
    for pid in _pids(path):
        if _alive(pid) not in (None, "Z"):
            os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):  # adopted by this process: reaped here
            os.waitpid(pid, 0)


ESCAPES = [
    ("setsid, token dropped", "setsid env -u CTXSIM_POINT sleep {s} & echo $! >> {pids}"),
    ("setsid then a double fork, token dropped",
     "setsid env -u CTXSIM_POINT sh -c '(sleep {s} & echo $! >> {pids}) &' & sleep 0.05"),
    ("a double fork, token dropped, still in the point's session",
     "(env -u CTXSIM_POINT sleep {s} & echo $! >> {pids}) &"),
]


@LINUX
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(("case", "escape"), ESCAPES, ids=[c[0] for c in ESCAPES])
def test_a_command_that_drops_its_token_and_leaves_its_session_leaves_nothing(hostile: Tally, pids: Path, case: str,
                                                                             escape: str, workers: int) -> None:
    case = f"cmd: {case} ({workers} workers)"
    hostile.case(case)
    seconds = _seconds()
    command = escape.format(s=seconds, pids=pids) + "\necho 5000"
    report = run_tracker(CommandTracker(command, timeout=5, workers=workers), session())
    assert report.error is None and [p.estimate for p in report.points] == [5000] * len(report.points), report.error
    started = _pids(pids)
    assert len(started) == len(report.points), f"{case}: the escapes did not start: {started}"
    hostile.leaked(case, _gone_within(started) + hostile.running(f"sleep {seconds}"))


@LINUX
@pytest.mark.parametrize(("case", "escape"), ESCAPES, ids=[c[0] for c in ESCAPES])
def test_a_stream_command_that_drops_its_token_and_leaves_its_session_leaves_nothing(hostile: Tally, pids: Path,
                                                                                    case: str, escape: str) -> None:
    case = f"stream: {case}"
    hostile.case(case)
    seconds = _seconds()
    command = escape.format(s=seconds, pids=pids) + "\nn=0; while read -r line; do n=$((n+1)); echo $n; done"
    report = run_tracker(StreamTracker(command), session())
    assert report.error is None, report.error
    started = _pids(pids)
    assert len(started) == 1, f"{case}: the escape did not start: {started}"
    hostile.leaked(case, _gone_within(started) + hostile.running(f"sleep {seconds}"))


@LINUX
def test_what_the_caller_started_itself_is_never_touched(hostile: Tally, pids: Path) -> None:
    """The caller's children, in its own session and in sessions of their own, outlive a run whose commands escape
    every way above, and their exit statuses stay the caller's to collect."""
    case = "the caller's own children beside escaping commands"
    hostile.case(case)
    seconds = _seconds()
    own = [subprocess.Popen(["sleep", str(seconds)], start_new_session=new) for new in (False, True)]
    try:
        escapes = "\n".join(escape.format(s=seconds + 1, pids=pids) for _, escape in ESCAPES)
        for tracker in (CommandTracker(f"{escapes}\necho 5000", timeout=5, workers=2),
                        StreamTracker(f"{escapes}\nn=0; while read -r line; do n=$((n+1)); echo $n; done")):
            report = run_tracker(tracker, session())
            assert report.error is None, report.error
        assert [p.poll() for p in own] == [None, None], f"{case}: the caller's children were ended or reaped"
        assert [_alive(p.pid) for p in own] != [None, None]
        hostile.leaked(case, _gone_within(_pids(pids)) + hostile.running(f"sleep {seconds + 1}"))
    finally:
        for p in own:
            p.kill()
            p.wait(5)
    assert [p.returncode for p in own] == [-9, -9], "the caller collects its children's own statuses"
