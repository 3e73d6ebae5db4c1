"""What the command line asks for is what runs, nothing dropped without a word: two trackers under test that reports
would name alike are both judged under ids of their own; a folder of scenarios named on the command line is
collected as a test folder is; ``--ctx-scenarios=PATH`` given twice collects both paths."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]

GOOD = """\
source: "unit test: a cached call"
queries:
  - prompt: "go"
    steps:
      - call: {in: 3, cc: 100, cr: 12000, out: 50}
expect:
  fail: [mala-overwrite]
"""

ONE_CLASS = '''
from ctxsim.reference import ContextTracker


class Mine(ContextTracker):
    name = "mine"


def make_mine():
    return Mine()


def make_mine_with(world):
    return Mine(world=world)
'''

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini(INI)
    pytester.makepyfile(mine=ONE_CLASS)
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "good.yaml").write_text(GOOD)
    return pytester


def names(project: pytest.Pytester, *args: str) -> list[str]:
    items, _ = project.inline_genitems(*args)
    return [item.nodeid for item in items]


def test_two_factories_of_one_class_are_both_judged_under_ids_of_their_own(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-scenarios=scenarios", "--ctx-tracker=mine:make_mine",
                               "--ctx-tracker=mine:make_mine_with", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["scenarios/good.yaml::reference PASSED*",
                                 "scenarios/good.yaml::mala-overwrite-fails-as-declared PASSED*",
                                 "scenarios/good.yaml::mine PASSED*",
                                 "scenarios/good.yaml::mine[[]mine:make_mine_with[]] PASSED*"])
    # the ctx_tracker fixture too: one test per tracker, the ids apart
    project.makepyfile(test_fixture="def test_it(ctx_tracker):\n    assert ctx_tracker.name == 'mine'\n")
    assert names(project, "test_fixture.py", "--ctx-tracker=mine:make_mine", "--ctx-tracker=mine:make_mine_with") == [
        "test_fixture.py::test_it[mine]", "test_fixture.py::test_it[mine[mine:make_mine_with]]"]


def test_two_stream_trackers_of_one_basename_are_both_judged(project: pytest.Pytester) -> None:
    for folder in ("dist", "dist-v2"):
        (project.path / folder).mkdir()
        shutil.copy(TESTS / "stream_trackers" / "last_main.py", project.path / folder / "stream-gauge.py")
    first, second = (f"stream:{sys.executable} {folder}/stream-gauge.py" for folder in ("dist", "dist-v2"))
    result = project.runpytest("--ctx-scenarios=scenarios", f"--ctx-tracker={first}", f"--ctx-tracker={second}",
                               "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["scenarios/good.yaml::stream:stream-gauge.py PASSED*",
                                 f"scenarios/good.yaml::stream:stream-gauge.py[[]{second}[]] PASSED*"])


def test_the_same_tracker_given_twice_is_judged_once(project: pytest.Pytester) -> None:
    assert [n.split("::")[1] for n in names(project, "--ctx-scenarios=scenarios", "--ctx-tracker=mine:make_mine",
                                            "--ctx-tracker=mine:make_mine", "--ctx-tracker=reference",
                                            "--ctx-tracker=ctxsim.reference:ContextTracker")] == [
        "reference", "mala-overwrite-fails-as-declared", "mine"]
