"""What :meth:`SessionBuilder.compact` and :meth:`SessionBuilder.reset` derive when the user states nothing: the
summary request, an autocompaction's ``preTokens``, and what ``/context`` shows after ``/compact`` and ``/clear``.

The figures are Claude Code's, recorded (``ctxsim.world`` names the recordings); the captures under
``src/ctxsim/wire/captures`` hold the builder to them session by session (tests/live/test_live_captures.py). Here:
what is stated is kept, what is derived follows the documented rule, and bad input is one ``ctxsim:`` error.
"""

from __future__ import annotations

import pytest

from ctxsim.world import (
    CLEAR_COMMAND_TOKENS,
    COMPACT_COMMAND_TOKENS,
    COMPACT_INSTRUCTION_TOKENS,
    Call,
    Compaction,
    ConversationReset,
    SessionBuilder,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    later_blocks_tokens,
)


def _compaction(builder: SessionBuilder) -> Compaction:
    step = builder.pending[-1]
    assert isinstance(step, Compaction)
    return step


def test_a_stated_summary_request_is_kept_as_given() -> None:
    given = Call(5, 40, 17_000, 600, (Text("the summary"),), "msg_s", request_id="req_s")
    b = SessionBuilder(seed=1).query("go").call(input=3, cache_creation=2_000, cache_read=16_000)
    assert _compaction(b.compact(3_000, summary=given)).summary is given
    as_usage = _compaction(b.compact(2_000, summary=(1, 2, 3, 4))).summary
    assert as_usage is not None
    counts = (as_usage.input_tokens, as_usage.cache_creation_input_tokens, as_usage.cache_read_input_tokens)
    assert (*counts, as_usage.output_tokens) == (1, 2, 3, 4)


def test_a_derived_summary_request_reads_the_main_chain_s_cache() -> None:
    b = SessionBuilder(seed=1).query("go").call(input=3, cache_creation=2_000, cache_read=16_000, output=97)
    step = _compaction(b.compact(3_000))
    summary = step.summary
    assert summary is not None and summary.is_main
    assert step.pre_tokens == 18_003 + 97 + 22  # an autocompaction counts 22 tokens beyond the context
    prompt = step.pre_tokens + COMPACT_INSTRUCTION_TOKENS
    assert (summary.input_tokens, summary.cache_read_input_tokens) == (3, 18_000)  # what the call read or wrote
    assert summary.prompt == prompt and summary.output_tokens == 3_000


def test_compact_counts_its_command_and_clear_its_own() -> None:
    b = SessionBuilder(seed=1, baseline=11_581).query("go").call()
    b.query("/compact")
    manual = _compaction(b.compact(2_681, trigger="manual"))
    assert manual.context_tokens == 11_581 + 2_681 + COMPACT_COMMAND_TOKENS
    b.query("/clear").reset()
    reset = b.pending[-1]
    assert isinstance(reset, ConversationReset) and reset.context_tokens == 11_581 + CLEAR_COMMAND_TOKENS


def test_a_local_command_adds_nothing_to_the_next_prompt() -> None:
    b = SessionBuilder(seed=1).query("go").call(input=3, cache_creation=2_000, cache_read=16_000, output=50)
    before = b.main_context()
    b.query("/compact")
    assert b.main_context() == before
    assert _compaction(b.compact(1_000, trigger="manual")).pre_tokens == before


@pytest.mark.parametrize("summary", [(1, 2, 3), (1, 2, 3, -4), (1, 2.5, 3, 4)])
def test_a_bad_summary_is_one_ctxsim_error(summary: tuple[int, ...]) -> None:
    b = SessionBuilder(seed=1).query("go").call()
    with pytest.raises(ValueError, match=r"^ctxsim: compact\(summary="):
        b.compact(1_000, summary=summary)  # type: ignore[arg-type]


def test_a_reply_of_several_blocks_counts_its_later_blocks_again_in_pre_tokens() -> None:
    """The REPL's mid-turn autocompaction: a reply of a text and a ``Bash`` call, then the call's result."""
    tool = ToolUse("toolu_1", "Bash", {"command": "echo mid", "description": "run a command"})
    b = SessionBuilder(seed=1).query("a big tool turn")
    b.call(input=3, cache_creation=1_000, cache_read=89_000, output=40, blocks=(Text("Running it."), tool),
           results=[1])
    call, result = b.pending[-2:]
    assert isinstance(call, Call) and call.blocks == (Text("Running it."), tool)  # kept as given
    assert isinstance(result, ToolResult) and result.tool_use_id == "toolu_1"  # and answered
    # 'Bash{"command":"echo mid","description":"run a command"}' is 56 characters: 14 tokens
    assert _compaction(b.compact(3_000)).pre_tokens == 90_003 + 40 + 1 + 14 + 22


@pytest.mark.parametrize(("later", "tokens"), [
    ((), 0),  # a reply of one block adds nothing
    ((Text("ab"),), 1),  # half a token rounds up
    ((Text("abcde"),), 1),
    ((Text("abcdef"),), 2),
    ((Text("\U0001F600" * 3),), 2),  # six UTF-16 units
    ((Thinking("abcd"), Text("abcdefgh")), 3),
])
def test_later_blocks_count_their_characters_over_four_rounded(later: tuple[Text | Thinking, ...],
                                                               tokens: int) -> None:
    reply = Call(3, 0, 0, 10, (Text("first"), *later), "msg_1")
    assert later_blocks_tokens(reply) == tokens
    b = SessionBuilder(seed=1).query("go").call(input=3, cache_creation=0, cache_read=9_000, output=10,
                                                blocks=reply.blocks)
    b.query("/compact")
    assert _compaction(b.compact(1_000, trigger="manual")).pre_tokens == 9_003 + 10 + tokens  # /compact too
    after = 12_000 + 1_000 + COMPACT_COMMAND_TOKENS  # the baseline, the summary, the command: the reply is gone
    assert _compaction(b.compact(500, trigger="manual")).pre_tokens == after


def test_a_bad_block_is_one_ctxsim_error() -> None:
    with pytest.raises(ValueError, match=r"^ctxsim: unknown block kind 'picture'"):
        SessionBuilder(seed=1).query("go").call(blocks=("text", "picture"))
