"""What a context tracker can read of a session's messages, and comparing two such projections field by field.

:func:`project_message` reduces one ``claude_agent_sdk`` message to the fields a tracker can read: for an assistant
message its ``message_id``, ``parent_tool_use_id``, ``model``, ``stop_reason``, ``error``, usage, block kinds, and
the shape of its ``uuid`` and ``session_id``; for a user message the tool results it carries; for a result its
usage, per-model usage, cost and session id; the ``init`` frame's session id; ``compact_boundary`` and conversation
resets; for stream events (partial messages) the ``message_start`` and ``message_delta`` usage, every field of it.
Everything else (statuses, task notifications, user messages without tool results: replayed prompts, compaction
summaries, command output) is left out. :func:`project_context_usage` does the same for ``get_context_usage()``,
and :func:`project_hook` for one hook call or permission prompt the SDK handed the client's callbacks.

Ids the CLI draws at random are compared by shape, not value: :func:`id_shapes` replaces each ``uuid`` and
``session_id`` by the order in which it first appeared in the run (``uuid 3``), so what is compared is whether an id
is there, whether messages share it, and whether the session id stays or changes across queries.

Projections are flat ``{field: value}`` dicts, so :func:`compare` can name every field that differs.
:data:`FIELDS` lists every field a projection can hold, by message kind: the fidelity self-check plants a
divergence for each and requires it to be reported by name.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    ToolResultBlock,
    UserMessage,
)

__all__ = ["CATEGORIES", "CONTEXT_USAGE_FIELDS", "CONTEXT_USAGE_PROJECTED", "FIELDS", "HOOK_FIELDS", "Difference",
           "Projection", "StepProjection", "compare", "compare_keys", "compare_raw", "field_at", "field_pattern",
           "id_shapes", "message_kind", "project_context_usage", "project_hook", "project_message",
           "project_permission"]

USAGE_FIELDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
MODEL_USAGE_FIELDS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens",
                      "contextWindow", "maxOutputTokens")
CONTEXT_USAGE_FIELDS = ("totalTokens", "maxTokens", "rawMaxTokens", "percentage", "autoCompactThreshold",
                        "isAutoCompactEnabled", "autocompactSource")
CATEGORIES = ("system_tools", "skills", "messages", "autocompact_buffer", "free_space")
"""The categories of ``get_context_usage()`` whose tokens are projected (``category.<id>``; the deferred tools,
counted in no total, are listed in ``categories`` alone)."""
COUNTED = ("system_tools", "skills", "messages")
"""The categories of :data:`CATEGORIES` whose tokens add up to ``totalTokens`` (kind ``used``); the autocompact buffer
and the free space are what is left of the window."""
MOVED = "moved between categories, their sum unchanged: a rewording, not a tracked difference"
"""The note on a category whose tokens only moved to or from others (:func:`compare`)."""
CONTEXT_USAGE_PROJECTED = (*CONTEXT_USAGE_FIELDS, "categories", *(f"category.{c}" for c in CATEGORIES),
                           *(f"apiUsage.{k}" for k in USAGE_FIELDS))
"""Every field of a projected ``get_context_usage()``: the sizes, the categories (``id:kind``, in order) and the
tokens of each, and the last call's usage (``apiUsage``; null before the first call and after a compaction or
``/clear``) a gauge breaks the total down by (the grid and the skill list describe, not measure)."""

Projection = dict[str, Any]
"""One message's (or one ``get_context_usage()``'s) tracker-relevant fields, flat."""


def _usage(prefix: str, usage: Mapping[str, Any] | None, keys: Sequence[str] = USAGE_FIELDS) -> Projection:
    if usage is None:
        return {prefix: None}
    return {f"{prefix}.{k}": usage.get(k) for k in keys}


def _block_kind(block: Any) -> str:
    return type(block).__name__.removesuffix("Block").lower()


def project_message(message: Any) -> Projection | None:
    """The tracker-relevant fields of one SDK message; None for a message a tracker has no use for. Ids come as
    they are: :func:`id_shapes` turns a run's projections into comparable ones."""
    if isinstance(message, AssistantMessage):
        return {"type": "assistant", "message_id": message.message_id,
                "parent_tool_use_id": message.parent_tool_use_id, "model": message.model,
                "stop_reason": message.stop_reason, "error": message.error, "uuid": message.uuid,
                "session_id": message.session_id, **_usage("usage", message.usage),
                "blocks": [_block_kind(b) for b in message.content]}
    if isinstance(message, UserMessage):
        content = message.content
        ids = [b.tool_use_id for b in content if hasattr(b, "tool_use_id")] if isinstance(content, list) else []
        if not ids:
            return None
        results = [b for b in content if isinstance(b, ToolResultBlock)] if isinstance(content, list) else []
        return {"type": "user", "parent_tool_use_id": message.parent_tool_use_id, "tool_results": ids,
                "is_error": [bool(b.is_error) for b in results], "error_texts": [b.content for b in results
                                                                                 if b.is_error]}
    if isinstance(message, ResultMessage):
        out: Projection = {"type": "result", "subtype": message.subtype, "is_error": message.is_error,
                           "session_id": message.session_id, **_usage("usage", message.usage),
                           "total_cost_usd": round(message.total_cost_usd or 0.0, 9),
                           "num_turns": message.num_turns, "stop_reason": message.stop_reason,
                           "terminal_reason": message.terminal_reason}
        for model, usage in sorted((message.model_usage or {}).items()):
            out.update(_usage(f"model_usage[{model}]", usage, MODEL_USAGE_FIELDS))
        return out
    if isinstance(message, StreamEvent):
        event = message.event
        kind = event.get("type")
        if kind == "message_start":
            started = event.get("message") or {}
            return {"type": "stream_event", "event": kind, "message_id": started.get("id"),
                    "parent_tool_use_id": message.parent_tool_use_id, **_usage("usage", started.get("usage"))}
        if kind == "message_delta":
            return {"type": "stream_event", "event": kind, "parent_tool_use_id": message.parent_tool_use_id,
                    "stop_reason": (event.get("delta") or {}).get("stop_reason"),
                    **_usage("usage", event.get("usage"))}
        return None
    if isinstance(message, SystemMessage):
        if message.subtype == "init":
            return {"type": "system", "subtype": "init", "session_id": message.data.get("session_id")}
        if message.subtype in ("task_started", "task_notification", "background_tasks_changed"):  # a subagent's task
            data = message.data
            return {"type": "system", "subtype": message.subtype, "is_backgrounded": data.get("is_backgrounded"),
                    "status": data.get("status"), "tasks": len(data.get("tasks") or ())}
        if message.subtype != "compact_boundary":
            return None
        return _boundary(message.data)
    if type(message).__name__ == "ConversationResetMessage":
        return {"type": "conversation_reset"}
    if dataclasses.is_dataclass(message):
        return {"type": type(message).__name__}  # a message type this projection does not know: shown, not hidden
    return None


