"""What a transcript rendering is: its files, its points, and the clock and paths they share.

:class:`TranscriptRender` holds the JSONL files of one rendering (:class:`TranscriptFile`, rows in the order the
CLI appends them) and, for each observation point, how many rows of each were written by then
(:class:`TranscriptPoint`). :func:`project_slug`, :func:`session_start` and :func:`iso` are the directory, first
moment and timestamp format every surface of a rendering agrees on.
"""

from __future__ import annotations

import bisect
import json
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ...world import Session
from .._frames import Observation

__all__ = [
    "DEFAULT_CWD",
    "EPOCH",
    "UTC",
    "TranscriptFile",
    "TranscriptPoint",
    "TranscriptRender",
    "counted",
    "iso",
    "project_slug",
    "session_start",
]

DEFAULT_CWD = "/home/dev/project"
"""The working directory a rendering claims when none is given (the stream-json rendering's)."""

UTC = timezone.utc
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
"""The earliest moment a rendering may begin at (its seed draws an offset from it)."""


def project_slug(cwd: str) -> str:
    """The directory under ``$CLAUDE_CONFIG_DIR/projects`` where the CLI keeps the transcripts of sessions run in
    ``cwd``: every character but ASCII letters and digits made ``-`` (``/tmp/a_b/project`` ->
    ``-tmp-a-b-project``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def session_start(session: Session) -> datetime:
    """When a rendering of ``session`` begins (its first transcript row), drawn from its seed and id: the clock
    the transcript's timestamps and the statusline's ``prompt_cache`` times share."""
    rng = random.Random(f"ctxsim.wire._transcript:{session.seed}:{session.session_id}")
    return EPOCH + timedelta(seconds=rng.randrange(300 * 86_400))


def iso(moment: datetime) -> str:
    """``moment`` as the CLI writes timestamps: ISO 8601 in UTC with milliseconds and ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class TranscriptFile:
    """One JSONL file of a transcript, in the order the CLI appends its rows."""

    path: str
    """Where it is, relative to the project directory: ``<session>.jsonl`` or
    ``<session>/subagents/agent-<agent id>.jsonl``."""
    rows: list[dict[str, Any]] = field(default_factory=list)
    """The rows, each one JSON line."""
    order: list[float] = field(default_factory=list)
    """When each row was written, on one clock for every file of the rendering (the order rows reach the disk)."""


@dataclass(frozen=True)
class TranscriptPoint:
    """An observation point of the session, and the transcript as the CLI had written it by then."""

    observation: Observation
    """The stream-json rendering's observation point (index, label, kind, truth, window)."""
    transcript: str
    """The main file in force (``transcript_path``'s file), relative to the project directory."""
    session_id: str
    """The session id in force (a ``/clear`` starts a new one)."""
    written: float
    """Every row written at or before this moment (:attr:`TranscriptFile.order`) is on disk."""
    rows: Mapping[str, int]
    """How many rows of each file (by :attr:`TranscriptFile.path`) are written, whole, by then."""
    partial: Mapping[str, str] = field(default_factory=dict)
    """Files whose next row is being written when the point is read: the part of its line already there."""


@dataclass
class TranscriptRender:
    """A session's transcript files and the points where they are read."""

    files: dict[str, TranscriptFile]
    """Every file, by its path relative to the project directory, in the order they were created."""
    points: list[TranscriptPoint]
    """One per observation point of the session, in order (the same as :func:`ctxsim.wire.render`'s)."""
    cwd: str
    """The working directory the session ran in."""
    cli_version: str
    """The CLI version the rows claim (``version``)."""

    @property
    def slug(self) -> str:
        """The project directory's name under ``$CLAUDE_CONFIG_DIR/projects`` (:func:`project_slug`)."""
        return project_slug(self.cwd)

    @property
    def main(self) -> TranscriptFile:
        """The session's first main file (the one every point reads unless a ``/clear`` started another)."""
        return next(iter(self.files.values()))

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Every row of :attr:`main`, in order."""
        return self.main.rows

    def rows_at(self, index: int, path: str | None = None) -> list[dict[str, Any]]:
        """The whole rows of file ``path`` (default: the main file in force) written by point ``index``
        (0-based)."""
        point = self.points[index]
        file = self.files[path or point.transcript]
        return file.rows[:point.rows.get(file.path, 0)]

    def text(self, index: int, path: str | None = None) -> str:
        """File ``path`` (default: the main file in force) as it stands at point ``index``: its whole rows, one
        JSON line each, then the part of a row being written, if any."""
        point = self.points[index]
        path = path or point.transcript
        lines = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in self.rows_at(index, path))
        return lines + point.partial.get(path, "")

    def write(self, project_dir: str | Path, index: int) -> Path:
        """Write every file as it stands at point ``index`` under ``project_dir`` (the
        ``$CLAUDE_CONFIG_DIR/projects/<slug>`` directory; files not yet created are not written) and return the
        path of the main file in force, the payload's ``transcript_path``."""
        root = Path(project_dir)
        point = self.points[index]
        for path in self.files:
            if path not in point.rows and path not in point.partial:
                continue
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(self.text(index, path))
        return root / point.transcript

    def recount(self) -> None:
        """Re-derive each point's :attr:`TranscriptPoint.rows` from the files' write order (after a fault moved,
        added or removed rows)."""
        self.points = [counted(p, self.files) for p in self.points]


def counted(point: TranscriptPoint, files: Mapping[str, TranscriptFile]) -> TranscriptPoint:
    """``point`` with its rows per file counted from the files' write order."""
    rows = {}
    for path, file in files.items():
        n = bisect.bisect_right(file.order, point.written)  # a file's rows are in write order
        if n or path == point.transcript:
            rows[path] = n
    return TranscriptPoint(point.observation, point.transcript, point.session_id, point.written, rows,
                           point.partial)
