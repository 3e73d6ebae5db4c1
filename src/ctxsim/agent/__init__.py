"""The reactive fake agent behind :class:`~ctxsim.sdk.FakeTransport`: a task of steps worked through across restarts.

:mod:`.task` holds what it works on and records (no SDK needed); :mod:`.prompts` what the loop under test declares
it says (:class:`LoopPrompts`, no SDK either); :mod:`.fake` the :class:`FakeAgent` itself. Names
load on first use, so reading a task does not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "AgentBoundError": "fake",
    "FakeAgent": "fake",
    "LoopPrompts": "prompts",
    "UnclassifiedPromptError": "prompts",
    "DEGRADATIONS": "task",
    "LOSSLESS": "task",
    "RECOVERABLE": "task",
    "ConnectionRecord": "task",
    "Degradation": "task",
    "StepRecord": "task",
    "Task": "task",
    "TaskStep": "task",
    "TurnKind": "task",
    "TurnRecord": "task",
}

__all__ = [
    "DEGRADATIONS",
    "LOSSLESS",
    "RECOVERABLE",
    "AgentBoundError",
    "ConnectionRecord",
    "Degradation",
    "FakeAgent",
    "LoopPrompts",
    "StepRecord",
    "Task",
    "TaskStep",
    "TurnKind",
    "TurnRecord",
    "UnclassifiedPromptError",
]

if TYPE_CHECKING:
    from .fake import AgentBoundError, FakeAgent
    from .prompts import LoopPrompts, UnclassifiedPromptError
    from .task import (
        DEGRADATIONS,
        LOSSLESS,
        RECOVERABLE,
        ConnectionRecord,
        Degradation,
        StepRecord,
        Task,
        TaskStep,
        TurnKind,
        TurnRecord,
    )

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