def _boundary(data: Mapping[str, Any]) -> Projection:
    """A ``compact_boundary``: its sizes, the tokens dropped so far, whether it kept a segment (its messages, whose
    number depends on the hooks registered), and what its ``logical_parent_uuid`` joins (``tail``: the kept
    segment's last message; ``present``: another)."""
    meta = data.get("compact_metadata") or {}
    kept = meta.get("preserved_messages")
    tail = (meta.get("preserved_segment") or {}).get("tail_uuid")
    parent = data.get("logical_parent_uuid")
    return {"type": "system", "subtype": "compact_boundary", "trigger": meta.get("trigger"),
            "pre_tokens": meta.get("pre_tokens"), "post_tokens": meta.get("post_tokens"),
            "cumulative_dropped_tokens": meta.get("cumulative_dropped_tokens"),
            "preserved_messages": bool(isinstance(kept, Mapping) and kept.get("all_uuids")),
            "logical_parent": None if parent is None else "tail" if parent == tail else "present"}


def message_kind(projection: Mapping[str, Any]) -> str:
    """The kind a projected message is listed under in :data:`FIELDS`: ``assistant``, ``system/init``,
    ``stream_event/message_delta``, ``hook``, ``context_usage``, ..."""
    kind = str(projection.get("type"))
    detail = projection.get("subtype") or projection.get("event")
    return f"{kind}/{detail}" if kind in ("system", "stream_event") and detail else kind


