"""The ground truth: sessions whose true context is known at every point, and the builder that makes them.

:mod:`.session` holds the data (calls, steps, queries, :class:`Truth`); :mod:`.builder` the :class:`SessionBuilder`
that derives what a real session would show; :mod:`.content` the faker text generated sessions are dressed in.
"""

from __future__ import annotations

from .builder import (
    SessionBuilder,
    filler_text,
)
from .session import (
    CHARS_PER_TOKEN,
    DEFAULT_MODEL,
    MAX_SYSTEM_PREFIX,
    Call,
    Compaction,
    ConversationReset,
    DeltaUsage,
    Query,
    Session,
    Step,
    SubagentStart,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Truth,
    UsageConvention,
    auto_compact_threshold,
    compaction_truth,
    system_prefix,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MODEL",
    "MAX_SYSTEM_PREFIX",
    "Call",
    "Compaction",
    "ConversationReset",
    "DeltaUsage",
    "Query",
    "Session",
    "SessionBuilder",
    "Step",
    "SubagentStart",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "Truth",
    "UsageConvention",
    "auto_compact_threshold",
    "compaction_truth",
    "filler_text",
    "system_prefix",
]
