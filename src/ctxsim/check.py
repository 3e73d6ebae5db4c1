"""The oracle: run a tracker over a session through the real SDK and compare it with the truth.

A tracker is anything with ``observe(message)`` and ``context_tokens() -> int | None`` (None: unknown). The
session is rendered by :mod:`ctxsim.wire`, played by :class:`~ctxsim.sdk.FakeTransport` and read with the real
``ClaudeSDKClient``; every message the SDK yields goes to the tracker, and at every observation point (after
each main-chain call, subagent call, compaction, reset and result) its estimate is compared with the truth.

The truth at a point is a band, ``prompt .. prompt + output``: a tracker may report what ``/context`` shows or
what the next request will carry. The error is how far the estimate falls outside the band; it passes within
``tolerance`` tokens. Where the truth is not knowable from the stream, an unknown (None) estimate passes.
A tracker (or adapter) with a ``judged_at`` set of observation kinds (``call``, ``subagent``, ``compaction``,
``reset``, ``result``) is compared at those points only.

Trackers of other shapes run through the adapters of :mod:`ctxsim.trackers.base` (:class:`RawDicts`,
:class:`ResultsOnly`, :class:`FromRatio`), re-exported here.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import anyio
from claude_agent_sdk import ClaudeSDKClient

from .sdk import FakeTransport, parse_message
from .trackers.base import FromRatio, RawDicts, ResultsOnly, Tracker, tracker_name
from .wire import Frame, Observation, Script
from .world import Session

__all__ = [
    "FromRatio",
    "Point",
    "RawDicts",
    "Report",
    "ResultsOnly",
    "Tracker",
    "TrackingError",
    "arun_tracker",
    "assert_tracks",
    "run_tracker",
    "run_tracker_parsed",
    "tracker_name",
]

# Frames the SDK's reader keeps to itself and never yields as messages.
_NOT_YIELDED = frozenset({"control_response", "control_request", "control_cancel_request", "transcript_mirror"})


# --- the report -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """The tracker against the truth at one observation point."""

    observation: Observation
    estimate: int | None
    tolerance: int

    @property
    def low(self) -> int:
        """The low end of the truth band: the prompt."""
        return self.observation.truth.prompt

    @property
    def high(self) -> int:
        """The high end of the truth band: prompt + output."""
        return self.observation.truth.next_request

    @property
    def error(self) -> int | None:
        """Tokens the estimate lies above (+) or below (-) the truth band; None for an unknown estimate."""
        if self.estimate is None:
            return None
        if self.estimate > self.high:
            return self.estimate - self.high
        if self.estimate < self.low:
            return self.estimate - self.low
        return 0

    @property
    def ok(self) -> bool:
        """Within tolerance, or unknown where the truth cannot be known (or, where the stream cannot show that
        anything changed, within tolerance of what it last told)."""
        error = self.error
        truth = self.observation.truth
        if error is None:
            return not truth.knowable
        if not truth.knowable and truth.unseen is not None and self.estimate is not None:
            low, high = truth.unseen
            if low - self.tolerance <= self.estimate <= high + self.tolerance:
                return True
        return abs(error) <= self.tolerance


@dataclass
class Report:
    """A tracker's run over a session: every point, and whatever went wrong."""

    tracker: str
    session: Session
    tolerance: int
    points: list[Point] = field(default_factory=list)
    messages: int = 0
    """Messages the SDK yielded and the tracker saw."""
    crash: str | None = None
    """A ``ctxsim:`` line naming the exception the tracker raised and the message it raised on, if any."""

    @property
    def failures(self) -> list[Point]:
        """The points outside tolerance."""
        return [p for p in self.points if not p.ok]

    @property
    def ok(self) -> bool:
        """True when the tracker did not raise and every point is within tolerance."""
        return self.crash is None and not self.failures

    def table(self, *, only_failures: bool = False, notes: Mapping[int, str] | None = None,
              notes_title: str = "threshold") -> str:
        """The timeline as a table: point, truth band, estimate and error (``>`` marks a failure).

        ``notes`` adds a column (titled ``notes_title``) with a note per observation index, e.g. where a
        threshold fires; with ``only_failures``, rows with a note are shown too.
        """
        window = self.session.window
        header = ("", "#", "point", "truth", "estimate", "error") + ((notes_title,) if notes is not None else ())
        rows = [header]
        for p in self.points:
            note = notes.get(p.observation.index, "") if notes is not None else ""
            if only_failures and p.ok and not note:
                continue
            truth = f"{p.low:,}" if p.low == p.high else f"{p.low:,}..{p.high:,}"
            if not p.observation.truth.knowable:
                truth += " (not knowable)"
            estimate = "unknown" if p.estimate is None else f"{p.estimate:,}"
            if p.error is None:
                error = "ok" if p.ok else "unknown"
            elif p.error == 0:
                error = "ok"
            elif p.ok and not p.observation.truth.knowable:
                error = "ok (as last told)"
            else:
                error = f"{p.error:+,} ({100 * p.error / window:+.1f}%)"
            row = (">" if not p.ok else "", str(p.observation.index), p.observation.label, truth, estimate, error)
            rows.append(row + ((note,) if notes is not None else ()))
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        align = ("<", ">", "<", ">", ">", ">", "<")
        return "\n".join(
            "  ".join(f"{cell:{a}{w}}" for cell, a, w in zip(row, align, widths)).rstrip() for row in rows)

    def summary(self) -> str:
        """One line: which tracker, which session, how many points failed."""
        name = self.session.name or self.session.session_id
        if self.crash:
            return self.crash
        bad = len(self.failures)
        verdict = "tracks" if not bad else f"is off on {bad} of {len(self.points)} points of"
        return (f"ctxsim: {self.tracker} {verdict} session {name!r} "
                f"(tolerance ±{self.tolerance:,} tokens, window {self.session.window:,})")

    def __str__(self) -> str:
        return f"{self.summary()}\n{self.table()}"


