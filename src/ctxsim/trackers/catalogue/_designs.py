"""The five designs' trackers, reproduced exactly as each design wrote and wired them
(docs/explanation/bugs-in-the-wild.md).

The designs are five earlier write-ups of agents that restart on context pressure, numbered 000 to 004; in code and
docstrings they are "designs" ("design 003"), and "seed" means only a random seed. The user-visible names that
carry the old word stay as they are, being IDs people already type: catalogue entries (``seed003``) and corpus
scenario files (``seed000-cache-read-719.yaml``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from .._base import ResultsOnly

__all__ = [
    "ArbiterTracker",
    "ContextEstimator",
    "MalaContextUsage",
    "NonAdditiveContextManager",
    "mala",
]

DEFAULT_CONTEXT_LIMIT = 200_000
"""The hard-coded window every design assumes."""


# --- design 000 / 003: mala's ContextUsage, fed ResultMessage.usage ------------------------------------------------


@dataclass
class MalaContextUsage:
    """mala's ``ContextUsage`` (designs 003 and 000), updated from each ``ResultMessage.usage``.

    ``accumulate=False`` is design 003's first version: every result *overwrites* the counters. ``accumulate=True``
    is design 000's fix, ``add_turn()``: results are summed as if they were per-turn deltas. ``include_cache_read``
    puts ``cache_read`` into the pressure, as the code design 000 set out to fix did (its 719%).
    Missing usage disables tracking (the ``-1`` sentinel), as both seeds specify.
    """

    accumulate: bool = False
    include_cache_read: bool = False
    name: str = "mala"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0

    TRACKING_DISABLED = -1

    @property
    def tracking_disabled(self) -> bool:
        return self.input_tokens == self.TRACKING_DISABLED

    def on_result(self, message: ResultMessage) -> None:
        """``MessageStreamProcessor._process_result_message``: read the result's usage."""
        usage = message.usage
        if usage is None:
            self.input_tokens = self.TRACKING_DISABLED
            return
        if self.tracking_disabled:
            return
        turn = (usage.get("input_tokens", 0), usage.get("output_tokens", 0), usage.get("cache_read_input_tokens", 0))
        if self.accumulate:
            self.add_turn(input_tokens=turn[0], output_tokens=turn[1], cache_read_tokens=turn[2])
        else:
            self.input_tokens, self.output_tokens, self.cache_read_tokens = turn

    def add_turn(self, *, input_tokens: int, output_tokens: int, cache_read_tokens: int = 0) -> None:
        """Design 000's ``add_turn``: accumulate per-turn usage, clamped to >= 0."""
        self.input_tokens += max(0, input_tokens)
        self.output_tokens += max(0, output_tokens)
        self.cache_read_tokens += max(0, cache_read_tokens)

    def pressure_ratio(self, limit: int = DEFAULT_CONTEXT_LIMIT) -> float:
        """``(input + output [+ cache_read]) / limit``, 0.0 when tracking is disabled."""
        if limit <= 0 or self.tracking_disabled:
            return 0.0
        live = max(0, self.input_tokens) + max(0, self.output_tokens)
        if self.include_cache_read:
            live += max(0, self.cache_read_tokens)
        return live / limit

    def context_tokens(self) -> int | None:
        return None if self.tracking_disabled else round(self.pressure_ratio() * DEFAULT_CONTEXT_LIMIT)


def mala(**kwargs: Any) -> Callable[[], ResultsOnly]:
    """A factory of mala trackers wired as mala wires them: fed ``ResultMessage``\\ s only."""
    return lambda: ResultsOnly(MalaContextUsage(**kwargs), feed=MalaContextUsage.on_result)


# --- design 001: the Arbiter tracker, fed raw SDK message dicts ----------------------------------------------------


