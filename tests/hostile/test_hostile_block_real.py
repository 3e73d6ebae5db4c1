"""``--ctx-block-real`` against the ways around it the attacker's list found: each is refused with one ``ctxsim:``
line, no stand-in for Claude Code runs, and (in a network namespace) nothing reaches the address standing in for
the outside world."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _netns import TRAP_SCRIPT, namespaces
from _tally import Tally

TRAP = "192.0.2.1"
"""TEST-NET-1: never routed; inside the namespace test, an address of the namespace's loopback with a trap on it."""

INNER = '''
import _socket
import asyncio
import os
import pty
import socket
import subprocess
import sys
import urllib.request

TRAP = "192.0.2.1"
PY = sys.executable


def test_shell_line():
    subprocess.run("claude -p hi", shell=True)


def test_sh_c():
    subprocess.run(["sh", "-c", "cd . && claude -p hi"])


def test_env_wrapper():
    subprocess.run(["env", "X=1", "claude", "-p", "hi"])


def test_os_system():
    os.system("claude -p hi")


def test_posix_spawn_claude():
    os.posix_spawn(CLAUDE, [CLAUDE, "-p", "hi"], {"ANTHROPIC_BASE_URL": "https://api.anthropic.com"})


def test_posix_spawn_with_a_remote_proxy():
    os.posix_spawn("/bin/true", ["true"], {"HTTPS_PROXY": f"http://{TRAP}:8443"})


def test_claude_code_binary():
    subprocess.run([CLAUDE_CODE, "-p", "hi"], env={"PATH": os.environ["PATH"]})


def test_npx():
    subprocess.run(["npx", "@anthropic-ai/claude-code", "-p", "hi"])


def test_bedrock_with_a_local_base_url():
    subprocess.run([CLAUDE, "-p", "hi"], env={"ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
                                             "CLAUDE_CODE_USE_BEDROCK": "1"})


def test_asyncio_subprocess():
    async def main():
        process = await asyncio.create_subprocess_exec(CLAUDE, "-p", "hi")
        await process.wait()

    asyncio.run(main())


def test_pty_spawn():
    pty.spawn([CLAUDE, "-p", "hi"])


def test_a_child_on_a_remote_proxy(monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", f"http://{TRAP}:80")
    monkeypatch.setenv("http_proxy", f"http://{TRAP}:80")
    fetch = f"import urllib.request; urllib.request.urlopen('http://{TRAP}:8080/', timeout=5)"
    subprocess.run([PY, "-c", fetch])


def test_a_child_calls_the_base_url():
    post = ("import os, urllib.request; urllib.request.urlopen(urllib.request.Request("
            "os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=b'{}'), timeout=5)")
    subprocess.run([PY, "-c", post])


def test_gethostbyname():
    socket.gethostbyname("api.anthropic.com")


def test_gethostbyaddr():
    socket.gethostbyaddr(TRAP)


def test_udp_sendto():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.sendto(b"x", (TRAP, 53))


def test_raw_socket_module():
    sock = _socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.connect((TRAP, 443))
    finally:
        sock.close()


def test_asyncio_connection():
    async def main():
        await asyncio.wait_for(asyncio.open_connection(TRAP, 443), 5)

    asyncio.run(main())


def test_local_use_is_fine():
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        with socket.create_connection(server.getsockname(), timeout=5):
            pass
    socket.getaddrinfo("localhost", 80)
    env = subprocess.run([PY, "-c", "import os, json; print(json.dumps(dict(os.environ)))"], check=True,
                         capture_output=True, text=True).stdout
    import json
    env = json.loads(env)
    assert "CLAUDE_CODE_USE_BEDROCK" not in env and env["HTTPS_PROXY"].startswith("http://127.0.0.1:")
    assert env["ANTHROPIC_BASE_URL"] == env["HTTPS_PROXY"]
'''

EXPECTED = {
    "test_shell_line": "started Claude Code through another program ('/bin/sh -c claude -p hi')*",
    "test_sh_c": "started Claude Code through another program ('sh -c cd . && claude -p hi')*",
    "test_env_wrapper": "started Claude Code through another program ('env X=1 claude -p hi')*",
    "test_os_system": "started Claude Code through another program ('/bin/sh -c claude -p hi')*",
    "test_posix_spawn_claude": "started Claude Code (*/bin/claude) with ANTHROPIC_BASE_URL=https://api.anthropic.com:"
                               " it would call a real model*",
    "test_posix_spawn_with_a_remote_proxy": "started a process (os.posix_spawn) with HTTPS_PROXY set beyond this "
                                            "machine*",
    "test_claude_code_binary": "started Claude Code (*/bin/claude-code) with ANTHROPIC_BASE_URL unset*",
    "test_npx": "started Claude Code through another program ('npx @anthropic-ai/claude-code -p hi')*",
    "test_bedrock_with_a_local_base_url": "started Claude Code (*/bin/claude) with CLAUDE_CODE_USE_BEDROCK set*",
    "test_asyncio_subprocess": "started Claude Code (*/bin/claude) with ANTHROPIC_BASE_URL unset*",
    "test_pty_spawn": "started Claude Code (*/bin/claude) with ANTHROPIC_BASE_URL unset*",
    "test_a_child_on_a_remote_proxy": "had a child process send 'GET http://192.0.2.1:8080/ HTTP/1.1' to ctxsim's "
                                      "refuser*",
    "test_a_child_calls_the_base_url": "had a child process send 'POST /v1/messages HTTP/1.1' to ctxsim's refuser*",
    "test_gethostbyname": "looked up api.anthropic.com (a connection beyond 127.0.0.1)*",
    "test_gethostbyaddr": "looked up 192.0.2.1 (a connection beyond 127.0.0.1)*",
    "test_udp_sendto": "sent a datagram to 192.0.2.1:53: only 127.0.0.1 is allowed",
    "test_raw_socket_module": "opened a connection to 192.0.2.1:443: only 127.0.0.1 is allowed",
    "test_asyncio_connection": "opened a connection to 192.0.2.1:443: only 127.0.0.1 is allowed",
}
"""Each bypass's test, and the one line that refuses it (after ``ctxsim: --ctx-block-real: <test id> ``)."""

