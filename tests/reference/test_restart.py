"""The reference restart loop over the real ClaudeSDKClient, against the fake agent."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from functools import partial

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ResultMessage

from ctxsim.agent import DEGRADATIONS, LOSSLESS, RECOVERABLE, Task, TaskStep
from ctxsim.loops import fake_agent
from ctxsim.reference import (
    CHECKPOINT_REQUEST_PROMPT,
    MINIMAL_CONTINUATION_PROMPT,
    ContextTracker,
    PressurePolicy,
    RestartLimitError,
    SessionLifecycle,
    run_with_restarts,
)
from ctxsim.reference._restart import WIND_DOWN_PROMPT

# The task of the "done when": 40 steps, each a tool result of R tokens, in a 100k window restarting at
# 90% (T = 90,000 tokens). Every prompt takes P tokens and every work call outputs OUT.
STEPS, R, WINDOW, BASE, P, OUT = 40, 7_400, 100_000, 10_000, 200, 100
T = 90_000
FORTY = Task.uniform(STEPS, R, window=WINDOW, baseline=BASE, prompt_tokens=P, output_tokens=OUT, name="forty")


def context_after(n: int, *, with_output: bool = False) -> int:
    """The last call's prompt after n one-step turns of a fresh session: each turn is a prompt, a tool call
    (output OUT), the tool's result (R) and a closing reply (output OUT); the reply's own output counts in the next
    turn (or here, when the tracker sees final output counts)."""
    return BASE + n * P + (2 * n - 1) * OUT + n * R + (OUT if with_output else 0)


def per_session(threshold: int = T, **kwargs: bool) -> int:
    """Steps a session does: it works until the turn whose context reaches the threshold, that turn included."""
    return next(n for n in itertools.count(1) if context_after(n, **kwargs) >= threshold)


def run_forty(task: Task = FORTY, *, backend: str = "asyncio", partial_messages: bool = False, **options):
    async def main():
        with anyio.fail_after(30):
            return await run_with_restarts(
                task.prompt, policy=PressurePolicy(window=WINDOW),
                options=ClaudeAgentOptions(include_partial_messages=partial_messages), **options)

    return anyio.run(main, backend=backend)


@pytest.mark.parametrize(("backend", "partial_messages"), [("asyncio", False), ("asyncio", True), ("trio", False)])
def test_forty_steps_three_restarts_every_step_once(backend: str, partial_messages: bool) -> None:
    n = per_session(with_output=partial_messages)
    assert n == 11 and context_after(n - 1, with_output=True) < T <= context_after(n)  # no turn straddles T
    sessions = math.ceil(STEPS / n)
    assert sessions - 1 == 3

    with fake_agent(FORTY) as agent:
        result = run_forty(backend=backend, partial_messages=partial_messages)

    assert result.continuation_count == sessions - 1 == 3
    assert agent.counts() == dict.fromkeys(FORTY.ids, 1)
    assert [len([s for s in agent.steps if s.connection == c.index]) for c in agent.connections] == \
        [n] * (sessions - 1) + [STEPS - n * (sessions - 1)]
    ids = [c.session_id for c in agent.connections]
    assert result.session_ids == ids and len(set(ids)) == sessions
    assert [c.resumed for c in agent.connections] == [None] * sessions
    assert [cp.fallback for cp in result.checkpoints] == ["block"] * 3
    assert result.result.startswith("TASK COMPLETE")
    # the checkpoint was asked once, on the old session, as its last turn
    assert [[t.kind for t in c.turns].count("checkpoint") for c in agent.connections] == [1, 1, 1, 0]
    assert all(c.turns[-1].kind == "checkpoint" for c in agent.connections[:-1])
    assert [c.turns[0].prompt == FORTY.prompt for c in agent.connections] == [True, False, False, False]


def test_the_checkpoint_turn_is_never_shown_to_tracker_or_policy() -> None:
    seen: list[list[str]] = []

    class Spy(ContextTracker):
        def __init__(self) -> None:
            super().__init__()
            seen.append([])

        def observe(self, message) -> None:
            if isinstance(message, ResultMessage):
                seen[-1].append(message.session_id)
            super().observe(message)

    with fake_agent(FORTY) as agent:
        run_forty(tracker_factory=Spy)
    assert [len(results) for results in seen] == [len(c.work_turns) for c in agent.connections]
    assert [set(s) for s in seen] == [{c.session_id} for c in agent.connections]  # a fresh tracker per session


def test_fresh_lifecycle_per_session_and_resume_options_are_cleared() -> None:
    made: list[SessionLifecycle] = []

    def lifecycle() -> SessionLifecycle:
        made.append(SessionLifecycle())
        return made[-1]

    with fake_agent(FORTY) as agent:
        result = run_forty(lifecycle_factory=lifecycle)
        assert len(made) == result.continuation_count + 1
        assert {m.state.name for m in made} == {"FINISHED"}

    async def resumed():
        return await run_with_restarts(FORTY.prompt, policy=PressurePolicy(window=WINDOW),
                                       options=ClaudeAgentOptions(resume=agent.connections[0].session_id))

    with fake_agent(FORTY) as fresh:
        anyio.run(resumed)
    assert [c.resumed for c in fresh.connections] == [None] * 4


def untraced(task: Task) -> Task:
    """``task`` with no step leaving its work in the workspace: only a checkpoint says what was done."""
    return replace(task, steps=tuple(replace(step, traced=False) for step in task.steps))


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "untraced"])
@pytest.mark.parametrize("degradation", sorted(DEGRADATIONS))
def test_each_checkpoint_degradation_at_the_first_restart(degradation: str, traced: bool) -> None:
    n = per_session()
    lost = {"empty_block": n, "refusal": n, "prompt_too_long": n, "truncated": n - n // 2}.get(degradation, 0)
    assert (lost == 0) == (degradation in LOSSLESS) and (lost > 0) == (degradation in RECOVERABLE)
    redone = 0 if traced else lost  # told to inspect the work, the agent finds the traced steps done
    task = FORTY if traced else untraced(FORTY)
    with fake_agent(task, checkpoints={1: degradation}) as agent:
        result = run_forty(task)
    assert agent.redone == redone and agent.skipped == []
    assert result.continuation_count == math.ceil((STEPS + redone) / n) - 1
    first = result.checkpoints[0]
    assert first.usable == (degradation not in ("empty_block", "refusal", "prompt_too_long"))
    assert first.complete == (degradation not in ("truncated", "prompt_too_long"))
    if not first.usable:
        assert agent.connections[1].turns[0].prompt == MINIMAL_CONTINUATION_PROMPT


def test_a_jump_over_the_window_restarts_with_the_minimal_prompt() -> None:
    # Steps of 10,000 take a fresh session to BASE + 7P + 13O + 70,000 = 82,700 after s07, under 90%; s08's
    # 20,000-token result then makes its closing request 82,700 + 2O + P + 20,000 = 103,100 > 100,000: the turn
    # is rejected before the policy could act, and so is the checkpoint request after it. The new session
    # starts from the minimal prompt; no step leaves a trace in the workspace, so inspecting the work finds
    # nothing and it starts over from s01, and meets s08 again: the bound ends it.
    steps = tuple(TaskStep(f"s{i:02d}", 20_000 if i == 8 else 10_000, traced=False) for i in range(1, 11))
    task = Task(steps, window=WINDOW, baseline=BASE, prompt_tokens=P, output_tokens=OUT)
    with fake_agent(task) as agent, pytest.raises(RestartLimitError):
        run_forty(task, max_restarts=1)
    first = agent.connections[0]
    assert first.work_turns[6].peak_prompt == 82_700 < T
    assert first.work_turns[7].rejected and first.work_turns[7].peak_prompt == 103_100
    assert first.turns[-1].kind == "checkpoint" and first.turns[-1].rejected
    assert agent.connections[1].turns[0].prompt == MINIMAL_CONTINUATION_PROMPT
    assert agent.counts()["s01"] == 2  # the minimal prompt carries no state, nor does the workspace: started over


def test_restarts_are_bounded() -> None:
    with fake_agent(FORTY) as agent, pytest.raises(RestartLimitError, match=r"^ctxsim: run_with_restarts: the "
                                                   r"context filled up again after 2 restarts \(max_restarts=2\)"):
        run_forty(max_restarts=2)
    assert len(agent.connections) == 3
    assert [c.checkpoint_turns != [] for c in agent.connections] == [True, True, False]


def test_graduated_policy_winds_down_then_restarts_when_it_repeats() -> None:
    # At 90% one more step would not fit in the window (context_after(12) > 100,000): wind down at 80% instead.
    policy = PressurePolicy(window=WINDOW, mask_at=0.6, restart_at=0.8, wind_down=True)
    n = per_session(80_000)
    assert context_after(n + 1) <= WINDOW

    async def main():
        return await run_with_restarts(FORTY.prompt, policy=policy)

    with fake_agent(FORTY) as agent:
        result = anyio.run(main)
    first = agent.connections[0]
    # the crossing turn n winds down, the next turn (still over 90%) is the repeat: n + 1 steps per session
    assert [t.prompt for t in first.turns].count(WIND_DOWN_PROMPT) == 1
    assert first.turns[n].prompt == WIND_DOWN_PROMPT and len(first.work_turns) == n + 1
    assert result.continuation_count == math.ceil(STEPS / (n + 1)) - 1
    assert agent.counts() == dict.fromkeys(FORTY.ids, 1)


def test_checkpoint_request_goes_to_the_same_client_that_crossed() -> None:
    made = []

    def client(options):
        from claude_agent_sdk import ClaudeSDKClient
        made.append(ClaudeSDKClient(options))
        return made[-1]

    with fake_agent(FORTY) as agent:
        result = run_forty(client_factory=client)
    assert len(made) == result.continuation_count + 1 == len(agent.connections)
    assert [t.prompt for t in agent.connections[0].checkpoint_turns] == [CHECKPOINT_REQUEST_PROMPT]


def test_a_task_that_fits_needs_no_restart() -> None:
    task = Task.uniform(3, 100, window=WINDOW, baseline=BASE)
    with fake_agent(task) as agent:
        result = anyio.run(partial(run_with_restarts, task.prompt))  # the default policy: 90% of 200k
    assert result.continuation_count == 0 and result.checkpoints == [] and result.turns == 3
    assert len(agent.connections) == 1 and agent.counts() == {"s01": 1, "s02": 1, "s03": 1}
