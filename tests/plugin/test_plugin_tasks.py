"""The plugin on task scenarios: ``reference-loop`` and catalogued-loop items, their failure reports, and the
tracker under test driving the reference loop.

Sizes as in ``test_task_scenario.py``: after n one-step turns the context is 11,900 + 400n + the steps' tokens;
16,000-token steps cross 90% of 200,000 at turn 11 (192,300), so 20 steps are 11 + 9 with one restart.
"""

from __future__ import annotations

from pathlib import Path

import hypothesis  # noqa: F401 - kept across pytester's in-process runs (see test_plugin.py)
import pytest

import ctxsim.check
import ctxsim.loops
import ctxsim.scenario  # noqa: F401

TASK = """\
source: "unit test: twenty steps, one restart"
world: {window: 200000, baseline: 12000}
task:
  steps: 20
  tokens_per_step: 16000
  prompt_tokens: 200
  output_tokens: 100
expect:
  restarts: RESTARTS
  checkpoint: CHECKPOINT
  steps: {done_once: 20, redone: 0, skipped: 0, per_session: PER_SESSION}
  loop:
    fail: [keep-tracker, reuse-lifecycle]
    pass: [seed003]
"""

# Three steps fit in one session: nothing to restart, so a loop that would mishandle a restart is not caught.
SMALL = """\
source: "unit test: no restart needed"
task: {steps: 3, tokens_per_step: 100}
expect:
  restarts: 0
  loop:
    fail: [keep-tracker]
    pass: [keep-session-id]
"""

TRACKERS = '''
from ctxsim.reference import ContextTracker


class Mine(ContextTracker):
    name = "mine"


class Low(ContextTracker):
    """10,000 tokens low: the loop restarts one step late."""

    def context_tokens(self):
        value = super().context_tokens()
        return None if value is None else value - 10_000
'''


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_scenarios = scenarios\n")
    pytester.makepyfile(looptrackers=TRACKERS)
    return pytester


def task(restarts: int, per_session: str, checkpoint: str = "[block]") -> str:
    return (TASK.replace("RESTARTS", str(restarts)).replace("PER_SESSION", per_session)
            .replace("CHECKPOINT", checkpoint))


def write(pytester: pytest.Pytester, name: str, text: str) -> Path:
    path = pytester.path / "scenarios" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_task_scenario_yields_the_reference_loop_and_each_named_loop(project: pytest.Pytester) -> None:
    write(project, "twenty.yaml", task(1, "[11, 9]"))
    result = project.runpytest("--ctx-scenarios", "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "scenarios/twenty.yaml::reference-loop PASSED*",
        "scenarios/twenty.yaml::keep-tracker PASSED*",
        "scenarios/twenty.yaml::reuse-lifecycle PASSED*",
        "scenarios/twenty.yaml::seed003 PASSED*",
    ])
    items, _ = project.inline_genitems("--ctx-scenarios")
    # each item points at the line that says what it must do
    assert [(i.name, i.location[1] + 1) for i in items] == [
        ("reference-loop", 8), ("keep-tracker", 13), ("reuse-lifecycle", 13), ("seed003", 14)]
    assert all(i.get_closest_marker("ctx_scenario") for i in items)


def test_wrong_expectations_fail_naming_each_one_with_its_line(project: pytest.Pytester) -> None:
    write(project, "twenty.yaml", task(2, "[10, 10, 0]", "[block, block]"))
    result = project.runpytest("--ctx-scenarios", "-k", "reference-loop")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([
        ("scenarios/twenty.yaml:9: reference-loop on scenario 'twenty': does not meet the scenario's expectations "
        "(3 unmet expectations)"),
        "scenarios/twenty.yaml:9: expect.restarts: 2, but the loop made 1",
        "scenarios/twenty.yaml:10: expect.checkpoint: [block, block], but the loop's checkpoints took [block]",
        "scenarios/twenty.yaml:11: expect.steps.per_session: [10, 10, 0], but steps per session: [11, 9]",
        "*-- session 1 (connection 1, session id *",
        "*11  continue*s11*192,300*96.15%*>= 90%*checkpoint",
    ])
    assert "Traceback" not in result.stdout.str()


def test_restarts_and_checkpoints_that_do_not_match_are_a_load_error(project: pytest.Pytester) -> None:
    write(project, "twenty.yaml", task(2, "[11, 9, 0]"))  # two restarts, one checkpoint
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([("ctxsim: scenarios/twenty.yaml:10: expect.checkpoint: 1 checkpoint for "
                                 "expect.restarts: 2 (one checkpoint per restart)")])


def test_a_loop_the_checks_do_not_catch_fails_naming_the_invariant(project: pytest.Pytester) -> None:
    write(project, "small.yaml", SMALL)
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=2, failed=1)  # reference-loop, and keep-session-id (its bug cannot show)
    result.stdout.fnmatch_lines([
        ("scenarios/small.yaml:6: keep-tracker on scenario 'small' (expect.loop.fail): NOT caught: it keeps every "
        "invariant, but it should break 'tracker-reset'"),
        "keep-tracker (tracker reference): 3 steps: 3 done once, 0 redone, 0 skipped; steps per session: 3",
    ])


def test_a_buggy_loop_listed_as_passing_fails_with_the_broken_invariants(project: pytest.Pytester) -> None:
    write(project, "twenty.yaml", task(1, "[11, 9]").replace(
        "pass: [seed003]", "pass: [keep-session-id]"))
    result = project.runpytest("--ctx-scenarios", "-k", "keep-session-id")
    result.assert_outcomes(failed=1, deselected=3)
    result.stdout.fnmatch_lines([
        "scenarios/twenty.yaml:14: keep-session-id on scenario 'twenty' (expect.loop.pass): breaks 'new-session'*",
        ("ctxsim: keep-session-id broke invariant 'new-session' (each restart starts a new session with a new "
        "session id): *"),
    ])


def test_the_tracker_under_test_drives_the_reference_loop(project: pytest.Pytester) -> None:
    write(project, "twenty.yaml", task(1, "[11, 9]"))
    result = project.runpytest("--ctx-scenarios", "--ctx-tracker=looptrackers:Mine", "--ctx-tracker=looptrackers:Low",
                               "-v")
    # Low reads turn 11 as 182,300: still over 90%, so it restarts where the truth does. Turn 10 reads 165,900.
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["scenarios/twenty.yaml::mine PASSED*", "scenarios/twenty.yaml::Low PASSED*"])


def test_a_tracker_that_restarts_late_fails_the_task(project: pytest.Pytester) -> None:
    # 30,000 low: turn 11 reads 162,300 and turn 12 (208,700 > the window) is rejected as prompt too long
    project.makepyfile(latetracker=TRACKERS.replace("10_000", "30_000"))
    write(project, "twenty.yaml", task(1, "[11, 9]"))
    result = project.runpytest("--ctx-scenarios", "--ctx-tracker=latetracker:Low", "-k", "Low")
    result.assert_outcomes(failed=1, deselected=4)
    result.stdout.fnmatch_lines([
        ("scenarios/twenty.yaml:*: reference-loop with tracker Low (--ctx-tracker=latetracker:Low) on scenario "
        "'twenty': does not meet the scenario's expectations*"),
        "*12  continue*REJECTED*",
    ])
