"""How far a run through the SDK client got: what it waits for, bounded by the silence timeout, and the ``ctxsim:``
line that reports a stall (:func:`ctxsim.check.arun_tracker`)."""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING, Any, Protocol

import anyio

if TYPE_CHECKING:
    from ..wire import Frame, Script
    from ..world import Session

__all__ = ["Progress"]


class _Stalls(Protocol):
    """What a stall is reported on (a :class:`ctxsim.check.Report`)."""

    session: Session
    stall: str | None


class Progress:
    """Where a run through the client stands: what it waits for (bounding the wait) and what came last (for the
    ``ctxsim:`` line that reports a stall). The hot path sets references only; text is made on a stall."""

    def __init__(self, report: _Stalls, queries: int, silence_timeout: float | None) -> None:
        self.report = report
        self.queries = queries
        self.silence_timeout = silence_timeout
        self.scope = anyio.CancelScope()
        """Bounds the run: its deadline lies between ``silence_timeout`` and twice that after any wait began."""
        self.refresh_at = -math.inf
        """The ``time.monotonic()`` after which a new wait must move the deadline on (cheaper than every time)."""
        self.query = 0
        """The 1-based query under way (0: none yet)."""
        self.waiting: tuple[Script, int, int, Frame] | str = ""
        """What the run waits for: (script, message number, messages expected, its frame), or a description."""
        self.last: tuple[int, int, Any, Script, Frame] | None = None
        """The last message the client delivered: (query, its number in the query, message, script, frame)."""

    def wait(self, waiting: tuple[Script, int, int, Frame] | str) -> None:
        """A wait on the client for ``waiting`` begins now: it may last ``silence_timeout`` seconds, at most twice
        that, before :attr:`scope` is cancelled."""
        self.waiting = waiting
        timeout = self.silence_timeout
        if timeout is not None:
            now = time.monotonic()
            if now > self.refresh_at:
                self.scope.deadline = anyio.current_time() + 2 * timeout
                self.refresh_at = now + timeout

    def stalled(self, *, ended: bool = False) -> None:
        """Put the stall line on the report (the first one only): the run is stuck where it waits."""
        if self.report.stall is not None:
            return
        name = self.report.session.name or self.report.session.session_id
        where = f" in query {self.query} of {self.queries}" if self.query else ""
        what = ("the SDK client's message stream ended" if ended else
                f"no progress from the SDK client for over {self.silence_timeout:g} s "
                f"(silence_timeout={self.silence_timeout!r})")
        waiting = self.waiting
        if not isinstance(waiting, str):
            script, number, count, frame = waiting
            waiting = f"message {number} of {count} ({_describe(script, frame)})"
        last = "no message was delivered yet"
        if self.last is not None:
            query, number, message, script, frame = self.last
            last = (f"the last delivered was message {number} of query {query} ({type(message).__name__}; "
                    f"{_describe(script, frame)})")
        self.report.stall = (f"ctxsim: the run over session {name!r} stalled: {what}{where}, "
                             f"waiting for {waiting}; {last}")


def _describe(script: Script, frame: Frame) -> str:
    """``frame 3: assistant, q1 call 1``: a frame's place in its query's script, its type/subtype and point."""
    data = frame.data
    kind = "/".join(str(part) for part in (data.get("type"), data.get("subtype")) if part is not None)
    label = f", {frame.observation.label}" if frame.observation is not None else ""
    number = next((i for i, f in enumerate(script.frames, 1) if f is frame), 0)
    return f"frame {number}: {kind}{label}"
