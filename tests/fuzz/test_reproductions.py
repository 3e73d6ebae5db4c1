"""The command ``ctxsim fuzz`` prints reproduces the failure from any directory, for every kind of tracker: a
Python tracker, a ``cmd:`` and a ``stream:`` command named by a relative path, and a restart loop given a tracker
whose module is found elsewhere; a reproduction whose command cannot start is an error saying so, not a failure
that looks like the bug."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxsim.cli import main

pytestmark = pytest.mark.slow  # a fuzz run, then pytest in a process of its own

PREFIX = "reproduce it, from any directory: "

# A stream tracker summing every assistant message (streamed copies and subagents too).
SUM_ALL = """\
import json, sys
total = 0
for line in sys.stdin:
    m = json.loads(line)
    u = (m.get("message") or {}).get("usage") if m.get("type") == "assistant" else None
    if u:
        total += sum(u.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    print(total or "null", flush=True)
"""

# A statusline that reads the payload's figures but leaves out the cache reads.
NO_CACHE_READS = """\
import json, sys
usage = (json.load(sys.stdin).get("context_window") or {}).get("current_usage") or {}
print(usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0))
"""

PLANTED = """\
from claude_agent_sdk import AssistantMessage
from ctxsim.reference import ContextTracker

class Planted(ContextTracker):
    def observe(self, m):
        if isinstance(m, AssistantMessage) and m.parent_tool_use_id is not None:
            m = AssistantMessage(content=m.content, model=m.model, usage=m.usage, message_id=m.message_id)
        super().observe(m)
"""


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The project the fuzz runs in (its working directory), and another directory the reproduction runs from."""
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "bin").mkdir(parents=True)
    elsewhere.mkdir()
    monkeypatch.chdir(project)
    return project, elsewhere


def fuzz(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``ctxsim fuzz argv`` (it must find a failure) and return the reproduction it prints."""
    assert main(["fuzz", *argv]) == 1
    out = capsys.readouterr().out
    return next(line for line in out.splitlines() if line.startswith(PREFIX)).removeprefix(PREFIX)


def reproduce(command: str, where: Path) -> subprocess.CompletedProcess[str]:
    """Run the printed command through the shell from ``where``, with this environment's pytest on the PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    return subprocess.run(["/bin/sh", "-c", command], cwd=where, capture_output=True, text=True, timeout=300,
                          env=env)


def assert_reproduced(run: subprocess.CompletedProcess[str], tracker: str, how: str) -> None:
    said = run.stdout + run.stderr
    assert run.returncode == 1, said
    assert run.stdout.rstrip().splitlines()[-1].strip("= ").startswith("1 failed, 1 passed"), said
    assert f"{tracker} must track scenario" in said and "could not be read" not in said, said
    assert how in said, said


def test_a_python_tracker(dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    project, elsewhere = dirs
    (project / "doors_planted.py").write_text(PLANTED)
    command = fuzz(["--tracker", "doors_planted:Planted", "--examples", "300"], capsys)
    assert_reproduced(reproduce(command, elsewhere), "Planted", "first failing point")


def test_a_relative_statusline_command(dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    project, elsewhere = dirs
    (project / "bin" / "gauge.py").write_text(NO_CACHE_READS)
    command = fuzz(["--tracker", "cmd:python3 bin/gauge.py", "--examples", "20"], capsys)
    assert f"cwd={project}" in command
    assert_reproduced(reproduce(command, elsewhere), "cmd:gauge.py", "first failing point")


def test_a_relative_stream_command_and_one_that_cannot_start(dirs: tuple[Path, Path],
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    project, elsewhere = dirs
    (project / "bin" / "sum_all.py").write_text(SUM_ALL)
    command = fuzz(["--tracker", "stream:python3 bin/sum_all.py", "--examples", "30"], capsys)
    assert_reproduced(reproduce(command, elsewhere), "stream:sum_all.py", "first failing point")
    (project / "bin" / "sum_all.py").unlink()  # the tracker is gone: no verdict at all, an error saying why
    run = reproduce(command, elsewhere)
    assert run.returncode == pytest.ExitCode.USAGE_ERROR, run.stdout + run.stderr
    assert "the command cannot start: bin/sum_all.py: no such file" in run.stderr
    assert "failed" not in run.stdout


LOOP = """\
from ctxsim.loops import CATALOGUE

restart_loop = CATALOGUE["keep-tracker"].loop
"""

TRACKER = """\
from ctxsim.reference import ContextTracker

class Mine(ContextTracker):
    pass
"""


def test_a_loop_with_a_tracker_found_on_the_pythonpath(dirs: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    project, elsewhere = dirs
    trackers = tmp_path / "trackers"  # on the PYTHONPATH of the fuzz run, not its working directory
    trackers.mkdir()
    (trackers / "doors_mine.py").write_text(TRACKER)
    (project / "doors_loop.py").write_text(LOOP)
    monkeypatch.syspath_prepend(str(trackers))
    command = fuzz(["--loop", "doors_loop:restart_loop", "--tracker", "doors_mine:Mine", "--examples", "200"],
                   capsys)
    assert command.startswith(f"PYTHONPATH={project}{os.pathsep}{trackers} ")
    run = reproduce(command, elsewhere)
    said = run.stdout + run.stderr
    assert run.returncode == 1 and "tracker-reset" in said and "1 failed" in said, said
    assert "cannot import" not in said and "ModuleNotFoundError" not in said, said
