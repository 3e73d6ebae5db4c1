"""The live twins: what ``ctxsim serve`` and the live backend steer the live CLI into so that it plays a scenario's
shape (its compactions, its window, the turns that end on a tool call), and the twin of a scenario whose shape the CLI
never makes (queries split, a compaction asked for, a reset a ``/clear`` query of its own, a recording's queries
played), each saying what it changed."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._recorded import recorded_twin as recorded_twin
    from ._shapes import (
        AUTOCOMPACT_RESERVE as AUTOCOMPACT_RESERVE,
        COMPACT_PROMPT as COMPACT_PROMPT,
        GO_ON as GO_ON,
        STOP_REASON as STOP_REASON,
        TurnEnds as TurnEnds,
        autocompact_window as autocompact_window,
        client_model as client_model,
        compaction_reason as compaction_reason,
        is_model_query as is_model_query,
        live_twin as live_twin,
        twin_changes as twin_changes,
        window_reason as window_reason,
    )

__getattr__, __dir__ = lazy_face(globals())
