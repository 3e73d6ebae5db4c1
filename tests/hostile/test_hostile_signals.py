"""Ctrl-C, SIGTERM and SIGHUP in the middle of a run, once or twice: the run ends at once (within 10 s, a second
signal or not), with one line and no traceback, and what it started (command processes, their private homes in
``/dev/shm`` or the temporary directory, the live CLI and its directory) is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
from _tally import Tally, default_signals

from ctxsim.scenario import load_scenario

SCENARIO = """\
name: signals
world: {{seed: {seed}}}
queries:
  - prompt: hi
    steps:
      - call: {{in: 3, cc: 1000, cr: 4000, out: 10, blocks: [tool_use], results: [300]}}
      - call: {{in: 3, cc: 500, cr: 5000, out: 10}}
"""


def _homes(session_id: str) -> list[str]:
    """The command tracker's private homes still on disk that hold this session's transcript."""
    # the run's own temporary directory (its TMPDIR, else /tmp), whatever an earlier test left cached in this one's
    roots = {Path("/dev/shm"), Path(tempfile.gettempdir()), Path(os.environ.get("TMPDIR") or "/tmp")}
    found = []
    for root in roots:  # read with listdir, not glob: other runs make and remove their homes meanwhile
        for top in _listed(root, "ctxsim-cmd-"):
            for point in _listed(root / top, "point-"):
                projects = root / top / point / ".claude" / "projects"
                found.extend(str(projects / slug / f"{session_id}.jsonl") for slug in _listed(projects, "")
                             if (projects / slug / f"{session_id}.jsonl").exists())
    return found


def _listed(directory: Path, prefix: str) -> list[str]:
    """The entries of ``directory`` whose names start with ``prefix`` (none once it is gone)."""
    try:
        return [name for name in os.listdir(directory) if name.startswith(prefix)]
    except OSError:
        return []


def _start(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,  # its own group: the signal goes to it alone, as kill(1) does
                            preexec_fn=default_signals)


def _when_running(process: subprocess.Popen[str], marker: str, limit: float = 120) -> None:
    """Wait until a command of the run (``marker`` in its command line) is running."""
    deadline = time.monotonic() + limit
    while not Tally.running(marker):
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"no {marker!r} within {limit:g} s"
        time.sleep(0.05)


SIGNALS = {"SIGINT": (signal.SIGINT,), "SIGTERM": (signal.SIGTERM,), "SIGINT twice": (signal.SIGINT, signal.SIGINT),
           "SIGTERM then SIGINT": (signal.SIGTERM, signal.SIGINT), "SIGHUP": (signal.SIGHUP,),
           "SIGHUP twice": (signal.SIGHUP, signal.SIGHUP)}
"""The signals sent (50 ms apart), by case: a second signal and SIGHUP are the second round's."""
STATUS = {signal.SIGINT: 130, signal.SIGTERM: 143, signal.SIGHUP: 129}


def _send(process: subprocess.Popen[str], how: str) -> float:
    """Send ``how``'s signals 50 ms apart; returns when the first was sent."""
    started = time.monotonic()
    for n, sig in enumerate(SIGNALS[how]):
        time.sleep(0.05 if n else 0)
        process.send_signal(sig)
    return started


@pytest.mark.parametrize("how", list(SIGNALS))
@pytest.mark.parametrize("where", ["ctxsim run", "pytest"])
def test_an_interrupted_command_tracker_run_ends_at_once_and_leaves_nothing(hostile: Tally, tmp_path: Path, how: str,
                                                                           where: str) -> None:
    case = f"{how} during {where} with a command tracker"
    seed = uuid.uuid4().int % 10**9
    (tmp_path / "s.yaml").write_text(SCENARIO.format(seed=seed))
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    seconds = 3000 + seed % 97
    marker = f"sleep {seconds}"  # the command's sleep alone has it: the run's own command line has "sleep $s"
    tracker = f"cmd:s={seconds}; sleep $s; echo 1"
    argv = ([sys.executable, "-m", "ctxsim.cli", "run", "s.yaml", "--tracker", tracker] if where == "ctxsim run" else
            # without Hypothesis' plugin: its summary imports Hypothesis after the interrupt, seconds on a busy machine
            # that are no wait of ctxsim's
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p",
             "no:hypothesispytest", "--ctx-scenarios=s.yaml", f"--ctx-tracker={tracker}", "s.yaml"])
    process = _start(argv, tmp_path)
    try:
        _when_running(process, marker)
        session_id = load_scenario(tmp_path / "s.yaml").session.session_id
        deadline = time.monotonic() + 10  # a point's transcript may be written only once the other point started
        while not _homes(session_id) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _homes(session_id), "the points' homes were not found while running"
        started = _send(process, how)
        # the run's own zombie (it may end before the command's death is seen) is not the command: not waited for
        while hostile.running(marker) and time.monotonic() - started < 12:
            time.sleep(0.02)
        stopped = time.monotonic() - started
        out, err = process.communicate(timeout=60)
        ended = time.monotonic() - started
    finally:
        Tally.stopped(process)
    # one signal: the commands are gone within 2 s (pytest then writes its summary); a second one gives the
    # unwinding 5 s more before the process ends it: all is gone, and the run ended, within 10 s
    hostile.hang(case, stopped, 2 if len(SIGNALS[how]) == 1 else 10)
    hostile.hang(case, ended, 10)
    hostile.leaked(case, hostile.running(marker) + _homes(session_id))
    first, last = SIGNALS[how][0], SIGNALS[how][-1]
    if where == "ctxsim run":
        # the first signal's status; or, when a second came while the interpreter was already finalizing (its
        # handlers back to the default), that signal's own ending
        assert process.returncode in (STATUS[first], -last), (process.returncode, err)
        hostile.line(case, err, f"ctxsim: run: interrupted ({first.name}); stopped, with every process and temporary "
                                f"directory it started")
    else:  # pytest's own ending for an interrupt: its summary, no traceback of ctxsim's
        hostile.case(case)
        assert "Traceback" not in out + err, out + err
        assert len(SIGNALS[how]) > 1 or (process.returncode == 2 and "KeyboardInterrupt" in out), out + err


