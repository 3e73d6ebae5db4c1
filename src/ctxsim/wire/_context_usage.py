"""The answer of Claude Code's ``get_context_usage`` control request (what ``/context`` shows), for a truth.

Recorded from the CLI bundled in ``claude-agent-sdk`` (every recorded release answered alike, but for the split
between system tools and skills: rule ``context-usage-skills-1555``): the
categories, each with an ``id``, a ``name``, its ``tokens``, a ``color`` and a ``kind`` (``used``, ``deferred``,
``buffer``, ``free``), in this order: ``system_tools``, ``system_tools_deferred`` (tools loaded on demand, not
counted), ``skills``, ``messages``, ``autocompact_buffer`` (only under ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``: the
window less the autocompact point), ``free_space``. A fresh conversation of 11,581 tokens was 10,015 of system
tools, 1,552 of skills and 14 of messages; once a call has answered, the CLI counts 162 more tokens of system
tools until the next compaction or ``/clear`` (the total is then the call's prompt, and the messages what is left,
at most what fits below the autocompact buffer). ``apiUsage`` is the last main-chain call's usage, null before the
first call and right after ``/compact`` and ``/clear``. Skills took 1,552 tokens in every recorded permission mode;
the system tools, deferred or not, grow with the tools a mode offers (11,075 and 5,356 deferred in ``default``
mode, where ctxsim still answers the 4,639 deferred of ``bypassPermissions``).
"""

from __future__ import annotations

from typing import Any

from ..world import CHARS_PER_TOKEN, Call, Session, Text, Thinking, Truth, holds
from ._stream_json import rendered_version

__all__ = ["DEFERRED_TOOLS_TOKENS", "FRESH_MESSAGES_TOKENS", "SKILLS_TOKENS", "SKILLS_TOKENS_SINCE_2_1_337",
           "context_usage_response", "thinking_tail"]

DEFERRED_TOOLS_TOKENS = 4_639
"""``system_tools_deferred``: the tools Claude Code loads on demand (listed, not counted in the total)."""

SKILLS_TOKENS = 1_552
"""``skills``: the skills Claude Code lists, where rule ``context-usage-skills-1555`` does not hold."""

SKILLS_TOKENS_SINCE_2_1_337 = 1_555
"""``skills`` where rule ``context-usage-skills-1555`` holds (:data:`ctxsim.world.RULES`): three more, taken from the
system tools."""

FRESH_MESSAGES_TOKENS = 14
"""``messages`` of a fresh conversation."""

_AFTER_A_CALL = 162
"""What the CLI counts more of system tools once a call has answered."""


def thinking_tail(call: Call | None) -> int:
    """What Claude Code's ``get_context_usage`` adds to the last main-chain call's prompt: after a call whose first
    block is thinking, a chars/4 estimate of its later text blocks (``ctxsim.live`` measured 800 characters adding
    200 tokens, and nothing without the thinking block)."""
    if call is None or not call.blocks or not isinstance(call.blocks[0], Thinking):
        return 0
    return sum(len(b.text) for b in call.blocks[1:] if isinstance(b, Text)) // CHARS_PER_TOKEN


def _category(ident: str, name: str, tokens: int, color: str, kind: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": ident, "name": name, "tokens": tokens, "color": color}
    if kind == "deferred":
        entry["isDeferred"] = True
    entry["kind"] = kind
    return entry


def _fixed_parts(baseline: int, after_a_call: bool, cli_version: str) -> tuple[int, int]:
    """System tools and skills, as Claude Code ``cli_version`` counts them for a session whose fresh conversation
    holds ``baseline``: the skills, the fresh messages, and the system tools the rest."""
    listed = SKILLS_TOKENS_SINCE_2_1_337 if holds("context-usage-skills-1555", cli_version) else SKILLS_TOKENS
    skills = min(listed, baseline)
    tools = max(0, baseline - skills - min(FRESH_MESSAGES_TOKENS, baseline - skills))
    return tools + (_AFTER_A_CALL if after_a_call else 0), skills


def context_usage_response(session: Session, truth: Truth | None, *, model: str | None = None,
                           last_call: Call | None = None, cli_version: str | None = None) -> dict[str, Any]:
    """What the CLI answers to ``get_context_usage`` when the true context is ``truth``, ``last_call`` being the
    last main-chain call while it is the last thing that happened (None before the first call and right after a
    compaction or a ``/clear``).

    ``totalTokens`` is the last main-chain prompt (output not included), as captured from the real CLI, plus the
    :func:`thinking_tail` of ``last_call``; before the first call it is the system baseline, right after a
    compaction or ``/clear`` what the world says the context holds. The window is the one Claude Code compacts
    against: the autocompact window where one is set, else the window of ``model`` (default: the session's), and
    the autocompact point the one the session's settings give it (:meth:`~ctxsim.world.Session.threshold_of`).
    The categories split the baseline as Claude Code ``cli_version`` does (default: the session's release,
    :func:`~ctxsim.wire.rendered_version`).
    """
    total = (truth.prompt if truth is not None else session.baseline) + thinking_tail(last_call)
    raw = session.window_of(model or session.model)
    window = session.auto_compact_window or raw
    threshold = session.threshold_of(raw)
    metered = last_call
    tools, skills = _fixed_parts(session.baseline, metered is not None, rendered_version(session, cli_version))
    shows_buffer = bool(session.auto_compact_window) and session.settings.auto_compact
    buffer = max(0, window - threshold) if shows_buffer else 0
    messages = max(0, min(total, window - buffer) - tools - skills)
    categories = [
        _category("system_tools", "System tools", tools, "inactive", "used"),
        _category("system_tools_deferred", "System tools (deferred)", DEFERRED_TOOLS_TOKENS, "inactive", "deferred"),
        _category("skills", "Skills", skills, "warning", "used"),
        _category("messages", "Messages", messages, "purple_FOR_SUBAGENTS_ONLY", "used"),
    ]
    if shows_buffer:
        categories.append(_category("autocompact_buffer", "Autocompact buffer", buffer, "inactive", "buffer"))
    categories.append(_category("free_space", "Free space", max(0, window - total - buffer), "promptBorder", "free"))
    api_usage = None if metered is None else {
        "input_tokens": session.reported_input(metered), "output_tokens": metered.output_tokens,
        "cache_creation_input_tokens": metered.cache_creation_input_tokens,
        "cache_read_input_tokens": metered.cache_read_input_tokens}
    return {
        "categories": categories,
        "totalTokens": total,
        "maxTokens": window,
        "rawMaxTokens": window,
        "autocompactSource": "env" if session.auto_compact_window else "auto",
        "percentage": round(100 * total / window),
        "gridRows": [],
        "model": model or session.model,
        "memoryFiles": [],
        "mcpTools": [],
        "mcpInstructions": [],
        "agents": [],
        "autoCompactThreshold": threshold,
        "isAutoCompactEnabled": session.settings.auto_compact,
        "messageBreakdown": {"toolCallTokens": 0, "toolResultTokens": 0, "attachmentTokens": 0,
                             "assistantMessageTokens": 0, "userMessageTokens": 0, "redirectedContextTokens": 0,
                             "unattributedTokens": categories[3]["tokens"], "toolCallsByType": [],
                             "attachmentsByType": []},
        "apiUsage": api_usage,
    }
