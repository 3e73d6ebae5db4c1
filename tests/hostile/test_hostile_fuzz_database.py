"""Hostile fuzz databases: malformed locations, wrong credentials, and a Redis server that dies the moment a
counterexample is found. Each is one ``ctxsim:`` line that never shows a credential, and no counterexample is lost."""

from __future__ import annotations

import os
import shutil
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
