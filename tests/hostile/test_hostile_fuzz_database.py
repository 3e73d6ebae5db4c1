"""Hostile fuzz databases: malformed locations, wrong credentials, and a Redis server that dies the moment a
counterexample is found. Each is one ``ctxsim:`` line that never shows a credential, and no counterexample is lost."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from _tally import Tally

from ctxsim.strategies import DatabaseUnreachable, example_database

SECRET = "s3cr3t-Passw0rd"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A ``redis-server`` on 127.0.0.1 whose password is :data:`SECRET`: its process and port."""
    pytest.importorskip("redis", reason="ctxsim: the redis client is not installed (pip install "
                                        "'pytest-ctxsim[redis]')")
    import redis

    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("ctxsim: redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                "--dir", str(tmp_path), "--requirepass", SECRET], stdout=subprocess.DEVNULL,
                               stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(port=port, password=SECRET, socket_connect_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.05)
        client.close()
        yield process, port
    finally:
        process.kill()
        process.wait()


MALFORMED = [
    ("a port that is not a number", "redis://127.0.0.1:notaport/0",
     "ctxsim: the example database 'redis://127.0.0.1:notaport/0' is not a Redis URL it can read (*): write "
     "redis://HOST:PORT/DB"),
    ("redis:/ with one slash", "redis:/broken",
     "ctxsim: the example database 'redis:/broken' is neither a Redis URL (redis://HOST:PORT/DB, rediss://..., "
     "unix://PATH) nor a directory path"),
    ("an http URL", "http://example.com/db", "ctxsim: the example database 'http://example.com/db' is neither a Redis "
                                             "URL*"),
    ("a password where nothing listens", f"redis://user:{SECRET}@127.0.0.1:{{port}}/0",
     "ctxsim: the example database 'redis://***@127.0.0.1:*/0' did not answer within 5 s: ConnectionError: *"),
    ("a password in the query", f"redis://127.0.0.1:{{port}}/0?password={SECRET}",
     "ctxsim: the example database 'redis://127.0.0.1:*/0?***' did not answer within 5 s*"),
]


@pytest.mark.parametrize(("case", "url", "expected"), MALFORMED, ids=[c[0] for c in MALFORMED])
def test_a_malformed_or_unreachable_database_is_one_line_without_credentials(hostile: Tally, case: str, url: str,
                                                                            expected: str) -> None:
    pytest.importorskip("redis")
    url = url.format(port=_free_port())
    with pytest.raises(DatabaseUnreachable) as refused:
        example_database(url)
    line = hostile.line(case, str(refused.value), expected)
    hostile.survived(case, [SECRET] if SECRET in line else [])


def test_wrong_credentials_and_a_bad_database_number_say_so(hostile: Tally,
                                                           redis_server: tuple[subprocess.Popen[bytes], int]) -> None:
    _, port = redis_server
    cases = [("a wrong password", f"redis://:wrong-{SECRET}@127.0.0.1:{port}/0",
              f"ctxsim: the example database 'redis://***@127.0.0.1:{port}/0' refused the credentials: *"),
             ("no password", f"redis://127.0.0.1:{port}/0",
              f"ctxsim: the example database 'redis://127.0.0.1:{port}/0' refused the credentials: *"),
             ("a database number out of range", f"redis://:{SECRET}@127.0.0.1:{port}/99",
              f"ctxsim: the example database 'redis://***@127.0.0.1:{port}/99' refused the connection: ResponseError: "
              f"DB index is out of range")]
    for case, url, expected in cases:
        with pytest.raises(DatabaseUnreachable) as refused:
            example_database(url)
        line = hostile.line(case, str(refused.value), expected)
        hostile.survived(case, [SECRET] if SECRET in line else [])


KILLER = """\
import os
import signal


class Killer:
    \"\"\"A tracker that is always wrong, and kills the example database's server as it is first asked.\"\"\"

    def observe(self, message):
        try:
            os.kill(int(os.environ["REDIS_PID"]), signal.SIGKILL)
        except ProcessLookupError:
            pass

    def context_tokens(self):
        return 1
"""


def test_a_database_that_dies_as_the_counterexample_is_found_loses_nothing(
        hostile: Tally, tmp_path: Path, redis_server: tuple[subprocess.Popen[bytes], int]) -> None:
    case = "Redis dies as the counterexample is found"
    process, port = redis_server
    (tmp_path / "killer.py").write_text(KILLER)
    env = {**os.environ, "REDIS_PID": str(process.pid), "PYTHONPATH": str(tmp_path)}
    env.pop("CTXSIM_FUZZ_DATABASE", None)
    url = f"redis://:{SECRET}@127.0.0.1:{port}/0"
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "fuzz", "--tracker", "killer:Killer", "--db", url,
                           "--examples", "20", "--out", "found.yaml"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert process.poll() is not None, "the tracker did not stop the server"
    assert done.returncode == 1, done.stdout + done.stderr  # found, and written
    assert "queries:" in (tmp_path / "found.yaml").read_text()
    hostile.line(case, done.stderr, f"ctxsim: the example database 'redis://***@127.0.0.1:{port}/0' could not save a "
                                    f"counterexample (ConnectionError: *); what it could not take is kept in "
                                    f".hypothesis/ctxsim-kept (replay it with --db .hypothesis/ctxsim-kept)")
    hostile.survived(case, [SECRET] if SECRET in done.stdout + done.stderr else [])
    kept = [p for p in (tmp_path / ".hypothesis" / "ctxsim-kept").rglob("*") if p.is_file()]
    assert kept, "nothing was kept locally"
    # the kept database replays it: another seed, one example, and the run fails at once
    again = subprocess.run([sys.executable, "-m", "ctxsim.cli", "fuzz", "--tracker", "killer:Killer", "--db",
                            ".hypothesis/ctxsim-kept", "--examples", "1", "--seed", "9", "--out", "again.yaml"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1 and (tmp_path / "again.yaml").is_file(), again.stdout + again.stderr


STOPPER = """\
import os
import signal


class Stopper:
    \"\"\"A tracker that is always wrong, and stops (SIGSTOP) the example database's server as it is first asked.\"\"\"

    def observe(self, message):
        if not os.path.exists("stopped"):
            open("stopped", "w").close()
            os.kill(int(os.environ["REDIS_PID"]), signal.SIGSTOP)

    def context_tokens(self):
        return 1
"""


def _fuzz(tmp_path: Path, tracker: str, url: str, *args: str, pid: int, timeout: float = 300,
          cwd: Path | None = None, env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    environment = {**os.environ, "REDIS_PID": str(pid), "PYTHONPATH": str(tmp_path), **(env or {})}
    environment.pop("CTXSIM_FUZZ_DATABASE", None)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "fuzz", "--tracker", tracker, "--db", url, *args],
                          cwd=cwd or tmp_path, env=environment, capture_output=True, text=True, timeout=timeout)
    return done, time.monotonic() - started


@pytest.mark.slow
def test_a_database_stopped_mid_run_is_one_bounded_line(hostile: Tally, tmp_path: Path,
                                                        redis_server: tuple[subprocess.Popen[bytes], int]) -> None:
    """SIGSTOP: the server accepts connections and never answers. One command waits its bound (10 s), is not
    retried, and the server is not asked again: the run ends, the counterexample kept locally."""
    case = "Redis stopped (SIGSTOP) mid-run"
    process, port = redis_server
    (tmp_path / "stopper.py").write_text(STOPPER)
    url = f"redis://:{SECRET}@127.0.0.1:{port}/0"
    try:
        done, took = _fuzz(tmp_path, "stopper:Stopper", url, "--examples", "20", "--out", "found.yaml",
                           pid=process.pid)
    finally:
        os.kill(process.pid, signal.SIGCONT)
    hostile.hang(case, took, 90)
    hostile.line(case, done.stderr, f"ctxsim: the example database 'redis://***@127.0.0.1:{port}/0' could not * "
                                    f"(TimeoutError: *); what it could not take is kept in .hypothesis/ctxsim-kept "
                                    f"(replay it with --db .hypothesis/ctxsim-kept)")
    assert done.returncode == 1 and "queries:" in (tmp_path / "found.yaml").read_text(), done.stderr
    assert [p for p in (tmp_path / ".hypothesis" / "ctxsim-kept").rglob("*") if p.is_file()]
    hostile.survived(case, [SECRET] if SECRET in done.stdout + done.stderr else [])


READ_ONLY = """
set -e
mount -o bind,ro "$RO" "$RO"
cd "$RO"
"$PYTHON" -m ctxsim.cli fuzz --tracker killer:Killer --db "$URL" --examples 20 --out "$WORK/found.yaml" \
  > "$WORK/out" 2> "$WORK/err" || echo "rc=$?" >> "$WORK/err"
"""


@pytest.mark.slow
def test_a_database_killed_with_a_read_only_working_directory_keeps_it_where_it_can(
        hostile: Tally, tmp_path: Path, redis_server: tuple[subprocess.Popen[bytes], int]) -> None:
    """The working directory cannot take ``.hypothesis/ctxsim-kept``: the counterexample is kept in the cache
    directory, and the line says that one, not the one it could not write."""
    case = "Redis killed with a read-only working directory"
    process, port = redis_server
    (tmp_path / "killer.py").write_text(KILLER)
    read_only = tmp_path / "ro"
    read_only.mkdir()
    cache = tmp_path / "cache"
    url = f"redis://:{SECRET}@127.0.0.1:{port}/0"
    env = {**os.environ, "REDIS_PID": str(process.pid), "PYTHONPATH": str(tmp_path), "XDG_CACHE_HOME": str(cache),
           "RO": str(read_only), "WORK": str(tmp_path), "PYTHON": sys.executable, "URL": url}
    env.pop("CTXSIM_FUZZ_DATABASE", None)
    if os.geteuid() != 0:
        read_only.chmod(0o555)
        subprocess.run(["sh", "-c", READ_ONLY.replace('mount -o bind,ro "$RO" "$RO"', ":")], env=env, timeout=300,
                       check=True)
    else:  # root writes through permissions: a read-only bind mount in a user and mount namespace
        probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -o bind,ro {read_only} {read_only}"],
                               capture_output=True, text=True, timeout=30)
        if probe.returncode != 0:
            pytest.skip(f"ctxsim: as root, needs unshare -rm for a read-only directory ({probe.stderr[:200]})")
        subprocess.run(["unshare", "-rm", "sh", "-c", READ_ONLY], env=env, timeout=300, check=True)
    err = (tmp_path / "err").read_text()
    kept = cache / "ctxsim" / "kept"
    hostile.line(case, err, f"ctxsim: the example database 'redis://***@127.0.0.1:{port}/0' could not * "
                            f"(ConnectionError: *); what it could not take is kept in {kept} (replay it with --db "
                            f"{kept})")
    assert "rc=1" in err and (tmp_path / "found.yaml").is_file(), err
    assert [p for p in kept.rglob("*") if p.is_file()], "nothing was kept where the line says"
    assert not list(read_only.iterdir())
    hostile.survived(case, [SECRET] if SECRET in err else [])


@pytest.mark.slow
def test_workers_on_a_database_killed_mid_run_say_it_once(hostile: Tally, tmp_path: Path,
                                                          redis_server: tuple[subprocess.Popen[bytes], int]) -> None:
    case = "--workers 3 with Redis killed"
    process, port = redis_server
    (tmp_path / "killer.py").write_text(KILLER)
    url = f"redis://:{SECRET}@127.0.0.1:{port}/0"
    done, _ = _fuzz(tmp_path, "killer:Killer", url, "--workers", "3", "--examples", "30", "--out", "found.yaml",
                    pid=process.pid)
    assert "RemoteTraceback" not in done.stderr, done.stderr[-3000:]
    hostile.line(case, done.stderr, f"ctxsim: the example database 'redis://***@127.0.0.1:{port}/0' *; what it "
                                    f"could not take is kept in .hypothesis/ctxsim-kept (replay it with --db "
                                    f".hypothesis/ctxsim-kept)")
    assert done.returncode == 1 and (tmp_path / "found.yaml").is_file(), done.stderr
    hostile.survived(case, [SECRET] if SECRET in done.stdout + done.stderr else [])
