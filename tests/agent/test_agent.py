"""The reactive fake agent behind the real ClaudeSDKClient: known growth, checkpoints, resumption, rejections."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ClaudeSDKClient, SystemMessage, ToolUseBlock

from ctxsim.agent import (
    DEGRADATIONS,
    LOSSLESS,
    RECOVERABLE,
    AgentBoundError,
    FakeAgent,
    LoopPrompts,
    Task,
    TaskStep,
    UnclassifiedPromptError,
)
from ctxsim.agent._turns import Renderings
from ctxsim.loops import fake_agent
from ctxsim.reference import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUATION_TEMPLATE,
    MINIMAL_CONTINUATION_PROMPT,
    Checkpoint,
    build_continuation_prompt,
    extract_checkpoint,
    request_checkpoint,
    run_turn,
)
from ctxsim.reference._prompts import TRUNCATED_NOTE
from ctxsim.reference._restart import CONTINUE_PROMPT, DONE_MARKER
from ctxsim.sdk import FakeTransport
from ctxsim.wire import render
from ctxsim.world import SessionBuilder

# Sizes chosen so that each number below is a sum the reader can do: every prompt takes 100 tokens, every call
# outputs 50, a fresh session starts at 5,000.
P, OUT, BASE = 100, 50, 5_000


def small_task(n: int = 6, tokens: int = 1_000, **settings) -> Task:
    return Task.uniform(n, tokens, window=settings.pop("window", 50_000), baseline=BASE, prompt_tokens=P,
                        output_tokens=OUT, name="small", **settings)


def run(main):
    async def bounded():
        with anyio.fail_after(20):
            return await main()
    return anyio.run(bounded)


async def turns(client: ClaudeSDKClient, first: str, count: int):
    out = [await run_turn(client, first)]
    for _ in range(count - 1):
        out.append(await run_turn(client, CONTINUE_PROMPT))
    return out


def test_fake_transport_asks_its_responder_for_each_turn() -> None:
    session = SessionBuilder(seed=4).query("x").call().build()
    seen = []

    def responder(message):
        seen.append(message)
        return render(session)[0]

    async def main():
        transport = FakeTransport(session, responder=responder)
        async with ClaudeSDKClient(transport=transport) as client:
            for prompt in ("one", "two"):
                await run_turn(client, prompt)
        return transport

    transport = run(main)
    assert [(m["type"], m["message"]["content"]) for m in seen] == [("user", "one"), ("user", "two")]
    assert transport.scripts == [] and transport.prompts == ["one", "two"]


def test_rendering_one_query_at_a_time_gives_the_frames_of_a_whole_render() -> None:
    builder = SessionBuilder(seed=3).query("a").call(results=[500]).call()
    renderings, played = Renderings(), []
    for q in range(3):
        if q:
            builder.query(f"q{q}").call(blocks=("thinking", "tool_use"), results=[700]).call()
        played.append(renderings.last(builder.build(), True).dicts())
    assert played == [s.dicts() for s in render(builder.build(), include_partial_messages=True)]
    late = Renderings().last(builder.build(), False)  # a renderer that starts late catches up
    assert late.dicts() == render(builder.build())[-1].dicts()


def test_task_validation_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match=r"^ctxsim: Task 'x' has no steps"):
        Task((), name="x")
    with pytest.raises(ValueError, match=r"^ctxsim: Task 'x' repeats step ids: \['a'\]"):
        Task((TaskStep("a", 1), TaskStep("a", 2)), name="x")
    with pytest.raises(ValueError, match=r"^ctxsim: FakeAgent: unknown checkpoint degradation 'mangled'"):
        FakeAgent(small_task(), checkpoints=["mangled"])
    assert Task.uniform(120, 1).ids[:2] == ("s001", "s002")


def test_each_turn_grows_the_context_by_known_amounts() -> None:
    task = small_task(tokens=1_000)

    async def main():
        async with ClaudeSDKClient() as client:
            done = await turns(client, task.prompt, 2)
            return done, (await client.get_context_usage())["totalTokens"]

    with fake_agent(task) as agent:
        done, total = run(main)
    # turn 1: the tool call's prompt is BASE + P; its reply's prompt adds OUT and the step's 1,000 tokens.
    # turn 2 adds the reply's OUT, the prompt P, the tool call's OUT and 1,000: /context shows the last call's prompt.
    assert [t.peak_prompt for t in agent.connections[0].turns] == [BASE + P + OUT + 1_000,
                                                                   BASE + 2 * P + 3 * OUT + 2 * 1_000]
    assert total == BASE + 2 * P + 3 * OUT + 2 * 1_000
    assert [(r.step, r.turn) for r in agent.steps] == [("s01", 1), ("s02", 2)]
    assert done[1].text == "Done s02. Next: s03 (4 steps left)."


def test_tool_calls_name_their_steps_and_the_last_turn_says_done() -> None:
    task = small_task(n=3, steps_per_turn=2)

    async def main():
        async with ClaudeSDKClient() as client:
            tools = []
            for prompt in (task.prompt, CONTINUE_PROMPT):
                await client.query(prompt)
                async for m in client.receive_response():
                    if isinstance(m, AssistantMessage):
                        tools += [b.input["step"] for b in m.content if isinstance(b, ToolUseBlock)]
                        if m.content and hasattr(m.content[-1], "text"):
                            last = m.content[-1].text
            return tools, last

    with fake_agent(task) as agent:
        tools, last = run(main)
    assert tools == ["s01", "s02", "s03"]
    assert last.startswith(DONE_MARKER)
    assert agent.finished and agent.counts() == {"s01": 1, "s02": 1, "s03": 1}


def test_new_session_id_per_connection_and_resume_continues_one() -> None:
    task = small_task()

    async def main():
        ids = []
        for options in (ClaudeAgentOptions(), ClaudeAgentOptions(), None):
            if options is None:
                options = ClaudeAgentOptions(resume=ids[0])
            async with ClaudeSDKClient(options) as client:
                ids.append((await run_turn(client, task.prompt if len(ids) < 2 else CONTINUE_PROMPT)).session_id)
        return ids

    with fake_agent(task) as agent:
        ids = run(main)
    assert ids[0] != ids[1] and ids[2] == ids[0]
    assert [c.resumed for c in agent.connections] == [None, None, ids[0]]
    # the resumed session kept its context and its queue: it went on with s02
    assert [r.step for r in agent.steps] == ["s01", "s01", "s02"]
    resumed = agent.connections[2].turns[0]
    assert resumed.peak_prompt == BASE + 2 * P + 3 * OUT + 2 * 1_000


def drive(task: Task, degradation: str, *, extract=extract_checkpoint):
    """Three steps, a checkpoint, a new session from the continuation prompt, then on to the end."""

    async def main():
        async with ClaudeSDKClient() as client:
            await turns(client, task.prompt, 3)
            turn = await run_turn(client, CHECKPOINT_REQUEST_PROMPT)
        checkpoint = extract(f"{turn.text}\n{turn.result_text}" if turn.is_error else turn.text,
                             stop_reason=turn.stop_reason, is_error=turn.is_error)
        async with ClaudeSDKClient() as client:
            turn = await run_turn(client, build_continuation_prompt(checkpoint))
            while DONE_MARKER not in turn.text:
                turn = await run_turn(client, CONTINUE_PROMPT)
        return checkpoint

    with fake_agent(task, checkpoints=[degradation]) as agent:
        return run(main), agent


EXPECTED_FALLBACK = {
    "well_formed": "block", "fenced_xml": "block", "fenced_markdown": "block", "fenced_bare": "block",
    "no_tags": "whole_reply", "several_blocks": "last_block", "template_echo": "block", "unclosed": "unclosed",
    "empty_block": "empty_block",
    "tag_case": "block", "refusal": "refusal", "truncated": "truncated", "prompt_too_long": "prompt_too_long",
}


def untraced(task: Task) -> Task:
    """``task`` with no step leaving its work in the workspace: only a checkpoint says what was done."""
    return replace(task, steps=tuple(replace(s, traced=False) for s in task.steps))


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "untraced"])
@pytest.mark.parametrize("degradation", sorted(DEGRADATIONS))
def test_every_degradation_costs_what_it_says(degradation: str, traced: bool) -> None:
    task = small_task(n=6) if traced else untraced(small_task(n=6))
    checkpoint, agent = drive(task, degradation)
    assert checkpoint.fallback == EXPECTED_FALLBACK[degradation]
    done_before = 3  # steps done before the checkpoint
    # no state (or a cut-off one, after 3 // 2 = 1 listed entry): the reference loop says so, and the agent told
    # to inspect the work finds the traced steps; untraced ones only a checkpoint could have listed
    lost = {"empty_block": done_before, "refusal": done_before, "prompt_too_long": done_before,
            "truncated": done_before - done_before // 2}.get(degradation, 0)
    assert (degradation in LOSSLESS) == (lost == 0) and (degradation in RECOVERABLE) == (lost > 0)
    assert agent.redone == (0 if traced else lost)
    assert agent.lossless == (agent.redone == 0)
    assert agent.skipped == []
    assert [t.degradation for c in agent.connections for t in c.checkpoint_turns] == [degradation]


def test_taking_an_echo_of_the_template_as_the_state_skips_every_remaining_step() -> None:
    def last_block(text, **_):  # the last block, whatever it holds
        return Checkpoint(text[text.rindex("<checkpoint>") + len("<checkpoint>"):text.rindex("</checkpoint>")].strip(),
                          "last_block")

    _, agent = drive(small_task(n=6), "template_echo", extract=last_block)
    assert agent.redone == 0 and agent.skipped == ["s04", "s05", "s06"]


def test_taking_the_first_of_several_blocks_redoes_the_last_step() -> None:
    def first_block(text, **_):
        return extract_checkpoint(text[:text.index("</checkpoint>") + len("</checkpoint>")])

    _, agent = drive(small_task(n=6), "several_blocks", extract=first_block)
    assert agent.redone == 1 and agent.counts()["s03"] == 2


def test_a_truncated_remaining_list_skips_steps() -> None:
    # A loop that keeps only 'Remaining Tasks' up to its first item: the agent does just that one.
    def clipped(text, **kwargs):
        cp = extract_checkpoint(text, **kwargs)
        return cp.text[:cp.text.index("2. s05")] if "2. s05" in cp.text else cp.text

    _, agent = drive(small_task(n=6), "well_formed", extract=clipped)
    assert agent.skipped == ["s05", "s06"]


def test_prompt_too_long_is_rejected_like_the_api_and_changes_nothing() -> None:
    # window 10,000: s01 (2,000) fits; s02's 4,000-token result makes its closing call too long.
    task = Task((TaskStep("s01", 2_000), TaskStep("s02", 4_000)), window=10_000, baseline=BASE, prompt_tokens=P,
                output_tokens=OUT)

    async def main():
        async with ClaudeSDKClient() as client:
            first = await run_turn(client, task.prompt)
            before = (await client.get_context_usage())["totalTokens"]
            second = await run_turn(client, CONTINUE_PROMPT)
            after = (await client.get_context_usage())["totalTokens"]
            return first, second, before, after

    with fake_agent(task) as agent:
        first, second, before, after = run(main)
    assert not first.is_error
    assert second.is_error and second.result.result == "Prompt is too long"
    assert second.result.terminal_reason == "prompt_too_long"
    # s02's tool call was made, its prompt BASE + 2P + 2O + 2,000 = 7,300; the reply's request would have been
    # 7,300 + OUT + 4,000 = 11,350 > 10,000.
    assert second.text.endswith("Prompt is too long")
    turn = agent.connections[0].turns[1]
    assert turn.rejected and turn.steps == ["s02"] and turn.peak_prompt == BASE + 2 * P + 3 * OUT + 2_000 + 4_000
    assert after == BASE + 2 * P + 2 * OUT + 2_000  # still the tool call's prompt: the rejection changed nothing
    assert before == BASE + P + OUT + 2_000


def test_synthetic_rejection_message_is_what_claude_code_writes() -> None:
    async def main():
        messages = []
        async with ClaudeSDKClient() as client:
            await run_turn(client, small_task().prompt, observe=messages.append)
            await client.query(CHECKPOINT_REQUEST_PROMPT)
            messages += [m async for m in client.receive_response()]
        return messages

    with fake_agent(small_task(), checkpoints="prompt_too_long"):
        messages = run(main)
    synthetic = [m for m in messages if isinstance(m, AssistantMessage) and m.model == "<synthetic>"]
    assert len(synthetic) == 1
    assert (synthetic[0].error, synthetic[0].content[0].text) == ("invalid_request", "Prompt is too long")
    assert synthetic[0].usage == {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                                  "cache_read_input_tokens": 0}
    assert messages[-1].is_error


def test_truncated_reply_stops_at_max_tokens_with_partial_messages_too() -> None:
    async def main():
        async with ClaudeSDKClient(ClaudeAgentOptions(include_partial_messages=True)) as client:
            await run_turn(client, small_task().prompt)
            events = []
            turn = await run_turn(client, CHECKPOINT_REQUEST_PROMPT, observe=events.append)
        deltas = [e.event["delta"]["stop_reason"] for e in events
                  if getattr(e, "event", {}).get("type") == "message_delta"]
        return turn, deltas

    with fake_agent(small_task(), checkpoints="truncated"):
        turn, deltas = run(main)
    assert turn.stop_reason == "max_tokens" and deltas == ["max_tokens"]
    assert "</checkpoint>" not in turn.text


def test_checkpoint_on_a_session_with_no_work_has_no_state() -> None:
    async def main():
        async with ClaudeSDKClient() as client:
            return await request_checkpoint(client)

    with fake_agent(small_task()) as agent:
        checkpoint = run(main)
    assert checkpoint.fallback == "whole_reply" and "no work" in checkpoint.text
    assert agent.connections[0].turns[0].degradation == "no_work"


def two_steps_then(prompt: str):
    """Two steps in a first session, then a second session whose first prompt is ``prompt``."""
    async def main():
        async with ClaudeSDKClient() as client:
            await turns(client, small_task().prompt, 2)
        async with ClaudeSDKClient() as client:
            await run_turn(client, prompt)

    return main


def test_minimal_continuation_has_the_agent_inspect_the_work_it_finds_the_traced_steps() -> None:
    main = two_steps_then(MINIMAL_CONTINUATION_PROMPT)
    with fake_agent(small_task()) as agent:
        run(main)
    assert [r.step for r in agent.steps] == ["s01", "s02", "s03"]  # s01, s02 are in the workspace
    assert agent.connections[1].turns[0].kind == "continuation"
    with fake_agent(untraced(small_task())) as agent:
        run(main)
    assert [r.step for r in agent.steps] == ["s01", "s02", "s01"]  # nothing to find: it starts over


@pytest.mark.parametrize("state", ["I'm sorry, but I can't write a checkpoint summary right now.",
                                   "Prompt is too long\nPrompt is too long", "<checkpoint>\n</checkpoint>"])
def test_words_passed_on_as_the_state_give_the_agent_nothing_it_starts_over(state: str) -> None:
    main = two_steps_then(CONTINUATION_TEMPLATE.format(checkpoint=state))
    with fake_agent(small_task()) as agent:
        run(main)
    assert [r.step for r in agent.steps] == ["s01", "s02", "s01"]


@pytest.mark.parametrize("noted, third", [(True, "s03"), (False, "s02")])
def test_a_cut_off_checkpoint_is_checked_against_the_work_when_noted_and_trusted_when_not(noted: bool,
                                                                                         third: str) -> None:
    listed = "## Goal\nFinish task 'small'.\n\n## Completed Work\n- s01: edited src/s01.py\n- "  # s02 cut off
    state = f"{listed}\n\n{TRUNCATED_NOTE}" if noted else listed
    main = two_steps_then(CONTINUATION_TEMPLATE.format(checkpoint=state))
    with fake_agent(small_task()) as agent:
        run(main)
    assert [r.step for r in agent.steps] == ["s01", "s02", third]


def test_a_loop_declares_its_own_inspect_prompt() -> None:
    look = "Look at the repository first: the last session saved nothing. {task}"
    main = two_steps_then(look.format(task=small_task().prompt))
    with fake_agent(small_task(), prompts=LoopPrompts(inspect=look)) as agent:
        run(main)
    assert [r.step for r in agent.steps] == ["s01", "s02", "s03"]
    assert agent.connections[1].turns[0].kind == "continuation"
    with fake_agent(small_task()) as agent:  # not declared: it is the task prompt, started over
        run(main)
    assert [r.step for r in agent.steps] == ["s01", "s02", "s01"]


def test_bounds_stop_a_loop_that_does_not_end() -> None:
    async def main():
        async with ClaudeSDKClient() as client:
            for _ in range(10):
                await run_turn(client, CONTINUE_PROMPT)

    with fake_agent(small_task(), max_prompts=3) as agent, pytest.raises(AgentBoundError,
                                                                         match="prompt #4 exceeds the bound of 3"):
        run(main)
    assert agent.bound_errors and agent.bound_errors[0].startswith("ctxsim: FakeAgent:")
    with fake_agent(small_task()), pytest.raises(Exception, match=r"options\.resume names session 'nope'"):
        run(lambda: ClaudeSDKClient(ClaudeAgentOptions(resume="nope")).connect())


# --- classification: by what the loop declares and what the agent knows, never by guessing -------------------


def test_a_continuation_in_its_own_words_that_mentions_checkpoint_resumes_the_task() -> None:
    # issue 11: this prompt was taken for a checkpoint *request* (it says "checkpoint")
    task = small_task()

    async def main():
        async with ClaudeSDKClient() as client:
            await turns(client, task.prompt, 2)
            checkpoint = await request_checkpoint(client)
        async with ClaudeSDKClient() as client:
            first = await run_turn(client, f"{task.prompt}\n\nResume from this checkpoint:\n{checkpoint.text}")
            rest = [await run_turn(client, CONTINUE_PROMPT) for _ in range(3)]
        return [first, *rest]

    with fake_agent(task) as agent:
        replies = run(main)
    assert agent.connections[1].turns[0].kind == "continuation"
    assert [r.step for r in agent.steps] == list(task.ids)  # s01 s02, then s03..s06 in the new session
    assert replies[-1].result_text.startswith(DONE_MARKER)


def test_a_session_never_given_the_task_never_claims_it_complete() -> None:
    async def main():
        async with ClaudeSDKClient() as client:
            await request_checkpoint(client)
            return await run_turn(client, CONTINUE_PROMPT)

    with fake_agent(small_task()) as agent:
        turn = run(main)
    assert not agent.steps and DONE_MARKER not in turn.result_text
    assert [t.kind for t in agent.connections[0].turns] == ["checkpoint", "continue"]


def test_an_undeclared_prompt_is_an_error_quoting_it() -> None:
    from ctxsim.agent import UnclassifiedPromptError

    async def main():
        async with ClaudeSDKClient() as client:
            await turns(client, small_task().prompt, 2)
            await run_turn(client, "Please summarise your progress.")

    with fake_agent(small_task()) as agent, pytest.raises(UnclassifiedPromptError,
                                                          match=r"'Please summarise your progress\.'"):
        run(main)
    assert agent.unclassified and "LoopPrompts" in agent.unclassified[0]


def test_declared_prompts_as_template_regex_and_predicate() -> None:
    import re

    from ctxsim.agent import LoopPrompts

    prompts = LoopPrompts(checkpoint_request=re.compile(r"^SAVE STATE"),
                          continuation="Carry on from:\n{checkpoint}\nThanks.",
                          continue_prompt=lambda p: p.strip().lower() == "next", done_marker="ALL DONE")
    assert prompts.matches("continuation", "Carry on from:\nanything\nat all\nThanks.\n")
    assert not prompts.matches("continuation", "Carry on from: x")
    task = small_task(3)

    async def main():
        async with ClaudeSDKClient() as client:
            await run_turn(client, task.prompt_for("ALL DONE"))
            await run_turn(client, "next")
            reply = await run_turn(client, "SAVE STATE now")
        async with ClaudeSDKClient() as client:
            return await run_turn(client, f"Carry on from:\n{reply.text}\nThanks.")

    with fake_agent(task, prompts=prompts) as agent:
        last = run(main)
    assert [t.kind for c in agent.connections for t in c.turns] == ["task", "continue", "checkpoint",
                                                                     "continuation"]
    assert [r.step for r in agent.steps] == ["s01", "s02", "s03"]
    assert last.result_text.startswith("ALL DONE")


def test_cleared_tool_results_make_the_context_fall_without_a_compaction() -> None:
    # small_task: after turn n of a fresh session the last call's prompt is BASE + n x P + (2n - 1) x OUT + 1,000n
    # = 5,000 + 100n + 50(2n - 1) + 1,000n: 6,150, 7,350, 8,550; 800 tokens of old tool results are cleared before
    # turn 3's first call, so its last prompt is 7,750, and no compact_boundary says so
    task = replace(small_task(), cleared=((1, 3, 800),))
    messages: list[object] = []

    async def main():
        async with ClaudeSDKClient() as client:
            await run_turn(client, task.prompt, observe=messages.append)
            for _ in range(2):
                await run_turn(client, CONTINUE_PROMPT, observe=messages.append)

    with fake_agent(task) as agent:
        run(main)
    first, second, third = agent.connections[0].work_turns
    assert (first.peak_prompt, second.peak_prompt, third.peak_prompt) == (6_150, 7_350, 7_750)
    assert (third.cleared, third.compacted, second.cleared) == (800, False, 0)
    assert not any(getattr(m, "subtype", None) == "compact_boundary" for m in messages)


# --- the loop's /compact ------------------------------------------------------------------------------------------

CAPTURES = Path(__file__).parent / "captures"


def test_a_compact_from_the_loop_is_a_manual_compaction_and_the_agent_goes_on() -> None:
    # small_task: turn 2 ends with a call whose prompt is BASE + 2P + 3 x OUT + 2 x 1,000 = 7,350 and output 50,
    # so the compaction reports pre_tokens 7,400 and the summary, 3,000 tokens, as post_tokens; the context is
    # then BASE + 3,000 = 8,000 (the command's text takes none of it). Turn 3 does s03: its tool call's prompt is
    # 8,000 + P = 8,100, its reply's 8,100 + OUT + 1,000 = 9,150.
    task = replace(small_task(), summary_tokens=3_000)
    prompts = LoopPrompts(continue_prompt="Go on.")  # declares nothing like /compact: it needs no declaration
    seen: list[object] = []

    async def main():
        async with ClaudeSDKClient() as client:
            await run_turn(client, task.prompt)
            await run_turn(client, "Go on.")
            compacted = await run_turn(client, "/compact keep the list of steps", observe=seen.append)
            after = (await client.get_context_usage())["totalTokens"]
            third = await run_turn(client, "Go on.")
            return compacted, after, third

    with fake_agent(task, prompts=prompts) as agent:
        compacted, after, third = run(main)
    boundaries = [m for m in seen if isinstance(m, SystemMessage) and m.subtype == "compact_boundary"]
    assert [{k: b.data["compact_metadata"][k] for k in ("trigger", "pre_tokens", "post_tokens",
                                                        "cumulative_dropped_tokens")} for b in boundaries] == [
        {"trigger": "manual", "pre_tokens": 7_400, "post_tokens": 3_000, "cumulative_dropped_tokens": 4_400}]
    assert compacted.compacted and not compacted.is_error and compacted.tool_calls == 0
    assert compacted.result.num_turns == 0 and compacted.result.usage["output_tokens"] == 0
    assert after == 8_000
    assert third.text == "Done s03. Next: s04 (3 steps left)."
    turns = agent.connections[0].turns
    assert [t.kind for t in turns] == ["task", "continue", "compact", "continue"]
    assert (turns[2].steps, turns[2].compacted, turns[2].peak_prompt, turns[2].peak_next) == ([], True, 8_000, 8_000)
    assert turns[3].peak_prompt == 9_150
    assert [(r.step, r.turn) for r in agent.steps] == [("s01", 1), ("s02", 2), ("s03", 4)]


def test_a_compact_with_nothing_to_compact_answers_as_claude_code_does() -> None:
    # Claude Code 2.1.332, /compact as a session's first prompt: no request, a <synthetic> reply saying so, a
    # successful result of no turn, no compact_boundary; the next prompt is the session's first real one.
    captured = json.loads((CAPTURES / "claude-code-2.1.332-compact-first.json").read_text())
    step = captured["steps"][0]
    assert (step["prompt"], step["requests_served"]) == ("/compact", 0)
    said = [f for f in step["frames"] if f["type"] == "assistant"]
    result = step["frames"][-1]
    seen: list[object] = []

    async def main():
        async with ClaudeSDKClient() as client:
            nothing = await run_turn(client, "/compact", observe=seen.append)
            first = await run_turn(client, small_task().prompt)
            return nothing, first

    with fake_agent(small_task()) as agent:
        nothing, first = run(main)
    kinds = [(type(m).__name__, getattr(m, "subtype", None)) for m in seen]
    assert kinds == [("SystemMessage", "init"), ("AssistantMessage", None), ("ResultMessage", "success")]
    assert [f["type"] for f in step["frames"]] == ["system", "assistant", "result"]
    synthetic = seen[1]
    assert isinstance(synthetic, AssistantMessage)
    assert [b.text for b in synthetic.content] == [b["text"] for b in said[0]["message"]["content"]]
    assert (synthetic.model, synthetic.usage["input_tokens"]) == (said[0]["message"]["model"], 0)
    assert (nothing.result.is_error, nothing.result.num_turns, nothing.result.result) == (
        result["is_error"], result["num_turns"], result["result"])
    assert not nothing.compacted
    turns = agent.connections[0].turns
    assert [t.kind for t in turns] == ["compact", "task"]
    assert (turns[0].compacted, turns[0].peak_prompt) == (False, BASE)
    assert turns[1].peak_prompt == BASE + P + OUT + 1_000  # as in a fresh session: the command added nothing
    assert first.text == "Done s01. Next: s02 (5 steps left)."


def test_only_a_prompt_that_starts_with_compact_is_the_command() -> None:
    # Claude Code 2.1.332 sends " /compact" (whitespace first) to the model as text: the agent cannot classify it
    async def main():
        async with ClaudeSDKClient() as client:
            await run_turn(client, small_task().prompt)
            await run_turn(client, " /compact")

    with fake_agent(small_task()) as agent, pytest.raises(UnclassifiedPromptError, match="' /compact'"):
        run(main)
    assert [t.kind for t in agent.connections[0].turns] == ["task"]
