"""A restart loop that sends Claude Code's ``/compact`` itself: how the loop checks judge the compaction it asks for.

The loops here are written for these tests (held out: not the reference loop, nor an edit of it). They keep a
session's tracker and policy in the reference's :class:`~ctxsim.reference.SessionState` and differ in what they do
with the policy's word: :func:`compacting_loop` winds down with ``/compact`` the first time in a session (the
boundary re-arms its policy, as a fresh session's is) and with the wind-down prompt after that, and restarts when
the policy says so; ``rearm=False`` forgets to re-arm the policy after its own ``/compact``;
``instead_of_restart=True`` under a one-threshold policy sends ``/compact`` at the first restart a session owes.

Sizes: 24 steps of 7,400 tokens, prompts of 200, outputs of 100, a 10,000 baseline and a 3,000-token summary in a
100,000 window; the threshold is 80% of it, 80,000. After n one-step turns of a fresh session the last call's
prompt is 10,000 + 200n + 100(2n - 1) + 7,400n = 9,900 + 7,800n (``Task``'s docstring): 72,300 at n = 8, 80,100
at n = 9, the first crossing (a tracker reads 80,200 with the output). A ``/compact`` after turn 9 reports
pre_tokens 80,100 + 100 = 80,200 and post_tokens 3,000, and leaves the context at 10,000 + 3,000 = 13,000. The m-th
work turn after it ends at 13,000 + 7,800m - 100 = 12,900 + 7,800m: 75,300 at m = 8, 83,100 at m = 9 (turn 19), the
next crossing; a wind-down turn after that ends at 90,900, below the window.
"""

from __future__ import annotations

from functools import partial

from claude_agent_sdk import ClaudeSDKClient

from ctxsim.agent import Task
from ctxsim.fuzz import fuzz_loop
from ctxsim.loops import LoopRig, run_loop
from ctxsim.reference import (
    Action,
    PressurePolicy,
    SessionState,
    build_continuation_prompt,
    request_checkpoint,
    run_turn,
)
from ctxsim.reference._restart import CONTINUE_PROMPT, WIND_DOWN_PROMPT, task_complete
from ctxsim.runner import agent_timeline

TASK = Task.uniform(24, 7_400, window=100_000, baseline=10_000, prompt_tokens=200, output_tokens=100,
                    summary_tokens=3_000, name="compacting")
GRADUATED = PressurePolicy(restart_at=0.8, wind_down=True)
ONE_THRESHOLD = PressurePolicy(restart_at=0.8)


async def compacting_loop(rig: LoopRig, *, rearm: bool = True, instead_of_restart: bool = False,
                          compactions: list[bool] | None = None) -> int:
    """Work the task, sending ``/compact`` at most once a session (module docstring); returns its restarts.
    ``compactions`` collects, for each ``/compact`` it sent, whether a ``compact_boundary`` came back."""
    prompt, restarts = rig.prompt, 0
    while True:
        session = SessionState(rig.make_tracker(), rig.make_policy())
        observe = session.observe if rearm else session.tracker.observe  # observe() re-arms on a boundary
        compacted = False
        async with ClaudeSDKClient(rig.options) as client:
            following = prompt
            while True:
                turn = await run_turn(client, following, observe=observe)
                if following == "/compact" and compactions is not None:
                    compactions.append(turn.compacted)
                if task_complete(turn):
                    return restarts
                action = session.decide(turn)
                if not compacted and (action is Action.WIND_DOWN
                                      or (instead_of_restart and action is Action.RESTART)):
                    compacted, following = True, "/compact"
                elif action is Action.RESTART:
                    break
                else:
                    following = WIND_DOWN_PROMPT if action is Action.WIND_DOWN else CONTINUE_PROMPT
            if restarts >= rig.max_restarts:
                raise RuntimeError(f"compacting_loop: past max_restarts={rig.max_restarts}")
            checkpoint = await request_checkpoint(client)  # on the old session, never shown to its tracker
        restarts += 1
        prompt = build_continuation_prompt(checkpoint)


compacting_loop.policy = GRADUATED  # type: ignore[attr-defined]


async def forgets_to_rearm(rig: LoopRig) -> int:
    """:func:`compacting_loop` without re-arming its policy after its own ``/compact``."""
    return await compacting_loop(rig, rearm=False)


