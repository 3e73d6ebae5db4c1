"""Faults of the transcript surface: what statusline tools meet in the JSONL files Claude Code writes.

:class:`TranscriptFault` is a fault played on a :class:`~ctxsim.wire.TranscriptRender`; :data:`TRANSCRIPT_REGISTRY`
the faults only the transcript has (the older interleaved-sidechain layout, replayed rows, synthetic error rows,
compactions without ``postTokens``, a row half-written when read); :func:`transcript_faults` and
:data:`COUNTERPARTS` the transcript form of each stream fault that models the same reports; :func:`switch_moment`
where a model switch falls in the rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._counterparts import COUNTERPARTS as COUNTERPARTS, transcript_faults as transcript_faults
    from ._faults import (
        TRANSCRIPT_REGISTRY as TRANSCRIPT_REGISTRY,
        CompactionWithoutPostTokens as CompactionWithoutPostTokens,
        HalfWrittenRow as HalfWrittenRow,
        InterleavedSidechains as InterleavedSidechains,
        ReplayedRows as ReplayedRows,
        SyntheticErrorRows as SyntheticErrorRows,
        TranscriptFault as TranscriptFault,
    )
    from ._flow_rows import switch_moment as switch_moment

__getattr__, __dir__ = lazy_face(globals())
