"""The reference tracker, fact by fact: each test states the input the way the CLI sends it, and the truth."""

from __future__ import annotations

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
)

from ctxsim.check import run_tracker
from ctxsim.reference import ContextTracker, prompt_tokens, token_count
from ctxsim.world import SessionBuilder


def assistant(mid: str | None, usage: object, *, parent: str | None = None, model: str = "claude-sonnet-4-5",
              uuid: str = "u") -> AssistantMessage:
    return AssistantMessage(content=[TextBlock("x")], model=model, parent_tool_use_id=parent,
                            usage=usage, message_id=mid, uuid=uuid)  # type: ignore[arg-type]


def usage(i: int, cc: int, cr: int, out: int = 1) -> dict[str, int]:
    return {"input_tokens": i, "cache_creation_input_tokens": cc, "cache_read_input_tokens": cr, "output_tokens": out}


def result(model_usage: dict | None = None, usage_: dict | None = None) -> ResultMessage:
    return ResultMessage(subtype="success", duration_ms=1, duration_api_ms=1, is_error=False, num_turns=1,
                         session_id="s", usage=usage_, model_usage=model_usage)  # type: ignore[arg-type]


def test_blocks_of_one_call_count_once() -> None:
    t = ContextTracker()
    for n in range(4):  # thinking, text, tool_use, tool_use of one call: same id, same usage
        t.observe(assistant("m1", usage(3, 6728, 16945), uuid=f"u{n}"))
    assert t.context_tokens() == 3 + 6728 + 16945


def test_snapshot_of_latest_call_not_a_sum() -> None:
    # Bugs in the wild, B8, the real capture: two main calls, then a result whose usage sums them
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 6728, 16945)))
    t.observe(assistant("m2", usage(1, 553, 23673)))
    t.observe(result({"claude-sonnet-4-5": {"contextWindow": 200_000}}, usage(4, 7281, 40618, 576)))
    assert t.context_tokens() == 24_227
    assert t.window() == 200_000
    assert t.pressure() == pytest.approx(24_227 / 200_000)


def test_subagent_and_synthetic_messages_are_skipped() -> None:
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 2000, 141_275 - 2003)))
    t.observe(assistant("s1", usage(3, 7699, 0), parent="toolu_1"))
    t.observe(assistant("syn", usage(0, 0, 0), model="<synthetic>"))
    t.observe(assistant("zero", usage(0, 0, 0)))
    assert t.context_tokens() == 141_275


def test_replayed_earlier_message_changes_nothing() -> None:
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 1000, 50_000)))
    t.observe(assistant("m2", usage(3, 1000, 51_000)))
    t.observe(assistant("m1", usage(3, 1000, 50_000)))  # a resume copy of an old line
    assert t.context_tokens() == 52_003


def test_an_id_reused_for_a_different_call_counts() -> None:
    # some gateways reuse message ids across distinct calls (Bugs in the wild): a different prompt is a new call
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 1000, 50_000)))
    t.observe(assistant("m2", usage(3, 1000, 51_000)))
    t.observe(assistant("m1", usage(3, 900, 52_000)))
    assert t.context_tokens() == 52_903


def test_cache_read_drop_keeps_the_total() -> None:
    # Bugs in the wild, B14: before cr 172,301 cc 1,344; after the cache expired cr 0 cc 174,210
    t = ContextTracker()
    t.observe(assistant("m1", usage(6, 1344, 172_301)))
    t.observe(assistant("m2", usage(6, 174_210, 0)))
    assert t.context_tokens() == 174_216


def test_output_from_message_delta_is_assigned_not_added() -> None:
    t = ContextTracker()
    start = {"type": "message_start", "message": {"id": "m1", "model": "m", "usage": usage(3, 500, 20_000)}}
    t.observe(StreamEvent(uuid="a", session_id="s", event=start))
    t.observe(StreamEvent(uuid="b", session_id="s", event={"type": "message_delta", "usage": {"output_tokens": 90}}))
    t.observe(StreamEvent(uuid="c", session_id="s", event={"type": "message_delta", "usage": {"output_tokens": 159}}))
    assert t.context_tokens() == 20_503 + 159
    t.observe(assistant("m2", usage(3, 200, 20_662)))
    assert t.context_tokens() == 20_865  # a new call: its output is not known yet


