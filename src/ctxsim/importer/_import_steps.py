"""A recording written as ``queries`` steps, when its shape allows: one ``call`` per main-chain API call with its
exact usage and blocks, a ``subagent`` step per run of subagent calls, ``compact`` and ``reset``.

Returns None for what steps cannot say: a call without usage, a ``<synthetic>`` message, a replayed message id,
lines of one call disagreeing on the prompt, a compaction without its size, content blocks of other kinds. The
importer then checks that the steps give every tracker the same verdict as the recording before using them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..recordings import Recording
from ..scenario import scenario_yaml

__all__ = ["steps_scenario"]

_KINDS = ("thinking", "text", "tool_use")


class _Unsayable(Exception):
    pass


def _usage(message: Mapping[str, Any]) -> tuple[int, int, int, int]:
    usage = message.get("usage")
    if not isinstance(usage, dict):
        raise _Unsayable
    values = [usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                        "output_tokens")]
    if not all(type(v) is int and v >= 0 for v in values):
        raise _Unsayable
    return values[0], values[1], values[2], values[3]


class _Walk:
    def __init__(self, compactions: list[int]) -> None:
        self.compactions = compactions
        """The recording's truth after each compaction, in order."""
        self.seen: set[str] = set()
        self.steps: list[dict[str, Any]] = []
        self.call: dict[str, Any] | None = None
        self.call_id: str | None = None
        self.sub_parent: str | None = None
        self.sub_calls: list[dict[str, Any]] = []
        self.sub_id: str | None = None

    def _flush_sub(self) -> None:
        if self.sub_calls:
            self.steps.append({"subagent": {"calls": self.sub_calls}})
        self.sub_parent, self.sub_calls, self.sub_id = None, [], None

    def _close(self) -> None:
        self.call, self.call_id = None, None

    @staticmethod
    def _blocks(message: Mapping[str, Any]) -> list[str]:
        content = message.get("content")
        kinds = [b.get("type") for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if not all(k in _KINDS for k in kinds):
            raise _Unsayable
        return [str(k) for k in kinds]

    def _extend(self, call: dict[str, Any], message: Mapping[str, Any], usage: tuple[int, int, int, int]) -> None:
        if (call["in"], call["cc"], call["cr"]) != usage[:3]:
            raise _Unsayable
        call["out"] = max(call["out"], usage[3])
        call["blocks"] = call["blocks"] + self._blocks(message)

    def frame(self, data: Mapping[str, Any]) -> None:
        kind = data.get("type")
        message = data.get("message")
        if kind == "assistant" and isinstance(message, dict):
            if message.get("model") == "<synthetic>":
                raise _Unsayable
            ident = message.get("id")
            if not isinstance(ident, str) or not ident:
                raise _Unsayable
            usage = _usage(message)
            parent = data.get("parent_tool_use_id")
            if parent is not None:
                self._close()
                if parent != self.sub_parent:
                    self._flush_sub()
                    self.sub_parent = str(parent)
                if ident == self.sub_id:
                    self._extend(self.sub_calls[-1], message, usage)
                else:
                    self.sub_calls.append({"in": usage[0], "cc": usage[1], "cr": usage[2], "out": usage[3],
                                           "blocks": self._blocks(message)})
                    self.sub_id = ident
                return
            self._flush_sub()
            if ident == self.call_id and self.call is not None:
                self._extend(self.call, message, usage)
                return
            if ident in self.seen:
                raise _Unsayable  # a replay: steps cannot say it
            self.seen.add(ident)
            self.call = {"in": usage[0], "cc": usage[1], "cr": usage[2], "out": usage[3],
                         "blocks": self._blocks(message)}
            self.call_id = ident
            self.steps.append({"call": self.call})
        elif kind == "stream_event":
            event = data.get("event") or {}
            out = (event.get("usage") or {}).get("output_tokens") if event.get("type") == "message_delta" else None
            if type(out) is int and self.call is not None and data.get("parent_tool_use_id") is None:
                self.call["out"] = max(self.call["out"], out)
        elif kind == "system" and data.get("subtype") == "compact_boundary":
            self._flush_sub()
            self._close()
            meta = data.get("compact_metadata") or {}
            post, pre = meta.get("post_tokens"), meta.get("pre_tokens")
            if type(post) is not int or not self.compactions:
                raise _Unsayable
            step: dict[str, Any] = {"post": post, "context": self.compactions.pop(0)}
            if type(pre) is int:
                step["pre"] = pre
            if meta.get("trigger") in ("auto", "manual"):
                step["trigger"] = meta["trigger"]
            self.steps.append({"compact": step})
        elif kind == "conversation_reset":
            self._flush_sub()
            self._close()
            self.steps.append({"reset": {}})
        elif kind == "user":
            self._close()

    def finish(self) -> list[dict[str, Any]]:
        self._flush_sub()
        self._close()
        steps, self.steps = self.steps, []
        for step in steps:
            for call in [step.get("call"), *((step.get("subagent") or {}).get("calls") or [])]:
                if call is not None and call["blocks"] == ["text"]:
                    del call["blocks"]
        return _repeats(steps)


def _repeats(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs of three or more identical calls as one ``repeat`` step."""
    out: list[dict[str, Any]] = []
    i = 0
    while i < len(steps):
        j = i
        while j < len(steps) and "call" in steps[i] and steps[j] == steps[i]:
            j += 1
        if j - i >= 3:
            out.append({"repeat": {"times": j - i, "call": steps[i]["call"]}})
            i = j
        else:
            out.append(steps[i])
            i += 1
    return out


def steps_scenario(recording: Recording, *, name: str, source: str, world: Mapping[str, Any],
                   comment: str = "", context_after: Sequence[int] = ()) -> str | None:
    """The scenario text (without ``expect``) of ``recording`` as steps, or None when steps cannot say it.

    ``context_after`` is what the CLI's ``get_context_usage()`` said after each query, when the capture recorded it:
    a query that ends on a compaction (``/compact``) then states that as the context the compaction left (what
    ``/context`` shows). Without it the recording does not tell that context (only a band: the boundary counts the
    summary alone), so a recording with a compaction stays a recording rather than steps that would invent it."""
    compactions = [f.observation.truth.prompt for s in recording.scripts(int(world["window"])) for f in s.frames
                   if f.observation is not None and f.observation.kind == "compaction"]
    walk = _Walk(compactions)
    queries = []
    try:
        for i, frames in enumerate(recording.queries):
            for _, data in frames:
                walk.frame(data)
            steps = walk.finish()
            if steps and "compact" in steps[-1] and i < len(context_after):
                steps[-1]["compact"]["context"] = context_after[i]
            elif any("compact" in step for step in steps):
                raise _Unsayable  # the context a compaction left is not in the recording: steps would invent it
            queries.append({"prompt": f"(recorded query {i + 1})", "steps": steps})
    except _Unsayable:
        return None
    if not any(q["steps"] for q in queries):
        return None
    return scenario_yaml(name=name, source=source, world=world, queries=queries, comment=comment)
