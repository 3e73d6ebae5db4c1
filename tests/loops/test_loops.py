"""Loop checks on a user's own restart loop, and the catalogue of seed-shaped buggy loops they catch."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import anyio
import pytest
from claude_agent_sdk import ClaudeSDKClient, SystemMessage

from ctxsim.agent import Task
from ctxsim.loops import (
    INVARIANTS,
    LoopCheckError,
    LoopRig,
    TrackerProbe,
    arun_loop,
    check_restart_loop,
    run_loop,
)
from ctxsim.loops._catalogue import CATALOGUE, design003_loop
from ctxsim.reference import PressurePolicy, build_continuation_prompt, request_checkpoint, run_with_restarts
from ctxsim.reference._restart import CONTINUE_PROMPT, run_turn, task_complete

# 16 steps of 7,400 tokens in a 100k window, restarting at 90%: 11 steps fit a session (the last call's prompt
# after n one-step turns is 10,000 + 200n + 100(2n - 1) + 7,400n, first >= 90,000 at n = 11), so one restart.
TASK = Task.uniform(16, 7_400, window=100_000, baseline=10_000, prompt_tokens=200, output_tokens=100, name="t")
FORTY = replace(TASK, steps=Task.uniform(40, 7_400).steps, name="forty")


def reference(rig: LoopRig):
    return run_with_restarts(rig.prompt, options=rig.options, policy=rig.make_policy(),
                             tracker_factory=rig.make_tracker, lifecycle_factory=rig.make_lifecycle,
                             max_restarts=rig.max_restarts)


def test_the_reference_loop_keeps_every_invariant_on_forty_steps() -> None:
    report = check_restart_loop(reference, FORTY)
    assert (report.restarts, report.crossings, report.redone, report.skipped) == (3, 3, 0, [])
    assert report.returned.continuation_count == 3
    assert [p.resets for p in report.rig.trackers] == [0, 0, 0, 0] and len(report.rig.trackers) == 4
    assert str(report) == "ctxsim: reference kept every invariant: 40 steps, 3 restarts for 3 threshold crossings"


def test_the_reference_with_partial_messages_and_a_graduated_policy() -> None:
    graduated = PressurePolicy(window=100_000, mask_at=0.6, restart_at=0.8, wind_down=True)
    assert check_restart_loop(reference, FORTY, policy=graduated).restarts == 3  # 10 steps a session
    assert check_restart_loop(reference, FORTY, include_partial_messages=True, async_backend="trio").restarts == 3


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_each_catalogued_loop_is_caught_naming_its_invariant(name: str) -> None:
    entry = CATALOGUE[name]
    report = run_loop(entry.loop, TASK, max_restarts=3)
    if not entry.invariant:
        assert report.ok, str(report)
        return
    assert entry.invariant in report.broken, str(report)
    with pytest.raises(LoopCheckError) as caught:
        check_restart_loop(entry.loop, TASK, max_restarts=3)
    message = str(caught.value)
    assert f"ctxsim: {name} broke invariant {entry.invariant!r} ({INVARIANTS[entry.invariant]})" in message
    assert all(line.startswith("ctxsim: ") for line in message.splitlines())


def test_a_sync_loop_that_runs_its_own_event_loop() -> None:
    def sync_loop(rig: LoopRig) -> int:
        return anyio.run(partial(design003_loop, rig))

    report = check_restart_loop(sync_loop, TASK)
    assert report.returned == 1 and report.name == "sync_loop"


def test_arun_loop_from_async_code() -> None:
    async def main():
        return await arun_loop(reference, TASK)

    assert anyio.run(main).ok


def test_degraded_checkpoints_are_reported_not_failed() -> None:
    # 11 steps done at the first restart; a refusal carries no state and no step leaves a trace in the workspace,
    # so inspecting the work finds nothing: all 11 are redone, which the loop could not prevent.
    untraced = replace(TASK, steps=tuple(replace(step, traced=False) for step in TASK.steps))
    report = check_restart_loop(reference, untraced, checkpoints=["refusal"])
    assert (report.redone, report.skipped) == (11, [])
    assert report.restarts == report.crossings == 2  # 27 steps of work: 11 + 11 + 5


def test_a_refusal_costs_nothing_when_the_work_is_in_the_workspace() -> None:
    # the minimal continuation prompt has the agent inspect the work: it finds s01..s11 and does s12..s16
    report = check_restart_loop(reference, TASK, checkpoints=["refusal"])
    assert (report.redone, report.skipped, report.restarts, report.crossings) == (0, [], 1, 1)
    assert [sum(len(t.steps) for t in c.work_turns) for c in report.sessions] == [11, 5]


def test_a_loop_that_restarts_below_the_threshold() -> None:
    early = partial(run_with_restarts, policy=PressurePolicy(window=100_000, restart_at=0.5))

    def loop(rig: LoopRig):
        return early(rig.prompt, options=rig.options)

    report = run_loop(loop, TASK)
    assert report.broken == {"restart-count"}
    assert "session 1 (connection 1) was restarted without crossing the threshold of 90,000 tokens" in str(report)


def test_a_loop_that_never_restarts_runs_into_the_window() -> None:
    async def never(rig: LoopRig) -> int:
        async with ClaudeSDKClient(rig.options) as client:
            turn = await run_turn(client, rig.prompt)
            while not task_complete(turn) and not turn.is_error:
                turn = await run_turn(client, CONTINUE_PROMPT)
        return 0

    report = run_loop(never, TASK)
    assert {"restart-count", "steps-once"} <= report.broken
    assert "session 1 crossed the threshold in work turn 11 but the loop sent 1 more work turn(s)" in str(report)


def test_a_wrong_continuation_count_is_a_restart_count_violation() -> None:
    async def miscounting(rig: LoopRig) -> int:
        return 2 * (await design003_loop(rig))

    report = run_loop(miscounting, TASK)
    assert report.broken == {"restart-count"}
    assert "continuation_count=2 but started 1 new session(s) for 1 true crossing(s)" in str(report)


def test_a_loop_that_resets_its_tracker_passes_the_tracker_check() -> None:
    async def resetting(rig: LoopRig) -> int:
        tracker, count, prompt = rig.make_tracker(), 0, rig.prompt
        while True:
            tracker.reset()
            async with ClaudeSDKClient(rig.options) as client:
                turn = await run_turn(client, prompt, observe=tracker.observe)
                while not task_complete(turn):
                    if tracker.context_tokens() >= rig.threshold_tokens:
                        break
                    turn = await run_turn(client, CONTINUE_PROMPT, observe=tracker.observe)
                else:
                    return count
                prompt = build_continuation_prompt(await request_checkpoint(client))
            count += 1

    report = check_restart_loop(resetting, TASK)
    assert report.rig.trackers[0].resets == 2


def test_tracker_probe_passes_through_and_records_carried_state() -> None:
    class Tracker:
        value = 7

        def observe(self, message) -> None:
            pass

        def context_tokens(self) -> int:
            return self.value

        def window(self) -> int:
            return 1_000

    probe = TrackerProbe(Tracker(), 1)
    probe.observe(SystemMessage("init", {"session_id": "a"}))
    probe.observe(SystemMessage("init", {"session_id": "b"}))
    assert probe.carried == [("a", "b", 7)] and probe.window() == 1_000
    probe.reset()
    probe.observe(SystemMessage("init", {"session_id": "c"}))
    assert probe.carried == [("a", "b", 7)]


def test_a_loop_that_crashes_early_breaks_termination() -> None:
    def crashing(rig: LoopRig) -> None:
        raise ValueError("boom")

    report = run_loop(crashing, TASK)
    assert "termination" in report.broken and "the loop raised ValueError: boom" in str(report)


@pytest.mark.parametrize("anyio_backend", ["asyncio", "trio"])
@pytest.mark.anyio
async def test_check_restart_loop_works_inside_a_running_event_loop(anyio_backend: str) -> None:
    # an async test that checks its loop with the synchronous helper: the loop runs on a worker thread's own loop
    report = check_restart_loop(reference, FORTY, async_backend=anyio_backend)
    assert report.restarts == 3
