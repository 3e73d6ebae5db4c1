"""What Claude Code does around a compaction and a ``/clear`` that a builder derives when the user states nothing:
the summary request, the boundary's ``preTokens`` for an autocompaction, and what ``/context`` shows right after.

Part of :mod:`ctxsim.world` (the builder and the scenario format use it). Every figure here was recorded: the
compaction request of a real session that users published (marot/spotter's test fixtures, Claude Code 2.1.39), and
ctxsim's own captures of Claude Code 2.1.330 to 2.1.332 (stream-json and the interactive REPL, driven against a
scripted Messages API), where the CLI's numbers did not move between versions.
"""

from __future__ import annotations

import json

from ._session import Block, Call, Text, Thinking

__all__ = ["AUTO_COMPACT_REMINDER_TOKENS", "CLEAR_COMMAND_TOKENS", "COMPACT_COMMAND_TOKENS",
           "COMPACT_INSTRUCTION_TOKENS", "SUMMARY_UNCACHED", "compacted_context", "later_blocks_tokens",
           "summary_call"]

COMPACT_INSTRUCTION_TOKENS = 2_154
"""What the summary request carries beyond the conversation it summarises: Claude Code's instructions for the
summary. In the published session the boundary said ``preTokens`` 167,094 and its summary request's prompt was
169,248 tokens (3 uncached, 2,487 written to the cache, 166,758 read)."""

SUMMARY_UNCACHED = 3
"""The summary request's uncached ``input_tokens`` (3 in the published session)."""

AUTO_COMPACT_REMINDER_TOKENS = 22
"""What an autocompaction's ``preTokens`` counts beyond the main chain's context (the last call's prompt and
output, and what was added since: the new prompt or the tool result, a token each in the captures): 80,073 after
a call of 80,000 and 50 out, before a prompt of a token; 90,073 after a call of 90,000 and 50 out, before that
call's one-token tool result; 80,116 after 80,003 and 90 out in the REPL. A ``/compact`` counts nothing more."""

def _estimate(text: str) -> int:
    """Claude Code's estimate of ``text``: its UTF-16 length over four, rounded half up."""
    return (len(text.encode("utf-16-le")) // 2 + 2) // 4


def _block_estimate(block: Block) -> int:
    if isinstance(block, (Text, Thinking)):
        return _estimate(block.text)
    return _estimate(block.name + json.dumps(block.input, separators=(",", ":"), ensure_ascii=False))


def later_blocks_tokens(reply: Call | None) -> int:
    """What a compaction's ``preTokens`` counts of ``reply`` (the main chain's last call) beyond its usage: Claude
    Code keeps a reply of several blocks as one message per block, takes the reply's usage from its first one, and
    estimates the messages after it again as if they were new: each later block's characters over four, rounded
    (a text's or thinking's text; a tool use's name and its input as compact JSON). In the REPL captures a reply of
    ``Running it.`` and a ``Bash`` call of ``{"command":"echo mid","description":"run a command"}`` (56 characters
    with the name) added 14 to ``preTokens``, beside the tool's one-token result and
    :data:`AUTO_COMPACT_REMINDER_TOKENS`; a reply of one block adds nothing."""
    if reply is None:
        return 0
    return sum(_block_estimate(b) for b in reply.blocks[1:])


COMPACT_COMMAND_TOKENS = 227
"""What ``/context`` shows right after ``/compact`` beyond the system prefix and the boundary's ``postTokens``: the
command's own messages (227 tokens in every capture)."""

CLEAR_COMMAND_TOKENS = 118
"""What ``/context`` shows right after ``/clear`` beyond a fresh conversation's: the command's own messages (118
tokens in every capture)."""


def compacted_context(baseline: int, post_tokens: int, trigger: str) -> int:
    """What ``/context`` shows right after a compaction whose boundary reports ``post_tokens``, in a session whose
    fresh conversation holds ``baseline``: the two, plus for ``/compact`` (``trigger`` ``manual``) the command's
    own messages (:data:`COMPACT_COMMAND_TOKENS`)."""
    return baseline + post_tokens + (COMPACT_COMMAND_TOKENS if trigger == "manual" else 0)


def summary_call(pre_tokens: int, post_tokens: int, cached: int, *, message_id: str, request_id: str, model: str,
                 text: str = "") -> Call:
    """The summary request Claude Code makes for a compaction of ``pre_tokens`` whose boundary reports
    ``post_tokens``, when the main chain had ``cached`` tokens in the prompt cache: the conversation plus
    :data:`COMPACT_INSTRUCTION_TOKENS`, reading from the cache what the main chain's last call read or wrote (the
    published session read 166,758 = the last main call's 165,803 read + 955 written), writing the rest but
    :data:`SUMMARY_UNCACHED`, and answering ``post_tokens`` (the summary). A main-chain call in every count
    (``modelUsage``, the cost), shown in no frame."""
    prompt = max(0, pre_tokens) + COMPACT_INSTRUCTION_TOKENS
    uncached = min(SUMMARY_UNCACHED, prompt)
    read = max(0, min(cached, prompt - uncached))
    return Call(uncached, prompt - uncached - read, read, max(0, post_tokens), (Text(text),), message_id, model,
                request_id)
