"""Fault plans: the registry of stream faults by name, :class:`FaultPlan` and :func:`apply` (the package's face
says what faults are for and lists them)."""

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
