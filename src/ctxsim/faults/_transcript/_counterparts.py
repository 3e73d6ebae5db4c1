"""The transcript form of each stream fault that has one (:func:`transcript_faults`, :data:`COUNTERPARTS`), and the
forms of those that edit a call's per-block messages: Claude Code writes one transcript row
per content block of a call, each with the API's ``message.id``, its ``requestId`` and the call's usage, so what a
fault does to a call's messages on the SDK stream it does to the call's rows in the file.

==========================  ===============================================================================
stream fault                its rows
==========================  ===============================================================================
``duplicate_blocks``        some of a call's rows written again, byte for byte (same uuid), right before
``missing_request_ids``     a call's rows without ``requestId`` (or with ``""``)
``stale_output_tokens``     a main call's rows with a stale ``output_tokens`` (the last one final, if growing)
``reused_message_ids``      a main call's rows with the ``message.id`` of an earlier main call
``missing_usage``           a call's rows with their usage stripped (some of them, or all)
``streaming_partials``      partial rows (new uuid, no stop reason, stale output) before a main call's rows
==========================  ===============================================================================
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...wire import TranscriptRender
from .._base import Fault, FaultStream
from .._calls import (
    DuplicateBlocks,
    MissingRequestIds,
    ReplayedMessages,
    ReusedMessageIds,
    StaleOutputTokens,
    StreamingPartials,
    SyntheticErrorMessages,
)
from .._flow import CompactionMetadata, InterleavedSubagents, ModelSwitch
from .._units import USAGE_KEYS, is_count
from .._usage import (
    _SHAPES,
    AdvisorIterations,
    CacheReadDrop,
    GarbageValues,
    MissingUsage,
    NestedCacheCreationOnly,
    UncachedGatewayUsage,
)
from ._faults import (
    CompactionWithoutPostTokens,
    InterleavedSidechains,
    ReplayedRows,
    SyntheticErrorRows,
    TranscriptFault,
    _file_runs,
    _runs,
    _unknowable_from,
)
from ._flow_rows import ModelSwitchRows
from ._usage_rows import CacheMissRows, GarbageRows, GatewayRows, IterationRows, NestedCacheRows

__all__ = ["COUNTERPARTS", "transcript_faults"]


@dataclass(frozen=True)
class DuplicateRows(TranscriptFault):
    """The transcript form of ``duplicate_blocks``: some of a call's per-block rows written more than once, byte for
    byte (same uuid, ``message.id``, ``requestId`` and usage), each copy right before its row. Keeps the truth."""

    name = "duplicate_blocks"
    source = DuplicateBlocks.source
    rate: float = 0.5
    """The share of calls with repeated rows (at least one call)."""
    copies: int = 1
    """Extra copies of each repeated row."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        calls = _file_runs(transcript, main_only=False)
        chosen = [(file, index) for file, run in FaultStream.pick(rng, calls, self.rate)
                  for index in FaultStream.pick(rng, run, 0.5)]
        for file, index in sorted(chosen, key=lambda pair: (pair[0].path, -pair[1])):  # later rows first
            before = file.order[index - 1] if index else file.order[index] - 1
            step = (file.order[index] - before) / (self.copies + 1)
            for k in range(self.copies):
                file.rows.insert(index, copy.deepcopy(file.rows[index + k]))
                file.order.insert(index, file.order[index + k] - step * (k + 1))