_ID_FIELDS = {"uuid": "uuid", "session_id": "session"}
"""Projected fields that hold an id the CLI draws at random, and the name of its family."""


def id_shapes(steps: Sequence[StepProjection]) -> list[StepProjection]:
    """``steps`` with every random id (:data:`_ID_FIELDS`) replaced by its order of first appearance in the run,
    per family: ``session 1`` while the session id stays, ``session 2`` once it changes; ``uuid 7`` for the
    seventh distinct uuid. None stays None. Projections already shaped are left as they are."""
    seen: dict[str, dict[Any, str]] = {family: {} for family in _ID_FIELDS.values()}

    def shape(message: Projection) -> Projection:
        out = dict(message)
        for key, family in _ID_FIELDS.items():
            value = out.get(key)
            if value is None or (isinstance(value, str) and value.startswith(f"{family} ")):
                continue
            names = seen[family]
            out[key] = names.setdefault(value, f"{family} {len(names) + 1}")
        return out

    return [StepProjection(s.prompt, [shape(m) for m in s.messages], s.context_usage, s.hooks) for s in steps]


HOOK_FIELDS = ("prompt", "tool_name", "agent_type", "trigger", "custom_instructions", "stop_hook_active",
               "last_assistant_message")
"""The hook inputs compared (where the event has them): what a tracker or an agent acts on. Ids the CLI draws
(session, prompt, agent), paths and timings are not; which input keys there are is."""
TOOL_HOOKS = frozenset({"PreToolUse", "PostToolUse"})


def project_hook(hook_input: Mapping[str, Any], tool_use_id: str | None) -> Projection:
    """One hook call: its event, the keys of its input, :data:`HOOK_FIELDS`, and the tool use id of a tool hook
    (for the others, whether the CLI gave one)."""
    event = hook_input.get("hook_event_name")
    fields = {k: hook_input[k] for k in HOOK_FIELDS if k in hook_input}
    if str(fields.get("prompt")).startswith("<task-notification>"):  # its text names a temporary path and timings
        fields["prompt"] = "<task-notification>"
    return {"type": "hook", "event": event, "keys": sorted(hook_input), **fields,
            "tool_use_id": tool_use_id if event in TOOL_HOOKS else tool_use_id is not None}


def project_permission(tool_name: str, tool_input: Mapping[str, Any], tool_use_id: str | None) -> Projection:
    """One ``can_use_tool`` prompt: the tool, its input and its tool use id."""
    return {"type": "can_use_tool", "tool_name": tool_name, "tool_input": dict(tool_input),
            "tool_use_id": tool_use_id}


def project_context_usage(usage: Mapping[str, Any]) -> Projection:
    """The tracker-relevant fields of a ``get_context_usage()`` answer."""
    out: Projection = {"type": "context_usage", **{k: usage.get(k) for k in CONTEXT_USAGE_FIELDS}}
    categories = [c for c in usage.get("categories") or () if isinstance(c, Mapping)]
    out["categories"] = [f"{c.get('id')}:{c.get('kind')}" for c in categories]
    tokens = {c.get("id"): c.get("tokens") for c in categories}
    out.update({f"category.{c}": tokens.get(c) for c in CATEGORIES})
    api = usage.get("apiUsage")
    out.update({f"apiUsage.{k}": api.get(k) if isinstance(api, Mapping) else None for k in USAGE_FIELDS})
    return out