class TrackingError(AssertionError):
    """A tracker did not track a session: the message is the report's readable table."""

    def __init__(self, report: Report) -> None:
        super().__init__(str(report))
        self.report = report


# --- running ----------------------------------------------------------------------------------------------------


def _yielded(script: Script) -> list[Frame]:
    """The frames of ``script`` the SDK will yield as messages, in order (its reader drops the others)."""
    out = []
    for frame in script.frames:
        data = frame.data
        if not isinstance(data, dict) or data.get("type") in _NOT_YIELDED:
            continue
        try:
            if parse_message(data) is None:
                continue
        except Exception:
            pass  # the SDK raises on it too; the run stops there
        out.append(frame)
    return out


class _Probe:
    """Feeds one tracker and records its estimate at each observation point."""

    def __init__(self, tracker: Tracker, report: Report) -> None:
        self.tracker = tracker
        self.report = report
        self.observe_frame: Callable[[Any, dict[str, Any]], None] | None = getattr(tracker, "observe_frame", None)
        """Set for a tracker fed the raw stream-json line with each message (:class:`RawDicts`)."""
        self.judged_at: frozenset[str] | None = getattr(tracker, "judged_at", None)
        self.seen: set[int] = set()

    def feed(self, message: Any, frame: Frame) -> bool:
        report = self.report
        report.messages += 1
        try:
            if self.observe_frame is not None:
                self.observe_frame(message, frame.data)
            else:
                self.tracker.observe(message)
            observation = frame.observation
            if observation is not None and observation.index not in self.seen and (
                    self.judged_at is None or observation.kind in self.judged_at):
                self.seen.add(observation.index)
                estimate = self.tracker.context_tokens()
                if estimate is not None and not _is_token_count(estimate):
                    report.crash = (f"ctxsim: tracker {report.tracker} returned {estimate!r} from context_tokens(), "
                                    f"not a token count, {self._where(message, frame)}")
                    return False
                report.points.append(Point(observation, estimate, report.tolerance))
        except Exception as exc:
            report.crash = (f"ctxsim: tracker {report.tracker} raised {type(exc).__name__}: {exc} "
                            f"{self._where(message, frame)}")
            return False
        return True

    def _where(self, message: Any, frame: Frame) -> str:
        label = frame.observation.label if frame.observation else ""
        ident = getattr(message, "message_id", None) or getattr(message, "subtype", None) or ""
        return (f"on message #{self.report.messages} ({type(message).__name__} {ident}"
                f"{', ' + label if label else ''})")


def _is_token_count(value: Any) -> bool:
    """A number of tokens: any finite real number but a bool (not NaN, infinity, a string or None)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


async def arun_tracker(
    tracker: Tracker,
    session: Session,
    *,
    tolerance: int = 0,
    include_partial_messages: bool = False,
    scripts: Sequence[Script] | None = None,
) -> Report:
    """Run ``tracker`` over ``session`` through the real ``ClaudeSDKClient`` and report every point.

    ``scripts`` plays frames already rendered (and perhaps transformed) instead of rendering ``session``.
    A tracker that raises stops the run; the report says where.
    """
    transport = FakeTransport(session, scripts=scripts, include_partial_messages=include_partial_messages)
    report = Report(tracker_name(tracker), session, tolerance)
    probe = _Probe(tracker, report)
    async with ClaudeSDKClient(transport=transport) as client:
        for script in transport.scripts:
            expected = _yielded(script)
            await client.query(script.prompt)
            if not expected:
                continue
            index = 0
            async for message in client.receive_messages():
                if not probe.feed(message, expected[index]):
                    return report
                index += 1
                if index == len(expected):
                    break
    return report


def run_tracker(tracker: Tracker, session: Session, *, tolerance: int = 0, include_partial_messages: bool = False,
                scripts: Sequence[Script] | None = None, async_backend: str = "asyncio") -> Report:
    """:func:`arun_tracker` from synchronous code, on ``async_backend`` (``asyncio`` or ``trio``)."""
    run = partial(arun_tracker, tracker, session, tolerance=tolerance,
                  include_partial_messages=include_partial_messages, scripts=scripts)
    return anyio.run(run, backend=async_backend)


def run_tracker_parsed(tracker: Tracker, session: Session, scripts: Sequence[Script], *,
                       tolerance: int = 0) -> Report:
    """The parser path: each frame through the SDK's own ``parse_message`` to the tracker, no client.

    For speed where the client's control protocol is not under test (benchmarks, long fuzz runs); a frame
    the SDK would not yield is skipped as the client skips it.
    """
    report = Report(tracker_name(tracker), session, tolerance)
    probe = _Probe(tracker, report)
    for script in scripts:
        for frame in script.frames:
            data = frame.data
            if data.get("type") in _NOT_YIELDED:
                continue
            message = parse_message(data)
            if message is not None and not probe.feed(message, frame):
                return report
    return report


def assert_tracks(tracker: Tracker, session: Session, *, tolerance: int = 0, include_partial_messages: bool = False,
                  scripts: Sequence[Script] | None = None, async_backend: str = "asyncio") -> Report:
    """Fail with a readable table unless ``tracker`` tracks ``session`` within ``tolerance`` tokens everywhere.

    Returns the report when it does. The other keywords are :func:`run_tracker`'s.
    """
    report = run_tracker(tracker, session, tolerance=tolerance, include_partial_messages=include_partial_messages,
                         scripts=scripts, async_backend=async_backend)
    if not report.ok:
        raise TrackingError(report)
    return report
