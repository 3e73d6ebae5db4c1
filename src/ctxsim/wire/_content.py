"""Reading the text of a message's ``content`` as Claude Code and the Messages API write it."""

from __future__ import annotations

from typing import Any

__all__ = ["prompt_text", "text_blocks"]


def text_blocks(content: Any) -> list[str]:
    """The texts of a message's ``content`` as Claude Code and the Messages API write it: the string itself, or the
    ``text`` of each ``text`` block of the list (other blocks, and content of any other shape, give none)."""
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def prompt_text(content: Any) -> str:
    """A user message's prompt: its :func:`text_blocks`, one to a line ("" when it has none)."""
    return "\n".join(text_blocks(content))
