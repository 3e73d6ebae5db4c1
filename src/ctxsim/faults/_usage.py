"""Faults on the shape a call's usage arrives in: cache misses, missing keys, gateway and iteration shapes, garbage.

Each class is public through :mod:`ctxsim.faults`, where the catalogue is documented.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, ClassVar

from ..wire import Frame
from ._base import Fault, FaultStream
from ._units import USAGE_KEYS, Unit, is_count

__all__ = [
    "AdvisorIterations",
    "CacheReadDrop",
    "GarbageValues",
    "MissingUsage",
    "NestedCacheCreationOnly",
    "UncachedGatewayUsage",
]


def _plain(unit: Unit) -> bool:
    return unit.plain_usage()


def _unknowable(stream: FaultStream, unit: Unit, *, readable: bool = False) -> None:
    """Nothing in the stream tells ``unit``'s prompt any more as the SDK types it (an integer): its point (if a main
    call's) is not knowable. ``readable``: the number is still there, typed otherwise (``'9'``, ``9.0``), so a
    tracker may read it (the truth's band) or give no estimate."""
    obs = unit.observation
    if unit.main and obs is not None and obs.truth.knowable:
        truth = obs.truth
        stream.set_truth(unit, replace(truth, knowable=False, unseen=(truth.prompt, truth.next_request),
                                       why=_RETYPED) if readable else replace(truth, knowable=False))


@dataclass(frozen=True)
class CacheReadDrop(Fault):
    """A cache miss: a main call's cache read moves into cache creation, the prompt total unchanged.

    TTL expiry, resume and microcompaction re-create what was cached (docs/explanation/caches.md: anthropics/claude-code
    #42338 ``cr 172,301 -> 0`` with ``cc 1,344 -> 174,210``; #94177 microcompaction falling to the shared prefix
    47,638; charmbracelet/crush#3841; marot/spotter transcripts, misses to 0 or to ~21.4k).
    ``keep_prefix`` tokens stay readable: 0 for TTL expiry and resume, the shared system prefix for
    microcompaction. Every message of the call gets the same new usage (a nested ``cache_creation`` breakdown
    moves too); calls whose usage another fault reshaped are left alone. The query's result ``usage`` and the
    ``modelUsage`` totals move with it (costs are left as rendered). Keeps the truth.
    """

    name = "cache_read_drop"
    source = "anthropics/claude-code#42338, #94177; charmbracelet/crush#3841; marot/spotter transcripts"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    keep_prefix: int = 0
    """Cache-read tokens left after the miss."""

    bounds: ClassVar = {"keep_prefix": (0, 10_000_000)}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        keep = self.keep_prefix

        def eligible(unit: Unit) -> bool:
            return unit.plain_usage() and unit.usage()["cache_read_input_tokens"] > keep

        for si, ui, unit in stream.pick(rng, stream.calls(main_only=True, where=eligible), self.rate):
            moved = unit.usage()["cache_read_input_tokens"] - keep

            def edit(usage: dict[str, Any], moved: int = moved) -> dict[str, Any]:
                usage["cache_read_input_tokens"] = keep
                usage["cache_creation_input_tokens"] += moved
                nested = usage.get("cache_creation")
                if isinstance(nested, dict) and is_count(nested.get("ephemeral_5m_input_tokens")):
                    nested["ephemeral_5m_input_tokens"] += moved
                return usage

            stream.edit_usage(unit, edit)
            stream.adjust_totals(si, ui, unit, {"cache_read_input_tokens": -moved,
                                                "cache_creation_input_tokens": moved})


_SHAPES: dict[str, Callable[[dict[str, Any]], dict[str, Any] | None]] = {
    "none": lambda usage: None,
    "empty": lambda usage: {},
    "output_only": lambda usage: {"output_tokens": usage.get("output_tokens", 1)},
}


@dataclass(frozen=True)
class MissingUsage(Fault):
    """Usage missing from a call's messages: ``usage`` None, an empty dict, or only ``output_tokens``.

    ``AssistantMessage.usage`` is Optional in the SDK (Bugs in the wild); Claude Code 2.1.77 did not track usage on
    the non-streaming fallback; gateways drop keys (ryoppippi/ccusage#797). ``scope="some_blocks"`` strips some
    messages of a call and leaves at least one assistant message whole: keeps the truth. ``scope="whole_call"``
    strips every message of the call (``message_start`` and ``message_delta`` too) and changes the truth on
    purpose: nothing in the stream tells that call's prompt, so a main call's point, and the subagent and result
    points after it until the next call, compaction or reset, become not knowable (only "unknown" passes there).
    """

    name = "missing_usage"
    source = "Bugs in the wild (AssistantMessage.usage Optional); Claude Code 2.1.77 changelog; ryoppippi/ccusage#797"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    shape: str = "none"
    """``none`` (``usage: null``), ``empty`` (``{}``) or ``output_only``."""
    scope: str = "some_blocks"
    """``some_blocks`` or ``whole_call``."""

    choices: ClassVar = {"shape": tuple(_SHAPES), "scope": ("some_blocks", "whole_call")}

    @property
    def keeps_truth(self) -> bool:
        return self.scope == "some_blocks"

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        strip = _SHAPES[self.shape]
        if self.scope == "whole_call":
            for _, _, unit in stream.pick(rng, stream.calls(where=lambda u: u.first_usage() is not None), self.rate):
                stream.edit_usage(unit, strip)
                for frame in unit.event_frames("message_delta"):
                    event = stream.own(frame)["event"]
                    event["usage"] = strip(event["usage"] if isinstance(event.get("usage"), dict) else {})
                _unknowable(stream, unit)
            return

        def eligible(unit: Unit) -> bool:
            return len(unit.usage_frames()) >= 2 and unit.first_usage() is not None

        for _, _, unit in stream.pick(rng, stream.calls(where=eligible), self.rate):
            kept = rng.choice(unit.assistant_frames())
            others = [f for f in unit.usage_frames() if f is not kept]
            stream.edit_usage(unit, strip, stream.pick(rng, others, 0.5))


@dataclass(frozen=True)
class NestedCacheCreationOnly(Fault):
    """Cache writes reported only in the nested ``cache_creation`` TTL breakdown; ``cache_creation_input_tokens`` 0.

    Claude Code 2.1.152 changelog: "Fixed ``cache_creation_input_tokens`` reporting as 0 ... when the API reports
    cache writes only via the nested ``cache_creation`` breakdown" (Bugs in the wild). The write is split between
    ``ephemeral_5m_input_tokens`` and ``ephemeral_1h_input_tokens``. Keeps the truth.
    """

    name = "nested_cache_creation"
    source = "Claude Code 2.1.152 changelog (docs/explanation/bugs-in-the-wild.md)"
    rate: float = 0.5
    """The share of the places it can act on that it acts on (at least one, when there is any)."""

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        def eligible(unit: Unit) -> bool:
            return unit.plain_usage() and unit.usage()["cache_creation_input_tokens"] > 0

        for _, _, unit in stream.pick(rng, stream.calls(where=eligible), self.rate):
            created = unit.usage()["cache_creation_input_tokens"]
            short = rng.randint(0, created)

            def edit(usage: dict[str, Any], short: int = short, long: int = created - short) -> dict[str, Any]:
                usage["cache_creation_input_tokens"] = 0
                usage["cache_creation"] = {"ephemeral_5m_input_tokens": short, "ephemeral_1h_input_tokens": long}
                return usage

            stream.edit_usage(unit, edit)


@dataclass(frozen=True)
class UncachedGatewayUsage(Fault):
    """An Anthropic-compatible gateway without cache fields: ``input_tokens`` is the whole prompt.

    ollama/ollama#17130 (no cache fields, a full ``input_tokens``; Bugs in the wild on non-Anthropic shapes). The
    cache keys are dropped from every message of the call and the whole prompt is its ``input_tokens``; the
    result totals move with it. Keeps the truth (the prompt is the same sum).
    """

    name = "uncached_gateway_usage"
    source = "ollama/ollama#17130; docs/explanation/bugs-in-the-wild.md"
    rate: float = 1.0
    """The share of the places it can act on that it acts on (at least one, when there is any)."""

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for si, ui, unit in stream.pick(rng, stream.calls(where=_plain), self.rate):
            usage = unit.first_usage()
            assert usage is not None
            created, read = usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"]
            stream.edit_usage(unit, lambda u: {"input_tokens": sum(u[k] for k in USAGE_KEYS),
                                               "output_tokens": u.get("output_tokens", 1)})
            stream.adjust_totals(si, ui, unit, {"input_tokens": created + read,
                                                "cache_creation_input_tokens": -created,
                                                "cache_read_input_tokens": -read})


@dataclass(frozen=True)
class AdvisorIterations(Fault):
    """A call spanning several inference iterations (advisor, server tools), reported in ``usage.iterations``.

    The top-level usage is the field-wise sum of the ``message`` iterations (an ``advisor_message`` iteration is
    left out of it); the context is the last ``message`` iteration (ilia-pluzhnikov/claude-code-statusline#9,
    jarrodwatts/claude-hud#666; Bugs in the wild B10, where Claude Code's own gauge inflates). The earlier
    iteration read the cached prefix only. Results are left as rendered. Keeps the truth.
    """

    name = "usage_iterations"
    source = "ilia-pluzhnikov/claude-code-statusline#9; jarrodwatts/claude-hud#666; Bugs in the wild B10"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for _, _, unit in stream.pick(rng, stream.calls(where=_plain), self.rate):
            thought = rng.randint(20, 400)
            stream.edit_usage(unit, partial(iterated, thought=thought))


def iterated(usage: dict[str, Any], thought: int) -> dict[str, Any]:
    """``usage`` (of one call, its three prompt counts integers) as the API reports a call of several inference
    iterations: ``iterations`` lists a first ``message`` iteration that read the cached prefix only and wrote
    ``thought`` output tokens, an ``advisor_message`` iteration, and the call itself as the last ``message``
    iteration; the top-level counts are the sum of the two ``message`` iterations (:class:`AdvisorIterations`)."""
    out = usage.get("output_tokens")
    last = {"type": "message", **{k: usage[k] for k in USAGE_KEYS}, "output_tokens": out if is_count(out) else 1}
    first = {"type": "message", "input_tokens": usage["input_tokens"], "cache_creation_input_tokens": 0,
             "cache_read_input_tokens": usage["cache_read_input_tokens"], "output_tokens": thought}
    advisor = {**first, "type": "advisor_message"}
    summed = {k: first[k] + last[k] for k in (*USAGE_KEYS, "output_tokens")}
    return {**usage, **summed, "iterations": [first, advisor, last]}


# --- garbage ----------------------------------------------------------------------------------------------------


_GARBAGE: dict[str, Callable[[Any], Any]] = {
    "negative": lambda v: -v if is_count(v) and v else -1,
    "text": lambda v: "n/a",
    "numeric_string": lambda v: str(v),
    "float": lambda v: float(v) if is_count(v) else 0.5,
    "nan": lambda v: float("nan"),
    "huge": lambda v: 10**15,
    "null": lambda v: None,
    "bool": lambda v: True,
}
LENIENT_GARBAGE = frozenset({"numeric_string", "float"})
"""Garbage that keeps the number: a numeric string or a whole float of the same count. The SDK types a count as an
integer, so a tracker need not read one (the point is not knowable, the number its band: either answer passes)."""
_RETYPED = ("a prompt count arrived as a string or a float ('9', 9.0), not the integer the SDK types it as: read "
            "the number or give no estimate")


def _with(usage: dict[str, Any], *, key: str, value: Any) -> dict[str, Any]:
    return {**usage, key: value}


def _bystanders(stream: FaultStream) -> list[tuple[Frame, tuple[str, ...]]]:
    """Every count a context tracker may read but must not need, as ``(frame, path to its dict)``."""
    found: list[tuple[Frame, tuple[str, ...]]] = []
    for _, _, unit in stream.units():
        for frame in unit.frames:
            data = frame.data
            kind, subtype = data.get("type"), data.get("subtype")
            event: dict[str, Any] = data["event"] if isinstance(data.get("event"), dict) else {}
            if kind == "assistant" and isinstance((data.get("message") or {}).get("usage"), dict):
                found.append((frame, ("message", "usage", "output_tokens")))
            elif event.get("type") == "message_delta" and isinstance(event.get("usage"), dict):
                found.append((frame, ("event", "usage", "output_tokens")))
            elif kind == "result":
                found.append((frame, ("usage", "*")))
                found.append((frame, ("total_cost_usd",)))
                for model in data.get("modelUsage") or {}:
                    found.append((frame, ("modelUsage", model, "*")))
            elif subtype == "task_progress":
                found.append((frame, ("usage", "total_tokens")))
            elif subtype == "thinking_tokens":
                found.append((frame, ("estimated_tokens",)))
            elif subtype == "compact_boundary":
                found.append((frame, ("compact_metadata", "pre_tokens")))
    return found


def _spoil(holder: Any, path: tuple[str, ...], spoil: Callable[[Any], Any]) -> None:
    for key in path[:-1]:
        holder = holder.get(key) if isinstance(holder, dict) else None
    if not isinstance(holder, dict):
        return
    keys = [k for k, v in holder.items() if not isinstance(v, (dict, list))] if path[-1] == "*" else [path[-1]]
    for key in keys:
        if key in holder:
            holder[key] = spoil(holder[key])


@dataclass(frozen=True)
class GarbageValues(Fault):
    """Counts that are not counts: negative, non-numeric strings, numeric strings, floats, NaN, huge, null, bool.

    Third-party gateways and proxies break the usage spec (jundot/omlx#1487, ollama/ollama#17130,
    Aider-AI/aider#5516; Bugs in the wild), and a tracker must never raise on what arrives. ``fields="bystander"``
    spoils counts a context tracker does not need: per-block and ``message_delta`` output counts, result usage,
    cost and ``modelUsage``, ``task_progress`` and ``thinking_tokens`` estimates, ``pre_tokens``; keeps the truth
    (the prompt is intact; a garbage output leaves the prompt, the low end of the band, as the right answer).
    ``fields="prompt"`` spoils one of a call's ``input``/``cache_creation``/``cache_read`` on all its messages
    (``null`` goes to ``input_tokens`` only: the API documents the cache counts as nullable, so a null there is
    a valid 0, not garbage): any kind makes a main call's point, and the dependent points after it, not knowable
    (changes the truth on purpose); a numeric string or a whole float keeps the number, and a tracker may read it
    (the point's band) or give no estimate, since the SDK types a count as an integer.
    """

    name = "garbage_values"
    source = "jundot/omlx#1487; ollama/ollama#17130; Aider-AI/aider#5516; docs/explanation/bugs-in-the-wild.md"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    kinds: tuple[str, ...] = tuple(_GARBAGE)
    """The kinds of garbage drawn from (each value draws one)."""
    fields: str = "bystander"
    """``bystander`` or ``prompt``."""

    choices: ClassVar = {"fields": ("bystander", "prompt")}

    def _validate(self) -> None:
        if isinstance(self.kinds, list):
            object.__setattr__(self, "kinds", tuple(self.kinds))
        self._check(isinstance(self.kinds, tuple) and bool(self.kinds) and all(k in _GARBAGE for k in self.kinds),
                    f"kinds must be a non-empty list of {', '.join(_GARBAGE)}; got {self.kinds!r}")

    @property
    def keeps_truth(self) -> bool:
        return self.fields == "bystander"

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        if self.fields == "bystander":
            for frame, path in stream.pick(rng, _bystanders(stream), self.rate):
                _spoil(stream.own(frame), path, lambda v: _GARBAGE[rng.choice(self.kinds)](v))
            return
        for _, _, unit in stream.pick(rng, stream.calls(where=_plain), self.rate):
            key, kind = rng.choice(USAGE_KEYS), rng.choice(self.kinds)
            if kind == "null":
                key = "input_tokens"  # the API's cache counts are nullable (null reads as 0); input_tokens never is
            value = _GARBAGE[kind](unit.usage()[key])
            stream.edit_usage(unit, partial(_with, key=key, value=value))
            _unknowable(stream, unit, readable=kind in LENIENT_GARBAGE)
