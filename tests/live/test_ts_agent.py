"""The TypeScript agent under test (``examples/ts-agent``): its ``node --test`` suite puts its tracker through
``stream:`` over the bundled corpus (``ctxsim judge``) and the whole agent, its SDK starting the SDK's own CLI, through
``ctxsim serve``. It runs where Node and the example's npm install are there (``.ci/run`` installs it), and skips,
saying which is missing, elsewhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ts-agent"
SDK = EXAMPLE / "node_modules" / "@anthropic-ai" / "claude-agent-sdk"


@pytest.mark.live
def test_the_typescript_agent_and_its_tracker_pass_their_node_tests_under_ctxsim() -> None:
    if shutil.which("node") is None:
        pytest.skip("ctxsim: node is not on PATH: the TypeScript example cannot run")
    if not SDK.is_dir():
        pytest.skip(f"ctxsim: the TypeScript example is not installed: run `npm ci` in {EXAMPLE} (.ci/run does)")
    ctxsim = Path(sys.executable).with_name("ctxsim")
    assert ctxsim.is_file(), f"the ctxsim command is not beside {sys.executable}"
    done = subprocess.run(["node", "--test", "test/"], cwd=EXAMPLE, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "CTXSIM": str(ctxsim)}, check=False)
    summary = dict(re.findall(r"^# (pass|fail|skipped|cancelled) (\d+)$", done.stdout, re.MULTILINE))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert summary == {"pass": "11", "fail": "0", "skipped": "0", "cancelled": "0"}, done.stdout[-4000:]
