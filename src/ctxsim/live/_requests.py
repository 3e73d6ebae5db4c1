"""What the fake Messages API reads from a request body: its kind, its size, and the prompt cache it would hit.

Private to :mod:`ctxsim.live`. The facts are the live prototype's (``live-proto/FINDINGS.md``, Q2 and Q4), seen
on Claude Code 2.1.330 and held by every release captured since (the live tests play the installed one):

- a subagent's request says ``cc_is_subagent=true;`` in ``system[0]`` (the billing header);
- the compaction summary request (``/compact`` and autocompaction alike) has the main chain's system, tools and
  history and ends with a user text block starting :data:`COMPACT_MARK` that asks for ``<summary>``;
- the main chain puts two cache breakpoints (``system[1]`` and the last block of the last message), subagents
  three, the summary request keeps the breakpoint on the conversation's end and puts its instruction after it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any, Literal

from ..wire import prompt_text, text_blocks

__all__ = ["COMPACT_MARK", "PromptCache", "RequestKind", "classify", "estimate_tokens", "last_user_text"]

RequestKind = Literal["main", "subagent", "compact", "side"]
"""``main`` chain, a ``subagent``'s chain, the ``compact`` summary request, or a ``side`` request without tools."""

COMPACT_MARK = "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools."
"""How the CLI's summary request's last text block starts."""

FRAMING_TOKENS = 3
"""Tokens the prompt holds beyond its blocks (the message framing); what is uncached after the last breakpoint."""


def estimate_tokens(value: Any) -> int:
    """A deterministic token count for ``value``: its compact JSON (or the string itself) / 4, at least 1."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return max(1, len(text) // 4)


def last_user_text(body: Mapping[str, Any]) -> str:
    """The last text block of the last user message that is not a ``<system-reminder>`` ("" when none).

    After an interrupt the CLI merges the old prompt, ``[Request interrupted by user]`` and the new prompt into one
    user message, so only the last block is the current prompt.
    """
    messages = body.get("messages") or []
    if not messages or messages[-1].get("role") != "user":
        return ""
    texts = [t for t in text_blocks(messages[-1].get("content")) if not t.lstrip().startswith("<system-reminder>")]
    return texts[-1] if texts else ""


def _system_text(body: Mapping[str, Any]) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    return "\n".join(b.get("text", "") for b in system or () if isinstance(b, dict))


def classify(body: Mapping[str, Any]) -> RequestKind:
    """The kind of a ``/v1/messages`` request body (see the module's facts)."""
    messages = body.get("messages") or []
    if messages and messages[-1].get("role") == "user":
        text = prompt_text(messages[-1].get("content"))
        if COMPACT_MARK in text and "<summary>" in text:
            return "compact"
    if not body.get("tools"):
        return "side"
    return "subagent" if "cc_is_subagent=true" in _system_text(body) else "main"


def _linear(body: Mapping[str, Any]) -> list[tuple[Any, bool]]:
    """The prompt as the API caches it, block by block: tools, system, messages. Each item: the block without its
    ``cache_control``, and whether it carried one (a breakpoint)."""
    out: list[tuple[Any, bool]] = []

    def add(block: Any, role: str | None = None) -> None:
        marked = isinstance(block, dict) and "cache_control" in block
        if marked:
            block = {k: v for k, v in block.items() if k != "cache_control"}
        out.append(({"role": role, "block": block} if role else block, marked))

    for tool in body.get("tools") or ():
        add(tool)
    system = body.get("system")
    for block in [system] if isinstance(system, str) else system or ():
        add(block)
    for message in body.get("messages") or ():
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or ():
            add(block, str(message.get("role")))
    return out


class PromptCache:
    """A prefix cache that behaves like the Messages API's.

    A request writes, at each of its ``cache_control`` breakpoints, the prefix ending there; it reads the longest
    prefix an earlier request wrote that it shares, up to its own last breakpoint. ``cache_read`` is that prefix,
    ``cache_creation`` the rest up to the last breakpoint, ``input`` everything after it. (The real API also needs
    at least 1,024 tokens per cacheable prefix and looks back at most 20 blocks; this model ignores both.) One cache
    serves every chain, as the real one does per API key.
    """

    def __init__(self) -> None:
        self._written: set[str] = set()

    def usage(self, body: Mapping[str, Any]) -> tuple[int, int, int]:
        """``(input, cache_creation, cache_read)`` for the request ``body``, and remember what it wrote."""
        digest = hashlib.sha256()
        total = 0
        prefixes: list[tuple[str, int, bool]] = []
        for block, marked in _linear(body):
            # one serialisation for both: sorting the keys moves characters, so the length is estimate_tokens'
            text = json.dumps(block, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest.update(text.encode())
            total += estimate_tokens(block) if isinstance(block, str) else max(1, len(text) // 4)
            prefixes.append((digest.hexdigest(), total, marked))
        last_breakpoint = max((n for _, n, marked in prefixes if marked), default=0)
        read = max((n for key, n, _ in prefixes if key in self._written and n <= last_breakpoint), default=0)
        self._written.update(key for key, _, marked in prefixes if marked)
        creation = last_breakpoint - read
        return total + FRAMING_TOKENS - last_breakpoint, creation, read
