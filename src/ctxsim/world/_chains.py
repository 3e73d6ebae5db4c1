"""The chains a :class:`~ctxsim.world.SessionBuilder` keeps while it builds: each chain's cache state
(:class:`Chain`), and the subagent's steps: its start and end, where Claude Code compacts it, and its own compaction.

Part of :mod:`ctxsim.world` (the builder's subagent steps call these, given the builder as a :class:`Building`).
What Claude Code 2.1.332 was recorded doing with an agent whose ``autoCompactWindow`` puts its point at 67,000
(docs/explanation/compaction.md): after a subagent call that is not its first, a subagent holding more than its
point is compacted before its next call (one summary request, asked with the subagent's system prompt), in its own
transcript only; past the point after its first call, it called again uncompacted; the main chain was unmoved.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ._compaction import AUTO_COMPACT_REMINDER_TOKENS, later_blocks_tokens
from ._filler import filler_text
from ._session import (
    Block,
    Call,
    Session,
    Step,
    SubagentCompaction,
    SubagentStart,
    TaskNotification,
    ToolResult,
    ToolUse,
)
from ._settings import ClaudeSettings

__all__ = ["Building", "Chain", "compact_subagent", "end_subagent", "start_subagent", "within_subagent_window"]


@dataclass
class Chain:
    """Per-chain cache state while building: what the next call will find in the prompt cache."""

    cached_prefix: int = 0
    last_prompt: int | None = None
    last_output: int = 0
    pending_growth: int = 0
    expired: bool = False
    keep_prefix: int = 0
    calls: int = 0
    later_blocks: int = 0
    """What a compaction's ``preTokens`` counts of the last reply beyond its usage (:func:`later_blocks_tokens`)."""
    compacted: bool = False
    """A subagent's chain compacted since its last call."""

    def held(self, baseline: int) -> int:
        """What the chain's next request would carry now: its last prompt (``baseline`` before any call), that
        call's output and what was added since."""
        return (self.last_prompt or baseline) + self.last_output + self.pending_growth

    def pre_tokens(self, baseline: int, *, auto: bool) -> int:
        """A compaction's ``preTokens`` now: what the chain holds, what Claude Code's estimate counts again of the
        last reply's later blocks, and for an autocompaction the reminder it counts
        (:data:`~ctxsim.world.AUTO_COMPACT_REMINDER_TOKENS`)."""
        return self.held(baseline) + self.later_blocks + (AUTO_COMPACT_REMINDER_TOKENS if auto else 0)


class Building(Protocol):
    """What the subagent's steps use of the builder (:class:`~ctxsim.world.SessionBuilder` is one)."""

    model: str
    baseline: int
    max_output_tokens: int
    auto_compact_window: int | None
    settings: ClaudeSettings
    _subagent: str | None
    _background: dict[str, str]
    _rng: random.Random

    def call(self, *, output: int = ..., blocks: Sequence[str | Block] | None = ...) -> object: ...

    def world(self) -> Session: ...

    def _chain(self, key: str | None) -> Chain: ...

    def _current_steps(self) -> list[Step]: ...

    def _new_id(self, prefix: str) -> str: ...

    def _summary(self, summary: Call | tuple[int, int, int, int] | None, pre_tokens: int, post_tokens: int,
                 chain: Chain) -> Call: ...



def _point(b: Building) -> int:
    """Where the open subagent compacts (:meth:`~ctxsim.world.ClaudeSettings.subagent_point`)."""
    window = b.world().window_of(b.model)
    return b.settings.subagent_point(window, b.max_output_tokens, auto_compact_window=b.auto_compact_window)


def within_subagent_window(b: Building, chain: Chain) -> None:
    """Refuse the subagent call that Claude Code makes only after compacting the subagent: held past its own point
    after a call not its first (recorded), with no compaction since. With auto-compact off nothing compacts on its
    own, so no call is refused (inferred: no recording runs a subagent with auto-compact off)."""
    if chain.calls < 2 or chain.last_prompt is None or chain.compacted or not b.settings.auto_compact:
        return
    point, held = _point(b), chain.held(b.baseline)
    if held > point:
        raise ValueError(f"ctxsim: the subagent holds {held:,} tokens after its call {chain.calls}, past its "
                         f"autocompact point ({point:,}, from subagent_compact_window "
                         f"{b.settings.subagent_compact_window:,}): Claude Code compacts the subagent there, before "
                         f"its next call, in its own transcript; compact it first (compact() while it is open, a "
                         f"compact step in its calls), end it there, or keep it under {point:,}")