@dataclass(frozen=True)
class RowsWithoutRequestIds(TranscriptFault):
    """The transcript form of ``missing_request_ids``: a call's rows without ``requestId`` (``absent``) or with
    ``""`` (``empty``). Keeps the truth."""

    name = "missing_request_ids"
    source = MissingRequestIds.source
    rate: float = 0.5
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""
    mode: str = "absent"
    """``absent`` or ``empty``."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        for file, run in FaultStream.pick(rng, _file_runs(transcript, main_only=False), self.rate):
            for index in run:
                if self.mode == "absent":
                    file.rows[index].pop("requestId", None)
                else:
                    file.rows[index]["requestId"] = ""


@dataclass(frozen=True)
class StaleOutputRows(TranscriptFault):
    """The transcript form of ``stale_output_tokens``: a main call's rows carry a small stale ``output_tokens``, and
    in ``growing`` mode its last row the final count, as transcripts before Claude Code 2.1.97 did
    (``9,9,9 -> 243``; ryoppippi/ccusage#901). Keeps the truth (only outputs change)."""

    name = "stale_output_tokens"
    source = StaleOutputTokens.source
    rate: float = 0.5
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""
    mode: str = "growing"
    """``stale`` (one small value on every row) or ``growing`` (stale, then the final count on the last row)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        calls = [(file, run) for file, run in _file_runs(transcript, main_only=True)
                 if all(is_count(_usage(file.rows[i]).get("output_tokens")) for i in run)]
        for file, run in FaultStream.pick(rng, calls, self.rate):
            stale = rng.randint(1, 9)
            final = _usage(file.rows[run[-1]])["output_tokens"]
            for index in run:
                _set_output(file.rows[index], stale)
            if self.mode == "growing":
                _set_output(file.rows[run[-1]], max(final, stale))


def _usage(row: dict[str, Any]) -> dict[str, Any]:
    usage = row["message"].get("usage")
    return usage if isinstance(usage, dict) else {}


def _set_output(row: dict[str, Any], value: int) -> None:
    row["message"]["usage"] = {**_usage(row), "output_tokens": value}


@dataclass(frozen=True)
class ReusedIdRows(TranscriptFault):
    """The transcript form of ``reused_message_ids``: a main call's rows carry the ``message.id`` of the main call
    before it (``previous``) or of the file's first (``first``), each keeping its own ``requestId`` and usage; never
    between two calls with the same prompt (a replay then). Keeps the truth."""

    name = "reused_message_ids"
    source = ReusedMessageIds.source
    rate: float = 0.3
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""
    reuse: str = "previous"
    """``previous`` or ``first``."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        for file in transcript.files.values():
            runs = _runs(file, main_only=True)
            ids = [file.rows[run[0]]["message"]["id"] for run in runs]
            prompts: dict[Any, set[int | None]] = {}
            for ident, run in zip(ids, runs):
                prompts.setdefault(ident, set()).add(_prompt(file.rows[run[0]]))
            for n in FaultStream.pick(rng, list(range(1, len(runs))), self.rate):
                reused = ids[n - 1] if self.reuse == "previous" else ids[0]
                prompt = _prompt(file.rows[runs[n][0]])
                if prompt in prompts[reused]:
                    continue  # the same id and prompt would make it a replay: nothing could tell them apart
                prompts[reused].add(prompt)
                for index in runs[n]:
                    file.rows[index]["message"] = {**file.rows[index]["message"], "id": reused}


@dataclass(frozen=True)
class RowsWithoutUsage(TranscriptFault):
    """The transcript form of ``missing_usage``: a call's rows with their usage stripped (``null``, ``{}`` or only
    ``output_tokens``), as Claude Code writes the usage the API (or a gateway) gave it. ``some_blocks`` strips some
    rows of a call of several and leaves at least one whole: keeps the truth. ``whole_call`` strips every row of
    the call and, for a main call, makes the points from its first row until the next main call or compaction in
    that file not knowable (nothing in the file tells its prompt), as on the stream."""

    name = "missing_usage"
    source = MissingUsage.source
    rate: float = 0.3
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""
    shape: str = "none"
    """``none`` (``usage: null``), ``empty`` (``{}``) or ``output_only``."""
    scope: str = "some_blocks"
    """``some_blocks`` or ``whole_call``."""

    @property
    def keeps_truth(self) -> bool:
        return self.scope == "some_blocks"

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        whole = self.scope == "whole_call"
        calls = [(file, run) for file, run in _file_runs(transcript, main_only=False)
                 if (whole or len(run) >= 2) and all(isinstance(file.rows[i]["message"].get("usage"), dict)
                                                    for i in run)]
        for file, run in FaultStream.pick(rng, calls, self.rate):
            if whole:
                stripped = run
            else:
                kept = rng.choice(run)
                stripped = FaultStream.pick(rng, [i for i in run if i != kept], 0.5)
            for index in stripped:
                message = file.rows[index]["message"]
                file.rows[index]["message"] = {**message, "usage": _SHAPES[self.shape](_usage(file.rows[index]))}
            if whole and not file.rows[run[0]].get("isSidechain"):
                _unknowable_from(transcript, file, run[0])


@dataclass(frozen=True)
class PartialRows(TranscriptFault):
    """The transcript form of ``streaming_partials``: before Claude Code 2.1.97 each per-block row of a main call
    was first written as a streaming partial (a new uuid, ``stop_reason`` null, a stale ``output_tokens``) and then
    written final; the call's last row carries the final count and stop reason (anthropics/claude-code#22686,
    ryoppippi/ccusage#901: first-wins kept out 9 instead of 159). Keeps the truth (every copy has the same
    prompt)."""

    name = "streaming_partials"
    source = StreamingPartials.source
    rate: float = 0.5
    """The share of the calls it can act on that it acts on (at least one, when there is any)."""
    partials: int = 2
    """Partial rows written before each per-block row."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        calls = [(file, run) for file, run in _file_runs(transcript, main_only=True)
                 if all(is_count(_usage(file.rows[i]).get("output_tokens")) for i in run)]
        chosen = FaultStream.pick(rng, calls, self.rate)
        for file, run in sorted(chosen, key=lambda pair: (pair[0].path, -pair[1][0])):  # later calls first
            stale = rng.randint(1, 9)
            final = file.rows[run[-1]]["message"]
            for index in reversed(run):
                row = file.rows[index]
                row["message"] = {**row["message"], "stop_reason": None,
                                  "usage": {**_usage(row), "output_tokens": stale}}
                before = file.order[index - 1] if index else file.order[index] - 1
                step = (file.order[index] - before) / (self.partials + 1)
                for k in range(self.partials):
                    partial = {**copy.deepcopy(row), "uuid": FaultStream.new_uuid(rng)}
                    file.rows.insert(index, partial)
                    file.order.insert(index, file.order[index + k] - step * (k + 1))
            last = file.rows[run[-1] + self.partials * len(run)]
            last["message"] = {**last["message"], "stop_reason": final["stop_reason"], "usage": final["usage"]}


def _prompt(row: dict[str, Any]) -> int | None:
    usage = _usage(row)
    counts = [usage.get(k) for k in USAGE_KEYS]
    return sum(c for c in counts if isinstance(c, int)) if all(is_count(c) for c in counts) else None


def _counterpart(fault: Fault) -> TranscriptFault | None:
    if isinstance(fault, InterleavedSubagents):
        return InterleavedSidechains(rate=fault.rate)
    if isinstance(fault, ReplayedMessages):
        return ReplayedRows(rate=fault.rate, where=fault.where)
    if isinstance(fault, SyntheticErrorMessages):
        return SyntheticErrorRows(rate=fault.rate)
    if isinstance(fault, CompactionMetadata) and fault.mode != "camel_case":
        return CompactionWithoutPostTokens(rate=fault.rate, mode=fault.mode)
    if isinstance(fault, AdvisorIterations):
        return IterationRows(rate=fault.rate)
    if isinstance(fault, CacheReadDrop):
        return CacheMissRows(rate=fault.rate, keep_prefix=fault.keep_prefix)
    if isinstance(fault, UncachedGatewayUsage):
        return GatewayRows(rate=fault.rate)
    if isinstance(fault, NestedCacheCreationOnly):
        return NestedCacheRows(rate=fault.rate)
    if isinstance(fault, GarbageValues):
        return GarbageRows(rate=fault.rate, kinds=fault.kinds, fields=fault.fields)
    if isinstance(fault, ModelSwitch):
        return ModelSwitchRows(to_model=fault.to_model, to_window=fault.to_window, at=fault.at)
    if isinstance(fault, DuplicateBlocks):
        return DuplicateRows(rate=fault.rate, copies=fault.copies)
    if isinstance(fault, MissingRequestIds):
        return RowsWithoutRequestIds(rate=fault.rate, mode=fault.mode)
    if isinstance(fault, StaleOutputTokens):
        return StaleOutputRows(rate=fault.rate, mode=fault.mode)
    if isinstance(fault, ReusedMessageIds):
        return ReusedIdRows(rate=fault.rate, reuse=fault.reuse)
    if isinstance(fault, StreamingPartials):
        return PartialRows(rate=fault.rate, partials=fault.partials)
    if isinstance(fault, MissingUsage):
        return RowsWithoutUsage(rate=fault.rate, shape=fault.shape, scope=fault.scope)
    return None


COUNTERPARTS = ("interleaved_subagents", "replayed_messages", "synthetic_errors", "compaction_metadata",
                "usage_iterations", "cache_read_drop", "uncached_gateway_usage", "nested_cache_creation",
                "model_switch", "garbage_values", "duplicate_blocks", "missing_request_ids", "stale_output_tokens",
                "reused_message_ids", "missing_usage", "streaming_partials")
"""The stream faults with a transcript form (``compaction_metadata`` in its ``no_post`` and ``no_metadata``
modes; ``camel_case`` is how transcripts always spell it)."""


def transcript_faults(faults: Iterable[Fault]) -> tuple[TranscriptFault, ...]:
    """The transcript faults ``faults`` stand for, in order: each :class:`TranscriptFault` itself, each stream
    fault of :data:`COUNTERPARTS` its transcript form; the other stream faults have none."""
    out = []
    for fault in faults:
        made = fault if isinstance(fault, TranscriptFault) else _counterpart(fault)
        if made is not None:
            out.append(made)
    return tuple(out)
