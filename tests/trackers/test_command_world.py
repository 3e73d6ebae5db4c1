"""A statusline command runs from where ctxsim was started (relative paths, ``./script``), is told the world in
environment variables, and may say "no estimate" the usual ways."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from ctxsim.check import run_tracker
from ctxsim.trackers import CommandTracker
from ctxsim.trackers._command import WORLD_VARIABLES, parse_command_spec
from ctxsim.trackers._readout import UnreadableOutput, read_output
from ctxsim.world import SessionBuilder

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="ctxsim: node is not on PATH")

ECHO_PAYLOAD = """let s='';process.stdin.on('data',d=>s+=d).on('end',()=>{
const c=JSON.parse(s).context_window.current_usage;
console.log(c?c.input_tokens+c.cache_creation_input_tokens+c.cache_read_input_tokens:'');});
"""


def _session():  # type: ignore[no-untyped-def]
    return (SessionBuilder(seed=3, name="plain").query("work")
            .call(input=3, cache_creation=2_000, cache_read=30_000, output=200).call().build())


@needs_node
def test_a_script_named_by_a_relative_path_runs_from_where_ctxsim_was_started(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "statusline.js").write_text(ECHO_PAYLOAD, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    report = run_tracker(parse_command_spec("cmd:node statusline.js"), _session())
    assert report.error is None and report.ok, str(report)


def test_a_dot_slash_script_runs_and_home_stays_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = tmp_path / "my-statusline.sh"
    script.write_text('#!/bin/sh\ncase "$HOME" in "$PWD"*) echo "HOME is the cwd" >&2; exit 3;; esac\n'
                      'test -d "$CLAUDE_CONFIG_DIR/projects" || exit 4\necho 0\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.chdir(tmp_path)
    report = run_tracker(parse_command_spec("cmd:./my-statusline.sh"), _session())
    assert report.error is None, report.error
    assert [p.estimate for p in report.points] == [0] * len(report.points)


def test_the_world_is_in_documented_environment_variables(tmp_path: Path) -> None:
    dump = tmp_path / "env.txt"
    names = " ".join(f"${name}" for name in WORLD_VARIABLES)
    tracker = CommandTracker(f'echo {names} >> {dump}; echo', cwd=str(tmp_path))
    session = (SessionBuilder(seed=1, window=1_000_000, name="wide").query("go").call(input=5, cache_creation=0,
                                                                                        cache_read=40_000).build())
    run_tracker(tracker, session)
    seen = {tuple(line.split()) for line in dump.read_text(encoding="utf-8").splitlines()}
    from ctxsim.wire import cli_version_rendered

    assert seen == {("1000000", "additive", str(session.auto_compact_threshold), session.model,
                     cli_version_rendered(None))}


def test_an_inclusive_gateway_is_told_to_a_command(tmp_path: Path) -> None:
    from ctxsim.trackers._command import world_environment
    from ctxsim.world import Session

    session = _session()
    inclusive = Session(**{**session.__dict__, "usage": "inclusive"})
    assert world_environment(inclusive, 200_000)["CTXSIM_USAGE"] == "inclusive"


@pytest.mark.parametrize("shown", ["ctx --", "-", "?", "N/A", "…", "Context: n/a", "ctx: unknown", "ctx 12% \n--"])
def test_the_usual_renderings_of_unknown_are_no_estimate(shown: str) -> None:
    assert read_output(shown + "\n", None, 200_000) is None


@pytest.mark.parametrize("shown", ["ctx 12k", "n/a tokens left: 12", "--verbose"])
def test_other_words_are_still_nonsense(shown: str) -> None:
    with pytest.raises(UnreadableOutput):
        read_output(shown, None, 200_000)


def test_what_says_unknown_is_configurable() -> None:
    with pytest.raises(UnreadableOutput):
        read_output("ctx --", None, 200_000, unknown="")  # empty: only blank and TBD are no estimate
    assert read_output("gauge: pending", None, 200_000, unknown=r"pending$") is None
    tracker = parse_command_spec("cmd[unknown='pending$']:echo gauge: pending")
    assert tracker.unknown == "pending$"
    with pytest.raises(ValueError, match="does not compile"):
        CommandTracker("echo", unknown="(")


def test_cwd_is_an_option_and_must_exist(tmp_path: Path) -> None:
    assert parse_command_spec(f"cmd[cwd={tmp_path}]:echo 1").cwd == str(tmp_path)
    assert CommandTracker("echo 1").cwd == os.getcwd()
    with pytest.raises(ValueError, match="is not a directory"):
        CommandTracker("echo 1", cwd=str(tmp_path / "nope"))
