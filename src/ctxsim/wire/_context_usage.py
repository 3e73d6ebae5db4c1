"""The answer of Claude Code's ``get_context_usage`` control request (what ``/context`` shows), for a truth."""

from __future__ import annotations

from typing import Any

from ..world import CHARS_PER_TOKEN, Call, Session, Text, Thinking, Truth

__all__ = ["context_usage_response", "thinking_tail"]


def thinking_tail(call: Call | None) -> int:
    """What Claude Code's ``get_context_usage`` adds to the last main-chain call's prompt: after a call whose first
    block is thinking, a chars/4 estimate of its later text blocks (``ctxsim.live`` measured 800 characters adding
    200 tokens, and nothing without the thinking block)."""
    if call is None or not call.blocks or not isinstance(call.blocks[0], Thinking):
        return 0
    return sum(len(b.text) for b in call.blocks[1:] if isinstance(b, Text)) // CHARS_PER_TOKEN


def context_usage_response(session: Session, truth: Truth | None, *, model: str | None = None,
                           last_call: Call | None = None) -> dict[str, Any]:
    """What the CLI answers to ``get_context_usage`` when the true context is ``truth``.

    ``totalTokens`` is the last main-chain prompt (output not included), as captured from the real CLI, plus the
    :func:`thinking_tail` of ``last_call`` (that call, while it is the last thing that happened); before the first
    call it is the system baseline. The window is the one Claude Code compacts against: the autocompact window
    where one is set, else the window of ``model`` (default: the session's), and the autocompact point the one
    the session's settings give it (:meth:`~ctxsim.world.Session.threshold_of`).
    """
    total = (truth.prompt if truth is not None else session.baseline) + thinking_tail(last_call)
    raw = session.window_of(model or session.model)
    window = session.auto_compact_window or raw
    skills = session.baseline // 8
    return {
        "categories": [
            {"name": "System tools", "tokens": session.baseline - skills, "color": "inactive"},
            {"name": "Skills", "tokens": skills, "color": "warning"},
            {"name": "Messages", "tokens": max(0, total - session.baseline), "color": "purple"},
            {"name": "Free space", "tokens": max(0, window - total), "color": "promptBorder"},
        ],
        "totalTokens": total,
        "maxTokens": window,
        "rawMaxTokens": window,
        "percentage": round(100 * total / window),
        "model": model or session.model,
        "isAutoCompactEnabled": session.settings.auto_compact,
        "autoCompactThreshold": session.threshold_of(raw),
        "memoryFiles": [],
        "mcpTools": [],
        "agents": [],
        "gridRows": [],
    }
