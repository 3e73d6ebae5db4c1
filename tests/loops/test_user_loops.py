"""A user's own restart loop, in a user-shaped project run through ``pytester``: its own wording and an 80%
threshold, declared on the loop (``policy``, ``prompts``), checked by ``check_restart_loop`` and by
``pytest --ctx-loop`` over the task corpus; seed-shaped bugs in it fail naming the invariant; a prompt it did not
declare fails quoted.

Sizes: 20 steps of 8,000 tokens, prompts of 200 and outputs of 100 on a 200,000 window with a 12,000 baseline.
After n one-step turns of a fresh session the last call's prompt is 11,900 + 8,400n (``Task``'s docstring): 80%
(160,000) is first reached at turn 18 (163,100; turn 17 is 154,700), so an 80% loop restarts once and the second
session does the last 2 steps; 90% (180,000) would need turn 21, past the task's end, so no restart is owed there.
"""

from __future__ import annotations

from pathlib import Path

import hypothesis  # noqa: F401 - kept across pytester's in-process runs (see test_plugin.py)
import pytest

import ctxsim.loops
import ctxsim.scenario  # noqa: F401

MYLOOP = '''
import re
from dataclasses import replace

from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ResultMessage, TextBlock

from ctxsim.agent import LoopPrompts

CHECKPOINT_ASK = "We are running out of room. Write down where you are in a <checkpoint> block now."
RESUME = "{task}\\n\\nResume from this checkpoint:\\n{checkpoint}"
LOOK = "{task}\\n\\nThe last session ended without a usable checkpoint. Look at the work done so far, then go on."
CUT = "(This checkpoint was cut off: look at the work before trusting it.)"
THRESHOLD = 0.8


async def turn(client, prompt, tracker=None):
    await client.query(prompt)
    text, result = [], None
    async for message in client.receive_response():
        if tracker is not None:
            tracker.observe(message)
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            text += [b.text for b in message.content if isinstance(b, TextBlock)]
        if isinstance(message, ResultMessage):
            result = message
    return "\\n".join(text), result


def resume_prompt(task, reply, result):
    """The next session's first prompt: the last complete block, else what follows an unclosed tag (noted when the
    reply was cut off), else the whole reply; with nothing usable (an error, a refusal, empty tags), look first."""
    found = [b for b in re.findall(r"<checkpoint>(.*?)</checkpoint>", reply, re.S) if b.strip()]
    if found:
        return RESUME.format(task=task, checkpoint=found[-1])  # a revised block comes last
    state = reply.split("<checkpoint>")[-1].strip()
    if result.is_error or not state or "</checkpoint>" in state or re.match(r"I'm sorry|I can't", state):
        return LOOK.format(task=task)
    if result.stop_reason == "max_tokens":
        state += "\\n\\n" + CUT
    return RESUME.format(task=task, checkpoint=state)


async def restart_loop(rig, *, keep_tracker=False, resume_old=False, checkpoint_on_new_client=False):
    limit = int(THRESHOLD * rig.task.window)
    prompt, restarts, session, tracker = rig.prompt, 0, None, rig.make_tracker()
    while True:
        if not keep_tracker:
            tracker = rig.make_tracker()
        async with ClaudeSDKClient(replace(rig.options, resume=session if resume_old else None)) as client:
            following = prompt
            while True:
                text, result = await turn(client, following, tracker)
                session = result.session_id
                if "TASK COMPLETE" in (result.result or ""):
                    return restarts
                if (tracker.context_tokens() or 0) >= limit:
                    break
                following = "Continue with the task."
            if checkpoint_on_new_client:
                async with ClaudeSDKClient(replace(rig.options)) as other:
                    reply, result = await turn(other, CHECKPOINT_ASK)
            else:
                reply, result = await turn(client, CHECKPOINT_ASK)
        prompt = resume_prompt(rig.prompt, reply, result)
        restarts += 1
        if restarts > rig.max_restarts:
            raise RuntimeError("too many restarts")


restart_loop.policy = THRESHOLD
restart_loop.prompts = LoopPrompts(checkpoint_request=CHECKPOINT_ASK, continuation=RESUME,
                                   inspect=(LOOK, re.compile(re.escape(CUT))))


def variant(name, declare=True, **bug):
    async def loop(rig):
        return await restart_loop(rig, **bug)
    loop.__name__ = name
    loop.policy = THRESHOLD
    if declare:
        loop.prompts = restart_loop.prompts
    return loop


keeps_tracker = variant("keeps_tracker", keep_tracker=True)
resumes_old_session = variant("resumes_old_session", resume_old=True)
checkpoint_on_new_client = variant("checkpoint_on_new_client", checkpoint_on_new_client=True)
undeclared = variant("undeclared", declare=False)


def no_policy(rig):
    return restart_loop(rig)


no_policy.prompts = restart_loop.prompts
'''