def test_compaction_with_and_without_post_size() -> None:
    t = ContextTracker()
    t.observe(assistant("m0", usage(3, 500, 12_000)))   # a fresh session: the 12,000-token system prefix is cached
    t.observe(assistant("m1", usage(3, 2000, 148_000)))
    t.observe(SystemMessage("compact_boundary", {"compact_metadata": {"pre_tokens": 150_000, "post_tokens": 20_000}}))
    assert t.context_tokens() == 20_000 + 12_000  # the summary, and the system prefix that stays
    t.observe(assistant("m2", usage(3, 12_497, 21_460)))
    assert t.context_tokens() == 33_960
    t.observe(SystemMessage("compact_boundary", {"compact_metadata": {"trigger": "manual", "pre_tokens": 34_000}}))
    assert t.context_tokens() is None  # unknown beats stale
    t.observe(assistant("m1", usage(3, 2000, 148_000)))  # an old id replayed after compaction
    assert t.context_tokens() is None


def test_new_conversation_forgets() -> None:
    t = ContextTracker()
    t.observe(SystemMessage("init", {"session_id": "one"}))
    t.observe(assistant("m1", usage(1, 241, 339_155)))
    t.observe(SystemMessage("init", {"session_id": "one"}))
    assert t.context_tokens() == 339_397
    t.observe(ConversationResetMessage(new_conversation_id="c", uuid="u", session_id="one"))
    assert t.context_tokens() is None
    t.observe(assistant("m2", usage(3, 5000, 12_000)))
    t.observe(SystemMessage("init", {"session_id": "two"}))
    assert t.context_tokens() is None


UNREADABLE_USAGE = [None, "garbage", 7, [], {"input_tokens": None}, {"output_tokens": 5},
                    {"input_tokens": None, "cache_read_input_tokens": 9_000}]
"""Usages that say nothing of the prompt: absent, not a dict, no prompt field, a null input_tokens."""


@pytest.mark.parametrize("missing", UNREADABLE_USAGE)
def test_missing_usage_on_another_block_of_the_call_leaves_the_estimate(missing: object) -> None:
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 100, 9_000)))
    t.observe(assistant("m1", missing))
    assert t.context_tokens() == 9_103


@pytest.mark.parametrize("missing", UNREADABLE_USAGE)
def test_a_new_call_without_usable_usage_makes_the_context_unknown(missing: object) -> None:
    # a new message id is a new request: the context moved by an amount the stream does not tell (unknown beats
    # stale), until a call that says its size
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 100, 9_000)))
    t.observe(assistant("m2", missing))
    assert t.context_tokens() is None
    t.observe(assistant("m3", usage(3, 50, 9_103)))
    assert t.context_tokens() == 9_156


def test_null_cache_counts_are_zero_as_the_api_documents() -> None:
    assert prompt_tokens({"input_tokens": 12_000, "cache_creation_input_tokens": None,
                          "cache_read_input_tokens": None}) == 12_000


@pytest.mark.parametrize("garbage", [{"input_tokens": -5}, {"input_tokens": "lots"}, {"input_tokens": float("nan")},
                                     {"input_tokens": 3, "cache_read_input_tokens": 10**15}])
def test_a_new_call_with_unreadable_usage_makes_the_context_unknown(garbage: object) -> None:
    t = ContextTracker()
    t.observe(assistant("m1", usage(3, 100, 9_000)))
    t.observe(assistant("m1", garbage))  # another block of the same call: nothing new
    assert t.context_tokens() == 9_103
    t.observe(assistant("m2", garbage))  # a new call happened; its size cannot be read
    assert t.context_tokens() is None
    t.observe(assistant("m2", usage(3, 100, 9_500)))  # a readable block of it
    assert t.context_tokens() == 9_603


