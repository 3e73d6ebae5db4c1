"""The structure of a stream-json frame sequence: what kind each frame is and where it falls, no value.

Two runs of one session (the CLI's and ctxsim's rendering) share no uuid, id or count; they match where their
frames' kinds do, in order. :func:`frame_outline` reduces a raw frame to the few fields that say its kind: its type
and subtype, a ``session_state_changed``'s state, a ``status`` frame's status, a stream event's event type, a
message's block or content kind, and which subagent it belongs to (the first ``parent_tool_use_id`` or task tool use
of the step is subagent 1, ...). :func:`kind` writes an outline as one word, and :func:`places` counts the places
where two sequences of words differ (one per non-equal ``difflib`` opcode).

Used by ``tests/captures/remake_structure.py`` (which writes the outlines of what the CLI wrote) and by the test that
holds ctxsim's rendering to them (``tests/live/test_stream_structure.py``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["differences", "frame_outline", "kind", "places", "step_outlines"]


def _content_kind(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return "text"
    kinds = [str(b.get("type")) for b in content or () if isinstance(b, Mapping)]
    return "+".join(kinds) if kinds else "empty"


def frame_outline(frame: Mapping[str, Any], subagents: list[str]) -> dict[str, Any]:
    """The kind of ``frame`` as a small dict; ``subagents`` holds the tool use ids of the step's subagents seen so
    far (in order; extended here)."""
    kind = str(frame.get("type"))
    out: dict[str, Any] = {"type": kind}
    if frame.get("subtype") is not None:
        out["subtype"] = frame.get("subtype")
    if kind == "system" and frame.get("subtype") == "session_state_changed":
        out["state"] = frame.get("state")
    if kind == "system" and frame.get("subtype") == "status":
        out["status"] = frame.get("status") if frame.get("status") is not None else "done"
    if kind == "stream_event":
        out["event"] = (frame.get("event") or {}).get("type")
    if kind in ("assistant", "user"):
        out["content"] = _content_kind(frame.get("message") or {})
    owner = frame.get("parent_tool_use_id") or (frame.get("tool_use_id") if str(frame.get("subtype", "")).startswith(
        "task_") else None)
    if owner:
        if owner not in subagents:
            subagents.append(str(owner))
        out["subagent"] = subagents.index(str(owner)) + 1
    return out


def step_outlines(frames: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The outline of each frame of one step (control frames left out)."""
    subagents: list[str] = []
    return [frame_outline(f, subagents) for f in frames if not str(f.get("type", "")).startswith("control_")]


def kind(outline: Mapping[str, Any]) -> str:
    """An outline as one word: ``system/session_state_changed:running``, ``assistant:tool_use@1``..."""
    word = "/".join(str(outline[k]) for k in ("type", "subtype") if k in outline)
    word += "".join(f":{outline[k]}" for k in ("state", "status", "event", "content") if k in outline)
    return word + (f"@{outline['subagent']}" if "subagent" in outline else "")


def differences(recorded: Sequence[str], rendered: Sequence[str]) -> list[str]:
    """Each place where ``rendered`` differs from ``recorded`` (one per non-equal opcode), said in words."""
    matcher = difflib.SequenceMatcher(a=list(recorded), b=list(rendered), autojunk=False)
    return [f"{tag} recorded[{i1}:{i2}] {list(recorded[i1:i2])} -> rendered[{j1}:{j2}] {list(rendered[j1:j2])}"
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def places(recorded: Sequence[str], rendered: Sequence[str]) -> int:
    """How many places ``rendered`` differs from ``recorded`` in (one per non-equal ``difflib`` opcode)."""
    return len(differences(recorded, rendered))
