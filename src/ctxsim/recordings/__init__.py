"""Recorded streams read back: a stream-json or transcript file as the frames, points and truth a tracker is judged on.

:func:`read_recording` reads one file (every line checked, bounded in size and depth: :func:`read_bounded`) into a
:class:`Recording`; :func:`read_usage` reads a message's usage the way the truth is derived, independently of the
reference tracker. Internal: the layer a scenario's ``stream:`` and ``ctxsim import`` are built on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._files import (
        MAX_DEPTH as MAX_DEPTH,
        MAX_LINES as MAX_LINES,
        MAX_RECORDING_BYTES as MAX_RECORDING_BYTES,
        MAX_SCENARIO_BYTES as MAX_SCENARIO_BYTES,
        FileRefused as FileRefused,
        cut as cut,
        deeper_than as deeper_than,
        read_bounded as read_bounded,
    )
    from ._recording import (
        FORMATS as FORMATS,
        Recording as Recording,
        RecordingError as RecordingError,
        read_jsonl as read_jsonl,
        read_recording as read_recording,
        transcript_frame as transcript_frame,
        transcript_frames as transcript_frames,
    )
    from ._truth import SYNTHETIC as SYNTHETIC, UsageRead as UsageRead, read_usage as read_usage

__getattr__, __dir__ = lazy_face(globals())
