"""Reading rendered frames: what a frame is (its message, usage, prompt), and the units faults act on.

A :class:`Unit` is a run of consecutive frames that belong together (one API call with its per-block messages and
stream events, a tool result, a result...), found from the frames' data alone by :func:`segment`, so that faults
work the same on rendered and recorded streams. :mod:`ctxsim.faults` builds on these.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..wire import Frame, Observation

__all__ = [
    "ANCHOR_KINDS",
    "SYNTHETIC_MODEL",
    "USAGE_KEYS",
    "Unit",
    "cache_read_of",
    "clone",
    "is_count",
    "message_of",
    "prompt_of",
    "readable_prompt",
    "segment",
    "usage_of",
]

SYNTHETIC_MODEL = "<synthetic>"
"""The model name Claude Code gives the assistant messages it makes up (API errors, interrupts)."""

ANCHOR_KINDS = frozenset({"call", "compaction", "reset"})
"""Observation kinds whose truth is their own; ``subagent`` and ``result`` points carry the latest anchor's."""

USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
"""The three disjoint parts of a prompt, as the API names them."""

def clone(value: Any) -> Any:
    """A deep copy of JSON-like data (dicts, lists, scalars): faster than :func:`copy.deepcopy` on frames."""
    if isinstance(value, dict):
        return {k: clone(v) if isinstance(v, _CONTAINERS) else v for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) if isinstance(v, _CONTAINERS) else v for v in value]
    return value


_CONTAINERS = (dict, list)


def is_count(value: Any) -> bool:
    """True for a well-formed token count (a non-negative int, not a bool)."""
    return type(value) is int and value >= 0


def _event_type(data: dict[str, Any]) -> str | None:
    if data.get("type") != "stream_event":
        return None
    event = data.get("event")
    return event.get("type") if isinstance(event, dict) else None


def _system(data: dict[str, Any]) -> str | None:
    return data.get("subtype") if data.get("type") == "system" else None


def message_of(data: dict[str, Any]) -> dict[str, Any] | None:
    """The API message of an assistant frame or of a ``message_start`` event."""
    if data.get("type") == "assistant":
        message = data.get("message")
    elif _event_type(data) == "message_start":
        message = data["event"].get("message")
    else:
        return None
    return message if isinstance(message, dict) else None


def usage_of(frame: Frame) -> dict[str, Any] | None:
    """The API usage dict a frame carries for its call (assistant message or ``message_start``), if any."""
    message = message_of(frame.data)
    usage = message.get("usage") if message is not None else None
    return usage if isinstance(usage, dict) else None


def prompt_of(usage: dict[str, Any] | None) -> int | None:
    """The prompt a well-formed usage states, read as the API defines it (the last ``message`` iteration, a cache
    write given only in the nested breakdown); None when it is not well-formed."""
    if usage is None:
        return None
    iterations = usage.get("iterations")
    if isinstance(iterations, list):
        last = [i for i in iterations if isinstance(i, dict) and i.get("type") == "message"]
        usage = last[-1] if last else usage
    read = [_lenient(usage.get(k)) for k in USAGE_KEYS]
    values = [v for v in read if v is not None]
    if len(values) < len(read):
        return None
    nested = usage.get("cache_creation")
    if not values[1] and isinstance(nested, dict):
        values[1] = sum(v for v in map(_lenient, nested.values()) if v is not None)
    return sum(values)


def readable_prompt(usage: dict[str, Any] | None) -> int | None:
    """The prompt a tracker can read off ``usage``, as the reference reads it: absent counts are 0 (a gateway
    that reports no cache fields), a present field that is not a count makes it unreadable; None for nothing."""
    well_formed = prompt_of(usage)
    if well_formed is not None or usage is None:
        return well_formed or None
    present = [usage.get(k) for k in USAGE_KEYS if usage.get(k) is not None]
    counts = [_lenient(v) for v in present]
    if not present or any(c is None for c in counts):
        return None
    return sum(c for c in counts if c is not None) or None


