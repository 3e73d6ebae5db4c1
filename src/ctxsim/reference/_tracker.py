"""The reference context tracker: right on every fact the simulation reproduces.

:class:`ContextTracker` reads ``claude_agent_sdk`` messages and answers how many tokens the main conversation
holds, the way Claude Code's own ``/context`` does: the latest main-chain API call's
``input + cache_creation + cache_read`` (plus that call's output once it is known), never a sum over calls.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
)

from ..world import UsageConvention, system_prefix
from ._usage import (
    MAX_OUTPUT_TOKENS,
    SYNTHETIC_MODEL,
    all_zero,
    cache_read_tokens,
    prompt_tokens,
    token_count,
    window_for_model,
)

__all__ = ["ContextTracker"]


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

    quantity = "tokens"
    """What its number means, declared: tokens in the context (the check judges it on tokens whatever a scenario
    asks a gauge to show)."""

    def __init__(self, *, window: int | None = None, include_output: bool = True,
                 prefix_tokens: int | None = None, usage: UsageConvention = "additive", world: Any = None) -> None:
        if world is not None:  # told the session's world (a ctxsim.trackers.TrackerWorld), as every factory may be
            usage = world.usage
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
        guessed. A ``world`` (what a tracker factory is told of the session, :class:`ctxsim.trackers.TrackerWorld`)
        says it instead, so that the reference named by module (``ctxsim.reference:ContextTracker``) is told the
        usage convention as every kind of tracker is."""
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
        return self.fixed_window or self._window or window_for_model(self._model)

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
            if key is not None and key != self._latest and key not in self._ids and not all_zero(usage):
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
