"""The reactive fake agent behind :class:`~ctxsim.sdk.FakeTransport`: a task of steps worked through across restarts.

:class:`Task` and the records are what it works on and keeps (no SDK needed); :class:`LoopPrompts` what the loop
under test declares it says (no SDK either); :class:`FakeAgent` the agent itself. Names
load on first use, so reading a task does not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._fake import AgentBoundError as AgentBoundError, FakeAgent as FakeAgent
    from ._prompts import LoopPrompts as LoopPrompts, UnclassifiedPromptError as UnclassifiedPromptError
    from ._task import (
        DEGRADATIONS as DEGRADATIONS,
        LOSSLESS as LOSSLESS,
        RECOVERABLE as RECOVERABLE,
        ConnectionRecord as ConnectionRecord,
        Degradation as Degradation,
        StepRecord as StepRecord,
        Task as Task,
        TaskStep as TaskStep,
        TurnKind as TurnKind,
        TurnRecord as TurnRecord,
    )

__getattr__, __dir__ = lazy_face(globals())