forgets_to_rearm.policy = GRADUATED  # type: ignore[attr-defined]


def kinds(report) -> list[str]:
    return [t.kind for t in report.agent.connections[0].turns]


def test_a_compact_sent_as_the_wind_down_discharges_the_crossing_and_re_arms_the_policy() -> None:
    report = run_loop(compacting_loop, TASK)
    assert report.ok, str(report)
    assert report.threshold == 80_000
    # session 1: s01..s09 (turn 9 crosses at 80,100), /compact (turn 10), s10..s18 (turn 19 crosses again at
    # 83,100), the wind-down turn does s19 (90,900), then the checkpoint; session 2 does s20..s24
    assert kinds(report) == ["task"] + ["continue"] * 8 + ["compact"] + ["continue"] * 10 + ["checkpoint"]
    compact = report.agent.connections[0].turns[9]
    assert (compact.prompt, compact.steps, compact.compacted, compact.peak_prompt) == ("/compact", [], True, 13_000)
    assert [t.peak_prompt for t in report.agent.connections[0].turns[18:20]] == [83_100, 90_900]
    assert [r.step for r in report.agent.steps] == list(TASK.ids)  # each step once, in order: /compact did none
    assert (report.restarts, report.crossings, report.returned) == (1, 1, 1)
    assert [sum(len(t.steps) for t in c.work_turns) for c in report.sessions] == [19, 5]


def test_the_timeline_shows_the_compact_turn_and_the_context_falling() -> None:
    report = run_loop(compacting_loop, TASK)
    rows = agent_timeline(report.agent, GRADUATED, full=True).splitlines()
    crossing = next(r for r in rows if r.split()[:1] == ["9"])
    compact = next(r for r in rows if r.split()[:1] == ["10"])
    assert crossing.split()[-1] == "compact" and "80,100" in crossing  # what the loop did next
    assert compact.split()[1:4] == ["/compact", "-", "13,000"]


def test_a_loop_that_does_not_re_arm_after_its_compact_restarts_without_winding_down() -> None:
    report = run_loop(forgets_to_rearm, TASK)
    assert report.broken == {"restart-count"}, str(report)
    # its policy stayed wound down: turn 19 (83,100) restarts at once; session 2 does s19..s24
    assert kinds(report) == ["task"] + ["continue"] * 8 + ["compact"] + ["continue"] * 9 + ["checkpoint"]
    assert ("session 1 (connection 1) was restarted at work turn 19, the first whose context reached the threshold "
            "of 80,000 tokens, without the wind-down turn its graduated policy owes first") in str(report)
    assert report.agent.redone == 0 and report.agent.skipped == []


def test_a_one_threshold_loop_that_compacts_instead_of_restarting() -> None:
    report = run_loop(partial(compacting_loop, instead_of_restart=True), TASK, policy=ONE_THRESHOLD,
                      name="compacts_instead")
    assert report.broken == {"restart-count"}, str(report)
    # the crossing at turn 9 owed the restart at once; the loop compacted there and restarted at turn 19
    assert ("ctxsim: compacts_instead broke invariant 'restart-count' (one restart per true threshold crossing, "
            "and none without one): session 1 crossed the threshold in work turn 9 but the loop compacted instead "
            "of restarting: it sent /compact as work turn 10, when it owed the restart") in str(report)
    assert "more work turn" not in str(report)
    assert kinds(report)[9] == "compact" and report.restarts == 1


def test_the_fuzzer_finds_no_fault_in_the_compacting_loop_and_finds_the_one_that_forgets_to_re_arm() -> None:
    compactions: list[bool] = []

    async def counted(rig: LoopRig) -> int:
        return await compacting_loop(rig, compactions=compactions)

    counted.policy = GRADUATED  # type: ignore[attr-defined]
    clean = fuzz_loop(counted, examples=150, seed=0, progress=None)
    assert clean.task is None, clean.report
    assert clean.examples == 150
    assert compactions.count(True) >= 20  # not vacuous: many generated tasks made it compact (100 with seed 0)
    found = fuzz_loop(forgets_to_rearm, examples=150, seed=0, progress=None)
    assert found.task is not None and found.broken == ("restart-count",), found.report
    assert "without the wind-down turn its graduated policy owes first" in found.report
