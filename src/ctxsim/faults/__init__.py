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

The transcript files Claude Code writes have faults of their own (:class:`TranscriptFault`, :data:`TRANSCRIPT_REGISTRY`:
the older interleaved-sidechain layout, replayed rows, synthetic error rows, compactions without ``postTokens``, a row
half-written when read), played on a :class:`~ctxsim.wire.TranscriptRender` by :func:`apply_transcript`, which also
gives the stream faults above that model the same reports their transcript form (:data:`COUNTERPARTS`).
:func:`ctxsim.surfaces.apply_statusline` gives the statusline payloads what the faulted transcript makes Claude Code
show in them, and :mod:`ctxsim.surfaces` says on which surfaces each fault is real.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._base import Fault as Fault
    from ._calls import (
        DuplicateBlocks as DuplicateBlocks,
        MissingRequestIds as MissingRequestIds,
        RepeatedMessageDelta as RepeatedMessageDelta,
        ReplayedMessages as ReplayedMessages,
        ReusedMessageIds as ReusedMessageIds,
        StaleOutputTokens as StaleOutputTokens,
        StreamingPartials as StreamingPartials,
        SyntheticErrorMessages as SyntheticErrorMessages,
    )
    from ._flow import (
        CompactionMetadata as CompactionMetadata,
        InsertedCompaction as InsertedCompaction,
        InterleavedSubagents as InterleavedSubagents,
        MissingResult as MissingResult,
        ModelSwitch as ModelSwitch,
        TruncatedStream as TruncatedStream,
        WrongContextWindow as WrongContextWindow,
        ZeroedErrorResult as ZeroedErrorResult,
    )
    from ._plan import (
        REGISTRY as REGISTRY,
        FaultPlan as FaultPlan,
        apply as apply,
        apply_transcript as apply_transcript,
        fault_from_spec as fault_from_spec,
    )
    from ._transcript import (
        COUNTERPARTS as COUNTERPARTS,
        TRANSCRIPT_REGISTRY as TRANSCRIPT_REGISTRY,
        CompactionWithoutPostTokens as CompactionWithoutPostTokens,
        HalfWrittenRow as HalfWrittenRow,
        InterleavedSidechains as InterleavedSidechains,
        ReplayedRows as ReplayedRows,
        SyntheticErrorRows as SyntheticErrorRows,
        TranscriptFault as TranscriptFault,
        switch_moment as switch_moment,
        transcript_faults as transcript_faults,
    )
    from ._units import is_count as is_count
    from ._usage import (
        AdvisorIterations as AdvisorIterations,
        CacheReadDrop as CacheReadDrop,
        GarbageValues as GarbageValues,
        MissingUsage as MissingUsage,
        NestedCacheCreationOnly as NestedCacheCreationOnly,
        UncachedGatewayUsage as UncachedGatewayUsage,
    )

__getattr__, __dir__ = lazy_face(globals())