@dataclass
class ArbiterTracker:
    """Design 001's formula: ``max(cache_read) + sum(input) + sum(output)`` over assistant messages.

    It reads the raw SDK message (``msg.message.usage``, ``msg.message.id``), deduplicated by ``message.id`` or,
    in the variant the design warns against, by ``uuid``. It takes every assistant message, subagents included,
    and never forgets a maximum.
    """

    dedupe_by: str = "message_id"
    name: str = "arbiter"
    seen: set[str] = field(default_factory=set)
    max_cache_read: int = 0
    sum_input: int = 0
    sum_output: int = 0

    def observe(self, data: dict[str, Any]) -> None:
        if data.get("type") != "assistant":
            return
        message = data.get("message") or {}
        usage = message.get("usage")
        if not usage:
            return
        key = message.get("id") if self.dedupe_by == "message_id" else data.get("uuid")
        if str(key) in self.seen:
            return
        self.seen.add(str(key))
        self.max_cache_read = max(self.max_cache_read, usage.get("cache_read_input_tokens") or 0)
        self.sum_input += usage.get("input_tokens") or 0
        self.sum_output += usage.get("output_tokens") or 0

    def context_tokens(self) -> int | None:
        return self.max_cache_read + self.sum_input + self.sum_output


# --- design 002: debussy's character-count estimator ---------------------------------------------------------------


@dataclass
class ContextEstimator:
    """Design 002's ``ContextEstimator``: characters / 4 of file reads, tool outputs and prompts, times 1.3.

    It never reads token usage (the design distrusts it), so it cannot see the system prompt, the tools or
    the model's own output, and it counts every tool result in the stream, subagents' included.
    """

    live_skip: ClassVar[str] = ("it estimates from the text of tool results, and the live CLI runs inert tools (a "
                                "file that does not exist), so the text it sees is not the world's")
    """Why it is not judged through the live backend (:func:`ctxsim.live.tracker_skip_reason` reads it)."""

    name: str = "debussy"
    chars_to_tokens: int = 4
    reasoning_overhead: float = 1.3
    file_tokens: int = 0
    tool_output_tokens: int = 0
    prompt_tokens: int = 0
    tool_call_count: int = 0
    tool_names: dict[str, str] = field(default_factory=dict)

    def _estimate(self, text: str) -> int:
        return len(text) // self.chars_to_tokens

    def add_file_read(self, content: str) -> None:
        self.file_tokens += self._estimate(content)
        self.tool_call_count += 1

    def add_tool_output(self, content: str) -> None:
        self.tool_output_tokens += self._estimate(content)
        self.tool_call_count += 1

    def add_prompt(self, text: str) -> None:
        self.prompt_tokens += self._estimate(text)

    @property
    def total_estimated(self) -> int:
        return int((self.file_tokens + self.tool_output_tokens + self.prompt_tokens) * self.reasoning_overhead)

    def observe(self, message: Any) -> None:
        """The stream hook of ``ClaudeRunner``: Read results are file reads, other tool results outputs."""
        if isinstance(message, AssistantMessage):
            for block in message.content:
                if isinstance(block, ToolUseBlock):
                    self.tool_names[block.id] = block.name
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    text = block.content if isinstance(block.content, str) else str(block.content or "")
                    if self.tool_names.get(block.tool_use_id) == "Read":
                        self.add_file_read(text)
                    else:
                        self.add_tool_output(text)

    def context_tokens(self) -> int | None:
        return self.total_estimated


# --- design 004: the graduated-threshold ContextManager -----------------------------------------------------------


@dataclass
class NonAdditiveContextManager:
    """Design 004's ``ContextManager``: ``prompt_tokens`` is the full context, *set* (not summed) each turn.

    True of Ollama's ``prompt_tokens``; on the Anthropic shape the nearest field is ``input_tokens``, which is
    only the uncached tail, so the context reads near zero. Falls back to ``total_chars / 4`` until a token
    count arrives.
    """

    name: str = "nonadditive"
    prompt_tokens: int = 0
    completion_tokens_total: int = 0
    total_chars: int = 0

    def observe(self, message: Any) -> None:
        if not isinstance(message, AssistantMessage):
            return
        for block in message.content:
            self.total_chars += len(getattr(block, "text", "") or getattr(block, "thinking", "") or "")
        usage = message.usage or {}
        if usage.get("input_tokens"):
            self.prompt_tokens = usage["input_tokens"]
        self.completion_tokens_total += usage.get("output_tokens") or 0

    def context_tokens(self) -> int | None:
        return self.prompt_tokens if self.prompt_tokens > 0 else self.total_chars // 4
