"""The stream-json line an SDK message was parsed from, rebuilt from the message's fields.

:class:`~ctxsim.trackers.RawDicts` feeds a tracker the raw lines the CLI wrote. Through :mod:`ctxsim.check` it gets
the very line each message came from; where ctxsim does not hold the lines (a restart loop of a task scenario calls
``tracker.observe(message)`` itself), :func:`frame_of` rebuilds the line from what the SDK's parser kept: the keys
trackers read (``type``, ``message.id``, ``message.usage``, ``message.model``, ``message.stop_reason``,
``parent_tool_use_id``, ``uuid``, ``session_id``, a result's ``usage`` and ``modelUsage``, a system message's whole
line) are there, as the CLI writes them; keys the parser drops are not.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

__all__ = ["frame_of"]


def _block(block: object) -> Any:
    if isinstance(block, TextBlock):
        return {"type": "text", "text": block.text}
    if isinstance(block, ThinkingBlock):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    if isinstance(block, ToolResultBlock):
        return {"type": "tool_result", "tool_use_id": block.tool_use_id, "content": block.content,
                "is_error": block.is_error}
    return dataclasses.asdict(block) if dataclasses.is_dataclass(block) and not isinstance(block, type) else block


def _present(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def frame_of(message: object) -> dict[str, Any]:
    """The stream-json line ``message`` (an SDK message) was parsed from, as far as its fields tell it."""
    if isinstance(message, AssistantMessage):
        inner = _present(id=message.message_id, type="message", role="assistant", model=message.model,
                         content=[_block(b) for b in message.content], stop_reason=message.stop_reason,
                         usage=message.usage)
        return _present(type="assistant", message=inner, session_id=message.session_id, uuid=message.uuid,
                        error=message.error, user_message_uuid=message.user_message_uuid,
                        user_message_uuids=message.user_message_uuids) | {
            "parent_tool_use_id": message.parent_tool_use_id}
    if isinstance(message, SystemMessage):  # its data is the whole line
        return dict(message.data) if isinstance(message.data, dict) else {"type": "system",
                                                                           "subtype": message.subtype}
    if isinstance(message, ResultMessage):
        return _present(type="result", subtype=message.subtype, duration_ms=message.duration_ms,
                        duration_api_ms=message.duration_api_ms, is_error=message.is_error,
                        num_turns=message.num_turns, session_id=message.session_id, stop_reason=message.stop_reason,
                        total_cost_usd=message.total_cost_usd, usage=message.usage, result=message.result,
                        structured_output=message.structured_output, modelUsage=message.model_usage,
                        permission_denials=message.permission_denials, errors=message.errors,
                        api_error_status=message.api_error_status, uuid=message.uuid,
                        terminal_reason=message.terminal_reason, user_message_uuid=message.user_message_uuid,
                        user_message_uuids=message.user_message_uuids)
    if isinstance(message, StreamEvent):
        return _present(type="stream_event", uuid=message.uuid, session_id=message.session_id, event=message.event,
                        user_message_uuid=message.user_message_uuid,
                        user_message_uuids=message.user_message_uuids) | {
            "parent_tool_use_id": message.parent_tool_use_id}
    if isinstance(message, UserMessage):
        content = message.content if isinstance(message.content, str) else [_block(b) for b in message.content]
        return _present(type="user", message={"role": "user", "content": content}, uuid=message.uuid,
                        tool_use_result=message.tool_use_result) | {"parent_tool_use_id": message.parent_tool_use_id}
    if isinstance(message, ConversationResetMessage):
        return {"type": "conversation_reset", "new_conversation_id": message.new_conversation_id,
                "uuid": message.uuid, "session_id": message.session_id}
    if dataclasses.is_dataclass(message) and not isinstance(message, type):
        return {"type": type(message).__name__, **dataclasses.asdict(message)}
    return {"type": type(message).__name__}
