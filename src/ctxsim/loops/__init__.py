"""Restart loops under test: the rig handed to a loop, the invariants it is judged by, the catalogue of
seed-shaped buggy loops (:mod:`.catalogue`, imported by name) and the reference loop's behavioural mutants
(:mod:`.mutants`, imported by name)."""

from __future__ import annotations

from .check import (
    INVARIANTS,
    LifecycleProbe,
    LoopCheckError,
    LoopReport,
    LoopRig,
    LoopSetup,
    TrackerProbe,
    Violation,
    arun_loop,
    check_restart_loop,
    declared_policy,
    declared_prompts,
    fake_agent,
    run_loop,
)

__all__ = [
    "INVARIANTS",
    "LifecycleProbe",
    "LoopCheckError",
    "LoopReport",
    "LoopRig",
    "LoopSetup",
    "TrackerProbe",
    "Violation",
    "arun_loop",
    "check_restart_loop",
    "declared_policy",
    "declared_prompts",
    "fake_agent",
    "run_loop",
]
