"""The suite's shared fixtures and settings (the one conftest of the suite).

Hypothesis: no deadline (a shared 2-core CI machine has pauses that say nothing of the code), no example database
(a run depends on the checkout only), and no health check failing a slow generator.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml  # noqa: F401
from hypothesis import HealthCheck, settings

settings.register_profile("ctxsim-suite", deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ctxsim-suite")

# PyYAML is imported here, before any in-process pytester run. A run's new modules are dropped when it ends, so a YAML
# first imported inside one comes back as another module object in the next, whose errors the loader's `except
# yaml.MarkedYAMLError` (kept by the lazily loaded scenario face) would not catch: the likely cause of a malformed
# file read as "could not be loaded: ParserError" now and then under xdist (seen twice, not reproduced since).

# The SDK's ClaudeSDKClient.receive_response() returns after the ResultMessage without closing the receive_messages
# generators under it; under trio their finalizer warns when they are collected (claude-agent-sdk's, not ctxsim's).
# Marks outrank -W, so `pytest -W error` runs the suite without failing on them.
_SDK_ASYNC_GENERATORS = (
    "ignore:Async generator 'claude_agent_sdk.:ResourceWarning",
    r"ignore:Exception ignored in. <async_generator object (ClaudeSDKClient|Query)\.receive_messages"
    ":pytest.PytestUnraisableExceptionWarning",
)


# The suite's YAML files are what its tests read (41 deliberately malformed), not scenarios to run: a folder named on
# the command line (`pytest tests/runner`) would collect them as the plugin collects any folder's scenario files.
collect_ignore_glob = ["tests/*.yaml", "tests/*.yml"]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for spec in _SDK_ASYNC_GENERATORS:
            item.add_marker(pytest.mark.filterwarnings(spec))


CAPTURED = Path(__file__).resolve().parent / "tests" / "captures" / "claude-code-2.1.332"
"""What the real Claude Code CLI 2.1.332 wrote and said, recorded by ``tests/captures/remake.py``: the captures the
tests hold the wire, the importer and the reference to (a newer CLI gets a directory of its own)."""


@pytest.fixture(scope="session")
def captured() -> Path:
    """The directory of the real CLI's captures (:data:`CAPTURED`)."""
    return CAPTURED


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend_name(request: pytest.FixtureRequest) -> str:
    """Both async backends the SDK supports; the fake transport must work under each."""
    return request.param


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real ``redis-server`` on a free port of 127.0.0.1, empty, persisting nothing, stopped after the test:
    ``redis://127.0.0.1:PORT/0``. Skips, saying why, where the server or the ``redis`` client is absent."""
    pytest.importorskip("redis", reason="ctxsim: the redis client is not installed (pip install "
                                        "'pytest-ctxsim[redis]')")
    import redis

    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("ctxsim: redis-server is not installed (apt-get install redis-server; .ci/run installs it)")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
                                "no", "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"redis://127.0.0.1:{port}/0"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=1)
        deadline = time.monotonic() + 15
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"ctxsim: redis-server on port {port} did not answer within 15 s "
                                f"(exit status {process.poll()})")
                time.sleep(0.05)
        client.close()
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
