"""The world of a live run: the :class:`~ctxsim.world.Session` that really happened, from what the fake API served
and the order in which the CLI reported it. Private to :mod:`ctxsim.lab`.

The calls are the fake API's (usage, output, blocks, message id: the truth it reported); the steps between them
(tool results, subagent starts, compaction boundaries, conversation resets) and their order are the CLI's, read
from its messages. A call the stream never shows (a foreground subagent's text-only reply, which the CLI does not
forward) is placed where the API served it, a subagent's before the result of the tool use that ran it. A background
subagent's calls are placed where the stream shows them (the rest of them at its ``task_notification``), never by
when their requests reached the API: the subagent runs beside the main chain, so its request can reach the API
before the main chain's next one while the CLI streams that main-chain reply (and the turn's result) first; the
world follows what the CLI delivered, which is what an in-process play streams. What the boundary
reports becomes a :class:`~ctxsim.world.Compaction`, and the compaction summary request its ``summary`` call.
Where no call follows a compaction or a ``/clear`` in its step, its ``context_tokens`` is what the CLI's
``get_context_usage`` said right after (the world's definition: what ``/context`` shows); otherwise the next
call's reported prompt tells the context.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, ToolResultBlock, UserMessage

from ..live import Served
from ..world import (
    CHARS_PER_TOKEN,
    Call,
    Compaction,
    ConversationReset,
    Query,
    Session,
    Step,
    SubagentStart,
    TaskNotification,
    Text,
    ToolResult,
)

__all__ = ["session_of"]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content or ())


def _summarised(call: Call) -> bool:
    """Whether a summary request's reply holds a ``<summary>`` (the CLI refuses one without and asks again)."""
    return any(isinstance(b, Text) and "<summary>" in b.text for b in call.blocks)


def _call(served: Served, model: str) -> Call:
    return Call(input_tokens=served.usage[0], cache_creation_input_tokens=served.usage[1],
                cache_read_input_tokens=served.usage[2], output_tokens=served.reply.output_tokens,
                blocks=served.blocks, message_id=served.message_id, model=model, request_id=served.request.request_id,
                parent_tool_use_id=served.request.agent)