FIELDS: Mapping[str, tuple[str, ...]] = {
    "assistant": ("message_id", "parent_tool_use_id", "model", "stop_reason", "error", "uuid", "session_id",
                  *(f"usage.{k}" for k in USAGE_FIELDS), "blocks"),
    "user": ("parent_tool_use_id", "tool_results", "is_error", "error_texts"),
    "result": ("subtype", "is_error", "session_id", *(f"usage.{k}" for k in USAGE_FIELDS), "total_cost_usd",
               *(f"model_usage[*].{k}" for k in MODEL_USAGE_FIELDS), "num_turns", "stop_reason", "terminal_reason"),
    "system/init": ("session_id",),
    "system/compact_boundary": ("trigger", "pre_tokens", "post_tokens", "cumulative_dropped_tokens",
                                "preserved_messages", "logical_parent"),
    "conversation_reset": (),
    "stream_event/message_start": ("message_id", "parent_tool_use_id", *(f"usage.{k}" for k in USAGE_FIELDS)),
    "stream_event/message_delta": ("parent_tool_use_id", "stop_reason", *(f"usage.{k}" for k in USAGE_FIELDS)),
    "context_usage": CONTEXT_USAGE_PROJECTED,
    "hook": ("event", "keys", *HOOK_FIELDS, "tool_use_id"),
    "can_use_tool": ("tool_name", "tool_input", "tool_use_id"),
}
"""Every field a projection can hold, by :func:`message_kind` (``model_usage[*]`` stands for each model). Each has a
self-check in the tests that plants a divergence in the fake for it alone and requires :func:`compare` to name it."""


def field_at(data: Mapping[str, Any], path: str) -> Any:
    """The value at the dotted ``path`` of ``data`` (``context_window.used_percentage``), or ``"<absent>"``
    where a key is missing or a value on the way is no mapping: a field's absence is a value to compare."""
    value: Any = data
    for key in path.split("."):
        if not isinstance(value, Mapping) or key not in value:
            return "<absent>"
        value = value[key]
    return value


def field_pattern(name: str) -> str:
    """``name`` as :data:`FIELDS` lists it (a model's name replaced by ``*``)."""
    return re.sub(r"^model_usage\[[^\]]*\]", "model_usage[*]", name)


