"""Restart loops under test: the rig handed to a loop, the invariants it is judged by, the catalogue of
seed-shaped buggy loops (:data:`CATALOGUE`, imported by name) and the reference loop's behavioural mutants
(:mod:`ctxsim.loops.mutants`, imported by name)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._catalogue import CATALOGUE as CATALOGUE
    from ._check import (
        INVARIANTS as INVARIANTS,
        LoopCheckError as LoopCheckError,
        LoopReport as LoopReport,
        LoopSetup as LoopSetup,
        Violation as Violation,
        arun_loop as arun_loop,
        check_restart_loop as check_restart_loop,
        declared_policy as declared_policy,
        declared_prompts as declared_prompts,
        fake_agent as fake_agent,
        run_loop as run_loop,
    )
    from ._resolve import LoopSpec as LoopSpec, LoopSpecError as LoopSpecError, resolve_loop as resolve_loop
    from ._rig import LifecycleProbe as LifecycleProbe, LoopRig as LoopRig, TrackerProbe as TrackerProbe

__getattr__, __dir__ = lazy_face(globals())