STANDINS = ("claude", "claude-code", "npx")
"""Stand-ins for Claude Code on the inner run's PATH: each leaves a mark when it runs."""


def _project(pytester: pytest.Pytester) -> Path:
    bin_dir = pytester.path / "bin"
    bin_dir.mkdir()
    for name in STANDINS:
        (bin_dir / name).write_text(f"#!/bin/sh\necho {name} >> {pytester.path / 'ran'}\n")
        (bin_dir / name).chmod(0o755)
    pytester.makepyfile(test_inner=f"CLAUDE = {str(bin_dir / 'claude')!r}\n"
                                   f"CLAUDE_CODE = {str(bin_dir / 'claude-code')!r}\n{INNER}")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return bin_dir


def _check(output: str, pytester: pytest.Pytester, hostile: Tally, where: str) -> None:
    """Each bypass's test failed with its one refusal line (once in the failure's text; ``-rN``: no summary line),
    the control passed, and no stand-in for Claude Code ran."""
    for test, expected in EXPECTED.items():
        ours = "\n".join(line for line in output.splitlines() if f"::{test} " in line)
        hostile.line(f"{test} ({where})", ours, f"*ctxsim: --ctx-block-real: test_inner.py::{test} {expected}")
    assert f"{len(EXPECTED)} failed, 1 passed" in output.strip().splitlines()[-1], output[-3000:]
    ran = pytester.path / "ran"
    hostile.leaked(f"the bypasses ({where})", ran.read_text().split() if ran.exists() else [])


def test_every_bypass_is_refused_with_one_line(pytester: pytest.Pytester, hostile: Tally) -> None:
    bin_dir = _project(pytester)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "pytest", "--ctx-block-real", "-p", "no:cacheprovider", "-q", "-rN",
                           "-p", "no:randomly", "test_inner.py"], cwd=pytester.path, env=env, capture_output=True,
                          text=True, timeout=300)
    _check(done.stdout, pytester, hostile, "this machine's network")


NAMESPACE = '''
set -e
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
echo "nameserver 192.0.2.1" > "$WORK/resolv.conf"
mount --bind "$WORK/resolv.conf" /etc/resolv.conf
"$PYTHON" "$WORK/trap.py" "$WORK/trapped" > "$WORK/trap.out" &
trap_pid=$!
for i in $(seq 100); do grep -q ready "$WORK/trap.out" && break; sleep 0.05; done
# the control: without the guard, the trap is reachable (so a silent trap below means refused, not unreachable)
"$PYTHON" -c "import socket; socket.create_connection(('192.0.2.1', 443), timeout=5).close()"
"$PYTHON" -c "import socket; socket.gethostbyname('example.com')" 2>/dev/null || true
sleep 0.2; cp "$WORK/trapped" "$WORK/control"; : > "$WORK/trapped"
status=0
"$PYTHON" -m pytest --ctx-block-real -p no:cacheprovider -q -rN -p no:randomly test_inner.py > "$WORK/inner.out" 2>&1 \
  || status=$?
sleep 0.2
kill $trap_pid
exit 0
'''


@pytest.mark.netns
def test_in_a_network_namespace_no_bypass_reaches_the_outside(pytester: pytest.Pytester, hostile: Tally) -> None:
    """In a loopback-only network namespace whose loopback also answers as 192.0.2.1 (a trap listening on its
    ports, and the resolver), each bypass is refused and nothing reaches the trap; without the guard it does."""
    why = namespaces()
    if why is not None:
        pytest.skip(f"ctxsim: {why}")
    bin_dir = _project(pytester)
    work = pytester.path
    (work / "trap.py").write_text(TRAP_SCRIPT)
    (work / "trapped").write_text("")
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "WORK": str(work),
           "PYTHON": sys.executable}
    done = subprocess.run(["unshare", "-rnm", "sh", "-c", NAMESPACE], cwd=work, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    control = (work / "control").read_text()
    assert "tcp 443" in control and "udp 53" in control, f"the trap did not work without the guard: {control!r}"
    _check((work / "inner.out").read_text(), pytester, hostile, "a network namespace")
    hostile.case("nothing reaches the trap")
    hostile.leaked("nothing reaches the trap", (work / "trapped").read_text().splitlines())
    # a child's own direct connection is not the guard's (see the docs); a loopback-only namespace stops it
    direct = subprocess.run(["unshare", "-rn", sys.executable, "-c",
                             "import socket; socket.create_connection(('192.0.2.1', 443), timeout=5)"],
                            capture_output=True, text=True, timeout=60)
    assert direct.returncode != 0 and "Network is unreachable" in direct.stderr, direct.stderr
