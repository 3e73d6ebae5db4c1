"""The REPL transcript's record of each main-thread API request, and of what a conversation cost when ``/clear``
ends it.

Claude Code's REPL logs every request of its main thread as lines trackers skip (no ``uuid``), keyed so the request
can be rebuilt without writing the conversation twice (recorded from 2.1.330-2.1.332):

- ``api-request-shape``: the system prompt and tools, once per ``shapeHash`` in a conversation: before its first
  request, and again before the first request after a compaction (a compaction clears what came before);
- ``api-request-blob``: one per message the request sends that no earlier request of the conversation sent
  (``hash``): for a fresh request (the first, or the first after a compaction), each of its messages, consecutive
  messages of one role merged (the summary; the kept segment's replies and results; the re-injected attachments
  with the prompt); else the one new ``user`` message (the prompt, or the tool results, with their attachments);
- ``api-request``: ``id`` (what the reply rows' ``requestRef`` names), ``shapeHash``, and for a request that extends
  the one before, ``base`` (that request's id) and ``keep`` (how many of its messages it keeps), then ``tail``: the
  hashes of what it adds (the base's reply, then the new message's blob), ``cacheControl`` and ``requestDigest``
  (where the request put its cache breakpoints, and a digest of it: written empty and drawn here); ``thread`` and
  ``echoWireToolInputs`` where rule ``transcript-request-thread`` holds (:data:`ctxsim.world.RULES`).

``cost-state`` closes a file that ``/clear`` ends: the conversation's cost and per-model usage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any

from ...world import Call, holds
from .._prices import cost

__all__ = ["ConversationCost", "RequestLog", "merged_messages"]


def _digest(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()


def merged_messages(roles: Sequence[str]) -> int:
    """How many API messages a run of rows with these roles makes: consecutive rows of one role are one message."""
    return sum(1 for n, role in enumerate(roles) if n == 0 or roles[n - 1] != role)


class RequestLog:
    """The request lines of one main file (see the module's docstring); ``line`` appends a line to it and
    ``new_id`` draws the next id of the rendering."""

    def __init__(self, session_id: str, version: str, line: Callable[[dict[str, Any]], None],
                 new_id: Callable[[], str]) -> None:
        self.session_id, self.version, self.line, self.new_id = session_id, version, line, new_id
        self.shape_hash = _digest("shape", session_id)
        self.base: str | None = None
        """The id of the conversation's last request; None: the next is fresh."""
        self.messages = 0
        """How many messages that request sent, its reply included."""
        self.fresh_messages = 1
        """How many messages the next fresh request sends."""

    def restart(self, session_id: str, fresh_messages: int = 1) -> None:
        """The conversation starts again (a compaction, whose next request sends ``fresh_messages``; ``/clear``)."""
        self.session_id, self.base, self.fresh_messages = session_id, None, fresh_messages

    def request(self, call: Call, timestamp: str, max_tokens: int, *, reply_resent: bool = False) -> str:
        """Write the lines of ``call``'s request and return its id (the reply rows' ``requestRef``).
        ``reply_resent``: the request before's reply goes out changed (an ``Agent`` call the CLI ran in the
        background), so where rule ``transcript-reply-resent-as-blob`` holds it is a blob of its own rather than
        that reply's hash."""
        request_id = self.new_id()
        head = {"sessionId": self.session_id}
        if self.base is None:
            self.line({"type": "api-request-shape", **head, "shapeHash": self.shape_hash, "timestamp": timestamp,
                       "version": self.version, "shape": {"system": [], "tools": []}})
            tail = [self._blob(request_id, n) for n in range(self.fresh_messages)]
            extends: dict[str, Any] = {"keep": 0}
        else:
            resent = reply_resent and holds("transcript-reply-resent-as-blob", self.version)
            reply = self._blob(request_id, 1, "assistant") if resent else _digest("reply", self.base)
            tail = [reply, self._blob(request_id, 0)]
            extends = {"base": self.base, "keep": self.messages}
        row: dict[str, Any] = {"type": "api-request", **head, "id": request_id, "timestamp": timestamp,
                               "version": self.version, "querySource": "repl_main_thread",
                               "shapeHash": self.shape_hash, "params": {"model": call.model, "max_tokens": max_tokens}}
        if holds("transcript-request-thread", self.version):
            row.update({"thread": {"type": "none"}, "echoWireToolInputs": False})
        self.line({**row, **extends, "tail": tail, "cacheControl": [],
                   "requestDigest": _digest("request", request_id)})
        self.base, self.messages = request_id, int(extends["keep"]) + len(tail)
        return request_id

    def _blob(self, request_id: str, index: int, role: str = "user") -> str:
        blob = _digest("blob", request_id, str(index))
        self.line({"type": "api-request-blob", "sessionId": self.session_id, "hash": blob,
                   "message": {"role": role, "content": "..."}})
        return blob


class ConversationCost:
    """What a conversation's calls cost (its replies, subagents' and compactions' summary requests), per model, as
    ``cost-state`` writes it."""

    def __init__(self) -> None:
        self.models: dict[str, dict[str, Any]] = {}

    def add(self, call: Call) -> None:
        """Count ``call``."""
        entry = self.models.setdefault(call.model, {
            "inputTokens": 0, "outputTokens": 0, "thinkingTokens": 0, "cacheReadInputTokens": 0,
            "cacheCreationInputTokens": 0, "cacheCreationEphemeral5mInputTokens": 0,
            "cacheCreationEphemeral1hInputTokens": 0, "webSearchRequests": 0, "costUSD": 0.0})
        entry["inputTokens"] += call.input_tokens
        entry["outputTokens"] += call.output_tokens
        entry["cacheReadInputTokens"] += call.cache_read_input_tokens
        entry["cacheCreationInputTokens"] += call.cache_creation_input_tokens
        entry["cacheCreationEphemeral5mInputTokens"] += call.cache_creation_input_tokens
        entry["costUSD"] += cost(call.model, call)

    def row(self, session_id: str, duration_ms: int) -> dict[str, Any]:
        """The ``cost-state`` line of the conversation, which lasted ``duration_ms``."""
        total = sum(float(m["costUSD"]) for m in self.models.values())
        return {"type": "cost-state", "sessionId": session_id, "totalCostUSD": total, "totalAPIDuration": 0,
                "totalAPIDurationWithoutRetries": 0, "totalToolDuration": 0, "totalLinesAdded": 0,
                "totalLinesRemoved": 0, "totalDuration": duration_ms, "modelUsage": self.models,
                "hasUnknownModelCost": False}
