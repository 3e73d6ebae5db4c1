"""``--ctx-block-real``, round two: the real Claude Code CLI whose settings override its base URL or proxies, a
wrapper script that clears the environment, a backslash URL, Python and Node children's own sockets, a thread
outliving its test and an ``atexit`` handler. In a loopback-only network namespace whose loopback also answers as
192.0.2.1 (a trap listening), each is refused with one ``ctxsim:`` line and nothing reaches the trap; without the
guard, the real CLI and the children do reach it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _netns import TRAP_SCRIPT, namespaces
from _tally import Tally

from ctxsim.wire import sdk_bundled_file

CLI = sdk_bundled_file("claude") or Path("claude-not-bundled")
"""The real bundled CLI: refused before it starts; without the guard, it reaches the trap."""

REMOTE = {"env": {"ANTHROPIC_BASE_URL": "http://192.0.2.1:80", "NO_PROXY": "*"}}

INNER = '''
import atexit, json, os, socket, subprocess, sys, threading, time

TRAP = "192.0.2.1"
PY = sys.executable
LOCAL = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "sk-ant-hostile", "IS_SANDBOX": "1"}


def cli(*args, cwd=None, **env):
    subprocess.run([CLI, *args, "-p", "hi"], env={**os.environ, **LOCAL, **env}, cwd=cwd, timeout=30,
                   capture_output=True)


def test_cli_settings_flag_json():
    cli("--settings", json.dumps(REMOTE))


def test_cli_settings_flag_file(tmp_path):
    (tmp_path / "s.json").write_text(json.dumps(REMOTE))
    cli("--settings", str(tmp_path / "s.json"))


def test_cli_config_dir_settings(tmp_path):
    (tmp_path / "settings.json").write_text(json.dumps(REMOTE))
    cli(CLAUDE_CONFIG_DIR=str(tmp_path))


def test_cli_user_settings(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"env": {"HTTPS_PROXY": f"http://{TRAP}:8443"}}))
    cli(HOME=str(tmp_path))


def test_cli_project_settings(tmp_path):
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.local.json").write_text(json.dumps(REMOTE))
    cli(cwd=tmp_path)


def test_cli_backslash_url():
    cli(ANTHROPIC_BASE_URL=f"http://{TRAP}\\\\@127.0.0.1:9/")


def test_wrapper_script_clearing_the_environment(tmp_path):
    script = tmp_path / "agent.sh"
    script.write_text(f"#!/bin/sh\\nexec env -i ANTHROPIC_BASE_URL=http://{TRAP} ANTHROPIC_API_KEY=x {CLI} -p hi\\n")
    script.chmod(0o755)
    subprocess.run([str(script)], timeout=30)


def test_python_child_socket():
    subprocess.run([PY, "-c", f"import socket; socket.create_connection(({TRAP!r}, 443), timeout=5)"], timeout=30)


def test_python_child_execs_the_cli():
    run = (f"import os; os.environ['ANTHROPIC_BASE_URL'] = 'http://{TRAP}'; "
           f"os.execv({str(CLI)!r}, ['claude', '-p', 'hi'])")
    subprocess.run([PY, "-c", run], timeout=30)


def test_node_child_socket():
    subprocess.run(["node", "-e", f"require('net').connect(443, '{TRAP}').on('error', () => {{}})"], timeout=30)


def test_node_child_fetch():
    subprocess.run(["node", "-e", f"fetch('http://{TRAP}:8080/').catch(() => {{}})"], timeout=30)


def test_thread_outliving_its_test():
    def later():
        time.sleep(0.3)
        try:
            socket.create_connection((TRAP, 443), timeout=5)
        except OSError:
            pass

    threading.Thread(target=later, daemon=True).start()


def test_zz_after_the_thread():
    time.sleep(1.5)  # the previous test's thread connects meanwhile: refused, and this test fails saying so


def test_zz_atexit_handler():
    atexit.register(lambda: socket.create_connection((TRAP, 443), timeout=5))
'''

EXPECTED = {
    "test_cli_settings_flag_json": "started Claude Code (*/claude) with ANTHROPIC_BASE_URL=http://192.0.2.1:80 by its "
                                   "settings (--settings): it would call a real model*",
    "test_cli_settings_flag_file": "started Claude Code (*/claude) with ANTHROPIC_BASE_URL=http://192.0.2.1:80 by its "
                                   "settings (--settings */s.json): it would call a real model*",
    "test_cli_config_dir_settings": "started Claude Code (*/claude) with ANTHROPIC_BASE_URL=http://192.0.2.1:80 by "
                                    "its settings (*/settings.json)*",
    "test_cli_user_settings": "started Claude Code (*/claude) with HTTPS_PROXY set by its settings "
                              "(*/.claude/settings.json)*",
    "test_cli_project_settings": "started Claude Code (*/claude) with ANTHROPIC_BASE_URL=http://192.0.2.1:80 by its "
                                 "settings (*/.claude/settings.local.json)*",
    "test_cli_backslash_url": "started Claude Code (*/claude) with ANTHROPIC_BASE_URL=http://192.0.2.1\\@127.0.0.1:9/:"
                              " it would call a real model*",
    "test_wrapper_script_clearing_the_environment": "started Claude Code through another program (*/agent.sh')*",
    "test_python_child_socket": "had a child process (python*, pid *) look up 192.0.2.1:443 (a connection beyond "
                                "127.0.0.1)*",
    "test_python_child_execs_the_cli": "had a child process (python*, pid *) start Claude Code (*/claude) with "
                                       "ANTHROPIC_BASE_URL=http://192.0.2.1: it would call a real model*",
    "test_node_child_socket": "had a child process (node, pid *) open a connection to 192.0.2.1:443: only 127.0.0.1 "
                              "is allowed",
    "test_node_child_fetch": "had a child process (node, pid *) open a connection to 192.0.2.1:8080: only 127.0.0.1 "
                             "is allowed",
    "test_zz_after_the_thread": "looked up 192.0.2.1:443 (a connection beyond 127.0.0.1)*",
}
"""Each way past the block, and the one line that refuses it (after ``ctxsim: --ctx-block-real: <test id> ``)."""

NAMESPACE = '''
set -e
ip link set lo up
ip addr add 192.0.2.1/32 dev lo
"$PYTHON" "$WORK/trap.py" "$WORK/trapped" > "$WORK/trap.out" &
trap_pid=$!
for i in $(seq 100); do grep -q ready "$WORK/trap.out" && break; sleep 0.05; done
# the controls: without the guard, the real CLI (its --settings), a Python and a Node child reach the trap
mkdir -p "$WORK/control-home"
# (until it reached the trap, at most 60 s: a loaded machine starts the CLI slowly; then it is stopped)
HOME="$WORK/control-home" CLAUDE_CONFIG_DIR="$WORK/control-home" ANTHROPIC_API_KEY=sk-ant-hostile IS_SANDBOX=1 \
  ANTHROPIC_BASE_URL=http://127.0.0.1:9 timeout 60 "$CLI" --settings "$REMOTE" -p hi > /dev/null 2>&1 &
cli_pid=$!
for i in $(seq 1200); do grep -q "tcp 80 " "$WORK/trapped" 2>/dev/null && break; sleep 0.05; done
kill $cli_pid 2>/dev/null; wait $cli_pid 2>/dev/null || true
"$PYTHON" -c "import socket; socket.create_connection(('192.0.2.1', 443), timeout=5).close()"
node -e "require('net').connect(8443, '192.0.2.1').on('connect', function () { this.end() })"
sleep 0.3; cp "$WORK/trapped" "$WORK/control"; : > "$WORK/trapped"
"$PYTHON" -m pytest --ctx-block-real -p no:cacheprovider -q -rN -p no:randomly test_inner.py > "$WORK/inner.out" 2>&1 \
  || true
sleep 0.3
kill $trap_pid
'''


@pytest.mark.netns
def test_round_two_in_a_network_namespace(pytester: pytest.Pytester, hostile: Tally) -> None:
    why = namespaces()
    if why is not None:
        pytest.skip(f"ctxsim: {why}")
    if shutil.which("node") is None or not CLI.exists():
        pytest.skip("ctxsim: needs node and the SDK's bundled CLI")
    work = pytester.path
    pytester.makepyfile(test_inner=f"CLI = {str(CLI)!r}\nREMOTE = {REMOTE!r}\n{INNER}")
    pytester.makeini("[pytest]\n")
    (work / "trap.py").write_text(TRAP_SCRIPT)
    (work / "trapped").write_text("")
    env = {**os.environ, "WORK": str(work), "PYTHON": sys.executable, "CLI": str(CLI), "REMOTE": json.dumps(REMOTE)}
    done = subprocess.run(["unshare", "-rnm", "sh", "-c", NAMESPACE], cwd=work, env=env, capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr
    control = (work / "control").read_text()
    assert "tcp 80" in control and "tcp 443" in control and "tcp 8443" in control, (
        f"without the guard the real CLI, a Python and a Node child reach the trap: {control!r}")
    output = (work / "inner.out").read_text()
    for test, expected in EXPECTED.items():
        # the same refusal, as the refused child's own error said it and as the test's report says it, once
        ours = "\n".join(dict.fromkeys(line[line.index("ctxsim:"):] for line in output.splitlines()
                                        if f"::{test} " in line and "ctxsim:" in line))
        hostile.line(f"{test} (round two)", ours, f"*ctxsim: --ctx-block-real: test_inner.py::{test} {expected}")
    summary = [line for line in output.splitlines() if " failed" in line and " passed" in line]
    assert summary and f"{len(EXPECTED)} failed, 2 passed" in summary[-1], output[-3000:]
    hostile.line("an atexit handler after the session (round two)",
                 "\n".join(dict.fromkeys(line[line.index("ctxsim:"):] for line in output.splitlines()
                                          if "(after the session ended" in line)),
                 "ctxsim: --ctx-block-real: (after the session ended: a thread or atexit handler) looked up "
                 "192.0.2.1:443*")
    hostile.case("round two: nothing reaches the trap")
    hostile.leaked("round two: nothing reaches the trap", (work / "trapped").read_text().splitlines())
