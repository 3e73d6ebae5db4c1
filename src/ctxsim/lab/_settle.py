"""The CLI's transcript at each request it sends, taken once the transcript has settled.

The CLI queues transcript rows and writes them on a timer, so a snapshot taken when a message reaches the SDK races
the queue. :class:`RequestSnapshots` is a hold of the fake API (:attr:`~ctxsim.live.FakeMessagesAPI.hold`): each
``/v1/messages`` request is held, its answer not sent, until the transcript files on disk have settled, and a
:class:`RequestSnapshot` of them is taken; :mod:`ctxsim.lab` compares them with the rendering at the
point before that request. Every wait is bounded (:data:`SETTLE_TIMEOUT`).
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..live import RequestKind, Served, read_transcripts

__all__ = ["QUIET", "SETTLED", "SETTLE_TIMEOUT", "RequestSnapshot", "RequestSnapshots"]


@dataclass(frozen=True)
class RequestSnapshot:
    """The CLI's transcript files when it sent one ``/v1/messages`` request, held until they had settled."""

    request_id: str
    """The request's id (``req_ctxsim0003``): a world call's ``request_id``, or its compaction summary's."""
    kind: RequestKind
    files: dict[str, list[dict[str, Any]]]
    """Every transcript file, by path relative to the project directory (:func:`~ctxsim.live.read_transcripts`)."""
    marked: bool
    """Whether the CLI's own record of the request (its ``api-request`` line) was on disk; False: the files were
    taken once they had not changed for :data:`QUIET` seconds (the compaction summary request, which the CLI does
    not record so)."""
    held: float = 0.0
    """Seconds the CLI was held at the request until the files were taken."""


SETTLE_TIMEOUT = 10.0
"""Seconds :class:`RequestSnapshots` waits, at most, for the transcript to settle at one request."""
QUIET = 0.5
"""Seconds without a change after which a transcript with no ``api-request`` line for the request is taken as
settled: five times the CLI's write-queue flush interval (100 ms in every release seen)."""
SETTLED = 0.05
"""Seconds between the two reads that must agree once the request's ``api-request`` line is on disk (the rest of
the queue's files are written right after it)."""
_POLL = 0.02


def _on_disk(projects: Path) -> tuple[tuple[tuple[str, int], ...], int]:
    """What is on disk under ``projects``, cheaply: every transcript file's size, and how many ``api-request``
    lines they hold (only the lines that name the kind are parsed)."""
    sizes, markers = [], 0
    for path in sorted(projects.glob("*/**/*.jsonl")):
        try:
            data = path.read_bytes()
        except OSError:
            continue
        sizes.append((str(path), len(data)))
        for line in data.split(b"\n")[:-1]:  # whole lines: the last is being written, or empty
            if b'"api-request"' in line:
                with contextlib.suppress(ValueError, AttributeError):
                    markers += json.loads(line).get("type") == "api-request"
    return tuple(sizes), markers


class RequestSnapshots:
    """The hold (:attr:`~ctxsim.live.FakeMessagesAPI.hold`) that takes the CLI's transcript at each request.

    The CLI queues transcript rows and writes them on a timer, so what is on disk when it sends a request lags
    behind what it has recorded. Held at the request (its answer not sent), it records nothing more, and the queue
    drains: once the ``api-request`` line the CLI records for this request is on disk, every row it queued before
    is too (the queue is written in order, file after file, so the files are read again :data:`SETTLED` seconds
    later until two reads agree). The main chain's and subagents' requests carry that line in every release seen;
    the compaction summary request does not, and is taken after :data:`QUIET` seconds without a change. Side
    requests (no tools) and requests answered with an error are not world calls and are not taken.

    ``projects`` is the CLI's ``$CLAUDE_CONFIG_DIR/projects``. Bounded by ``timeout`` seconds a request: a
    transcript still changing then is taken as it is and the request named in :attr:`problems`.
    """

    def __init__(self, projects: Path, *, timeout: float = SETTLE_TIMEOUT) -> None:
        self.projects = projects
        self.timeout = timeout
        self.taken: list[RequestSnapshot] = []
        """Every snapshot, in the order the requests came."""
        self.problems: list[str] = []
        """``ctxsim:`` messages for the requests whose transcript did not settle in time."""
        self._markers = 0

    async def __call__(self, served: Served) -> None:
        request = served.request
        if request.kind == "side" or served.reply.error is not None:
            return
        started = changed = anyio.current_time()
        sizes, markers = _on_disk(self.projects)
        marked = False
        while True:
            if markers > self._markers:
                await anyio.sleep(SETTLED)
                again = _on_disk(self.projects)
                if again == (sizes, markers):
                    marked = True
                    break
                sizes, markers = again
                continue
            now = anyio.current_time()
            if now - changed >= QUIET:
                break
            if now - started >= self.timeout:
                self.problems.append(f"ctxsim: the CLI's transcript was still changing {self.timeout:g} s after "
                                     f"request {request.request_id} ({request.kind}) reached the fake API")
                break
            await anyio.sleep(_POLL)
            again = _on_disk(self.projects)
            if again != (sizes, markers):
                (sizes, markers), changed = again, anyio.current_time()
        self._markers = markers
        self.taken.append(RequestSnapshot(request.request_id, request.kind, read_transcripts(self.projects),
                                          marked, anyio.current_time() - started))