@pytest.mark.live
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGINT twice", "SIGHUP"])
def test_an_interrupted_fidelity_run_stops_the_cli_and_removes_its_directories(hostile: Tally, tmp_path: Path,
                                                                                  how: str) -> None:
    claude_agent_sdk = pytest.importorskip("claude_agent_sdk")
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
    if not bundled.is_file():
        pytest.skip("ctxsim: no Claude Code CLI is bundled in this claude-agent-sdk")
    case = f"{how} during ctxsim fidelity"
    private = tmp_path / "tmp"
    private.mkdir()
    env = {**os.environ, "TMPDIR": str(private)}
    process = _start([sys.executable, "-m", "ctxsim.cli", "fidelity"], tmp_path, env)
    cli = str(bundled)
    try:
        deadline = time.monotonic() + 120
        while not [p for p in hostile.running(cli) if str(private) in _environ(p)]:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the CLI did not start within 120 s"
            time.sleep(0.1)
        started = _send(process, how)
        out, err = process.communicate(timeout=60)
        hostile.hang(case, time.monotonic() - started, 10)
    finally:
        Tally.stopped(process)
    first = SIGNALS[how][0]
    assert process.returncode == STATUS[first], out + err
    hostile.line(case, out + err, f"ctxsim: fidelity: interrupted ({first.name}); stopped, with every process and "
                                  f"temporary directory it started")
    hostile.leaked(case, [p for p in hostile.running(cli) if str(private) in _environ(p)] + [
        str(p) for p in private.iterdir()])


def _environ(process: str) -> str:
    """The environment of the process ``pid state command`` (empty once it is gone)."""
    try:
        return Path(f"/proc/{process.split()[0]}/environ").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def _ended_within(process: subprocess.Popen[str], how: str, limit: float = 10) -> tuple[str, str, float]:
    """Send ``how``'s signals; the process's output and the seconds it took to end (killed past ``limit`` + 5)."""
    started = _send(process, how)
    try:
        out, err = process.communicate(timeout=limit + 5)
    except subprocess.TimeoutExpired:
        Tally.stopped(process)
        out, err = process.communicate()
    return out, err, time.monotonic() - started


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGINT twice", "SIGTERM then SIGINT", "SIGHUP", "SIGHUP twice"])
def test_an_interrupted_fuzz_run_ends_at_once_and_leaves_nothing(hostile: Tally, tmp_path: Path, how: str) -> None:
    """``ctxsim fuzz`` of a command tracker whose command never ends: the signals end the run within 10 s, its
    commands and their private homes with it."""
    case = f"{how} during ctxsim fuzz with a command tracker"
    seconds = 3000 + uuid.uuid4().int % 997
    homes = tmp_path / "homes"
    tracker = f"cmd:echo $HOME >> {homes}; s={seconds}; sleep $s; echo 1"
    process = _start([sys.executable, "-m", "ctxsim.cli", "fuzz", "--tracker", tracker, "--examples", "5"], tmp_path)
    try:
        _when_running(process, f"sleep {seconds}")
        _, err, ended = _ended_within(process, how)
    finally:
        Tally.stopped(process)
    hostile.hang(case, ended, 10)
    left = [home for home in homes.read_text().split() if Path(home).exists()]
    hostile.leaked(case, hostile.running(f"sleep {seconds}") + left)
    first = SIGNALS[how][0]
    assert process.returncode in (STATUS[first], -SIGNALS[how][-1]), (process.returncode, err)
    hostile.line(case, err, f"ctxsim: fuzz: interrupted ({first.name}); stopped, with every process and temporary "
                            f"directory it started")


