"""The transcript: a session rendered as the JSONL files Claude Code appends to, in the shape its entrypoint writes
(the SDK's or the interactive REPL's), and the outline a tracker walks of one file.

:func:`render_transcript` renders it; :class:`TranscriptRender` holds its files (:class:`TranscriptFile`) and, for
each observation point, how far each was written (:class:`TranscriptPoint`); :func:`project_slug`,
:func:`session_start` and :func:`iso` are the directory, first moment and timestamp format every surface of a
rendering shares; :func:`transcript_outline` reduces a file to its structure.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._files import (
        DEFAULT_CWD as DEFAULT_CWD,
        TranscriptFile as TranscriptFile,
        TranscriptPoint as TranscriptPoint,
        TranscriptRender as TranscriptRender,
        iso as iso,
        project_slug as project_slug,
        session_start as session_start,
    )
    from ._outline import TIMED_LINES as TIMED_LINES, transcript_outline as transcript_outline
    from ._render import render_transcript as render_transcript

__getattr__, __dir__ = lazy_face(globals())
