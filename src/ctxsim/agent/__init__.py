"""The reactive fake agent behind :class:`~ctxsim.sdk.FakeTransport`: a task of steps worked through across restarts."""

from __future__ import annotations

from .fake import (
    AgentBoundError,
    ConnectionRecord,
    DEGRADATIONS,
    Degradation,
    FakeAgent,
    LOSSLESS,
    StepRecord,
    Task,
    TaskStep,
    TurnRecord,
)

__all__ = [
    "AgentBoundError",
    "ConnectionRecord",
    "DEGRADATIONS",
    "Degradation",
    "FakeAgent",
    "LOSSLESS",
    "StepRecord",
    "Task",
    "TaskStep",
    "TurnRecord",
]