def cache_read_of(usage: dict[str, Any]) -> int:
    """The cache read of the part of ``usage`` that occupies the context (the last ``message`` iteration); 0 when
    it is absent or not a count."""
    iterations = usage.get("iterations")
    if isinstance(iterations, list):
        last = [i for i in iterations if isinstance(i, dict) and i.get("type") == "message"]
        usage = last[-1] if last else usage
    return _lenient(usage.get("cache_read_input_tokens")) or 0


def _lenient(value: Any) -> int | None:
    """A count, also from a numeric string or a whole float (the garbage that keeps the number)."""
    if isinstance(value, str) and value.isdigit():
        return int(value)
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return value if is_count(value) else None


def _assistant_key(data: dict[str, Any]) -> tuple[Any, Any, bool, Any] | None:
    """What every per-block message of one call shares: message id, parent, synthetic or not, request id."""
    if data.get("type") != "assistant":
        return None
    message = data.get("message")
    if not isinstance(message, dict):
        return None
    return (message.get("id"), data.get("parent_tool_use_id"), message.get("model") == SYNTHETIC_MODEL,
            data.get("request_id"))


# --- units ------------------------------------------------------------------------------------------------------


@dataclass
class Unit:
    """A run of consecutive frames that belong together.

    ``kind`` is ``call`` (one API call: its per-block assistant messages, its stream events and
    ``thinking_tokens``, and for a background subagent the ``task_progress`` after it), ``replay`` (assistant
    messages that re-emit an earlier call: same id, same prompt), ``synthetic`` (a made-up error message),
    ``tool_result``, ``compaction``, ``reset``, ``result``, ``init`` or ``other``.
    """

    kind: str
    frames: list[Frame]
    message_id: str | None = None
    """For calls, replays and synthetic messages: the ``message.id`` the frames carry."""
    parent: str | None = None
    """For calls: the ``parent_tool_use_id`` (None on the main chain)."""
    copies: list[Unit] = field(default_factory=list)
    """For calls: the replays of this call later in the stream (usage edits reach them too)."""

    @property
    def main(self) -> bool:
        """True for a main-chain call."""
        return self.kind == "call" and self.parent is None

    @property
    def observation(self) -> Observation | None:
        """The observation a frame of this unit closes, if any."""
        for frame in reversed(self.frames):
            if frame.observation is not None:
                return frame.observation
        return None

    @property
    def output_tokens(self) -> int | None:
        """A main call's final output count, as its observation's truth states it."""
        obs = self.observation
        return obs.truth.output if obs is not None and obs.kind == "call" else None

    @property
    def stop_reason(self) -> str:
        """``tool_use`` when a block of the call asks for a tool, else ``end_turn``."""
        for frame in self.assistant_frames():
            content = frame.data["message"].get("content")
            if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_use"
                                                 for b in content):
                return "tool_use"
        return "end_turn"

    def assistant_frames(self) -> list[Frame]:
        """The unit's assistant messages, in order."""
        return [f for f in self.frames if f.data.get("type") == "assistant"]

    def usage_frames(self) -> list[Frame]:
        """The frames that carry the call's usage: its assistant messages and its ``message_start``."""
        return [f for f in self.frames if message_of(f.data) is not None]

    def event_frames(self, event_type: str) -> list[Frame]:
        """The unit's stream events of ``event_type`` (``message_delta``...)."""
        return [f for f in self.frames if _event_type(f.data) == event_type]

    def has_counts(self, *keys: str) -> bool:
        """Every usage carrier of the call has a well-formed count for each of ``keys``."""
        carriers = self.usage_frames()
        return bool(carriers) and all(
            (u := usage_of(f)) is not None and all(is_count(u.get(k)) for k in keys) for f in carriers)

    def usage(self) -> dict[str, Any]:
        """The usage dict of the first of the call's messages that has one; ``LookupError`` where none has (check
        :meth:`plain_usage` or :meth:`has_counts` first)."""
        usage = self.first_usage()
        if usage is None:
            raise LookupError("ctxsim: this unit carries no usage")
        return usage

    def plain_usage(self) -> bool:
        """Every usage carrier holds the three prompt counts in the plain shape (no ``iterations``, no cache
        write hidden in the nested ``cache_creation`` breakdown): faults that reshape usage start from it."""
        if not self.has_counts(*USAGE_KEYS):
            return False
        usage = self.first_usage()
        assert usage is not None
        nested = usage.get("cache_creation")
        hidden = isinstance(nested, dict) and any(is_count(v) and v for v in nested.values())
        return "iterations" not in usage and not (hidden and not usage["cache_creation_input_tokens"])

    def first_usage(self) -> dict[str, Any] | None:
        """The usage dict of the first of the call's messages that has one."""
        for frame in self.frames:  # usage_frames() and usage_of(), without the list
            message = message_of(frame.data)
            if message is not None:
                usage = message.get("usage")
                if isinstance(usage, dict):
                    return usage
        return None

    @property
    def model(self) -> str | None:
        """The model the call's messages name."""
        for frame in self.usage_frames():
            model = (message_of(frame.data) or {}).get("model")
            if isinstance(model, str):
                return model
        return None


