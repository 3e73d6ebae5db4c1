"""What ``ctxsim serve`` says of what it plays: each live twin what it changed for that scenario, and, once, that its
CLI wrapper ran the CLI bundled with the Python SDK where no ``CTXSIM_CLI`` named another (a TypeScript client then
plays on a CLI that is not its SDK's). The wrapper's CLI here is a stand-in script: no real CLI starts."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import ctxsim.live._claude as claude_module
import ctxsim.serve._server as serve_module
from ctxsim.corpus import find_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.serve import ScenarioServer


def scenario(name: str) -> SessionScenario:
    loaded = load_scenario(find_scenario(name))
    assert isinstance(loaded, SessionScenario)
    return loaded


def test_each_live_twin_says_what_it_changed_for_its_scenario() -> None:
    # compaction.yaml: query 2 opens with an automatic compaction after query 1's single call
    with ScenarioServer(scenario("compaction")) as server:
        settings = server.settings()
    assert settings["prompts"] == ["Keep going with the refactor", "/compact", "Continue"]
    assert settings["twin"].startswith("query 2's automatic compaction, after a single call, asked for: a /compact "
                                       "query of its own before the query's other steps (")
    # b17-clear-keeps-old-context.yaml: query 2 ("Start on the docs site") opens with a reset
    with ScenarioServer(scenario("b17-clear-keeps-old-context")) as server:
        settings = server.settings()
    assert settings["prompts"] == ["Refactor the billing service", "/clear", "Start on the docs site"]
    assert settings["twin"].startswith("query 2: its reset a /clear query of its own, the query's prompt sent again "
                                       "after it (")
    for said in ("compaction", "split", "subagent", "/model"):
        assert said not in settings["twin"]
    with ScenarioServer(scenario("b01-no-dedupe-without-request-id")) as server:  # played as it is
        assert "twin" not in server.settings() and server.changes == []


def stand_in(path: Path, version: str) -> Path:
    path.write_text(f"#!/bin/sh\necho '{version} (Claude Code)'\n")
    path.chmod(0o755)
    return path


def run_wrapper(server: ScenarioServer, **env: str) -> str:
    """What serve's CLI wrapper prints for ``--version`` in an environment with ``env`` and no other CTXSIM_CLI."""
    assert server.cli_path is not None
    environ = {k: v for k, v in os.environ.items() if k != "CTXSIM_CLI"} | env
    done = subprocess.run([str(server.cli_path), "--version"], capture_output=True, text=True, timeout=60,
                          env=environ, check=True)
    return done.stdout.strip()


@pytest.fixture
def bundled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in for the CLI bundled with the Python SDK; no CTXSIM_CLI in serve's environment."""
    cli = stand_in(tmp_path / "bundled-claude", "9.0.1")
    monkeypatch.setattr(serve_module, "bundled_cli_path", lambda: cli)
    monkeypatch.setattr(claude_module, "bundled_cli_path", lambda: cli)
    monkeypatch.delenv("CTXSIM_CLI", raising=False)
    return cli


def test_serve_says_once_that_its_wrapper_ran_the_bundled_cli_naming_it_and_ctxsim_cli(
        bundled: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with ScenarioServer(scenario("missing-usage-some-blocks")) as server:  # stream faults: a wrapper
        assert run_wrapper(server) == "9.0.1 (Claude Code)"
        assert run_wrapper(server) == "9.0.1 (Claude Code)"
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("ctxsim:")]
    assert len(said) == 1, said
    assert said[0].startswith("ctxsim: serve: the CLI wrapper (cli_path) runs Claude Code ")
    assert f"the CLI bundled with the Python claude-agent-sdk ({bundled})" in said[0]
    assert "set CTXSIM_CLI to its path" in said[0]


def test_a_cli_named_by_the_client_or_by_serves_own_ctxsim_cli_runs_and_nothing_is_said(
        bundled: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    clients = stand_in(tmp_path / "sdk-claude", "9.0.2")
    with ScenarioServer(scenario("missing-usage-some-blocks")) as server:
        assert run_wrapper(server, CTXSIM_CLI=str(clients)) == "9.0.2 (Claude Code)"
    serves = stand_in(tmp_path / "serves-claude", "9.0.3")
    monkeypatch.setenv("CTXSIM_CLI", str(serves))  # as ctxsim-client starts serve
    with ScenarioServer(scenario("missing-usage-some-blocks")) as server:
        assert run_wrapper(server) == "9.0.3 (Claude Code)"  # the client's environment names none
        assert run_wrapper(server, CTXSIM_CLI=str(clients)) == "9.0.2 (Claude Code)"  # the client's wins
    assert "ctxsim:" not in capsys.readouterr().err
