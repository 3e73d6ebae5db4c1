"""Rendering a session's transcript in the shape its entrypoint writes: the SDK's (:mod:`._writer`) or the
REPL's (:mod:`._repl`), chosen by :attr:`ctxsim.world.Session.entrypoint`."""

from __future__ import annotations

from datetime import datetime

from ...world import Session
from .._stream_json import rendered_version
from ._files import DEFAULT_CWD, TranscriptFile, TranscriptRender
from ._repl import ReplWriter
from ._writer import _Writer

__all__ = ["render_transcript"]


def render_transcript(session: Session, *, cli_version: str | None = None, cwd: str = DEFAULT_CWD,
                      started_at: datetime | None = None) -> TranscriptRender:
    """Render ``session`` as the transcript files the CLI writes, with the rows written at each observation point.

    ``cli_version`` is the ``version`` the rows claim and the release whose rules they follow (default: the
    session's, :func:`~ctxsim.wire.rendered_version`); ``cwd`` the working directory
    (it names the project directory, :func:`project_slug`); ``started_at`` the first row's time (default: a
    moment drawn from the session's seed). Deterministic: the same arguments give the same rows, uuids and
    timestamps included.
    """
    kind = ReplWriter if session.entrypoint == "repl" else _Writer
    writer = kind(session, cwd, rendered_version(session, cli_version), started_at)
    for index in range(len(session.queries)):
        writer.query(index)
    if not writer.files:
        writer.files[writer.main_path] = TranscriptFile(writer.main_path)
    return TranscriptRender(writer.files, writer.points, cwd, writer.version)