def _query(prompt: str, messages: Sequence[Any], served: Sequence[Served], model: str,
           context_after: int | None) -> tuple[Query, str | None]:
    """One step's query, and the session id its result reports. ``context_after``: what the CLI's context usage
    said after the step."""
    calls = [s for s in served if s.request.kind in ("main", "subagent") and s.reply.error is None]
    summaries = [_call(s, model) for s in served if s.request.kind == "compact" and s.reply.error is None]
    refused: list[Call] = []
    steps: list[Step] = []
    placed: set[str] = set()
    background = {str(m.data.get("tool_use_id")) for m in messages if isinstance(m, SystemMessage)
                  and m.subtype == "task_started" and m.data.get("is_backgrounded")}
    session_id: str | None = None

    def place_up_to(message_id: str | None) -> None:
        """The calls served up to the one the stream shows (``message_id``; None: every call left), in the order
        served; a background subagent's other than the shown call's own chain wait for the stream to show them."""
        chain = next((s.request.agent for s in calls if s.message_id == message_id), None)
        for s in calls:
            if s.message_id in placed or (message_id is not None and s.request.agent in background
                                          and s.request.agent != chain):
                continue
            placed.add(s.message_id)
            steps.append(_call(s, model))
            if s.message_id == message_id:
                return

    def place_subagent(tool_use_id: str) -> None:
        """A subagent's calls come before the result of the tool use that ran it (it ended first): those the
        stream never showed are placed there."""
        for s in calls:
            if s.request.agent == tool_use_id and s.message_id not in placed:
                placed.add(s.message_id)
                steps.append(_call(s, model))

    for message in messages:
        if isinstance(message, AssistantMessage):
            if message.message_id is not None and message.message_id not in placed and any(
                    s.message_id == message.message_id for s in calls):
                place_up_to(message.message_id)
        elif isinstance(message, UserMessage) and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):
                    if block.tool_use_id not in background:  # a background subagent's launch comes before its calls
                        place_subagent(block.tool_use_id)
                    text = _text(block.content)
                    steps.append(ToolResult(block.tool_use_id, text, max(1, len(text) // CHARS_PER_TOKEN),
                                            bool(block.is_error), message.parent_tool_use_id))
        elif isinstance(message, SystemMessage) and message.subtype == "task_started":
            data = message.data
            steps.append(SubagentStart(str(data.get("tool_use_id")), str(data.get("task_id")),
                                       str(data.get("description", "")), str(data.get("prompt", "")),
                                       bool(data.get("is_backgrounded"))))
        elif isinstance(message, SystemMessage) and message.subtype == "task_notification" and str(
                message.data.get("tool_use_id")) in background:  # its calls end first, then its turn starts
            data = message.data
            place_subagent(str(data.get("tool_use_id")))
            summary = str(data.get("summary") or "")
            steps.append(TaskNotification(str(data.get("tool_use_id")), str(data.get("task_id")), summary,
                                          max(1, len(summary) // CHARS_PER_TOKEN)))
        elif isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            meta = message.data.get("compact_metadata") or {}
            while len(summaries) > 1 and not _summarised(summaries[0]):  # no <summary>: refused, asked again
                refused.append(summaries.pop(0))
            steps.append(Compaction(int(meta["pre_tokens"]), int(meta["post_tokens"]),
                                    "manual" if meta.get("trigger") == "manual" else "auto",
                                    summary=summaries.pop(0) if summaries else None, rejected=tuple(refused)))
            refused = []
        elif type(message).__name__ == "ConversationResetMessage":
            steps.append(ConversationReset(""))  # the new session id is the result's, filled in below
        elif isinstance(message, ResultMessage):
            session_id = message.session_id
    place_up_to(None)
    if steps and isinstance(steps[-1], (Compaction, ConversationReset)) and context_after is not None:
        # No call after the compaction (/compact) or the reset (/clear): the context is what /context says.
        steps[-1] = replace(steps[-1], context_tokens=context_after)
    if session_id is not None:
        steps = [replace(s, new_session_id=session_id) if isinstance(s, ConversationReset) else s for s in steps]
    return Query(prompt, tuple(steps)), session_id


def session_of(name: str, prompts: Sequence[str], messages: Sequence[Sequence[Any]],
               served: Sequence[Sequence[Served]], context_after: Sequence[int | None], *, model: str, window: int,
               baseline: int, max_output_tokens: int = 32_000, auto_compact_window: int | None = None,
               auto_compact_at: int | None = None, cli: str | None = None) -> Session:
    """The session a live run played: ``prompts[i]`` answered by ``messages[i]`` while the API served
    ``served[i]``, and ``get_context_usage`` said ``context_after[i]`` after it. ``baseline`` is what the CLI says
    a fresh conversation holds (its context usage before the first query), ``auto_compact_at`` where it said it
    autocompacts: both measured by the CLI from its own prompt and tools, taken as it said them; ``cli`` the
    version of the CLI that played it (the release the session renders as)."""
    queries: list[Query] = []
    session_id: str | None = None
    for prompt, step_messages, step_served, after in zip(prompts, messages, served, context_after):
        query, sid = _query(prompt, step_messages, step_served, model, after)
        queries.append(query)
        if session_id is None:
            first = next((m for m in step_messages if isinstance(m, SystemMessage) and m.subtype == "init"), None)
            session_id = str(first.data.get("session_id")) if first is not None else sid
    return Session(session_id=session_id or "", queries=tuple(queries), model=model, window=window,
                   baseline=baseline, max_output_tokens=max_output_tokens, name=name,
                   auto_compact_window=auto_compact_window, auto_compact_at=auto_compact_at, cli=cli)
