"""Task scenarios: the ``task`` section, its expectations, and the run of the restart loops on it.

Expected numbers are worked out by hand from the sizes in the YAML below: after n one-step turns of a fresh
session the last call's prompt is ``baseline + n x prompt + (2n - 1) x output + the steps' tokens`` (the
:class:`ctxsim.agent.Task` docstring), i.e. ``11,900 + 400n + the steps' tokens`` with baseline 12,000, prompts
of 200 and outputs of 100.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ctxsim.agent import DEGRADATIONS
from ctxsim.loops._catalogue import CATALOGUE as LOOPS
from ctxsim.runner._task import REFERENCE_LOOP, TaskRun, describe_task, run_task
from ctxsim.scenario import ScenarioError, TaskScenario, parse_scenario
from ctxsim.wire import render

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
WORLD = "world: {window: 200000, baseline: 12000}\n"
SIZES = "  prompt_tokens: 200\n  output_tokens: 100\n"

# 20 steps of 16,000: turn 10 is at 11,900 + 10 x 16,400 = 175,900 (87.95%), turn 11 at 192,300 (96.15%):
# 11 steps a session at 90%, then 9.
TWENTY = WORLD + "task:\n  steps: 20\n  tokens_per_step: 16000\n" + SIZES


def load(text: str, expect: str = "") -> object:
    body = text + ("expect:\n" + textwrap.indent(textwrap.dedent(expect), "  ") if expect else "")
    return parse_scenario(body, file="t.yaml")


def test_the_compact_form_builds_the_task_policy_and_plan() -> None:
    sc = load(TWENTY + "  checkpoints: [truncated, refusal]\n  max_restarts: 4\n", "restarts: 1\n")
    spec = sc.task
    task = spec.task
    assert task.ids == tuple(f"s{i:02d}" for i in range(1, 21)) and {s.tokens for s in task.steps} == {16_000}
    assert (task.window, task.baseline, task.prompt_tokens, task.output_tokens, task.name) == (
        200_000, 12_000, 200, 100, "scenario")  # named after the scenario
    assert spec.policy.threshold_tokens(window=task.window) == 180_000 and not spec.policy.wind_down
    assert spec.checkpoints == ("truncated", "refusal") and spec.max_restarts == 4
    assert [spec.degradation(k) for k in (1, 2, 3)] == ["truncated", "refusal", "well_formed"]
    assert sc.session.queries == () and not hasattr(sc, "observations")  # the world only: no observation points
    assert [f for s in render(sc.session) for f in s.frames if f.observation is not None] == []
    assert sc.loop_expect.restarts == 1 and sc.lines["expect.restarts"] == 10


def test_steps_as_a_list_with_runs_and_ids() -> None:
    sc = load(WORLD + "task:\n  steps: [1000, {times: 2, tokens: 5}, {id: final.step, tokens: 7}]\n"
                      "  steps_per_turn: 2\n")
    assert [(s.id, s.tokens) for s in sc.task.task.steps] == [
        ("s01", 1000), ("s02", 5), ("s03", 5), ("final.step", 7)]
    assert sc.task.task.steps_per_turn == 2 and sc.task.task.prompt_tokens is None


def test_graduated_zones_reserve_and_a_plan_by_restart_number() -> None:
    sc = load(WORLD + "task:\n  steps: 3\n  tokens_per_step: 1\n"
                      "  policy: {zones: {mask: 0.7, wind_down: 0.9}, reserve: 20000}\n"
                      "  checkpoints: {2: no_tags}\n")
    policy = sc.task.policy
    # percentages of the effective window, 200,000 - 20,000 = 180,000
    assert (policy.mask_at, policy.restart_at, policy.wind_down) == (0.7, 0.9, True)
    assert policy.threshold_tokens(window=200_000) == 162_000
    assert policy.threshold_tokens(0.7, 200_000) == 126_000
    assert [sc.task.degradation(k) for k in (1, 2)] == ["well_formed", "no_tags"]
    assert "graduated zones: mask from 70% (126,000), wind down at 90% (162,000 tokens)" in describe_task(sc)
    assert "effective window 180,000 (window 200,000 - reserve 20,000)" in describe_task(sc)


@pytest.mark.parametrize(("task", "expect", "message"), [
    ("  steps: 0\n  tokens_per_step: 1\n", "", "3: task.steps: expected a positive integer, got 0"),
    ("  steps: 1001\n  tokens_per_step: 1\n", "", "3: task.steps: expected at most 1,000, got 1,001"),
    ("  steps: many\n", "", "3: task.steps: expected a number of steps or a list of steps, got 'many'"),
    ("  steps: []\n", "", "3: task.steps: expected a non-empty list"),
    ("  steps: [5, 6]\n  tokens_per_step: 5\n", "", "4: task.tokens_per_step: give tokens_per_step with a number"),
    ("  steps: [{tokens: -1}]\n", "", "3: task.steps[0].tokens: expected a non-negative integer, got -1"),
    ("  steps: [{id: a, times: 2, tokens: 1}]\n", "", "3: task.steps[0].id: an id names one step: not with times"),
    ("  steps: [{id: 'a b', tokens: 1}]\n", "", "3: task.steps: Task 't': step ids are words"),
    ("  steps: [{tokens: 1, size: 2}]\n", "", "3: task.steps[0].size: unknown key"),
    ("  steps: [{tokens: 5, traced: 3}]\n", "", "3: task.steps[0].traced: expected true or false, got 3"),
    ("  steps: [5]\n  clear_tool_results: [{session: 1, turn: 2, tokens: 10}, {session: 1, turn: 2, tokens: 5}]\n",
     "", "4: task.clear_tool_results[1]: session 1, turn 2 is cleared twice: give one item a turn"),
    ("  steps: [5]\n  clear_tool_results: [{session: 1, turn: 2}]\n", "",
     "4: task.clear_tool_results[0].tokens: required key is missing"),
    ("  steps: [5]\n  clear_tool_results: [{session: 1, turn: 2, tokens: 0}]\n", "",
     "4: task.clear_tool_results[0].tokens: expected a positive integer, got 0"),
    ("  steps: [5]\n  output_tokens: 0\n", "", "4: task.output_tokens: expected a positive integer, got 0"),
    ("  steps: [5]\n  policy: {threshold: 90}\n", "", ""),  # 90 x the window never fires: allowed, like 1.1
    ("  steps: [5]\n  policy: {threshold: 0}\n", "", ("4: task.policy.threshold: expected a fraction of the "
                                                     "effective window, a number > 0 (0.9 is 90%), got 0")),
    ("  steps: [5]\n  policy: {zones: {mask: 0.7}}\n", "", "4: task.policy.zones.wind_down: required key is missing"),
    ("  steps: [5]\n  policy: {reserve: 200000}\n", "", ("4: task.policy.reserve: a reserve of 200,000 tokens "
                                                       "leaves nothing of the window (200,000)")),
    ("  steps: [5]\n  checkpoints: {0: refusal}\n", "", ("4: task.checkpoints.0: a restart number is "
                                                        "1..max_restarts (10), got 0")),
    ("  steps: [5]\n  checkpoints: [refusal, refusal]\n  max_restarts: 1\n", "",
     "4: task.checkpoints: 2 checkpoints planned, but the loop makes at most max_restarts=1 restarts"),
    ("  steps: [5]\n  checkpoints: 3\n", "", "4: task.checkpoints: no checkpoint degradation 3; known: well_formed"),
    ("  steps: [5]\n", "tolerance: 5\n", "5: expect.tolerance: applies to a simulated or recorded session"),
    ("  steps: [5]\n", "fail: [arbiter-msgid]\n", "5: expect.fail: applies to a simulated or recorded session"),
    ("  steps: [5]\n", "checkpoint: block\n", "5: expect.checkpoint: expected a list, got 'block'"),
    ("  steps: [5]\n", "steps: {done_once: 2}\n", "5: expect.steps.done_once: 2 steps, but the task has 1"),
    ("  steps: [5, 5]\n", "steps: {done_once: 1, skipped: 0, redone: 0}\n",
     "5: expect.steps.done_once: with nothing redone, the task's 2 steps are done once or skipped: 1 + 0 != 2"),
    ("  steps: [5]\n", "steps: {per_session: [1, 0]}\n  restarts: 0\n",
     "5: expect.steps.per_session: 2 sessions for expect.restarts: 0 (one entry per session: restarts + 1)"),
    ("  steps: [5]\n", "steps: {per_session: []}\n", "5: expect.steps.per_session: expected a non-empty list"),
    ("  steps: [5]\n", "loop: {fail: [keep-trackers]}\n",
     "5: expect.loop.fail[0]: no loop 'keep-trackers' in the catalogue (did you mean 'keep-tracker'?)"),
    ("  steps: [5]\n", "loop: {fail: [keep-tracker], pass: [keep-tracker]}\n",
     "5: expect.loop.pass[0]: 'keep-tracker' is already listed in expect.loop.fail"),
    ("  steps: [5]\n", "loop: {fail: [reference]}\n", ("5: expect.loop.fail[0]: use expect.reference for the "
                                                        "reference loop")),
    ("  steps: [5]\n", "loop: {catch: []}\n", "5: expect.loop.catch: unknown key"),
])
def test_task_mistakes_name_file_line_and_key(task: str, expect: str, message: str) -> None:
    text = "name: t\ntask:\n" + task + ("expect:\n  " + expect if expect else "")
    if not message:
        assert isinstance(load(text), TaskScenario)
        return
    with pytest.raises(ScenarioError) as info:
        load(text)
    assert str(info.value).startswith(f"ctxsim: t.yaml:{message}"), str(info.value)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(("top", "message"), [
    ("stream: {file: x.jsonl}\n", "1: stream.file: give either a recorded stream or a task, not both"),
    ("faults: [duplicate_blocks]\n", "1: faults: faults apply to a simulated or recorded session, not to a task"),
])
def test_a_task_is_not_mixed_with_a_session(top: str, message: str) -> None:
    with pytest.raises(ScenarioError, match="^" + message.replace(".", r"\.").replace("(", r"\(").join(
            [r"ctxsim: t\.yaml:", ""])):
        load(top + "task: {steps: [5]}\n")


def test_the_reference_loop_meets_hand_worked_expectations() -> None:
    sc = load(TWENTY, """\
        restarts: 1
        checkpoint: [block]
        steps: {done_once: 20, redone: 0, skipped: 0, per_session: [11, 9]}
    """)
    run = run_task(sc)
    assert run.problems() == [] and run.meets() and run.invariants_kept
    assert (run.restarts, run.per_session, run.done_once) == (1, (11, 9), 20)
    assert run.verdict("meet") == (True, "meets the scenario's expectations")
    assert run.verdict("miss")[0] is False
    assert run.report.threshold == 180_000


def test_wrong_expectations_name_each_key_and_line() -> None:
    sc = load(TWENTY, """\
        restarts: 2
        checkpoint: [block, block]
        steps:
          done_once: 20
          redone: 1
          per_session: [10, 10, 0]
    """)
    problems = {p.key: (p.line, p.message) for p in run_task(sc).problems()}
    assert problems == {
        "expect.restarts": (8, "expect.restarts: 2, but the loop made 1"),
        "expect.checkpoint": (9, "expect.checkpoint: [block, block], but the loop's checkpoints took [block]"),
        "expect.steps.redone": (12, "expect.steps.redone: 1, but steps redone: 0"),
        "expect.steps.per_session": (13, "expect.steps.per_session: [10, 10, 0], but steps per session: [11, 9]"),
    }
    assert not run_task(sc).meets()


def test_a_reserve_moves_the_threshold_to_the_effective_window() -> None:
    # effective window 180,000, threshold 162,000: turn 9 is at 159,500 (88.6%), turn 10 at 175,900 (97.7%).
    # Session 2 does s11..s20 and crosses on its last step, which needs no restart.
    sc = load(TWENTY + "  policy: {threshold: 0.9, reserve: 20000}\n",
              "restarts: 1\nsteps: {per_session: [10, 10]}\n")
    run = run_task(sc)
    assert run.problems() == [] and run.report.threshold == 162_000


def test_degraded_checkpoints_cost_what_the_agent_documents() -> None:
    # refusal at the first restart: no state, so the minimal continuation prompt has the agent inspect the work;
    # it finds s01..s11 there and does s12..s20 (9 steps: 11,900 + 9 x 16,400 = 159,500, under 90%).
    sc = load(TWENTY + "  checkpoints: [refusal]\n", """\
        restarts: 1
        checkpoint: [refusal]
        steps: {done_once: 20, redone: 0, skipped: 0, per_session: [11, 9]}
    """)
    assert "refusal" in DEGRADATIONS and run_task(sc).problems() == []
    # steps that leave no trace: inspecting finds nothing, so session 2 starts over and does s01..s11 again (11
    # redone, crossing 90% at its eleventh turn as session 1 did); the second checkpoint is well formed and
    # session 3 does s12..s20
    untraced = WORLD + "task:\n  steps: [{times: 20, tokens: 16000, traced: false}]\n" + SIZES
    sc = load(untraced + "  checkpoints: [refusal]\n", """\
        restarts: 2
        checkpoint: [refusal, block]
        steps: {done_once: 9, redone: 11, skipped: 0, per_session: [11, 11, 9]}
    """)
    assert run_task(sc).problems() == []


@pytest.mark.parametrize("name", [name for name, entry in LOOPS.items() if entry.invariant])
def test_each_buggy_loop_is_caught_naming_its_invariant(name: str) -> None:
    run = run_task(load(TWENTY), loop=name)
    invariant = LOOPS[name].invariant
    met, does = run.verdict("caught")
    assert met and does.startswith(f"the loop checks catch it breaking {invariant!r}")
    assert f"broke invariant {invariant!r}" in str(run.report)
    assert run.verdict("kept")[0] is False


def test_a_loop_that_is_not_caught_says_so() -> None:
    run = run_task(load(TWENTY), loop="seed003")
    assert run.verdict("kept") == (True, "keeps every invariant")

    # the correct loop's run, judged as if it were keep-tracker's: the checks report nothing broken
    relabelled = TaskRun(run.scenario, "keep-tracker", run.tracker, run.report)
    assert relabelled.verdict("caught") == (
        False, "NOT caught: it keeps every invariant, but it should break 'tracker-reset'")


def test_the_timeline_shows_turns_context_zones_checkpoints_and_restarts() -> None:
    run = run_task(load(TWENTY))
    lines = run.timeline().splitlines()
    assert lines[0].startswith("-- session 1 (connection 1, session id ")
    assert lines[1].split() == ["turn", "prompt", "steps", "context", "%", "eff.", "zone", "then"]
    assert lines[2].split() == ["1", "task", "s01", "28,300", "14.15%", "continue", "continue"]
    assert lines[11].split() == ["10", "continue", "s10", "175,900", "87.95%", "continue", "continue"]
    assert lines[12].split() == ["11", "continue", "s11", "192,300", "96.15%", ">=", "90%", "checkpoint"]
    # the checkpoint request: 192,300 + the reply's output 100 + the prompt 200
    assert lines[13].split()[:4] == ["12", "checkpoint", "-", "192,600"]
    assert lines[13].endswith("agent wrote well_formed, loop took block; new session")
    assert lines[14].startswith("-- session 2 (connection 2, ")
    assert lines[16].split()[:3] == ["1", "continuation", "s12"]
    assert lines[-1].split()[-2:] == ["task", "complete"]
    assert run.summary().splitlines()[:2] == [
        "reference-loop (tracker reference): 20 steps: 20 done once, 0 redone, 0 skipped; steps per session: 11, 9",
        ("1 restart for 1 true threshold crossing (threshold 180,000 tokens = 90% of the effective window 200,000); "
        "checkpoints: block")]


def test_long_timelines_show_the_turns_where_something_happens() -> None:
    # 100 steps of 1,000 tokens never reach 90%: 100 turns, of which only the first and the last are kept
    run = run_task(load(WORLD + "task:\n  steps: 100\n  tokens_per_step: 1000\n" + SIZES))
    short = run.timeline().splitlines()
    assert short[-1] == "(100 turns; only those where something happens are shown)"
    assert "        ... 98 turns like the ones around ..." in short
    assert len(run.timeline(full=True).splitlines()) == 2 + 100


def test_a_graduated_policy_winds_down_before_it_restarts() -> None:
    # 8,000-token steps: turn 20 at 11,900 + 20 x 8,400 = 179,900 (89.95%), turn 21 at 188,300 winds down,
    # turn 22 (the wind-down prompt) at 196,700 restarts. 25 steps: 22 + 3.
    sc = load(WORLD + "task:\n  steps: 25\n  tokens_per_step: 8000\n" + SIZES
              + "  policy: {zones: {mask: 0.7, wind_down: 0.9}}\n", "steps: {per_session: [22, 3]}\n")
    run = run_task(sc)
    assert run.problems() == []
    rows = [line.split() for line in run.timeline().splitlines()]
    assert rows[16][5] == "continue" and rows[17][5] == "mask" and rows[21][4] == "89.95%"  # turns 15, 16, 20
    assert rows[22][-2:] == ["wind", "down"] and rows[23][1] == "wind-down" and rows[23][-1] == "checkpoint"


def test_the_tracker_under_test_drives_the_reference_loop() -> None:
    made = []

    class Counting:
        def __init__(self) -> None:
            from ctxsim.reference import ContextTracker

            self.inner = ContextTracker()
            made.append(self)

        def observe(self, message: object) -> None:
            self.inner.observe(message)

        def context_tokens(self) -> int | None:
            return self.inner.context_tokens()

    sc = load(TWENTY, "restarts: 1\n")
    run = run_task(sc, tracker_factory=Counting, tracker="counting")
    assert len(made) == 2 and run.meets() and run.summary().startswith("reference-loop (tracker counting)")


def test_run_task_needs_a_task() -> None:
    with pytest.raises(ValueError, match=r"^ctxsim: run_task: scenario 'scenario' has no task$"):
        run_task(parse_scenario("queries:\n  - steps: []\n"), loop=REFERENCE_LOOP)


def test_a_task_scenario_has_no_tracker_timeline() -> None:
    from ctxsim.runner._scenario import run_scenario
    from ctxsim.trackers.catalogue import make

    with pytest.raises(ValueError, match=r"^ctxsim: run_scenario: scenario 'scenario' is a task scenario"):
        run_scenario(load(TWENTY), make("reference"))


def test_the_documented_task_example_holds() -> None:
    import ctxsim.scenario

    text = (ctxsim.scenario.__doc__ or "").split("A task for a restart loop instead")[1].split("::\n", 1)[1]
    sc = parse_scenario(textwrap.dedent(text.split("\n\n")[0]), file="doc.yaml")
    # truncated after 11 steps: 11 // 2 = 5 listed as completed; told it was cut off the agent inspects the work,
    # but no step left a trace there, so s06..s11 are done again (6 redone)
    assert sc.loop_expect.steps.redone == 6 and run_task(sc).meets()
    for loop in sc.loop_expect.must_fail:
        assert run_task(sc, loop=loop).verdict("caught")[0], loop


def test_a_task_the_reference_loop_cannot_finish_is_expected_to_fail() -> None:
    # s08's result is 90,000 tokens: its turn's closing request is 11,900 + 7 x 16,400 + 400 + 90,000 + 100 =
    # 217,100 > 200,000, rejected as prompt too long; so is the checkpoint request (127,100 + 90,000 + 200).
    # No step leaves a trace in the workspace, so the minimal continuation prompt (inspect the work first) finds
    # nothing: the task starts over, s08 is rejected again, and max_restarts: 1 ends it:
    # s01..s08 done twice, s09..s20 never. The reference loop raises RestartLimitError; steps-once is broken.
    untraced = "{times: 7, tokens: 16000, traced: false}, {tokens: 90000, traced: false}, " \
               "{times: 12, tokens: 16000, traced: false}"
    text = (WORLD + f"task:\n  steps: [{untraced}]\n" + SIZES
            + "  max_restarts: 1\n")
    expect = "restarts: 1\nsteps: {done_once: 0, redone: 8, skipped: 12, per_session: [8, 8]}\n"
    run = run_task(load(text, "reference: fail\n" + expect))
    assert run.meets() and run.report.broken == {"steps-once"}
    assert type(run.report.error).__name__ == "RestartLimitError"
    rows = [line.split() for line in run.timeline().splitlines()]
    assert rows[9][:6] == ["8", "continue", "s08", "217,100", "108.55%", "REJECTED"]
    assert rows[10][:6] == ["9", "checkpoint", "-", "217,300", "108.65%", "REJECTED"]
    # the default, expect.reference: pass, names itself when the loop breaks an invariant
    (problem,) = run_task(load(text, expect)).problems()
    assert (problem.key, problem.line) == ("expect.reference", 7)  # the line of expect
    assert problem.message == ("expect.reference: pass (the default): the loop checks must find no broken invariant, "
                               "but the loop broke 'steps-once'")


class Shifted:
    """The reference tracker, ``by`` tokens off: the policy then sees the threshold where it is not."""

    def __init__(self, by: int) -> None:
        from ctxsim.reference import ContextTracker

        self.inner, self.by = ContextTracker(), by

    def observe(self, message: object) -> None:
        self.inner.observe(message)

    def context_tokens(self) -> int | None:
        value = self.inner.context_tokens()
        return None if value is None else value + self.by


@pytest.mark.parametrize(("percent", "by", "meets"), [
    (89, -1, True), (89, 2_000, False),   # 178,000 read as 180,000: a restart one step early, without a crossing
    (90, -1, False), (90, 2_000, True),   # 180,000 read as 179,999: the restart comes one step late
    (91, -1, True), (91, 2_000, True),
])
def test_the_threshold_scenarios_catch_a_restart_one_step_off(percent: int, by: int, meets: bool) -> None:
    from ctxsim.scenario import load_scenario

    sc = load_scenario(SCENARIOS / f"seed003-threshold-{percent}.yaml")
    run = run_task(sc, tracker_factory=lambda: Shifted(by), tracker=f"shifted{by:+}")
    assert run.meets() is meets, run.problems()
    if not meets:
        assert {p.key for p in run.problems()} == {"expect.reference", "expect.steps.per_session"}
        assert run.report.broken == {"restart-count"}


def test_a_task_named_after_checkpoints_is_still_a_task() -> None:
    # the task prompt names the task: the agent must not take "checkpoint-..." for a checkpoint request
    sc = load("name: checkpoint-names\n" + TWENTY, "restarts: 1\nsteps: {per_session: [11, 9]}\n")
    run = run_task(sc)
    assert run.meets() and run.report.agent.connections[0].turns[0].kind == "task"
