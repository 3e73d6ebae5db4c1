"""Surfaces: where each fault is real, and what it makes the statusline payload show.

Claude Code shows a session on three surfaces (:data:`SURFACES`): the SDK stream an agent's tracker reads, and the
transcript files and statusline payload a statusline command reads. :data:`FAULT_SURFACES` says on which each fault
of :mod:`ctxsim.faults` is real and where that is reported; :func:`judged_on` keeps a tracker off a scenario whose
faults its input never carries, and :func:`carried_on` says where ctxsim writes each fault (what the fuzz may draw
for a tracker). The stream and the transcript files are faulted by :mod:`ctxsim.faults` (:func:`ctxsim.faults.apply`,
:func:`ctxsim.faults.apply_transcript`); :func:`apply_statusline` gives the payloads what that transcript and the
plan make Claude Code show in them::

    transcript = apply_transcript(plan, render_transcript(session))
    payloads = apply_statusline(plan, transcript, statusline_payloads(session))

A :class:`Rendition` is one run's world on every surface: the stream, the transcript and the payloads under one
fault plan, each rendered the first time it is asked for and shared by every consumer of the run (the check, a
command's harness, the likely causes, ``ctxsim serve``, the fuzz).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._payload import PAYLOAD_FORMS as PAYLOAD_FORMS, apply_statusline as apply_statusline
    from ._rendition import Rendition as Rendition
    from ._where import (
        FAULT_SURFACES as FAULT_SURFACES,
        SURFACES as SURFACES,
        Surfaces as Surfaces,
        carried_on as carried_on,
        judged_on as judged_on,
        surfaces_of as surfaces_of,
    )

__getattr__, __dir__ = lazy_face(globals())