@dataclass
class StepProjection:
    """One step of a scripted session (a query or command): its messages' projections, the context usage after,
    and the hook calls and permission prompts the client's callbacks got, in order."""

    prompt: str
    messages: list[Projection]
    context_usage: Projection
    hooks: list[Projection] = dataclasses.field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (see :meth:`from_json`)."""
        return {"prompt": self.prompt, "messages": self.messages, "context_usage": self.context_usage,
                "hooks": self.hooks}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StepProjection:
        """The inverse of :meth:`to_json`."""
        return cls(str(data["prompt"]), list(data["messages"]), dict(data["context_usage"]), list(data["hooks"]))


@dataclass(frozen=True)
class Difference:
    """One field that differs between two projections of the same session."""

    where: str
    """``step 3 (/compact) message 2 (result)``, ``before the first query``, or ``frames assistant``."""
    field: str
    left: Any
    right: Any
    step: int = 0
    """The 1-based step (0: the context usage before the first query, or the keys of the run's frames)."""
    kind: str = ""
    """The :func:`message_kind` of the message (or ``frames <kind>`` for a frame's key)."""
    tracked: bool = True
    """Whether trackers read this field: every projected field (but a category whose tokens only moved, see
    :func:`compare`); for frame keys, those of ``TRACKED``."""
    note: str = ""
    """Why a projected field is not tracked here (:data:`MOVED`), else empty."""

    def __str__(self) -> str:
        return f"{self.where}: {self.field}: {self.left!r} != {self.right!r}"


_ABSENT = "<absent>"


def _compare_items(where: str, left: Projection | None, right: Projection | None, step: int) -> list[Difference]:
    if left is None or right is None:
        shown = left or right or {}
        return [Difference(where, "(message)", left and left.get("type"), right and right.get("type"), step,
                           message_kind(shown))] if shown else []
    kind = message_kind(left)
    return [Difference(where, key, left.get(key, _ABSENT), right.get(key, _ABSENT), step, kind)
            for key in sorted(set(left) | set(right), key=lambda k: (k != "type", k))
            if left.get(key, _ABSENT) != right.get(key, _ABSENT)]


def compare_keys(left: Mapping[str, Sequence[str]], right: Mapping[str, Sequence[str]]) -> list[Difference]:
    """Every frame kind and key path that one run's frames carried and the other's did not
    (``frame_keys`` of each); ``tracked`` where trackers read it."""
    from ..wire import is_tracked

    out = []
    for kind in sorted(set(left) | set(right)):
        if kind not in left or kind not in right:
            out.append(Difference(f"frames {kind}", "(frame kind)", "present" if kind in left else _ABSENT,
                                  "present" if kind in right else _ABSENT, 0, f"frames {kind}", is_tracked(kind)))
            continue
        a, b = set(left[kind]), set(right[kind])
        out += [Difference(f"frames {kind}", f"keys: {path}", "present" if path in a else _ABSENT,
                           "present" if path in b else _ABSENT, 0, f"frames {kind}", is_tracked(kind, path))
                for path in sorted(a ^ b)]
    return out


def compare_raw(left: Mapping[str, Sequence[Any]], right: Mapping[str, Sequence[Any]]) -> list[Difference]:
    """Every raw-frame value (``raw_fields``) that differs between two runs, frame by
    frame: ``frames assistant`` / ``request_id`` at the n-th assistant frame; one more or fewer frame is one
    difference too."""
    out = []
    for name in sorted(set(left) | set(right)):
        kind, _, field_name = name.partition(" ")
        a, b = list(left.get(name, ())), list(right.get(name, ()))
        for index in range(max(len(a), len(b))):
            x = a[index] if index < len(a) else _ABSENT
            y = b[index] if index < len(b) else _ABSENT
            if x != y:
                out.append(Difference(f"frames {kind} #{index + 1}", field_name, x, y, 0, f"frames {kind}"))
    return out


def _moved(differences: list[Difference]) -> list[Difference]:
    """``differences`` of one context usage with the categories that only moved tokens between each other untracked
    (:data:`MOVED`)."""
    categories = [d for d in differences if d.field.startswith("category.")]
    counted = {f"category.{c}" for c in COUNTED}
    if not categories or any(d.field not in counted for d in categories):
        return differences

    def tokens(value: Any) -> int:
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    if sum(tokens(d.left) for d in categories) != sum(tokens(d.right) for d in categories):
        return differences
    return [dataclasses.replace(d, tracked=False, note=MOVED) if d in categories else d for d in differences]


def compare(left: Sequence[StepProjection], right: Sequence[StepProjection], *,
            initial: tuple[Projection, Projection] | None = None) -> list[Difference]:
    """Every field where the two projections of one session differ, step by step and message by message.

    ``initial`` compares the context usage before the first query as well. Messages, and then hook calls, are
    compared by position: a missing or extra one is one difference (``(message)``), then the comparison goes on at
    the next position. Random ids are compared by shape (:func:`id_shapes`).

    In a ``get_context_usage()``, categories of :data:`COUNTED` whose tokens only moved between each other (their
    sum unchanged: a release that files three tokens of its tool list under skills) are untracked, noted
    :data:`MOVED`: no tracker reads the split as a measure. Their sum (``totalTokens``, ``percentage``, the free
    space) and every other field stay tracked.
    """
    out: list[Difference] = []
    if initial is not None:
        out += _moved(_compare_items("before the first query", *initial, 0))
    left, right = id_shapes(left), id_shapes(right)
    for number in range(max(len(left), len(right))):
        a = left[number] if number < len(left) else None
        b = right[number] if number < len(right) else None
        either = a if a is not None else b
        prompt = either.prompt if either is not None else ""
        step = f"step {number + 1} ({prompt[:30]!r})"
        if a is None or b is None:
            out.append(Difference(step, "(step)", a and a.prompt, b and b.prompt, number + 1))
            continue
        if a.prompt != b.prompt:
            out.append(Difference(step, "prompt", a.prompt, b.prompt, number + 1))
        for index in range(max(len(a.messages), len(b.messages))):
            x = a.messages[index] if index < len(a.messages) else None
            y = b.messages[index] if index < len(b.messages) else None
            kind = (x or y or {}).get("type")
            out += _compare_items(f"{step} message {index + 1} ({kind})", x, y, number + 1)
        out += _moved(_compare_items(f"{step} get_context_usage", a.context_usage, b.context_usage, number + 1))
        for index in range(max(len(a.hooks), len(b.hooks))):
            x = a.hooks[index] if index < len(a.hooks) else None
            y = b.hooks[index] if index < len(b.hooks) else None
            event = (x or y or {}).get("event") or (x or y or {}).get("type")
            out += _compare_items(f"{step} hook {index + 1} ({event})", x, y, number + 1)
    return out
