"""A call's content blocks as Claude Code's stream-json writes them: each block whole (an ``assistant`` frame's
content, a transcript row's), empty (a stream's ``content_block_start``) and as its one delta
(``content_block_delta``)."""

from __future__ import annotations

import json
from typing import Any

from ..world import Text, Thinking, ToolUse

__all__ = ["block_delta", "block_dict", "empty_block"]


def block_dict(block: Thinking | Text | ToolUse) -> dict[str, Any]:
    """``block`` whole, as a message's content holds it."""
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}


def empty_block(block: Thinking | Text | ToolUse) -> dict[str, Any]:
    """``block`` as ``content_block_start`` opens it: its kind, no content yet."""
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": "", "signature": ""}
    if isinstance(block, Text):
        return {"type": "text", "text": ""}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}


def block_delta(block: Thinking | Text | ToolUse) -> dict[str, Any]:
    """``block``'s content as one ``content_block_delta``."""
    if isinstance(block, Thinking):
        return {"type": "thinking_delta", "thinking": block.text}
    if isinstance(block, Text):
        return {"type": "text_delta", "text": block.text}
    return {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