def test_token_count_and_prompt_tokens_rules() -> None:
    assert [token_count(v) for v in (5, 5.0, "12", " 7 ", -1, True, None, "x", float("inf"))] == \
        [5, 5, 12, 7, None, None, None, None, None]
    assert prompt_tokens({"input_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 10,
                          "cache_creation": {"ephemeral_5m_input_tokens": 400,
                                             "ephemeral_1h_input_tokens": 100}}) == 511
    assert prompt_tokens({"input_tokens": "3", "cache_read_input_tokens": 1e3}) == 1003
    # a field that is there but is not a count spoils the sum: 3 + 9 of a 12,012-token prompt is not an answer
    assert prompt_tokens({"input_tokens": 3, "cache_creation_input_tokens": 9,
                          "cache_read_input_tokens": -12_000}) is None
    assert prompt_tokens({"input_tokens": 3, "cache_read_input_tokens": 10**15}) is None
    assert prompt_tokens({"input_tokens": 3, "cache_creation_input_tokens": 10**15,
                          "cache_read_input_tokens": 5}) is None
    # usage.iterations: the last message iteration is what occupies the context
    assert prompt_tokens({"input_tokens": 99, "iterations": [
        {"type": "message", "input_tokens": 1, "cache_read_input_tokens": 10},
        {"type": "advisor_message", "input_tokens": 500},
        {"type": "message", "input_tokens": 8, "cache_creation_input_tokens": 322, "cache_read_input_tokens": 23_941},
    ]}) == 8 + 322 + 23_941


def test_result_usage_never_moves_the_estimate() -> None:
    t = ContextTracker()
    t.observe(result(usage_=usage(4, 7281, 40_618, 576)))
    assert t.context_tokens() is None


def test_reference_tracks_a_built_session_everywhere() -> None:
    b = SessionBuilder(seed=11, name="mixed")
    b.query("start").call(blocks=("thinking", "text", "tool_use", "tool_use"), results=[3000, 800])
    b.call(results=[5000]).start_subagent().call(results=[40_000]).call().end_subagent(result_tokens=900)
    b.call().expire_cache().call().query("next").call(results=[20_000]).compact(18_000).call()
    b.reset().query("after clear").call()
    session = b.build()
    # a point after each of the 8 main calls, the subagent call that shows a tool_use (its text-only call is
    # not forwarded), the compaction, the reset and each of the 3 results
    assert len(session.main_calls) == 8
    for partial in (False, True):
        report = run_tracker(ContextTracker(), session, include_partial_messages=partial)
        assert report.ok, str(report)
        assert len(report.points) == 8 + 1 + 1 + 1 + 3


def test_after_compaction_the_system_prefix_comes_from_the_first_call_or_is_given() -> None:
    boundary = SystemMessage("compact_boundary", {"compact_metadata": {"pre_tokens": 21_543, "post_tokens": 2672}})
    cold = ContextTracker()   # the first call of the 2.1.330 capture: nothing cached yet, so its whole prompt
    cold.observe(assistant("m1", usage(3, 14_812, 0)))
    cold.observe(boundary)
    assert cold.system_prefix() == 14_815 and cold.context_tokens() == 2672 + 14_815
    given = ContextTracker(prefix_tokens=11_981)
    given.observe(assistant("m1", usage(3, 14_812, 0)))
    given.observe(boundary)
    assert given.context_tokens() == 2672 + 11_981
    cleared = ContextTracker()  # a /clear starts a new conversation on the same system prefix
    cleared.observe(assistant("m1", usage(3, 100, 12_000)))
    cleared.observe(ConversationResetMessage(new_conversation_id="c", uuid="r", session_id="s2"))
    assert cleared.context_tokens() is None
    cleared.observe(boundary)
    assert cleared.system_prefix() == 12_000 and cleared.context_tokens() == 2672 + 12_000
    nothing = ContextTracker()  # no call has shown the prefix: unknown, not the summary alone
    nothing.observe(boundary)
    assert nothing.system_prefix() is None and nothing.context_tokens() is None
    assert ContextTracker(prefix_tokens=11_981).system_prefix() == 11_981