def _call_end(frames: list[Frame], i: int) -> int:
    """The end (exclusive) of the call unit that starts at ``frames[i]``."""
    n = len(frames)
    data = frames[i].data
    if _system(data) == "status" or _event_type(data) == "message_start":  # a streamed call
        j = i + (2 if _system(data) == "status" else 1)
        while j < n:
            d = frames[j].data
            event = _event_type(d)
            if event == "message_start" or (event is None and d.get("type") != "assistant"
                                            and _system(d) != "thinking_tokens"):
                break
            j += 1
            if event == "message_stop":
                break
        return j
    key = prompt = None
    j = i
    while j < n:
        d = frames[j].data
        if _system(d) == "thinking_tokens":
            ahead = j + 1
            while ahead < n and _system(frames[ahead].data) == "thinking_tokens":
                ahead += 1
            if key is not None and (ahead >= n or _assistant_key(frames[ahead].data) != key):
                break
            j += 1
            continue
        this, this_prompt = _assistant_key(d), prompt_of(usage_of(frames[j]))
        if this is None or (key is not None and this != key):
            break
        if prompt is not None and this_prompt is not None and this_prompt != prompt:
            break  # the same id with another prompt: another call (or a replay of one)
        key, prompt = this, prompt if prompt is not None else this_prompt
        j += 1
        obs = frames[j - 1].observation
        if obs is not None and obs.kind in ("call", "subagent"):
            break
    if key is not None and key[1] is not None and j < n and _system(frames[j].data) == "task_progress":
        j += 1
    return max(j, i + 1)


_KINDS = {"init": "init", "compact_boundary": "compaction", "result": "result", "user": "tool_result",
          "conversation_reset": "reset"}


def segment(frames: list[Frame]) -> Iterator[Unit]:
    i, n = 0, len(frames)
    while i < n:
        data = frames[i].data
        starts_call = (data.get("type") == "assistant" or _system(data) == "thinking_tokens"
                       or _event_type(data) == "message_start"
                       or (_system(data) == "status" and i + 1 < n
                           and _event_type(frames[i + 1].data) == "message_start"))
        if not starts_call:
            yield Unit(_KINDS.get(str(_system(data) or data.get("type")), "other"), [frames[i]])
            i += 1
            continue
        j = _call_end(frames, i)
        unit = Unit("call", frames[i:j])
        key = next((k for k in map(_assistant_key, (f.data for f in unit.frames)) if k is not None), None)
        if key is None:
            start = next((m for f in unit.frames if (m := message_of(f.data)) is not None), None)
            if start is not None:
                key = (start.get("id"), frames[i].data.get("parent_tool_use_id"), False, None)
        if key is None:
            unit.kind = "other"  # stray thinking_tokens or stream events: no call to edit
        else:
            unit.message_id = key[0] if isinstance(key[0], str) else None
            unit.parent = key[1] if isinstance(key[1], str) else None
            if key[2]:
                unit.kind = "synthetic"
        yield unit
        i = j