TEST_MYLOOP = '''
import pytest
from ctxsim.agent import Task
from ctxsim.loops import LoopCheckError, check_restart_loop

import myloop

TASK = Task.uniform(20, tokens=8_000, window=200_000, baseline=12_000, prompt_tokens=200, output_tokens=100)


def test_my_loop_keeps_every_invariant():
    report = check_restart_loop(myloop.restart_loop, TASK)
    assert report.threshold == 160_000
    assert report.restarts == 1 and report.crossings == 1
    assert [sum(len(t.steps) for t in c.work_turns) for c in report.sessions] == [18, 2]
    assert report.agent.counts() == {step: 1 for step in TASK.ids}


@pytest.mark.parametrize("name, invariant", [("keeps_tracker", "tracker-reset"),
                                             ("resumes_old_session", "new-session"),
                                             ("checkpoint_on_new_client", "checkpoint")])
def test_each_bug_is_caught(name, invariant):
    with pytest.raises(LoopCheckError) as caught:
        check_restart_loop(getattr(myloop, name), TASK)
    assert invariant in caught.value.report.broken
    assert f"ctxsim: {name} broke invariant {invariant!r}" in str(caught.value)


def test_judged_at_ninety_percent_the_restart_is_unwarranted():
    with pytest.raises(LoopCheckError, match="restarted without crossing the threshold of 180,000 tokens"):
        check_restart_loop(myloop.no_policy, TASK)
'''