def compact_subagent(b: Building, post_tokens: int | None, context: int | None, pre_tokens: int | None,
                     summary: Call | tuple[int, int, int, int] | None) -> None:
    """Compact the open subagent as Claude Code does on its own (trigger ``auto``): a
    :class:`~ctxsim.world.SubagentCompaction` whose ``pre_tokens`` default to what the subagent holds, plus what
    the main chain's autocompaction counts more (the last reply's later blocks and the reminder: 81,073 recorded
    after a call of 81,000, 50 out and a one-token tool result); the subagent then holds ``context`` (default: the
    baseline, its system prefix, plus ``post_tokens``), which its next call re-creates in the cache (recorded: a
    cache read of 0)."""
    parent = b._subagent
    assert parent is not None
    chain = b._chain(parent)
    if not b.settings.auto_compact:
        raise ValueError("ctxsim: auto-compact is off: Claude Code compacts no subagent on its own")
    if chain.calls < 2:
        raise ValueError(f"ctxsim: the subagent made {chain.calls} call(s): Claude Code compacts a subagent only "
                         f"after a call that is not its first (recorded: past its point after its first call, it "
                         f"called again uncompacted)")
    point, held = _point(b), chain.held(b.baseline)
    if held <= point:
        raise ValueError(f"ctxsim: the subagent holds {held:,} tokens, not past its autocompact point "
                         f"({point:,}): Claude Code would not compact it")
    if post_tokens is None:
        if context is None or context < b.baseline:
            raise ValueError(f"ctxsim: a subagent's compaction needs post_tokens (what its boundary reports) or a "
                             f"context of at least the baseline ({b.baseline:,})")
        post_tokens = context - b.baseline
    if context is None:
        context = b.baseline + post_tokens
    if pre_tokens is None:
        pre_tokens = chain.pre_tokens(b.baseline, auto=True)
    made = b._summary(summary, pre_tokens, post_tokens, chain)
    b._current_steps().append(SubagentCompaction(parent, pre_tokens, post_tokens, context, made))
    chain.last_prompt, chain.last_output, chain.pending_growth, chain.later_blocks = context, 0, 0, 0
    chain.expired, chain.keep_prefix, chain.compacted = True, 0, True


def start_subagent(b: Building, description: str, prompt_tokens: int, output: int, background: bool,
                   launch_tokens: int) -> None:
    """:meth:`~ctxsim.world.SessionBuilder.start_subagent`'s steps."""
    if b._subagent is not None:
        raise ValueError("ctxsim: a subagent is already open; call end_subagent() first")
    b.call(output=output, blocks=("text",))
    steps = b._current_steps()
    call = steps[-1]
    assert isinstance(call, Call)
    prompt = filler_text(b._rng, prompt_tokens)
    agent = ToolUse(b._new_id("toolu"), "Agent",
                    {"description": description, "prompt": prompt, "subagent_type": "general-purpose",
                     **({"run_in_background": True} if background else {})})
    launching = Call(call.input_tokens, call.cache_creation_input_tokens, call.cache_read_input_tokens,
                     call.output_tokens, (*call.blocks[:-1], agent) if call.blocks else (agent,),
                     call.message_id, call.model, call.request_id, None)
    steps[-1] = launching
    b._chain(None).later_blocks = later_blocks_tokens(launching)
    start = SubagentStart(agent.id, f"a{b._rng.getrandbits(64):016x}", description, prompt, background)
    steps.append(start)
    if background:
        steps.append(ToolResult(agent.id, f"Async agent launched successfully.\nagentId: {start.task_id}",
                                launch_tokens))
        b._chain(None).pending_growth += launch_tokens
        b.call(output=40, blocks=("text",))  # the main turn goes on, and ends
        b._background[agent.id] = start.task_id
    b._subagent = agent.id
    sub = b._chain(agent.id)
    sub.pending_growth = prompt_tokens
    sub.last_prompt = None


def end_subagent(b: Building, result_tokens: int) -> None:
    """:meth:`~ctxsim.world.SessionBuilder.end_subagent`'s steps."""
    if b._subagent is None:
        raise ValueError("ctxsim: no subagent is open")
    parent = b._subagent
    b._subagent = None
    text = filler_text(b._rng, result_tokens)
    task_id = b._background.pop(parent, None)
    b._current_steps().append(ToolResult(parent, text, result_tokens) if task_id is None
                              else TaskNotification(parent, task_id, text, result_tokens))
    b._chain(None).pending_growth += result_tokens
