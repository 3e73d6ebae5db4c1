"""The formulas trackers in the wild use (docs/explanation/bugs-in-the-wild.md), as a few configurable shapes.

Almost every context gauge in the survey is one of two things: the usage of the *latest* assistant message
(which fields, which messages it skips, what it does at a compaction, which window it pegs at), or a *sum* of
usage over messages (which fields, deduplicated by what). :class:`LatestUsage` and :class:`SummedUsage` are those
shapes, naive in the same way the originals are: they trust the fields they read (a garbage value raises, as
``a + b`` on a string does). :class:`AutocompactGauge` is the one gauge that gets the tokens right and the
denominator wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    ResultMessage,
    SystemMessage,
)

__all__ = ["DEFAULT_WINDOW", "FIELDS", "AutocompactGauge", "LatestUsage", "ResultUsage", "SummedUsage"]

FIELDS = {
    "in": "input_tokens",
    "cc": "cache_creation_input_tokens",
    "cr": "cache_read_input_tokens",
    "out": "output_tokens",
}
"""Short names for the usage fields a formula adds up."""

DEFAULT_WINDOW = 200_000
"""The window a gauge assumes when nothing tells it otherwise."""


def _add(usage: dict[str, Any], fields: tuple[str, ...]) -> int:
    return sum(usage.get(FIELDS[f]) or 0 for f in fields)


@dataclass
class LatestUsage:
    """The usage of the latest assistant message, as most gauges read it.

    ``fields`` are added up; ``main_only`` skips subagent messages (``parent_tool_use_id``); ``skip_synthetic``
    skips the made-up error messages (``<synthetic>``, all-zero usage); ``after_compaction`` is what the gauge
    shows from a ``compact_boundary`` to the next call: ``"keep"`` (the old value), ``"unknown"`` (None, like
    Claude Code's ``current_usage: null``) or ``"post-or-zero"`` (``post_tokens``, else 0). ``peg_at_reported_window``
    clamps the value to 100% of the window the latest ``ResultMessage.model_usage`` reports (``contextWindow`` of
    the model of the latest main message, else of the first entry; :data:`DEFAULT_WINDOW` before any result), as
    a gauge that shows ``used_percentage`` pegged at 100% does.
    """

    fields: tuple[str, ...] = ("in", "cc", "cr")
    main_only: bool = True
    skip_synthetic: bool = True
    after_compaction: Literal["keep", "unknown", "post-or-zero"] = "keep"
    peg_at_reported_window: bool = False
    name: str = "latest-usage"
    value: int | None = None
    model: str | None = None
    """The model of the latest main-chain message counted."""
    window: int = DEFAULT_WINDOW
    """The window the latest result reported (used with ``peg_at_reported_window``)."""

    def observe(self, message: Any) -> None:
        if isinstance(message, AssistantMessage):
            if self.main_only and message.parent_tool_use_id is not None:
                return
            usage = message.usage
            if usage is None:
                return
            if self.skip_synthetic and (message.model == "<synthetic>" or not _add(usage, ("in", "cc", "cr"))):
                return
            self.value = _add(usage, self.fields)
            self.model = message.model
        elif isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            if self.after_compaction == "unknown":
                self.value = None
            elif self.after_compaction == "post-or-zero":
                meta = message.data.get("compact_metadata") or {}
                self.value = meta.get("post_tokens") or 0
        elif isinstance(message, ConversationResetMessage):
            self.value = None
        elif isinstance(message, ResultMessage) and self.peg_at_reported_window and message.model_usage:
            entries = message.model_usage
            entry = entries[self.model] if self.model in entries else next(iter(entries.values()))
            self.window = entry.get("contextWindow") or self.window

    def context_tokens(self) -> int | None:
        if self.peg_at_reported_window and self.value is not None:
            return min(self.value, self.window)
        return self.value


@dataclass
class SummedUsage:
    """A running total of usage over assistant messages, read as the context (spend, not occupancy).

    Reads the raw stream-json dicts (for ``request_id``). ``dedupe`` keys messages by ``message.id``, by
    ``uuid``, by ``message.id`` + ``request_id`` only when both are present (ccusage's hash, otherwise no dedupe),
    not at all, or by ``stop_reason`` (``"finished"``): every message with a truthy ``stop_reason`` counts, and a
    ``message.id`` that has none counts its latest message once (ccstatusline's fix for streaming partials).
    ``cap`` clamps the total (a gauge pegged at the window).
    """

    fields: tuple[str, ...] = ("in", "cc", "cr")
    dedupe: Literal["message_id", "uuid", "both_ids", "none", "finished"] = "message_id"
    main_only: bool = True
    cap: int | None = None
    name: str = "summed-usage"
    total: int = 0
    seen: set[Any] = field(default_factory=set)
    pending: dict[Any, int] = field(default_factory=dict)
    """With ``dedupe="finished"``: what the latest partial message of each unfinished id added."""

    def _key(self, data: dict[str, Any]) -> Any:
        message_id = (data.get("message") or {}).get("id")
        if self.dedupe == "message_id":
            return message_id
        if self.dedupe == "uuid":
            return data.get("uuid")
        if self.dedupe == "both_ids":
            request_id = data.get("request_id")
            return f"{message_id}:{request_id}" if message_id and request_id else None
        return None

    def observe(self, data: dict[str, Any]) -> None:
        if data.get("type") != "assistant" or (self.main_only and data.get("parent_tool_use_id") is not None):
            return
        usage = (data.get("message") or {}).get("usage")
        if not usage:
            return
        if self.dedupe == "finished":
            self._finished(data["message"], _add(usage, self.fields))
            return
        key = self._key(data)
        if key is not None:
            if key in self.seen:
                return
            self.seen.add(key)
        self.total += _add(usage, self.fields)

    def _finished(self, message: dict[str, Any], value: int) -> None:
        key = message.get("id")
        if message.get("stop_reason"):
            self.seen.add(key)
            self.total += value - self.pending.pop(key, 0)
        elif key not in self.seen:
            self.total += value - self.pending.get(key, 0)
            self.pending[key] = value

    def context_tokens(self) -> int | None:
        return min(self.total, self.cap) if self.cap is not None else self.total


@dataclass
class ResultUsage:
    """The latest ``ResultMessage.usage`` read as the context: a roll-up of the query's calls (spend)."""

    fields: tuple[str, ...] = ("in", "cc", "cr")
    name: str = "result-usage"
    value: int | None = None

    def on_result(self, message: ResultMessage) -> None:
        if message.usage is not None:
            self.value = _add(message.usage, self.fields)

    def context_tokens(self) -> int | None:
        return self.value


@dataclass
class AutocompactGauge:
    """The latest main-chain prompt as a share of the *autocompact threshold* rather than of the window.

    Claude Code's threshold is ``window - min(max_output, 20k) - 13k`` (Bugs in the wild); a gauge whose
    ``percentLeft`` uses it as the denominator (Gitlawb/openclaude#746) reads ~20% higher than ``used_percentage``
    on the same context. :meth:`pressure_ratio` is that share; run it with :class:`ctxsim.check.FromRatio` and the
    window it assumes.
    """

    window: int = DEFAULT_WINDOW
    max_output: int = 32_000
    name: str = "autocompact-gauge"
    latest: LatestUsage = field(default_factory=LatestUsage)

    @property
    def threshold(self) -> int:
        """The autocompact threshold it divides by."""
        return self.window - min(self.max_output, 20_000) - 13_000

    def observe(self, message: Any) -> None:
        self.latest.observe(message)

    def pressure_ratio(self) -> float | None:
        value = self.latest.context_tokens()
        return None if value is None else value / self.threshold
