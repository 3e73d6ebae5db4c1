"""Signals, round two: a second Ctrl-C (or SIGTERM) soon after the first, and SIGHUP (a closed terminal). The run
still ends within 10 s, with one line, leaving no process and no directory behind; SIGHUP ends it as SIGTERM does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from _tally import Tally
from test_hostile_signals import SCENARIO, _environ, _homes, _start, _when_running

from ctxsim.scenario import load_scenario
from ctxsim.wire import sdk_bundled_file

SIGNALS = {"SIGINT twice": (signal.SIGINT, signal.SIGINT), "SIGTERM then SIGINT": (signal.SIGTERM, signal.SIGINT),
           "SIGHUP": (signal.SIGHUP,), "SIGHUP twice": (signal.SIGHUP, signal.SIGHUP)}
STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _send(process: subprocess.Popen[str], signals: tuple[signal.Signals, ...]) -> float:
    """Send ``signals`` 50 ms apart; returns when the first was sent."""
    started = time.monotonic()
    for n, sig in enumerate(signals):
        if n:
            time.sleep(0.05)
        process.send_signal(sig)
    return started


@pytest.mark.parametrize("how", list(SIGNALS))
@pytest.mark.parametrize("where", ["ctxsim run", "pytest"])
def test_a_second_signal_or_sighup_ends_the_run_within_10_s(hostile: Tally, tmp_path: Path, how: str,
                                                            where: str) -> None:
    case = f"{how} during {where} with a command tracker"
    seed = uuid.uuid4().int % 10**9
    (tmp_path / "s.yaml").write_text(SCENARIO.format(seed=seed))
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    seconds = 3000 + seed % 97
    marker = f"sleep {seconds}"
    tracker = f"cmd:s={seconds}; sleep $s; echo 1"
    argv = ([sys.executable, "-m", "ctxsim.cli", "run", "s.yaml", "--tracker", tracker] if where == "ctxsim run" else
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
             "--ctx-scenarios=s.yaml", f"--ctx-tracker={tracker}", "s.yaml"])
    process = _start(argv, tmp_path)
    try:
        _when_running(process, marker)
        session_id = load_scenario(tmp_path / "s.yaml").session.session_id
        started = _send(process, SIGNALS[how])
        out, err = process.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    hostile.hang(case, took, 10)
    hostile.leaked(case, hostile.running(marker) + _homes(session_id))
    first = SIGNALS[how][0]
    if where == "ctxsim run":
        # the first signal's status; or, when the second came while the interpreter was already finalizing (its
        # handlers back to the default), that signal's own ending
        assert process.returncode in (STATUS[first], -SIGNALS[how][-1]), (process.returncode, err)
        hostile.line(case, err, f"ctxsim: *interrupted*{first.name}*")
    else:
        hostile.case(case)
        assert "Traceback" not in out + err, out + err


@pytest.mark.live
@pytest.mark.parametrize("how", ["SIGINT twice", "SIGHUP"])
def test_a_fidelity_run_interrupted_twice_or_hung_up_ends_and_leaves_nothing(hostile: Tally, tmp_path: Path,
                                                                            how: str) -> None:
    bundled = sdk_bundled_file("claude")
    if bundled is None:
        pytest.skip("ctxsim: no Claude Code CLI is bundled in this claude-agent-sdk")
    case = f"{how} during ctxsim fidelity"
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private)}
    process = subprocess.Popen([sys.executable, "-m", "ctxsim.cli", "fidelity"], cwd=tmp_path, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    cli = str(bundled)
    try:
        deadline = time.monotonic() + 120
        while not [p for p in hostile.running(cli) if str(private) in _environ(p)]:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the CLI did not start within 120 s"
            time.sleep(0.1)
        started = _send(process, SIGNALS[how])
        out, err = process.communicate(timeout=60)
        took = time.monotonic() - started
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    hostile.hang(case, took, 10)
    assert process.returncode == STATUS[SIGNALS[how][0]], out + err
    hostile.line(case, out + err, "ctxsim: *interrupted*")
    hostile.leaked(case, [p for p in hostile.running(cli) if str(private) in _environ(p)] + [
        str(p) for p in private.iterdir()])
