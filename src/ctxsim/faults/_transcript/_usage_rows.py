"""The API's usage of a call as the transcript rows carry it: the transcript form of the faults of the API's own usage.

Claude Code copies the usage the API (or a gateway) reported for a call into every ``assistant`` row of the call, so
a fault of that usage on the stream is the same fault on the call's rows (:func:`ctxsim.faults.transcript_faults`
picks these forms; :func:`ctxsim.faults.apply_transcript` plays them).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from ...wire import TranscriptRender
from .._base import FaultStream
from .._units import USAGE_KEYS, is_count
from .._usage import (
    _GARBAGE,
    _RETYPED,
    LENIENT_GARBAGE,
    CacheReadDrop,
    GarbageValues,
    NestedCacheCreationOnly,
    UncachedGatewayUsage,
    iterated,
)
from ._faults import SYNTHETIC_MODEL, TranscriptFault, _file_runs, _unknowable_from

__all__ = ["CacheMissRows", "GarbageRows", "GatewayRows", "IterationRows", "NestedCacheRows", "as_written"]


@dataclass(frozen=True)
class IterationRows(TranscriptFault):
    """The transcript form of ``usage_iterations``: a call's rows (every ``assistant`` row of its ``message.id``, in
    any file) carry the usage the API reported over several inference iterations, as Claude Code writes the API's
    usage into the file (every row's usage has its ``iterations`` list; Claude Code 2.1.330-2.1.332 recordings):
    the top-level counts sum the ``message`` iterations, the context is the last one's
    (ilia-pluzhnikov/claude-code-statusline#9, jarrodwatts/claude-hud#666). Keeps the truth."""

    name = "usage_iterations"
    source = "ilia-pluzhnikov/claude-code-statusline#9; jarrodwatts/claude-hud#666; Bugs in the wild B10"
    rate: float = 0.3
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        rows = _call_rows(transcript)
        for ident in FaultStream.pick(rng, list(rows), self.rate):
            thought = rng.randint(20, 400)
            for message in rows[ident]:
                message["usage"] = iterated(message["usage"], thought)


def _call_rows(transcript: TranscriptRender, *, main_only: bool = False) -> dict[Any, list[dict[str, Any]]]:
    """The ``message`` of every non-synthetic ``assistant`` row by its ``message.id`` (main-chain rows only, if
    asked), in write order over the files, whose rows all have plain usage (:func:`_plain_usage`)."""
    rows: dict[Any, list[dict[str, Any]]] = {}
    for file in transcript.files.values():
        for row in file.rows:
            message = row.get("message")
            if row.get("type") == "assistant" and isinstance(message, dict) and message.get("id") and (
                    message.get("model") != SYNTHETIC_MODEL) and not (main_only and row.get("isSidechain")):
                rows.setdefault(message["id"], []).append(message)
    return {ident: messages for ident, messages in rows.items()
            if all(_plain_usage(m.get("usage")) for m in messages)}


@dataclass(frozen=True)
class CacheMissRows(TranscriptFault):
    """The transcript form of ``cache_read_drop``: a main call's rows carry the API's usage of a cache miss, its
    cache read (all but ``keep_prefix`` tokens) moved into cache creation, the prompt total unchanged, as Claude
    Code copies the API's usage into every row of the call. Keeps the truth."""

    name = "cache_read_drop"
    source = CacheReadDrop.source
    rate: float = 0.3
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""
    keep_prefix: int = 0
    """Cache-read tokens left after the miss."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        keep = self.keep_prefix
        calls = {i: m for i, m in _call_rows(transcript, main_only=True).items()
                 if m[0]["usage"]["cache_read_input_tokens"] > keep}
        for ident in FaultStream.pick(rng, list(calls), self.rate):
            for message in calls[ident]:
                usage = message["usage"] = dict(message["usage"])
                moved = usage["cache_read_input_tokens"] - keep
                usage["cache_read_input_tokens"] = keep
                usage["cache_creation_input_tokens"] += moved
                nested = usage.get("cache_creation")
                if isinstance(nested, dict) and is_count(nested.get("ephemeral_5m_input_tokens")):
                    usage["cache_creation"] = {**nested,
                                               "ephemeral_5m_input_tokens": nested["ephemeral_5m_input_tokens"] + moved}


@dataclass(frozen=True)
class GatewayRows(TranscriptFault):
    """The transcript form of ``uncached_gateway_usage``: a call's rows carry a gateway's usage without cache
    fields, the whole prompt its ``input_tokens``, as Claude Code copies the API's usage into the rows. Keeps the
    truth."""

    name = "uncached_gateway_usage"
    source = UncachedGatewayUsage.source
    rate: float = 1.0
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        calls = _call_rows(transcript)
        for ident in FaultStream.pick(rng, list(calls), self.rate):
            for message in calls[ident]:
                usage = message["usage"]
                message["usage"] = {"input_tokens": sum(usage[k] for k in USAGE_KEYS),
                                    "output_tokens": usage.get("output_tokens", 1)}


def _plain_usage(usage: Any) -> bool:
    """A row's usage holds the three prompt counts as integers and no iterations yet."""
    return isinstance(usage, dict) and not usage.get("iterations") and all(
        is_count(usage.get(k)) for k in USAGE_KEYS)


@dataclass(frozen=True)
class NestedCacheRows(TranscriptFault):
    """The transcript form of ``nested_cache_creation``: a call's rows carry the API's usage of a cache write given
    only in the nested ``cache_creation`` breakdown (``cache_creation_input_tokens`` 0, the write split between
    ``ephemeral_5m_input_tokens`` and ``ephemeral_1h_input_tokens``), the rest of the usage as it was. Keeps the
    truth (the nested breakdown still tells the write).

    Inferred, not recorded: no capture holds such a call. Claude Code writes the API's usage into every row of the
    call (its rows carry the nested breakdown beside the top-level count in the 2.1.330-2.1.332 recordings), and its
    2.1.152 changelog fixed ``cache_creation_input_tokens`` "reporting as 0" for this usage, so the rows are written
    as the API sent it, as Claude Code did before that fix."""

    name = "nested_cache_creation"
    source = NestedCacheCreationOnly.source
    rate: float = 0.5
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        calls = {i: m for i, m in _call_rows(transcript).items() if m[0]["usage"]["cache_creation_input_tokens"] > 0}
        for ident in FaultStream.pick(rng, list(calls), self.rate):
            created = calls[ident][0]["usage"]["cache_creation_input_tokens"]
            short = rng.randint(0, created)
            for message in calls[ident]:
                message["usage"] = {**message["usage"], "cache_creation_input_tokens": 0, "cache_creation": {
                    "ephemeral_5m_input_tokens": short, "ephemeral_1h_input_tokens": created - short}}


def as_written(value: Any) -> Any:
    """``value`` as Claude Code writes it into a JSONL row (``JSON.stringify``): NaN as ``null``, a whole float as
    the integer it equals (JavaScript has one number type)."""
    if isinstance(value, float):
        return None if math.isnan(value) else int(value) if value.is_integer() else value
    return value


@dataclass(frozen=True)
class GarbageRows(TranscriptFault):
    """The transcript form of ``garbage_values``: counts a gateway sent that are not counts, in the rows Claude Code
    writes of them. ``fields="bystander"`` spoils counts a context tracker does not need: a row's ``output_tokens``
    and a boundary's ``compactMetadata.preTokens``; keeps the truth. ``fields="prompt"`` spoils one of a call's
    ``input``/``cache_creation``/``cache_read`` counts on all its rows (``null``, and NaN, which is written ``null``,
    to ``input_tokens`` only, as ``null`` on the stream): a main call's points from its rows until the next main
    call or compaction in that file are not knowable, a numeric string's band still an answer (changes the truth on
    purpose).

    Inferred, not recorded: no capture holds a gateway's garbage. Claude Code writes the usage it parsed with
    ``JSON.stringify`` (:func:`as_written`), so NaN is written ``null`` and a whole float as the integer: that kind
    leaves a prompt count as it was, and its point keeps its truth."""

    name = "garbage_values"
    source = GarbageValues.source
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    kinds: tuple[str, ...] = tuple(_GARBAGE)
    """The kinds of garbage drawn from (each value draws one)."""
    fields: str = "bystander"
    """``bystander`` or ``prompt``."""

    @property
    def keeps_truth(self) -> bool:
        return self.fields == "bystander"

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        if self.fields == "bystander":
            spots = [(row["message"]["usage"], "output_tokens") for file in transcript.files.values()
                     for row in file.rows if row.get("type") == "assistant" and isinstance(
                         row.get("message"), dict) and isinstance(row["message"].get("usage"), dict)
                     and "output_tokens" in row["message"]["usage"]]
            spots += [(row["compactMetadata"], "preTokens") for file in transcript.files.values()
                      for row in file.rows if isinstance(row.get("compactMetadata"), dict)
                      and "preTokens" in row["compactMetadata"]]
            for holder, key in FaultStream.pick(rng, spots, self.rate):
                holder[key] = as_written(_GARBAGE[rng.choice(self.kinds)](holder[key]))
            return
        plain = _call_rows(transcript)
        calls = [(file, run) for file, run in _file_runs(transcript, main_only=False)
                 if file.rows[run[0]]["message"].get("id") in plain]
        for file, run in FaultStream.pick(rng, calls, self.rate):
            key, kind = rng.choice(USAGE_KEYS), rng.choice(self.kinds)
            if kind in ("null", "nan"):  # both written null: the API's cache counts are nullable (null reads as 0)
                key = "input_tokens"
            before = file.rows[run[0]]["message"]["usage"][key]
            value = as_written(_GARBAGE[kind](before))
            for index in run:
                message = file.rows[index]["message"]
                message["usage"] = {**message["usage"], key: value}
            spoiled = value != before or type(value) is not type(before)  # a whole float is written as it was
            if spoiled and not file.rows[run[0]].get("isSidechain"):
                _unknowable_from(transcript, file, run[0], _RETYPED if kind in LENIENT_GARBAGE else None)
