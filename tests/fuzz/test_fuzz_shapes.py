"""Fuzzing explains itself: only shapes Claude Code produces, faults real on the surface the tracker reads, a
likely-cause column, and a reproduction command that finds the tracker where the fuzz run found it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings

from ctxsim.cli import main
from ctxsim.strategies import fault_plans, sessions
from ctxsim.surfaces import FAULT_SURFACES
from ctxsim.world import Call, Compaction, ConversationReset

LEAKY = ("from claude_agent_sdk import AssistantMessage\n"
         "from ctxsim.reference import ContextTracker\n"
         "class Leaky(ContextTracker):\n"
         "    def observe(self, m):\n"
         "        if isinstance(m, AssistantMessage) and m.parent_tool_use_id is not None:\n"
         "            m = AssistantMessage(content=m.content, model=m.model, usage=m.usage, message_id=m.message_id)\n"
         "        super().observe(m)\n")


@settings(max_examples=150, deadline=None)
@given(sessions(resets=2, compactions=2))
def test_generated_sessions_keep_claude_codes_shapes(session: object) -> None:
    from ctxsim.world import Session

    assert isinstance(session, Session)
    calls_since = 0
    for query in session.queries:
        for position, step in enumerate(query.steps):
            if isinstance(step, ConversationReset):
                assert position == 0, "a /clear begins its query"
                calls_since = 0
            elif isinstance(step, Compaction):
                assert calls_since > 0, "a compaction summarizes a conversation"
                assert step.post_tokens >= 1
                assert session.baseline + step.post_tokens < step.pre_tokens, "compacting never grows the context"
                calls_since = 0
            elif isinstance(step, Call) and step.is_main:
                for count in (step.input_tokens, step.cache_creation_input_tokens, step.cache_read_input_tokens,
                              step.output_tokens):
                    assert type(count) is int
                calls_since += 1


@settings(max_examples=100, deadline=None)
@given(fault_plans(reads=frozenset({"sdk"}), size=3))
def test_an_sdk_stream_tracker_is_fuzzed_only_with_faults_its_stream_can_carry(plan: object) -> None:
    for fault in plan.faults:  # type: ignore[attr-defined]
        assert "sdk" in FAULT_SURFACES[fault.name].names, fault.name


def test_a_tracker_found_through_pythonpath_reproduces_from_another_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    found, ran, elsewhere = tmp_path / "trackers", tmp_path / "run", tmp_path / "elsewhere"
    for directory in (found, ran, elsewhere):
        directory.mkdir()
    (found / "leaky_tracker.py").write_text(LEAKY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(found))  # as PYTHONPATH=trackers would
    monkeypatch.chdir(ran)
    assert main(["fuzz", "--tracker", "leaky_tracker:Leaky", "--examples", "300", "--out", "found.yaml"]) == 1
    out = capsys.readouterr().out
    assert "likely cause" in out
    command = out.strip().splitlines()[-1].removeprefix("reproduce it, from any directory: ")
    assert command.startswith(f"PYTHONPATH={shlex.quote(str(found))} pytest ")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(["/bin/sh", "-c", command], cwd=elsewhere, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 1 and "1 failed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "ModuleNotFoundError" not in done.stdout + done.stderr
