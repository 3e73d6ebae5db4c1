"""A cmd: or stream: command gets a hermetic environment; the variables named by ``--env`` (every ``ctxsim``
command that runs trackers), ``--ctx-env`` or the ini's ``ctx_env`` (pytest) pass through, as tox's passenv."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxsim.cli import main
from ctxsim.trackers import passed_environment

SCENARIO = "queries: [{prompt: go, steps: [{call: {in: 5, cc: 300, cr: 9000, out: 20}}]}]\n"

# Each command writes what it saw of TRACKER_BUG to seen.txt (in the directory it runs in), then answers "no
# estimate": the file, not the verdict, is what these tests read.
STREAM = "stream:sh -c 'printf %s \"${TRACKER_BUG-unset}\" > seen.txt; while read l; do echo null; done'"
COMMAND = "cmd:sh -c 'printf %s \"${TRACKER_BUG-unset}\" > seen.txt; echo 0'"


def test_names_and_globs_pass_what_is_set() -> None:
    environ = {"TRACKER_BUG": "1", "TRACKER_MODE": "x", "OTHER": "2"}
    assert passed_environment(["TRACKER_*"], environ) == {"TRACKER_BUG": "1", "TRACKER_MODE": "x"}
    assert passed_environment(["OTHER", "MISSING"], environ) == {"OTHER": "2"}
    assert passed_environment([], environ) == {}


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRACKER_BUG", "1")
    (tmp_path / "mine.yaml").write_text(SCENARIO)
    return tmp_path


DOORS = {
    "run": ["run", "mine.yaml", "--tracker", STREAM],
    "judge": ["judge", STREAM, "mine.yaml"],
    "judge-cmd": ["judge", COMMAND, "mine.yaml"],
    "score": ["score", "mine.yaml", "--tracker", STREAM],
    "fuzz": ["fuzz", "--tracker", STREAM, "--examples", "1", "--out", "found.yaml"],
}


@pytest.mark.parametrize("door", DOORS)
def test_every_command_that_runs_a_tracker_passes_the_named_variable_and_only_it(
        door: str, here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(DOORS[door])
    assert (here / "seen.txt").read_text() == "unset", "ctxsim: the command saw a variable it was not given"
    (here / "seen.txt").unlink()
    main([*DOORS[door], "--env", "TRACKER_BUG"])
    assert (here / "seen.txt").read_text() == "1"
    if door == "fuzz":  # the reproduction passes the same name
        assert "--ctx-env=TRACKER_BUG" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "ini", "seen"), [
    ((), "", "unset"),
    (("--ctx-env=TRACKER_BUG",), "", "1"),
    ((), "ctx_env = OTHER TRACKER_*\n", "1"),
    (("--ctx-env=OTHER",), "ctx_env = TRACKER_BUG\n", "unset"),  # the flag replaces the ini
])
@pytest.mark.parametrize("spec", [STREAM, COMMAND])
def test_pytest_passes_the_variables_of_the_flag_or_the_ini(pytester: pytest.Pytester,
                                                            monkeypatch: pytest.MonkeyPatch, spec: str,
                                                            args: tuple[str, ...], ini: str, seen: str) -> None:
    monkeypatch.setenv("TRACKER_BUG", "1")
    pytester.makeini(f"[pytest]\nasyncio_default_fixture_loop_scope = function\n{ini}")
    (pytester.path / "mine.yaml").write_text(SCENARIO)
    pytester.runpytest(f"--ctx-tracker={spec}", *args, "mine.yaml")
    assert (pytester.path / "seen.txt").read_text() == seen
