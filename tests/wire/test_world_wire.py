"""The world's derivations and the wire's rendering: determinism and the facts trackers rely on."""

from __future__ import annotations

import json

import pytest

from ctxsim.wire import PLACEHOLDER_OUTPUT_TOKENS, render
from ctxsim.world import Call, Compaction, Session, SessionBuilder, Truth


def build(seed: int = 5):
    b = SessionBuilder(seed=seed, baseline=20_000)
    b.query("go", prompt_tokens=500).call(results=[1500, 500], output=300).call(output=80)
    b.expire_cache(keep_prefix=20_000).call().start_subagent().call(results=[9000]).call().end_subagent()
    b.compact(15_000).call()
    return b.build()


def test_same_seed_same_bytes_and_different_seed_differs() -> None:
    def dump(s: Session, partial: bool) -> str:
        return json.dumps([sc.dicts() for sc in render(s, include_partial_messages=partial)])

    for partial in (False, True):
        assert dump(build(5), partial) == dump(build(5), partial)
    assert dump(build(5), False) != dump(build(6), False)


def test_cache_split_follows_real_sessions() -> None:
    session = build()
    main = session.main_calls
    first, second, third = main[0], main[1], main[2]
    assert first.prompt == 20_000 + 500  # the baseline plus the user's prompt
    assert (first.input_tokens, first.cache_creation_input_tokens, first.cache_read_input_tokens) == (3, 497, 20_000)
    # real transcripts: cr[n+1] == cr[n] + cc[n]; the prompt grows by output + tool results
    assert second.cache_read_input_tokens == first.cache_read_input_tokens + first.cache_creation_input_tokens
    assert second.prompt == first.prompt + 300 + 1500 + 500
    # a cache expiry moves everything but the kept prefix from cache read to cache creation, total unchanged
    assert third.cache_read_input_tokens == 20_000
    assert third.prompt == second.prompt + 80
    assert third.input_tokens == 3


def test_subagent_calls_do_not_move_the_truth_and_compaction_does() -> None:
    session = build()
    truths = [(step, truth) for _, step, truth in session.timeline()]
    first_sub = next(i for i, (s, _) in enumerate(truths) if isinstance(s, Call) and not s.is_main)
    agent_call = session.main_calls[3]  # the main call whose Agent tool use started the subagent
    assert truths[first_sub][1] == truths[first_sub - 1][1] == Truth(agent_call.prompt, agent_call.output_tokens)
    compaction = next(t for s, t in truths if isinstance(s, Compaction))
    # the boundary says 15,000 (the summary); the context also holds the 20,000-token baseline. A tracker can bound
    # that prefix from the first call: its cache read (the cached baseline) up to its whole prompt.
    first = session.main_calls[0]
    assert compaction == Truth(20_000 + 15_000, 0)
    # it reads as the prefix the first call read from cache: the baseline, so the estimate is exact
    assert first.cache_read_input_tokens == 20_000 and compaction.estimated == (35_000, 35_000)


def test_rendering_reproduces_the_per_block_facts() -> None:
    session = build()
    frames = [f.data for s in render(session) for f in s.frames]
    assistants = [f for f in frames if f["type"] == "assistant"]
    first_call = session.main_calls[0]
    mine = [f for f in assistants if f["message"]["id"] == first_call.message_id]
    assert len(mine) == len(first_call.blocks) == 3
    assert all(f["message"]["usage"] == mine[0]["message"]["usage"] for f in mine)
    assert len({id(f["message"]["usage"]) for f in mine}) == 3  # separate dicts, as parsed lines are
    assert all(f["message"]["usage"]["output_tokens"] == PLACEHOLDER_OUTPUT_TOKENS for f in assistants)
    results = [f for f in frames if f["type"] == "result"]
    assert len(results) == 1
    usage = results[0]["usage"]
    assert usage["cache_read_input_tokens"] == sum(c.cache_read_input_tokens for c in session.main_calls)
    assert usage["output_tokens"] == sum(c.output_tokens for c in session.main_calls)
    model_usage = results[0]["modelUsage"][session.model]
    summaries = [s.summary for q in session.queries for s in q.steps if isinstance(s, Compaction) and s.summary]
    assert len(summaries) == 1  # the builder derives the compaction's summary request
    # subagents and the summary request included
    assert model_usage["inputTokens"] == sum(c.input_tokens for c in (*session.calls, *summaries))
    assert model_usage["contextWindow"] == 200_000
    subagent = [f for f in assistants if f["parent_tool_use_id"] is not None]
    assert subagent and all(f["message"]["content"][0]["type"] == "tool_use" for f in subagent)
    boundary = [f for f in frames if f.get("subtype") == "compact_boundary"]
    assert boundary[0]["compact_metadata"]["post_tokens"] == 15_000


def test_partial_messages_carry_the_final_output_in_message_delta() -> None:
    session = build()
    frames = [f.data for s in render(session, include_partial_messages=True) for f in s.frames]
    deltas = [f["event"]["usage"]["output_tokens"] for f in frames
              if f["type"] == "stream_event" and f["event"]["type"] == "message_delta"]
    assert deltas == [c.output_tokens for c in session.main_calls]


def test_builder_rejects_half_stated_usage() -> None:
    with pytest.raises(ValueError, match="ctxsim: give all of"):
        SessionBuilder().call(input=3, cache_read=10)
    with pytest.raises(ValueError, match="ctxsim: 2 results for 1 tool_use"):
        SessionBuilder().call(blocks=("tool_use",), results=[1, 2])


def test_an_inclusive_gateway_reports_the_whole_prompt_as_input_and_the_reference_reads_it_when_told() -> None:
    # Aider-AI/aider#5516: prompt 17,111 with a cache read of 17,102 on the same call
    from ctxsim.check import run_tracker
    from ctxsim.reference import ContextTracker

    session = (SessionBuilder(seed=2, usage="inclusive").query("go")
               .call(input=9, cache_creation=0, cache_read=17_102, output=250).build())
    assert session.final_truth is not None and session.final_truth.prompt == 17_111
    usage = next(f.data["message"]["usage"] for s in render(session) for f in s.frames if f.data["type"] == "assistant")
    assert (usage["input_tokens"], usage["cache_read_input_tokens"]) == (17_111, 17_102)
    told = run_tracker(ContextTracker(usage="inclusive"), session)
    assert told.ok and told.points[0].estimate == 17_111
    untold = run_tracker(ContextTracker(), session)
    assert not untold.ok and untold.points[0].estimate == 17_111 + 17_102  # 34,213: the cache read counted twice


def test_a_session_streamed_query_by_query_renders_as_the_whole() -> None:
    from ctxsim.wire import render_stream

    def grow(b: SessionBuilder) -> SessionBuilder:
        for q in range(4):
            b.query(f"step {q}").call(blocks=("thinking", "text", "tool_use"), results=(300,)).call()
            if q == 2:
                b.compact(5_000)
        return b

    whole = render(grow(SessionBuilder(seed=3)).build(), include_partial_messages=True)
    b = grow(SessionBuilder(seed=3))
    taken = b.take()  # the closed queries, handed over; build() returns the rest
    streamed = list(render_stream(b.world(), queries=[*taken, *b.build().queries], include_partial_messages=True))
    assert [f.data for s in streamed for f in s.frames] == [f.data for s in whole for f in s.frames]
    assert [f.observation for s in streamed for f in s.frames] == [f.observation for s in whole for f in s.frames]
