"""The API's usage of a call as the transcript rows carry it: the transcript form of the faults of the API's own usage.

Claude Code copies the usage the API (or a gateway) reported for a call into every ``assistant`` row of the call, so
a fault of that usage on the stream is the same fault on the call's rows (:func:`ctxsim.faults.transcript_faults`
picks these forms; :func:`ctxsim.faults.apply_transcript` plays them).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..wire import TranscriptRender
from ._base import FaultStream
from ._transcript import SYNTHETIC_MODEL, TranscriptFault
from ._units import USAGE_KEYS, is_count
from ._usage import CacheReadDrop, NestedCacheCreationOnly, UncachedGatewayUsage, iterated

__all__ = ["CacheMissRows", "GatewayRows", "IterationRows", "NestedCacheRows"]


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