@pytest.mark.slow
@pytest.mark.parametrize("how", ["SIGHUP", "SIGINT twice", "SIGHUP twice"])
def test_ctxsim_serve_signalled_ends_at_once_and_frees_its_port(hostile: Tally, tmp_path: Path, how: str) -> None:
    """``ctxsim serve`` hung up on, or interrupted twice, ends within 10 s with one ``ctxsim:`` line (what its client
    did not play, or that it was interrupted) and no traceback, and its port takes connections no more."""
    import json
    import socket

    case = f"{how} during ctxsim serve"
    process = _start([sys.executable, "-m", "ctxsim.cli", "serve", "b01-no-dedupe-without-request-id", "--json",
                      "--timeout", "60"], tmp_path)
    try:
        assert process.stdout is not None
        settings = json.loads(process.stdout.readline())
        port = int(settings["env"]["ANTHROPIC_BASE_URL"].rpartition(":")[2].strip("/"))
        _, err, ended = _ended_within(process, how)
    finally:
        Tally.stopped(process)
    hostile.hang(case, ended, 10)
    hostile.line(case, err, "ctxsim: serve: *")
    with pytest.raises(ConnectionRefusedError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass


def _to_a_thread(pid: int, sig: signal.Signals) -> int:
    """Send ``sig`` to one thread of ``pid`` other than its main thread (``tgkill``), as the kernel may do with a
    signal sent to the process; returns that thread's id. Python runs the handler on the main thread only, once that
    thread runs Python again."""
    import ctypes

    threads = sorted(int(tid) for tid in os.listdir(f"/proc/{pid}/task") if int(tid) != pid)
    assert threads, f"process {pid} has no thread but its main one"
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.tgkill(pid, threads[-1], int(sig)) == 0, os.strerror(ctypes.get_errno())
    return threads[-1]


@pytest.mark.parametrize("command", ["ctxsim run", "pytest", "ctxsim serve", "ctxsim fuzz"])
def test_a_signal_landing_on_a_worker_thread_still_ends_the_run_at_once(hostile: Tally, tmp_path: Path,
                                                                         command: str) -> None:
    """A signal sent to the process may be delivered to any of its threads: one that lands on a worker's thread (a
    command tracker's pool, the fake API's server, the fuzz pool's) ends the run as at once as one on the main
    thread, which is never left blocked in one long wait."""
    import json

    case = f"SIGHUP on a worker thread of {command}"
    seconds = 3000 + uuid.uuid4().int % 997
    marker = f"sleep {seconds}"
    tracker = f"cmd:s={seconds}; sleep $s; echo 1"
    (tmp_path / "s.yaml").write_text(SCENARIO.format(seed=seconds))
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    if command == "ctxsim run":
        argv = ["-m", "ctxsim.cli", "run", "s.yaml", "--tracker", tracker]
    elif command == "pytest":
        argv = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest",
                "--ctx-scenarios=s.yaml", f"--ctx-tracker={tracker}", "s.yaml"]
    elif command == "ctxsim fuzz":
        argv = ["-m", "ctxsim.cli", "fuzz", "--tracker", tracker, "--examples", "5"]
    else:
        argv = ["-m", "ctxsim.cli", "serve", "b01-no-dedupe-without-request-id", "--json", "--timeout", "60"]
    process = _start([sys.executable, *argv], tmp_path)
    try:
        if command == "ctxsim serve":
            assert process.stdout is not None
            json.loads(process.stdout.readline())
        else:
            _when_running(process, marker)
        started = time.monotonic()
        _to_a_thread(process.pid, signal.SIGHUP)
        try:
            out, err = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            out, err = "", "(killed after 15 s)"
        ended = time.monotonic() - started
    finally:
        Tally.stopped(process)
    hostile.hang(case, ended, 10)
    if command == "ctxsim serve":
        hostile.line(case, err, "ctxsim: serve: *")
        return
    hostile.leaked(case, hostile.running(marker))
    if command == "pytest":  # pytest's own ending for an interrupt: its summary, no traceback of ctxsim's
        hostile.case(case)
        assert process.returncode == 2 and "KeyboardInterrupt" in out and "Traceback" not in out + err, out + err
    else:
        hostile.line(case, err, f"ctxsim: {argv[2]}: interrupted (SIGHUP); stopped, with every process and temporary "
                                f"directory it started")
