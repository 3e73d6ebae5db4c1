"""``--ctx-block-real``: a test that would reach a real model or the network fails, naming what tried."""

from __future__ import annotations

import pytest

INNER = '''
import socket
import subprocess
import sys

import pytest


def test_looks_up_a_name():
    socket.create_connection(("api.anthropic.com", 443), timeout=1)


def test_connects_to_an_address():
    with socket.socket() as sock:
        sock.connect(("192.0.2.1", 443))  # TEST-NET-1: never routed


def test_swallows_the_refusal():
    try:
        socket.getaddrinfo("example.com", 80)
    except OSError:
        pass


def test_starts_claude_code_pointed_nowhere(tmp_path):
    subprocess.run([FAKE_CLAUDE, "-p", "hi"], env={"PATH": "/usr/bin:/bin"}, check=True)


def test_starts_claude_code_pointed_at_the_fake_api(tmp_path):
    subprocess.run([FAKE_CLAUDE, "-p", "hi"], env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, check=True)


def test_the_sdk_client_starts_claude_code_pointed_nowhere():
    import anyio
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

    async def main():
        async with ClaudeSDKClient(ClaudeAgentOptions(cli_path=FAKE_CLAUDE)) as client:
            await client.query("hi")

    anyio.run(main)


def test_local_connections_and_other_programs_are_fine():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    socket.getaddrinfo("localhost", 80)
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_inert(request):
    if not (request.config.getoption("ctx_block_real") or request.config.getini("ctx_block_real")):
        assert socket.getaddrinfo.__module__ == "socket" and subprocess.Popen.__init__.__module__ == "subprocess"
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    fake = pytester.path / "bin" / "claude"  # a stand-in for the CLI: it leaves a mark when it runs
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho ran >> {pytester.path / 'ran'}\n")
    fake.chmod(0o755)
    pytester.makepyfile(test_inner=f"FAKE_CLAUDE = {str(fake)!r}\n{INNER}")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def test_every_real_call_fails_its_test_naming_what_tried(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-block-real", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, failed=5)
    result.stdout.fnmatch_lines_random([
        "*ctxsim: --ctx-block-real: test_inner.py::test_looks_up_a_name looked up api.anthropic.com:443 (a "
        "connection beyond 127.0.0.1): only 127.0.0.1 is allowed",
        "*ctxsim: --ctx-block-real: test_inner.py::test_connects_to_an_address opened a connection to "
        "192.0.2.1:443: only 127.0.0.1 is allowed",
        "*ctxsim: --ctx-block-real: test_inner.py::test_swallows_the_refusal looked up example.com:80*",
        f"*ctxsim: --ctx-block-real: test_inner.py::test_starts_claude_code_pointed_nowhere started Claude Code "
        f"({project.path / 'bin' / 'claude'}) with ANTHROPIC_BASE_URL unset: it would call a real model; point it "
        f"at ctxsim's fake API on 127.0.0.1 (ctxsim.live) or use the fake_claude fixture",
        "*ctxsim: --ctx-block-real: test_inner.py::test_the_sdk_client_starts_claude_code_pointed_nowhere started "
        "Claude Code (*claude) with ANTHROPIC_BASE_URL unset*",
    ])
    # refused before it started; the one pointed at 127.0.0.1 ran
    assert (project.path / "ran").read_text() == "ran\n"


def test_the_ini_turns_it_on_and_without_it_nothing_is_patched(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_block_real = true\n")
    result = project.runpytest("-p", "no:cacheprovider", "-k", "swallows or fine or inert or pointed_at")
    result.assert_outcomes(passed=3, failed=1)
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    result = project.runpytest("-p", "no:cacheprovider", "-k", "fine or inert or pointed_at")
    result.assert_outcomes(passed=3)
