"""Judging a Claude Code release (``ctxsim fidelity``): the verdict, its report, the drift from the captures and
this machine's noise.

Internal, as :mod:`ctxsim.lab` is: :func:`check_release` plays every scripted session live and in-process and sorts
what differs (:class:`ReleaseCheck`, :class:`SessionCheck`); the report names each changed leaf by its path and groups
identical shifts (:func:`leaves`, :func:`shifts`); :func:`drift` compares a live run with the capture of its session,
and :func:`noise_between` two live runs of the same CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._check import (
        REPL_CHECKED as REPL_CHECKED,
        RULES_DRAFT as RULES_DRAFT,
        Noise as Noise,
        ReleaseCheck as ReleaseCheck,
        SessionCheck as SessionCheck,
        check_release as check_release,
    )
    from ._drift import Drift as Drift, drift as drift, noise_between as noise_between
    from ._report import leaves as leaves, shifts as shifts

__getattr__, __dir__ = lazy_face(globals())
