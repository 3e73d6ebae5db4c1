"""The ``compact_boundary`` row's ``compactMetadata``, with every key the CLI writes (both transcript shapes)."""

from __future__ import annotations

from typing import Any

from ..world import Compaction

__all__ = ["COMPACTION_MS", "compact_metadata"]

COMPACTION_MS = 400
"""How long a rendered compaction takes (``compactMetadata.durationMs``)."""


def compact_metadata(step: Compaction, kept: list[str] | None, anchor: str, dropped: int) -> dict[str, Any]:
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