SCENARIO = """\
source: "our agent: twenty steps"
world: {window: 200000, baseline: 12000}
task: {steps: 20, tokens_per_step: 8000, prompt_tokens: 200, output_tokens: 100}
expect:
  restarts: 0
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_scenarios = scenarios\n")
    pytester.makepyfile(myloop=MYLOOP)
    path = pytester.path / "scenarios" / "twenty.yaml"
    path.parent.mkdir()
    path.write_text(SCENARIO)
    return pytester


def test_check_restart_loop_passes_the_users_loop_and_names_each_bug(project: pytest.Pytester) -> None:
    project.makepyfile(test_myloop=TEST_MYLOOP)
    result = project.runpytest("test_myloop.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5)


def test_ctx_loop_runs_the_users_loop_over_the_task_corpus(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-scenarios", "--ctx-loop=myloop:restart_loop", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["ctxsim restart loop under test: restart_loop (myloop:restart_loop)",
                                 "scenarios/twenty.yaml::reference-loop PASSED*",
                                 "scenarios/twenty.yaml::restart_loop PASSED*"])


def test_ctx_loop_passes_the_users_loop_on_every_task_scenario_of_the_corpus(project: pytest.Pytester) -> None:
    corpus = Path(__file__).resolve().parents[2] / "scenarios"
    tasks = [p for p in sorted(corpus.glob("*.yaml")) if "\ntask:" in p.read_text()]
    assert len(tasks) >= 10
    for path in tasks:
        (project.path / "scenarios" / path.name).write_text(path.read_text())
    result = project.runpytest("--ctx-scenarios", "--ctx-loop=myloop:restart_loop", "-k", "restart_loop")
    result.assert_outcomes(passed=len(tasks) + 1)  # the corpus, and the project's own twenty.yaml


def test_ctx_loop_from_the_ini_and_a_buggy_loop_fails_naming_the_invariant(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_scenarios = scenarios\n"
                    "ctx_loop =\n    myloop:keeps_tracker\n    myloop:checkpoint_on_new_client\n")
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "scenarios/twenty.yaml:*: keeps_tracker on scenario 'twenty' (--ctx-loop=myloop:keeps_tracker: every "
        "invariant must hold): breaks 'tracker-reset'",
        "ctxsim: keeps_tracker broke invariant 'tracker-reset' *",
        "*-- session 1 (connection 1, session id *",
        "*18  continue*s18*163,100*81.55%*>= 80%*checkpoint",
    ])
    result.stdout.fnmatch_lines(["ctxsim: checkpoint_on_new_client broke invariant 'checkpoint' *"])


def test_an_undeclared_prompt_fails_quoted_saying_how_to_declare_it(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-scenarios", "--ctx-loop=myloop:undeclared", "-k", "undeclared")
    result.assert_outcomes(failed=1, deselected=1)
    result.stdout.fnmatch_lines([
        "ctxsim: undeclared broke invariant 'declared-prompts' *: FakeAgent cannot classify prompt 19 of its "
        "session (connection 1): 'We are running out of room. Write down where you are in a <checkpoint> block "
        "now.'. *Declare what your loop says with ctxsim.agent.LoopPrompts*",
    ])


def test_ctxsim_run_loop_shows_the_turn_timeline(project: pytest.Pytester, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxsim.cli import main

    monkeypatch.chdir(project.path)
    monkeypatch.syspath_prepend(str(project.path))
    status = main(["run", "scenarios/twenty.yaml", "--loop", "myloop:restart_loop"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "== restart_loop (--loop=myloop:restart_loop): keeps every invariant: OK" in out
    assert "1 restart for 1 true threshold crossing (threshold 160,000 tokens = 80%" in out
    assert "steps per session: 18, 2" in out


TEST_FIXTURE = '''
import anyio
from ctxsim.agent import Task

import myloop


def test_driven_by_hand(fake_agent):
    agent = fake_agent(Task.uniform(20, tokens=8_000, window=200_000, baseline=12_000, prompt_tokens=200,
                                    output_tokens=100), prompts=myloop.restart_loop.prompts)

    class Rig:  # what the loop reads of a LoopRig
        task, prompt, max_restarts = agent.task, agent.task_prompt, 3
        from claude_agent_sdk import ClaudeAgentOptions
        options = ClaudeAgentOptions()

        @staticmethod
        def make_tracker():
            from ctxsim.reference import ContextTracker
            return ContextTracker()

    assert anyio.run(myloop.restart_loop, Rig) == 1
    assert agent.counts() == {step: 1 for step in agent.task.ids}
    assert len(agent.connections) == 3, "fails on purpose: the report shows the timeline"
'''


def test_a_failing_test_with_the_fake_agent_fixture_shows_the_turn_timeline(project: pytest.Pytester) -> None:
    project.makepyfile(test_fixture=TEST_FIXTURE)
    result = project.runpytest("test_fixture.py", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*ctxsim fake agent: task 'task', turn timeline*",
        "-- session 1 (connection 1, session id *",
        "*18  continue*s18*163,100*81.55%*continue*checkpoint",  # zones by the default 90% policy
        "-- session 2 (connection 2, session id *",
        "*2  continue*s20*task complete",
    ])


RAISING_LOOP = """
from ctxsim.agent import Task
from ctxsim.loops import check_restart_loop


def my_helper():
    raise RuntimeError("my loop broke here")


def my_loop(rig):
    my_helper()


def test_my_loop():
    check_restart_loop(my_loop, Task.uniform(4, tokens=1_000))
"""


def test_a_loop_check_error_shows_the_users_frames_first(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_raising_loop=RAISING_LOOP)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # the loop's own traceback first (its helper's line), then the verdict raised from it, from the user's test
    result.stdout.fnmatch_lines(['*raise RuntimeError("my loop broke here")',
                                 "E       RuntimeError: my loop broke here",
                                 "*direct cause of the following exception*",
                                 "*check_restart_loop(my_loop, Task.uniform(4, tokens=1_000))",
                                 "E       ctxsim.loops.LoopCheckError: *"])
    assert "raise LoopCheckError(report)" not in out and "outcome = loop(report.rig)" not in out
