"""The ground truth: sessions whose true context is known at every point, and the builder that makes them.

:class:`Session` holds the data (calls, steps, queries, :class:`Truth`); :class:`SessionBuilder` derives what a real
session would show; :func:`dress` and :func:`filler_text` make the text generated sessions are dressed in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._builder import SessionBuilder as SessionBuilder
    from ._compaction import (
        AUTO_COMPACT_REMINDER_TOKENS as AUTO_COMPACT_REMINDER_TOKENS,
        CLEAR_COMMAND_TOKENS as CLEAR_COMMAND_TOKENS,
        COMPACT_COMMAND_TOKENS as COMPACT_COMMAND_TOKENS,
        COMPACT_INSTRUCTION_TOKENS as COMPACT_INSTRUCTION_TOKENS,
        compacted_context as compacted_context,
        later_blocks_tokens as later_blocks_tokens,
        summary_call as summary_call,
    )
    from ._content import dress as dress, prompts as prompts
    from ._filler import filler_text as filler_text
    from ._quantity import (
        QUANTITY_NAMES as QUANTITY_NAMES,
        in_quantity as in_quantity,
        tokens_band as tokens_band,
    )
    from ._releases import RULES as RULES, Rule as Rule, holds as holds, version_key as version_key
    from ._session import (
        CHARS_PER_TOKEN as CHARS_PER_TOKEN,
        DEFAULT_MODEL as DEFAULT_MODEL,
        MAX_SYSTEM_PREFIX as MAX_SYSTEM_PREFIX,
        Call as Call,
        Compaction as Compaction,
        ConversationReset as ConversationReset,
        DeltaUsage as DeltaUsage,
        Entrypoint as Entrypoint,
        Quantity as Quantity,
        Query as Query,
        Session as Session,
        Step as Step,
        SubagentCompaction as SubagentCompaction,
        SubagentStart as SubagentStart,
        TaskNotification as TaskNotification,
        Text as Text,
        Thinking as Thinking,
        ToolResult as ToolResult,
        ToolUse as ToolUse,
        Truth as Truth,
        UsageConvention as UsageConvention,
        auto_compact_threshold as auto_compact_threshold,
        compaction_band as compaction_band,
        compaction_truth as compaction_truth,
        keeps_segment as keeps_segment,
        model_window as model_window,
        system_prefix as system_prefix,
    )
    from ._settings import (
        AUTOCOMPACT_BUFFER as AUTOCOMPACT_BUFFER,
        IDLE_COMPACT_MIN_TOKENS as IDLE_COMPACT_MIN_TOKENS,
        OUTPUT_RESERVE_CAP as OUTPUT_RESERVE_CAP,
        SUBAGENT_WINDOW_MIN as SUBAGENT_WINDOW_MIN,
        ClaudeSettings as ClaudeSettings,
        autocompact_point as autocompact_point,
        display_name as display_name,
        effective_window as effective_window,
        override_point as override_point,
        subagent_point as subagent_point,
        window_for as window_for,
    )
    from ._shapes import (
        CALL_BYTES as CALL_BYTES,
        SUBAGENT_BYTES as SUBAGENT_BYTES,
        Bytes as Bytes,
        main_call as main_call,
        subagent as subagent,
    )
    from ._titles import (
        TITLE_INPUT_TOKENS as TITLE_INPUT_TOKENS,
        TITLE_MIN_CHARS as TITLE_MIN_CHARS,
        TITLE_OUTPUT_TOKENS as TITLE_OUTPUT_TOKENS,
        TITLE_TRIES as TITLE_TRIES,
        asks_title as asks_title,
        title_asks as title_asks,
        title_call as title_call,
    )

__getattr__, __dir__ = lazy_face(globals())
