"""Which keys the raw stream-json frames of a run carry, by frame kind, and which of them trackers read.

A tracker fed raw frames (``RawDicts``, a statusline tool reading what the CLI wrote) sees keys the SDK's parser
drops. :func:`frame_keys` lists, for every kind of frame in a run (``assistant``, ``result/success``,
``system/init``, ``stream_event/message_delta``, ...), every key path its frames carried (``message.usage.
cache_read_input_tokens``; a list's items as ``[]``, a model's name in ``modelUsage`` as ``*``). :data:`TRACKED`
names the kinds and key paths trackers read: a tracked key that one side has and the other lacks is a difference a
tracker can see; any other key or kind that appears or vanishes is drift, reported and not failed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["OPAQUE", "RAW_FIELDS", "TRACKED", "FrameKeys", "frame_keys", "frame_kind", "is_tracked", "raw_fields"]

FrameKeys = dict[str, list[str]]
"""``{frame kind: sorted key paths}``."""

OPAQUE = frozenset({"input", "tool_use_result", "tools", "mcp_servers", "slash_commands", "agents", "skills",
                    "plugins", "content", "partial_json", "thinking", "text", "signature", "result", "errors",
                    "permission_denials", "preserved_segment", "preserved_messages", "iterations"})
"""Keys whose value is free-form (tool input and output, text, lists of names): listed, not descended into, except
``content``, whose items' keys are listed one level down."""

_BY_MODEL = ("modelUsage.", "model_usage_since_last_result.")
"""Dicts keyed by model name: their keys are listed as ``*``."""

_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")

TRACKED: Mapping[str, frozenset[str]] = {
    "assistant": frozenset({"type", "message", "message.id", "message.model", "message.stop_reason",
                            "message.usage", *(f"message.usage.{k}" for k in _USAGE), "message.content",
                            "message.content[].type", "parent_tool_use_id", "session_id", "uuid", "error",
                            "request_id"}),
    "user": frozenset({"type", "message", "message.content", "message.content[].type",
                       "message.content[].tool_use_id", "message.content[].is_error", "parent_tool_use_id",
                       "session_id"}),
    "result": frozenset({"type", "subtype", "is_error", "session_id", "total_cost_usd", "num_turns", "stop_reason",
                                 "terminal_reason", "result_index", "model_usage_since_last_result",
                                 "usage", *(f"usage.{k}" for k in _USAGE), "modelUsage", "modelUsage.*",
                                 *(f"modelUsage.*.{k}" for k in ("inputTokens", "outputTokens",
                                                                 "cacheReadInputTokens",
                                                                 "cacheCreationInputTokens", "contextWindow",
                                                                 "maxOutputTokens"))}),
    "system/init": frozenset({"type", "subtype", "session_id", "model"}),
    "system/compact_boundary": frozenset({"type", "subtype", "session_id", "compact_metadata",
                                          "compact_metadata.trigger", "compact_metadata.pre_tokens",
                                          "compact_metadata.post_tokens", "compact_metadata.cumulative_dropped_tokens",
                                          "compact_metadata.duration_ms", "compact_metadata.preserved_segment",
                                          "compact_metadata.preserved_messages", "logical_parent_uuid"}),
    "conversation_reset": frozenset({"type", "new_conversation_id", "session_id"}),
    "stream_event/message_start": frozenset({"type", "event", "event.type", "event.message", "event.message.id",
                                             "event.message.model", "event.message.usage",
                                             *(f"event.message.usage.{k}" for k in _USAGE),
                                             "parent_tool_use_id", "session_id"}),
    "stream_event/message_delta": frozenset({"type", "event", "event.type", "event.delta", "event.delta.stop_reason",
                                             "event.usage", *(f"event.usage.{k}" for k in _USAGE),
                                             "parent_tool_use_id", "session_id"}),
}
"""The frame kinds trackers read (``result`` for a result of any subtype), and the key paths of each they read
(the reference, the catalogue's formulas and the shipped tools: usage, ids, model, stop reason, session id,
compaction sizes, the result's totals)."""


def frame_kind(frame: Mapping[str, Any]) -> str:
    """``type``, with the ``subtype`` of system and result frames and the event type of stream events."""
    kind = str(frame.get("type"))
    if kind in ("system", "result"):
        return f"{kind}/{frame.get('subtype')}"
    if kind == "stream_event":
        event = frame.get("event")
        return f"{kind}/{event.get('type') if isinstance(event, dict) else None}"
    return kind


def _paths(value: Mapping[str, Any], prefix: str, out: set[str], *, depth: int = 0) -> None:
    for key, item in value.items():
        name = "*" if prefix.endswith(_BY_MODEL) else str(key)
        path = f"{prefix}{name}"
        out.add(path)
        if depth > 6:
            continue
        if isinstance(item, dict) and key not in OPAQUE:
            _paths(item, f"{path}.", out, depth=depth + 1)
        elif isinstance(item, list) and key == "content":
            for element in item:
                if isinstance(element, dict):
                    out.update(f"{path}[].{k}" for k in element)


def frame_keys(frames: Iterable[Mapping[str, Any]]) -> FrameKeys:
    """Every key path the ``frames`` carried, by :func:`frame_kind` (the union over frames of a kind)."""
    found: dict[str, set[str]] = {}
    for frame in frames:
        _paths(frame, "", found.setdefault(frame_kind(frame), set()))
    return {kind: sorted(paths) for kind, paths in sorted(found.items())}


def is_tracked(kind: str, path: str | None = None) -> bool:
    """Whether trackers read frames of ``kind`` (and, given, the key ``path`` of them)."""
    keys = TRACKED.get("result" if kind.startswith("result/") else kind)
    if keys is None:
        return False
    return path is None or path in keys


RAW_FIELDS = {"assistant": ("request_id",)}
"""Values trackers read from raw frames that the SDK's messages do not carry: compared frame by frame."""


def raw_fields(frames: Iterable[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """For each field of :data:`RAW_FIELDS`, its value on every frame of that kind, in order
    (``{"assistant request_id": ["req_ctxsim0001", ...]}``; a frame without it gives None)."""
    out: dict[str, list[Any]] = {f"{kind} {name}": [] for kind, names in RAW_FIELDS.items() for name in names}
    for frame in frames:
        kind = frame_kind(frame)
        for name in RAW_FIELDS.get(kind, ()):
            out[f"{kind} {name}"].append(frame.get(name))
    return out
