"""The reference context tracker: right on every fact the simulation reproduces.

:class:`ContextTracker` reads ``claude_agent_sdk`` messages and answers how many tokens the main conversation
holds, the way Claude Code's own ``/context`` does: the latest main-chain API call's
``input + cache_creation + cache_read`` (plus that call's output once it is known), never a sum over calls.
"""

from __future__ import annotations

import math
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
)

from ..world.session import UsageConvention, system_prefix

__all__ = ["ContextTracker", "cache_read_tokens", "prefix_from_context_usage", "prompt_tokens", "token_count"]

MAX_PROMPT_FIELD = 100_000_000
"""No context window comes near this; a larger prompt count is garbage, not a count."""

MAX_OUTPUT_TOKENS = 1_000_000
"""No model writes more than this in one response; a larger output count is garbage, not a count."""

SYNTHETIC_MODEL = "<synthetic>"
"""The model name Claude Code puts on the assistant messages it makes up for API errors and interrupts."""


def token_count(value: Any) -> int | None:
    """``value`` as a token count, or None when it is not one (None, negative, NaN, non-numeric, a bool).

    Whole floats and numeric strings count (``"12"`` and ``12.0`` are 12); anything else is treated as absent.
    """
    if type(value) is int:  # the common case first (a bool is not one)
        return value if value >= 0 else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, str):
        try:
            return token_count(float(value.strip()))
        except ValueError:
            return None
    return None


def prompt_tokens(usage: Any, *, inclusive: bool = False) -> int | None:
    """The prompt size an API ``usage`` dict reports: ``input + cache_creation + cache_read`` (with ``inclusive``,
    for a gateway whose ``input_tokens`` already holds the cache counts: ``input_tokens``).

    Follows the API's own rules: the three fields are disjoint; when ``iterations`` lists several inference
    iterations, the last ``message`` iteration is the one that occupies the context; a zero or missing
    ``cache_creation_input_tokens`` falls back to the nested ``cache_creation`` TTL breakdown. Missing fields and
    null cache counts (the API documents them as nullable) count as absent; a null ``input_tokens`` next to other
    counts, or a field that is there but is not a count (negative, non-numeric, NaN, implausibly huge)
    makes the whole usage unusable, since a partial sum would be a wrong number. None means the usage says
    nothing usable (that, all fields absent, or all zero as on synthetic error messages).
    """
    if not isinstance(usage, dict):
        return None
    usage = _occupying(usage)
    if inclusive:  # the cache counts are parts of input_tokens, which may stand alone
        usage = {"input_tokens": usage.get("input_tokens")} if "input_tokens" in usage else usage
    uncached, created, read = (usage.get("input_tokens"), usage.get("cache_creation_input_tokens"),
                               usage.get("cache_read_input_tokens"))
    if (type(uncached) is int and type(created) is int and type(read) is int
            and uncached >= 0 and created > 0 and read >= 0 and max(uncached, created, read) <= MAX_PROMPT_FIELD):
        return uncached + created + read  # well-formed usage: what the general path below would return
    raw = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    counts = [token_count(v) for v in raw]
    if any((v is not None and c is None) or (c is not None and c > MAX_PROMPT_FIELD) for v, c in zip(raw, counts)):
        return None  # a field is there but is not a count: a partial sum would be a wrong number
    if raw[0] is None and "input_tokens" in usage:
        return None  # input_tokens is never null in the API (the cache counts may be): not a usage to trust
    uncached, created, read = counts
    if not created:
        nested = usage.get("cache_creation")
        if isinstance(nested, dict):
            parts = [token_count(v) for v in nested.values()]
            if any(p is not None for p in parts):
                created = sum(p for p in parts if p is not None) or created
    known = [v for v in (uncached, created, read) if v is not None]
    if not known or sum(known) == 0:
        return None
    return sum(known)


NOT_THE_PREFIX = frozenset({"messages", "free_space", "autocompact_buffer"})
"""The ``get_context_usage()`` categories that are not the system prefix every request carries."""


def prefix_from_context_usage(context_usage: Any) -> int | None:
    """The system prompt, tools and skills every request carries, as ``get_context_usage()`` reports them: its
    categories in use but messages and free space (deferred tools are not sent); None where it lists none. Give it
    to :class:`ContextTracker` as ``prefix_tokens`` so that a compaction reads right to the token."""
    categories = context_usage.get("categories") if isinstance(context_usage, dict) else None
    if not isinstance(categories, list):
        return None
    counts = [token_count(c.get("tokens")) for c in categories if isinstance(c, dict)
              and c.get("kind", "used") == "used" and not c.get("isDeferred")
              and c.get("id", str(c.get("name", "")).lower().replace(" ", "_")) not in NOT_THE_PREFIX]
    return sum(c for c in counts if c is not None) if counts else None


