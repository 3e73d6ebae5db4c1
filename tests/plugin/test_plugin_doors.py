"""What the command line asks for is what runs, nothing dropped without a word: two trackers under test that reports
would name alike are both judged under ids of their own; a folder of scenarios named on the command line is
collected as a test folder is; ``--ctx-scenarios=PATH`` given twice collects both paths."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from test_plugin import GOOD  # the plugin tests' passing scenario

TESTS = Path(__file__).resolve().parents[1]


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
    pytester.makepyfile(doors_tracker=ONE_CLASS)  # a name no other test module imports
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "good.yaml").write_text(GOOD)
    return pytester


def names(project: pytest.Pytester, *args: str) -> list[str]:
    items, _ = project.inline_genitems(*args)
    return [item.nodeid for item in items]


def test_two_factories_of_one_class_are_both_judged_under_ids_of_their_own(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-scenarios=scenarios", "--ctx-tracker=doors_tracker:make_mine",
                               "--ctx-tracker=doors_tracker:make_mine_with", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["scenarios/good.yaml::reference PASSED*",
                                 "scenarios/good.yaml::mala-overwrite-fails-as-declared PASSED*",
                                 "scenarios/good.yaml::mine PASSED*",
                                 "scenarios/good.yaml::mine[[]doors_tracker:make_mine_with[]] PASSED*"])
    # the ctx_tracker fixture too: one test per tracker, the ids apart
    project.makepyfile(test_fixture="def test_it(ctx_tracker):\n    assert ctx_tracker.name == 'mine'\n")
    assert names(project, "test_fixture.py", "--ctx-tracker=doors_tracker:make_mine",
                 "--ctx-tracker=doors_tracker:make_mine_with") == [
        "test_fixture.py::test_it[mine]", "test_fixture.py::test_it[mine[doors_tracker:make_mine_with]]"]


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
    assert [n.split("::")[1] for n in names(project, "--ctx-scenarios=scenarios",
                                            "--ctx-tracker=doors_tracker:make_mine",
                                            "--ctx-tracker=doors_tracker:make_mine", "--ctx-tracker=reference",
                                            "--ctx-tracker=ctxsim.reference:ContextTracker")] == [
        "reference", "mala-overwrite-fails-as-declared", "mine"]


def test_a_folder_named_on_the_command_line_collects_its_scenario_files(project: pytest.Pytester) -> None:
    (project.path / "scenarios" / "data.yaml").write_text("just: data\n")  # YAML that is no scenario: left alone
    (project.path / "scenarios" / "sub").mkdir()
    (project.path / "scenarios" / "sub" / "deeper.yml").write_text(GOOD)
    project.makepyfile(test_x="def test_x():\n    pass\n")
    good = ["scenarios/good.yaml::reference", "scenarios/good.yaml::mala-overwrite-fails-as-declared"]
    deeper = [n.replace("good.yaml", "sub/deeper.yml") for n in good]
    assert names(project, "scenarios") == good + deeper
    assert names(project, "scenarios/sub", "test_x.py") == [*deeper, "test_x.py::test_x"]
    # only a folder named on the command line: not the ini's testpaths, nor the directory pytest starts in
    assert names(project) == ["test_x.py::test_x"]
    project.makeini(f"{INI}testpaths = scenarios\n")
    assert names(project) == []


def test_the_flag_given_twice_collects_both_paths(project: pytest.Pytester) -> None:
    (project.path / "more").mkdir()
    (project.path / "more" / "other.yaml").write_text(GOOD)
    other = ["more/other.yaml::reference", "more/other.yaml::mala-overwrite-fails-as-declared"]
    good = ["scenarios/good.yaml::reference", "scenarios/good.yaml::mala-overwrite-fails-as-declared"]
    assert names(project, "--ctx-scenarios=scenarios", "--ctx-scenarios=more") == good + other
    assert names(project, "--ctx-scenarios=more", "--ctx-scenarios=scenarios/good.yaml") == other + good
    result = project.runpytest("--ctx-scenarios=scenarios", "--ctx-scenarios=more")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["ctxsim scenarios: scenarios, more"])
