"""The live twin of a recorded stream: the session a recording shows, built, so that ``ctxsim serve`` steers the live
CLI through it (the CLI writes its own stream; a recording cannot be played to it as recorded).

Each recorded query becomes a query of the twin: its main-chain calls with the usage the recording reports (the
last message of each call), their blocks, their output as the recording's truth gives it, and between them the
tool results that grew the next prompt; a query that makes no call and starts a new CLI session (its ``init`` names
a new ``session_id``: what ``/clear`` writes) becomes a ``/clear`` query. A recording with another shape (a
subagent, a compaction, a query of no call that is no ``/clear``) has no twin here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ...world import Call, ConversationReset, Query, Step, Text, Thinking, ToolResult, ToolUse

Block = Text | Thinking | ToolUse

if TYPE_CHECKING:
    from ...scenario import SessionScenario

__all__ = ["recorded_twin"]


def _block(block: dict[str, Any]) -> Block | None:
    if block.get("type") == "text":
        return Text(str(block.get("text", "")))
    if block.get("type") == "thinking":
        return Thinking(str(block.get("thinking", "")), str(block.get("signature", "")))
    if block.get("type") == "tool_use":
        return ToolUse(str(block.get("id")), str(block.get("name")), dict(block.get("input") or {}))
    return None


def _calls(frames: list[dict[str, Any]], model: str) -> list[Call] | None:
    """The main-chain calls of one recorded query, in order, their output 0 (set from the truth after); None when
    a frame is one the twin does not build (a subagent's, a compaction)."""
    usage: dict[str, tuple[int, int, int]] = {}
    blocks: dict[str, list[Block]] = {}
    for data in frames:
        if data.get("parent_tool_use_id") is not None or data.get("subtype") == "compact_boundary":
            return None
        message = data.get("message") if data.get("type") == "assistant" else None
        if not isinstance(message, dict):
            continue
        ident, reported = str(message.get("id")), message.get("usage") or {}
        numbers = [reported.get(key) for key in ("input_tokens", "cache_creation_input_tokens",
                                                 "cache_read_input_tokens")]
        counts = [n for n in numbers if type(n) is int]
        if len(counts) != len(numbers):
            return None
        usage[ident] = (counts[0], counts[1], counts[2])
        blocks.setdefault(ident, []).extend(b for b in map(_block, message.get("content") or ()) if b is not None)
    return [Call(*usage[ident], 0, tuple(blocks[ident]), ident, model=model) for ident in usage]


def recorded_twin(scenario: SessionScenario) -> SessionScenario | None:
    """The built twin of ``scenario``'s recording (see the module's docstring), or None: no recording, or one of
    another shape."""
    recording = scenario.recording
    if recording is None:
        return None
    truth = {o.label: o.truth for o in scenario.observations()}
    queries: list[Query] = []
    session_id: object = None
    for number, recorded in enumerate(recording.queries, 1):
        frames = [data for _, data in recorded]
        init = next((d for d in frames if d.get("type") == "system" and d.get("subtype") == "init"), {})
        calls = _calls(frames, scenario.session.model)
        if calls is None:
            return None
        if not calls:
            if session_id is None or init.get("session_id") in (None, session_id):
                return None
            queries.append(Query("/clear", (ConversationReset(str(init["session_id"])),)))
        else:
            steps: list[Step] = []
            for at, call in enumerate(calls):
                known = truth.get(f"q{number} call {at + 1}")
                call = replace(call, output_tokens=known.output if known is not None else 1)
                steps.append(call)
                if at + 1 < len(calls):
                    grown = calls[at + 1].prompt - call.prompt - call.output_tokens
                    steps += [ToolResult(b.id, "", max(0, grown)) for b in call.blocks if isinstance(b, ToolUse)]
            queries.append(Query(recording.prompts[number - 1], tuple(steps)))
        session_id = init.get("session_id", session_id)
    session = replace(scenario.session, queries=tuple(queries))
    return replace(scenario, recording=None, session=session)
