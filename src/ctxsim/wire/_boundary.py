"""The ``compact_boundary`` row's ``compactMetadata``, with every key the CLI writes (both transcript shapes)."""

from __future__ import annotations

from typing import Any

from ..world import Compaction, SubagentCompaction

__all__ = ["COMPACTION_MS", "compact_metadata", "stream_compact_metadata"]

COMPACTION_MS = 400
"""How long a rendered compaction takes (``compactMetadata.durationMs``)."""


def compact_metadata(step: Compaction | SubagentCompaction, kept: list[str] | None, anchor: str,
                     dropped: int) -> dict[str, Any]:
    """A ``compact_boundary``'s ``compactMetadata`` with every key the CLI writes, in its order (recorded from the
    REPL of 2.1.330-2.1.332): ``trigger``, ``preTokens``, ``postTokens``, ``cumulativeDroppedTokens`` (``dropped``,
    pre less post summed over the session's compactions so far), ``durationMs``; where the compaction keeps a
    trailing segment (``kept``: the uuids of the kept rows, the first row of the last reply to the last row
    before the boundary), ``preservedSegment {headUuid, anchorUuid, tailUuid}`` and ``preservedMessages
    {anchorUuid, uuids, allUuids}``, anchored at the summary row ``anchor``; ``preCompactOrganizationsCoverStart``
    false."""
    meta: dict[str, Any] = {"trigger": step.trigger, "preTokens": step.pre_tokens, "postTokens": step.post_tokens,
                            "cumulativeDroppedTokens": dropped, "durationMs": COMPACTION_MS}
    if kept:
        meta["preservedSegment"] = {"headUuid": kept[0], "anchorUuid": anchor, "tailUuid": kept[-1]}
        meta["preservedMessages"] = {"anchorUuid": anchor, "uuids": list(kept), "allUuids": list(kept)}
    meta["preCompactOrganizationsCoverStart"] = False
    return meta


def stream_compact_metadata(step: Compaction, kept: list[str] | None, anchor: str, dropped: int) -> dict[str, Any]:
    """The stream-json ``compact_boundary``'s ``compact_metadata``: the keys of :func:`compact_metadata` in
    snake case, as the CLI writes them on stdout (recorded from 2.1.330 to 2.1.332: ``trigger``, ``pre_tokens``,
    ``post_tokens``, ``cumulative_dropped_tokens``, ``duration_ms``, and where a segment is kept
    ``preserved_segment {head_uuid, anchor_uuid, tail_uuid}`` and ``preserved_messages {anchor_uuid, uuids,
    all_uuids}``; no ``preCompactOrganizationsCoverStart``)."""
    meta: dict[str, Any] = {"trigger": step.trigger, "pre_tokens": step.pre_tokens, "post_tokens": step.post_tokens,
                            "cumulative_dropped_tokens": dropped, "duration_ms": COMPACTION_MS}
    if kept:
        meta["preserved_segment"] = {"head_uuid": kept[0], "anchor_uuid": anchor, "tail_uuid": kept[-1]}
        meta["preserved_messages"] = {"anchor_uuid": anchor, "uuids": list(kept), "all_uuids": list(kept)}
    return meta
