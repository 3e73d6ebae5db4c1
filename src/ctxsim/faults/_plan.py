"""Faults: named, composable, seeded transformations of rendered scripts, each modelling a failure seen in the wild.

The data flows world -> wire -> faults -> transport: a fault takes the ``list[Script]`` that
:func:`ctxsim.wire.render` returns and returns a new one (the input is never mutated; frames are deep-copied
where changed), drawing every choice from a ``random.Random``. A :class:`FaultPlan` is an ordered tuple of faults
and a seed; :func:`apply` plays it, and the same plan on the same scripts gives the same bytes::

    scripts = apply(FaultPlan((DuplicateBlocks(), CacheReadDrop(rate=1.0)), seed=7), render(session))
    report = ctxsim.check.run_tracker(tracker, session, scripts=scripts)

Each fault exposes its :attr:`~Fault.name`, :attr:`~Fault.source` (the public reports it models),
:attr:`~Fault.params` and :attr:`~Fault.keeps_truth`. A fault either **keeps the truth** (every remaining
observation point has the truth it had, so a correct tracker must survive it) or **changes it on purpose** and
says how in its docstring: points become not knowable (only an "unknown" estimate passes there), points are
removed with the frames that closed them, or the window in force changes. Faults only read the frames, so they
work on rendered and recorded streams alike.

=========================  =====  ========================================================================
fault                      truth  what it does
=========================  =====  ========================================================================
duplicate_blocks           keeps  per-block messages repeated byte for byte (same uuid)
replayed_messages          keeps  a call's messages re-emitted with new uuids, after it or before a later result
streaming_partials         keeps  stale partial copies (stop_reason null) before each block; last one final
stale_output_tokens        keeps  per-block output counts stale, or stale then final
repeated_message_delta     keeps  several cumulative ``message_delta`` events per call (partial messages)
synthetic_errors           keeps  ``<synthetic>`` zero-usage error messages before results
reused_message_ids         keeps  distinct main calls sharing a message id
missing_request_ids        keeps  request ids absent or empty
cache_read_drop            keeps  cache read moved into cache creation (TTL, resume, microcompaction)
nested_cache_creation      keeps  cache writes only in the nested ``cache_creation`` breakdown
uncached_gateway_usage     keeps  no cache fields; ``input_tokens`` is the whole prompt
usage_iterations           keeps  usage summed over ``iterations``; the last message iteration is the context
missing_usage              param  usage None / empty / output only on some blocks (keeps) or a whole call
garbage_values             param  negative, strings, floats, NaN, huge, null, bool in counts
interleaved_subagents      keeps  subagent calls after a later main call
missing_result             keeps  a query without its result (its point goes too)
zeroed_error_result        keeps  ``error_during_execution`` result with zeroed usage and modelUsage
compaction_metadata        param  camelCase keys (keeps), no ``post_tokens`` or no metadata (not knowable)
inserted_compaction        moves  a compaction boundary inserted, with or without its post size
model_switch               moves  the model and the window in force change mid-session
wrong_context_window       keeps  results report the other context window
truncated_stream           keeps  the stream stops part-way (later points go)
=========================  =====  ========================================================================

The transcript files Claude Code writes have faults of their own (:mod:`ctxsim.faults._transcript`: the older
interleaved-sidechain layout, replayed rows, synthetic error rows, compactions without ``postTokens``, a row
half-written when read), played on a :class:`~ctxsim.wire.TranscriptRender` by :func:`apply_transcript`, which
also gives the stream faults above that model the same reports their transcript form.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..wire import Script, TranscriptRender
from ._base import Fault
from ._calls import (
    DuplicateBlocks,
    MissingRequestIds,
    RepeatedMessageDelta,
    ReplayedMessages,
    ReusedMessageIds,
    StaleOutputTokens,
    StreamingPartials,
    SyntheticErrorMessages,
)
from ._flow import (
    CompactionMetadata,
    InsertedCompaction,
    InterleavedSubagents,
    MissingResult,
    ModelSwitch,
    TruncatedStream,
    WrongContextWindow,
    ZeroedErrorResult,
)
from ._transcript import (
    TRANSCRIPT_REGISTRY,
    CompactionWithoutPostTokens,
    HalfWrittenRow,
    InterleavedSidechains,
    ReplayedRows,
    SyntheticErrorRows,
    TranscriptFault,
    transcript_faults,
)
from ._usage import (
    AdvisorIterations,
    CacheReadDrop,
    GarbageValues,
    MissingUsage,
    NestedCacheCreationOnly,
    UncachedGatewayUsage,
)

__all__ = [
    "REGISTRY",
    "TRANSCRIPT_REGISTRY",
    "AdvisorIterations",
    "CacheReadDrop",
    "CompactionMetadata",
    "CompactionWithoutPostTokens",
    "DuplicateBlocks",
    "Fault",
    "FaultPlan",
    "GarbageValues",
    "HalfWrittenRow",
    "InsertedCompaction",
    "InterleavedSidechains",
    "InterleavedSubagents",
    "MissingRequestIds",
    "MissingResult",
    "MissingUsage",
    "ModelSwitch",
    "NestedCacheCreationOnly",
    "RepeatedMessageDelta",
    "ReplayedMessages",
    "ReplayedRows",
    "ReusedMessageIds",
    "StaleOutputTokens",
    "StreamingPartials",
    "SyntheticErrorMessages",
    "SyntheticErrorRows",
    "TranscriptFault",
    "TruncatedStream",
    "UncachedGatewayUsage",
    "WrongContextWindow",
    "ZeroedErrorResult",
    "apply",
    "apply_transcript",
    "fault_from_spec",
    "transcript_faults",
]

REGISTRY: dict[str, type[Fault]] = {cls.name: cls for cls in (
    DuplicateBlocks, ReplayedMessages, StreamingPartials, StaleOutputTokens, RepeatedMessageDelta,
    SyntheticErrorMessages, ReusedMessageIds, MissingRequestIds, CacheReadDrop, NestedCacheCreationOnly,
    UncachedGatewayUsage, AdvisorIterations, MissingUsage, GarbageValues, InterleavedSubagents, MissingResult,
    ZeroedErrorResult, CompactionMetadata, InsertedCompaction, ModelSwitch, WrongContextWindow, TruncatedStream,
)}
"""Every fault class by name; ``REGISTRY[name](**params)`` builds one (``TypeError``/``ValueError`` if bad)."""


def fault_from_spec(entry: str | Mapping[str, Mapping[str, Any] | None]) -> Fault:
    """The fault a scenario entry names: ``"NAME"`` or ``{"NAME": {PARAM: VALUE}}``.

    Raises ``ValueError`` (``ctxsim: ...``) for an unknown name or parameter, or a bad value.
    """
    if isinstance(entry, str):
        name, params = entry, {}
    elif isinstance(entry, Mapping) and len(entry) == 1:
        ((name, given),) = entry.items()
        params = dict(given or {})
    else:
        raise ValueError(f"ctxsim: a fault is NAME or {{NAME: {{PARAM: VALUE}}}}, got {entry!r}")
    cls = REGISTRY.get(name)
    if cls is None:
        raise ValueError(f"ctxsim: no fault {name!r}; known: {', '.join(sorted(REGISTRY))}")
    known = [f.name for f in fields(cls)]
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"ctxsim: fault {name}: unknown parameter {', '.join(unknown)} (known: "
                         f"{', '.join(known) or 'none'})")
    return cls(**params)


@dataclass(frozen=True)
class FaultPlan:
    """Faults applied in order, every choice drawn from one generator seeded by ``seed``.

    In a scenario file the plan is the ``faults:`` list and the seed is ``world.seed``.
    """

    faults: tuple[Fault, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.faults, tuple):
            object.__setattr__(self, "faults", tuple(self.faults))
        for fault in self.faults:
            if not isinstance(fault, Fault):
                raise TypeError(f"ctxsim: a FaultPlan holds faults of ctxsim.faults, got {fault!r}")

    @property
    def keeps_truth(self) -> bool:
        """True when every fault of the plan keeps the truth."""
        return all(f.keeps_truth for f in self.faults)

    @property
    def names(self) -> tuple[str, ...]:
        """The faults' names, in order."""
        return tuple(f.name for f in self.faults)

    def spec(self) -> list[dict[str, dict[str, Any]]]:
        """The plan as a scenario's ``faults:`` list (the seed goes to ``world.seed``)."""
        return [f.spec() for f in self.faults]

    @classmethod
    def from_spec(cls, entries: Iterable[str | Mapping[str, Any]], seed: int = 0) -> FaultPlan:
        """The plan a scenario's ``faults:`` list describes (see :func:`fault_from_spec`)."""
        return cls(tuple(fault_from_spec(e) for e in entries), seed)


def apply(plan: FaultPlan, scripts: Sequence[Script]) -> list[Script]:
    """``scripts`` with every fault of ``plan`` applied in order; ``scripts`` itself is left as it was.

    Deterministic: the same plan (faults, parameters, seed) on the same scripts gives the same frames.
    """
    rng = random.Random(f"ctxsim.faults:{plan.seed}")
    out = list(scripts)
    for fault in plan.faults:
        out = fault(out, rng)
    return out


def apply_transcript(plan: FaultPlan, transcript: TranscriptRender) -> TranscriptRender:
    """``transcript`` with the transcript faults ``plan`` stands for applied in order (:func:`transcript_faults`: its
    :class:`TranscriptFault`\\ s, and the transcript form of its stream faults that have one); ``transcript`` itself
    is left as it was. Deterministic: the same plan (faults, parameters, seed) on the same transcript gives the same
    rows."""
    out = copy.deepcopy(transcript)
    rng = random.Random(f"ctxsim.faults._transcript:{plan.seed}")
    for fault in transcript_faults(plan.faults):
        fault.edit(out, rng)
        out.recount()
    return out
