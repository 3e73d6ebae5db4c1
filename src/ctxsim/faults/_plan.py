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
from ._counterparts import COUNTERPARTS, transcript_faults
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
from ._surfaces import FAULT_SURFACES
from ._transcript import (
    TRANSCRIPT_REGISTRY,
    CompactionWithoutPostTokens,
    HalfWrittenRow,
    InterleavedSidechains,
    ReplayedRows,
    SyntheticErrorRows,
    TranscriptFault,
)
from ._units import is_count
from ._usage import (
    AdvisorIterations,
    CacheReadDrop,
    GarbageValues,
    MissingUsage,
    NestedCacheCreationOnly,
    UncachedGatewayUsage,
)

__all__ = [
    "PAYLOAD_FORMS",
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
    "apply_statusline",
    "apply_transcript",
    "carried_on",
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


def apply_statusline(plan: FaultPlan, transcript: TranscriptRender,
                     payloads: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The statusline payloads Claude Code pipes at the points of ``transcript`` (the plan's transcript form
    applied, :func:`apply_transcript`), ``payloads[i]`` the payload at its point ``i``
    (:func:`ctxsim.wire.statusline_payloads`), with what ``plan`` changes in them; ``payloads`` itself is left as
    it was. A call the API reported over several inference iterations (``usage_iterations``): where the payload's
    ``current_usage`` is that call's (the latest main-chain row of the file in force), it is the row's top-level
    usage, the iterations' sum, as Claude Code adds it up (its own gauge inflates: Bugs in the wild B10), and the
    percentages follow. A cache miss (``cache_read_drop``) or a gateway's usage without cache fields
    (``uncached_gateway_usage``): ``current_usage`` is the row's split of the same prompt, a count the API left out
    shown as 0. A wrong window (``wrong_context_window``): ``context_window_size`` is the window reported, and the
    percentages are of it."""
    out = [copy.deepcopy(dict(p)) for p in payloads]
    if not set(PAYLOAD_FORMS) & set(plan.names):
        return out
    _with_usage_shown(transcript, out)
    for fault in plan.faults:
        if isinstance(fault, WrongContextWindow):
            _with_window_reported(out, fault.reported)
    return out


def _with_window_reported(payloads: list[dict[str, Any]], reported: int | None) -> None:
    """``payloads`` (edited in place) with the ``context_window_size`` a wrong window makes Claude Code report
    (``reported``; None: the other of 200k and 1M), ``current_usage`` as it was, the percentages of that window
    (anthropics/claude-code#76751: 80% at 160,781 on a 1M session, then pegged at 100%)."""
    from ..wire import context_window

    for payload in payloads:
        shown = payload.get("context_window")
        if not isinstance(shown, dict) or not is_count(shown.get("context_window_size")):
            continue
        window = reported or (200_000 if shown["context_window_size"] >= 1_000_000 else 1_000_000)
        current = shown.get("current_usage")
        redone = context_window(dict(current) if isinstance(current, dict) else None, window)
        payload["context_window"] = {**shown, **{k: redone[k] for k in (
            "context_window_size", "used_percentage", "remaining_percentage")}}


def _with_usage_shown(transcript: TranscriptRender, out: list[dict[str, Any]]) -> None:
    """``out`` (edited in place) with the ``current_usage`` Claude Code shows for the latest main-chain row of the
    file in force at each point (:func:`_as_shown`)."""
    from ..wire import context_window, exceeds_200k_tokens

    for point, payload in zip(transcript.points, out):
        shown = payload.get("context_window")
        current = shown.get("current_usage") if isinstance(shown, dict) else None
        file = transcript.files.get(point.transcript)
        if not isinstance(current, dict) or file is None:
            continue
        usage = _latest_main_usage(file.rows[:point.rows.get(file.path, 0)])
        copied = _as_shown(usage, current) if usage is not None else None
        if copied is None:
            continue
        assert isinstance(shown, dict)
        payload["context_window"] = context_window(copied, shown["context_window_size"])
        payload["exceeds_200k_tokens"] = exceeds_200k_tokens(copied)


def _as_shown(usage: Mapping[str, Any], current: Mapping[str, Any]) -> dict[str, int] | None:
    """The ``current_usage`` Claude Code shows for the call whose row has ``usage`` where the unfaulted payload
    shows ``current``, or None where the payload is not that call's or is as it was: a call over several iterations
    shows its top-level sum; a call whose usage splits the same prompt otherwise (a cache miss, a gateway without
    cache fields) shows the API's split, a count the API left out as 0."""
    iterations = usage.get("iterations")
    steps = [i for i in iterations if isinstance(i, dict) and i.get("type") == "message"] if isinstance(
        iterations, list) else []
    if len(steps) >= 2:
        if any(current.get(k) != steps[-1].get(k) for k in _PROMPT_KEYS):
            return None
        return {k: usage[k] for k in ("input_tokens", "output_tokens", *_PROMPT_KEYS[1:])}
    copied = {k: usage.get(k, 0) for k in ("input_tokens", "output_tokens", *_PROMPT_KEYS[1:])}
    if not all(is_count(v) for v in copied.values()) or not all(is_count(current.get(k)) for k in _PROMPT_KEYS):
        return None
    if sum(copied[k] for k in _PROMPT_KEYS) != sum(current[k] for k in _PROMPT_KEYS) or all(
            copied[k] == current[k] for k in _PROMPT_KEYS):
        return None
    return {**copied, "output_tokens": current.get("output_tokens", copied["output_tokens"])}


_PROMPT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _latest_main_usage(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The usage of the latest main-chain, non-synthetic ``assistant`` row of ``rows`` (None: none has one)."""
    for row in reversed(rows):
        message = row.get("message")
        if (row.get("type") == "assistant" and not row.get("isSidechain") and isinstance(message, dict)
                and message.get("model") != "<synthetic>" and isinstance(message.get("usage"), dict)):
            return dict(message["usage"])
    return None


PAYLOAD_FORMS = ("usage_iterations", "cache_read_drop", "uncached_gateway_usage", "wrong_context_window")
"""The faults :func:`apply_statusline` gives the statusline payload a form of."""


def carried_on(name: str) -> frozenset[str]:
    """The surfaces (:data:`ctxsim.faults.SURFACES`) fault ``name`` is real on and that ctxsim writes it into: the
    SDK stream for a stream fault, the transcript files for a transcript fault or a stream fault with a transcript
    form (:func:`apply_transcript`), the payload for one of :data:`PAYLOAD_FORMS`. A tracker reading none of them
    cannot meet the fault: its input is the same with or without it."""
    written = ({"sdk"} if name in REGISTRY else set()) | (
        {"transcript"} if name in TRANSCRIPT_REGISTRY or name in COUNTERPARTS else set()) | (
        {"statusline"} if name in PAYLOAD_FORMS else set())
    return FAULT_SURFACES[name].names & frozenset(written)
