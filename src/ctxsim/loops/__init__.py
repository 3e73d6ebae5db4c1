"""Restart loops under test: the rig handed to a loop (:class:`LoopRig`), the invariants it is judged by
(:data:`INVARIANTS`, :class:`LoopCheckError`), what a loop of yours says and reads (:class:`LoopPrompts`; the
reference loop's words, :data:`CHECKPOINT_REQUEST_PROMPT` and the rest, and its checkpoint parsing,
:func:`extract_checkpoint`), the catalogue of design-shaped buggy loops (:data:`CATALOGUE`, imported by name) and
the reference loop's behavioural mutants (:mod:`ctxsim.loops.mutants`, imported by name).

Stable here, for writing and checking a loop: what the restart-loop how-tos use. ``check_restart_loop`` and
``run_loop`` are stable on ``ctxsim``; the other names serve ctxsim's own packages."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ..agent import LoopPrompts as LoopPrompts
    from ..reference import (
        CHECKPOINT_REQUEST_PROMPT as CHECKPOINT_REQUEST_PROMPT,
        CONTINUATION_TEMPLATE as CONTINUATION_TEMPLATE,
        CONTINUE_PROMPT as CONTINUE_PROMPT,
        DONE_MARKER as DONE_MARKER,
        Checkpoint as Checkpoint,
        build_continuation_prompt as build_continuation_prompt,
        extract_checkpoint as extract_checkpoint,
    )
    from ._catalogue import CATALOGUE as CATALOGUE
    from ._check import (
        LoopOptions as LoopOptions,
        LoopSetup as LoopSetup,
        arun_loop as arun_loop,
        check_restart_loop as check_restart_loop,
        declared_policy as declared_policy,
        declared_prompts as declared_prompts,
        fake_agent as fake_agent,
        run_loop as run_loop,
    )
    from ._judge import (
        INVARIANTS as INVARIANTS,
        LoopCheckError as LoopCheckError,
        LoopReport as LoopReport,
        Violation as Violation,
    )
    from ._resolve import LoopSpec as LoopSpec, LoopSpecError as LoopSpecError, resolve_loop as resolve_loop
    from ._rig import LifecycleProbe as LifecycleProbe, LoopRig as LoopRig, TrackerProbe as TrackerProbe

__getattr__, __dir__ = lazy_face(globals(), stable=(
    "LoopRig", "LoopPrompts", "LoopCheckError", "LoopReport", "INVARIANTS", "CHECKPOINT_REQUEST_PROMPT",
    "CONTINUATION_TEMPLATE", "CONTINUE_PROMPT", "DONE_MARKER", "Checkpoint", "extract_checkpoint",
    "build_continuation_prompt"
))
