"""The ground truth: sessions whose true context is known at every point, and the builder that makes them.

:mod:`.session` holds the data (calls, steps, queries, :class:`Truth`); :mod:`.builder` the :class:`SessionBuilder`
that derives what a real session would show; :mod:`.content` the faker text generated sessions are dressed in.
"""

from __future__ import annotations

from .session import (
    CHARS_PER_TOKEN,
    Call,
    Compaction,
    ConversationReset,
    DEFAULT_MODEL,
    Query,
    Session,
    Step,
    SubagentStart,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Truth,
    auto_compact_threshold,
)
from .builder import (
    SessionBuilder,
    filler_text,
)

__all__ = [
    "CHARS_PER_TOKEN",
    "Call",
    "Compaction",
    "ConversationReset",
    "DEFAULT_MODEL",
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
    "auto_compact_threshold",
    "filler_text",
]