def cache_read_tokens(usage: Any) -> int:
    """The cache read of the part of ``usage`` that occupies the context (0 when absent or not a count)."""
    if not isinstance(usage, dict):
        return 0
    return token_count(_occupying(usage).get("cache_read_input_tokens")) or 0


def _occupying(usage: dict[str, Any]) -> dict[str, Any]:
    """The part of a usage dict that occupies the context: with several inference ``iterations``, the last
    ``message`` iteration (the top level then sums them all); else the usage itself."""
    iterations = usage.get("iterations")
    if isinstance(iterations, list):
        messages = [it for it in iterations if isinstance(it, dict) and it.get("type", "message") == "message"]
        if messages:
            return messages[-1]
    return usage


def _all_zero(usage: Any) -> bool:
    """A usage of zeros, as on the messages Claude Code makes up for errors and interrupts: not a call at all."""
    return isinstance(usage, dict) and all(
        usage.get(k) == 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def _window_for(model: str | None) -> int | None:
    if model and "[1m]" in model:
        return 1_000_000
    return None


class ContextTracker:
    """The main conversation's context size, from the messages of the real SDK.

    Guarantees, each the answer to a failure seen in the wild:

    - **A snapshot, not a sum**: the latest main-chain call's prompt; ``ResultMessage.usage`` (a per-query
      roll-up of spend) and ``model_usage`` (cumulative, subagents included) never move it.
    - **Deduplicated by message id**: the per-block messages of one call count once; a message id seen
      before with the same prompt (a replay, a resume copy) changes nothing. An id seen before with a *different*
      prompt is a distinct call (proxies reuse ids) and counts.
    - **Main chain only**: messages with ``parent_tool_use_id`` (subagents) and synthetic error messages
      (``model="<synthetic>"``, all-zero usage) are skipped.
    - **Output only when known**: the per-block ``output_tokens`` is a placeholder and is ignored; the final
      count from a ``message_delta`` stream event is added (assigned, never summed) when partial messages are on.
    - **Compaction**: after a ``compact_boundary`` the context holds the system prompt, tools and skills plus
      the summary, and the boundary's ``post_tokens`` counts the summary alone (Claude Code 2.1.330 reported
      2,672 where ``/context`` showed 14,756). So the estimate is ``post_tokens`` plus the system prefix:
      ``prefix_tokens`` when given (the non-message categories of ``get_context_usage()``), else read off the
      session's first main-chain call (a ``/clear`` keeps the same prefix): its cache read when it found the
      prefix cached, else its whole prompt (an upper bound: it holds the first user message too), at most 30,000
      tokens (:func:`ctxsim.world.system_prefix`). Unknown (None) when the boundary carries no post size, or when no
      call has shown the prefix yet, until the next main-chain call.
    - **Missing or garbage usage** never raises: a message without usage leaves the estimate as it was; a new
      call whose usage is there but unreadable makes the context unknown until a readable call arrives.
    - **New conversation** (``/clear``, a new session id in ``system/init``): the estimate is unknown again.
    """

    def __init__(self, *, window: int | None = None, include_output: bool = True,
                 prefix_tokens: int | None = None, usage: UsageConvention = "additive") -> None:
        self.fixed_window = window
        """A window given by the caller; otherwise read from the results' ``model_usage``."""
        self.include_output = include_output
        """Add the latest call's final output when a stream event reported it (what the next request carries)."""
        self.prefix_tokens = prefix_tokens
        """The system prompt, tools and skills every request carries, when known (``get_context_usage()``'s
        categories other than messages and free space); None: estimated from the first main-chain call."""
        self.usage = usage
        """How the provider reports usage (:data:`ctxsim.world.UsageConvention`): ``inclusive`` for a gateway whose
        ``input_tokens`` is the whole prompt (LiteLLM- or oMLX-style proxies). It cannot be told from one usage
        dict (a large uncached input next to a cache read is legitimate Anthropic usage), so it is said, not
        guessed."""
        self.reset()

    # the tracker contract ----------------------------------------------------------------------------------------

    def observe(self, message: object) -> None:
        """Take one message from the SDK stream into account."""
        if isinstance(message, AssistantMessage):
            if message.parent_tool_use_id is None and message.model != SYNTHETIC_MODEL:
                self._call(message.message_id, message.usage, message.model)
        elif isinstance(message, StreamEvent):
            if message.parent_tool_use_id is None and isinstance(message.event, dict):
                self._stream_event(message.event)
        elif isinstance(message, SystemMessage):
            self._system(message.subtype, message.data if isinstance(message.data, dict) else {})
        elif isinstance(message, ResultMessage):
            self._result(message)
        elif isinstance(message, ConversationResetMessage):
            self._forget()

    def context_tokens(self) -> int | None:
        """Tokens in the main context now, or None while unknown."""
        if self._prompt is None:
            return None
        if self.include_output and self._output is not None:
            return self._prompt + self._output
        return self._prompt

    def reset(self) -> None:
        """Forget everything, as for a brand-new session."""
        self._seen: set[tuple[str, int]] = set()
        self._ids: set[str] = set()
        self._latest: str | None = None
        self._prompt: int | None = None
        self._output: int | None = None
        self._model: str | None = None
        self._session_id: str | None = None
        self._window: int | None = None
        self._first: tuple[int, int] | None = None

    # extras ------------------------------------------------------------------------------------------------------

    def window(self) -> int | None:
        """The context window: given, else reported by the results, else implied by a ``[1m]`` model name."""
        return self.fixed_window or self._window or _window_for(self._model)

    def pressure(self) -> float | None:
        """``context_tokens() / window()``, or None while either is unknown."""
        tokens, window = self.context_tokens(), self.window()
        if tokens is None or not window:
            return None
        return tokens / window

    # internals ---------------------------------------------------------------------------------------------------

    def system_prefix(self) -> int | None:
        """The system prompt, tools and skills every request carries: ``prefix_tokens`` when given, else the first
        main-chain call's cache read (the cached prefix) or, on a cold cache, its whole prompt, at most
        :data:`~ctxsim.world.MAX_SYSTEM_PREFIX` (:func:`ctxsim.world.system_prefix`); None before the first call."""
        if self.prefix_tokens is not None:
            return self.prefix_tokens
        return None if self._first is None else system_prefix(self._first)

    def _forget(self) -> None:
        """A new conversation: the context is unknown again (the system prefix stays what it was)."""
        self._latest = None
        self._prompt = None
        self._output = None

    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        prompt = prompt_tokens(usage, inclusive=self.usage == "inclusive")
        key = message_id if isinstance(message_id, str) and message_id else None
        if prompt is None:
            if key is not None and key != self._latest and key not in self._ids and not _all_zero(usage):
                self._ids.add(key)  # a new call whose size cannot be read: the context is unknown until the next
                self._latest, self._prompt, self._output = key, None, None
            return
        if key is not None:
            self._ids.add(key)
        if key is not None:
            if (key, prompt) in self._seen:
                if key != self._latest or prompt != self._prompt:
                    return  # a replay of an earlier call
            else:
                self._seen.add((key, prompt))
        if key != self._latest or prompt != self._prompt:
            self._output = None  # a new call: its output is not known yet
        self._latest = key
        self._prompt = prompt
        if self._first is None:
            self._first = (cache_read_tokens(usage), prompt)
        if isinstance(model, str):
            self._model = model

    def _stream_event(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, dict):
                self._call(message.get("id"), message.get("usage"), message.get("model"))
        elif kind == "message_delta":
            usage = event.get("usage")
            if not isinstance(usage, dict):
                return
            output = token_count(usage.get("output_tokens"))
            if output is not None and output <= MAX_OUTPUT_TOKENS and self._prompt is not None:
                self._output = output  # cumulative: assign, never add
            if any(usage.get(k) is not None for k in ("input_tokens", "cache_read_input_tokens",
                                                      "cache_creation_input_tokens")):
                prompt = prompt_tokens(usage, inclusive=self.usage == "inclusive")
                if prompt is not None and self._prompt is not None:
                    self._prompt = prompt

    def _system(self, subtype: str, data: dict[str, Any]) -> None:
        if subtype == "compact_boundary":
            meta = data.get("compact_metadata") or data.get("compactMetadata") or {}
            post = None
            if isinstance(meta, dict):
                post = token_count(meta.get("post_tokens", meta.get("postTokens")))
            self._latest, self._output = None, None
            prefix = self.system_prefix()
            self._prompt = None if post is None or prefix is None else post + prefix
        elif subtype == "init":
            session_id = data.get("session_id")
            if isinstance(session_id, str) and session_id:
                if self._session_id is not None and session_id != self._session_id:
                    self._forget()
                self._session_id = session_id

    def _result(self, message: ResultMessage) -> None:
        usage_by_model = message.model_usage
        if not isinstance(usage_by_model, dict):
            return
        entry = usage_by_model.get(self._model) if self._model else None
        if not isinstance(entry, dict) and len(usage_by_model) == 1:
            entry = next(iter(usage_by_model.values()))
        if isinstance(entry, dict):
            window = token_count(entry.get("contextWindow"))
            if window:
                self._window = window
