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
:class:`ResultsOnly`, :class:`FromRatio`), re-exported here. A tracker's ``observe`` and ``context_tokens`` may be
``async def`` (:class:`AsyncTracker`): what they return is awaited.

A :class:`~ctxsim.trackers.base.PointTracker` (a statusline command, ``cmd:``) is not fed messages: it is asked for
its estimates at the same points, the world rendered as Claude Code shows it there, and judged the same way; an
estimate that is a band (a percentage shown to a precision) is off by how far the band lies from the truth's. One
that cannot be read (a command that fails, hangs or prints nonsense) leaves its ``ctxsim:`` line in the report's
``error``: no verdict.

From async code, ``await`` :func:`arun_tracker` or :func:`assert_tracks_async`. The synchronous :func:`run_tracker`
and :func:`assert_tracks` work from anywhere: called where an event loop already runs (an ``asyncio`` or ``anyio``
test), they play the session on a worker thread with its own loop while the caller waits.

When a tracker raises, the report's ``crash`` names the message it raised on and its ``traceback`` shows the frames
of the tracker's own code (ctxsim's and the SDK's left out); a failing run whose estimates are ratios (a float in
[0, 1] where the truth is tokens) gets a hint to :class:`FromRatio`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from claude_agent_sdk import ClaudeSDKClient

from .._blocking import run_blocking, step_once
from ..sdk import FakeTransport, client_message
from ..trackers._diagnosis import is_token_count, looks_like_ratio, ratio_hint, user_traceback
from ..trackers.base import (
    AnyTracker,
    AsyncTracker,
    FromRatio,
    PointTracker,
    PointTrackerError,
    RawDicts,
    ResultsOnly,
    Tracker,
    tracker_name,
)
from ..wire import Frame, Observation, Script
from ..world import Session
from ._points import estimates_failure, point_estimates
from ._progress import Progress

if TYPE_CHECKING:
    from ..faults import FaultPlan

__all__ = [
    "AsyncTracker",
    "FromRatio",
    "Point",
    "RawDicts",
    "Report",
    "ResultsOnly",
    "Tracker",
    "TrackingError",
    "arun_tracker",
    "assert_tracks",
    "assert_tracks_async",
    "run_tracker",
    "run_tracker_parsed",
    "tracker_name",
]

# --- the report -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """The tracker against the truth at one observation point."""

    observation: Observation
    estimate: int | None
    tolerance: int
    band: tuple[int, int] | None = None
    """Where the tracker gave a band (``low``, ``high``) rather than a figure; :attr:`estimate` is then its middle."""

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
        low, high = self.band or (self.estimate, self.estimate)
        if low > self.high:
            return low - self.high
        if high < self.low:
            return high - self.low
        return 0

    @property
    def ok(self) -> bool:
        """Within tolerance, or unknown where the truth cannot be known (or, where the stream cannot show that
        anything changed, within tolerance of what it last told; or, where the stream shows the context only up to
        an estimate, within tolerance of the estimates that track it)."""
        error = self.error
        truth = self.observation.truth
        if error is None:
            return not truth.knowable
        if abs(error) <= self.tolerance:
            return True
        return self.within(truth.estimated) or (not truth.knowable and self.within(truth.unseen))

    def within(self, band: tuple[int, int] | None) -> bool:
        """The estimate lies in ``band`` (within tolerance)."""
        if band is None or self.estimate is None:
            return False
        low, high = band
        mine = self.band or (self.estimate, self.estimate)
        return low - self.tolerance <= mine[1] and mine[0] <= high + self.tolerance


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
    traceback: str | None = None
    """When the tracker raised: the traceback through the tracker's own code (ctxsim's and the SDK's frames left
    out), as Python prints one."""
    stall: str | None = None
    """A ``ctxsim:`` line saying the run stopped waiting for the SDK client (silence past the timeout, or its
    stream ended early): which query, the last frame delivered and the one awaited. Never an expected outcome."""
    error: str | None = None
    """A ``ctxsim:`` line saying the tracker could not be read at all (a command tracker that exited non-zero, hung
    or printed nonsense: the command, the point, the tail of its stderr). Never an expected outcome."""

    @property
    def failures(self) -> list[Point]:
        """The points outside tolerance."""
        return [p for p in self.points if not p.ok]

    @property
    def ok(self) -> bool:
        """True when the run finished, the tracker did not raise and every point is within tolerance."""
        return self.stall is None and self.crash is None and self.error is None and not self.failures

    @property
    def how(self) -> str | None:
        """How the run failed, None when it did not: ``over`` or ``under`` the truth, or ``none`` (no estimate), at
        the first point off; ``crash`` (the tracker raised or returned a non-count), ``stall``, ``unreadable`` (a
        command tracker that could not be read) or ``nowhere`` (judged at no point)."""
        if self.stall is not None:
            return "stall"
        if self.crash is not None:
            return "crash"
        if self.error is not None:
            return "unreadable"
        if self.failures:
            error = self.failures[0].error
            return "none" if error is None else "over" if error > 0 else "under"
        return None if self.points else "nowhere"

    def table(self, *, only_failures: bool = False, notes: Mapping[int, str] | None = None,
              notes_title: str = "threshold", likely: Mapping[int, str] | None = None) -> str:
        """The timeline as a table: point, truth band, estimate and error (``>`` marks a failure).

        ``notes`` adds a column (titled ``notes_title``) with a note per observation index, e.g. where a
        threshold fires; with ``only_failures``, rows with a note are shown too. ``likely`` adds a last column,
        ``likely cause``, at failing points (:func:`ctxsim.scenario_run.likely_bugs` makes one).
        """
        window = self.session.window
        header = ("", "#", "point", "truth", "estimate", "error") + ((notes_title,) if notes is not None else ()) + (
            ("likely cause",) if likely else ())
        rows = [header]
        for p in self.points:
            note = notes.get(p.observation.index, "") if notes is not None else ""
            cause = ((likely.get(p.observation.index, "") if not p.ok else ""),) if likely else ()
            if only_failures and p.ok and not note:
                continue
            truth = f"{p.low:,}" if p.low == p.high else f"{p.low:,}..{p.high:,}"
            if not p.observation.truth.knowable:
                unseen = p.observation.truth.unseen
                truth = f"{unseen[0]:,}..{unseen[1]:,} (not knowable)" if unseen else "not knowable"
            estimate = ("unknown" if p.estimate is None else f"{p.estimate:,}" if p.band is None else
                        f"{p.band[0]:,}..{p.band[1]:,}")
            if p.error is None:
                error = "ok" if p.ok else "unknown"
            elif p.error == 0:
                error = "ok"
            elif p.ok and not p.observation.truth.knowable:
                error = "ok (as last told)"
            elif p.ok and abs(p.error) > p.tolerance:
                error = "ok (estimated)"
            else:
                error = f"{p.error:+,} ({100 * p.error / window:+.1f}%)"
            row = (">" if not p.ok else "", str(p.observation.index), p.observation.label, truth, estimate, error)
            rows.append(row + ((note,) if notes is not None else ()) + cause)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        align = ("<", ">", "<", ">", ">", ">", "<", "<")
        return "\n".join(
            "  ".join(f"{cell:{a}{w}}" for cell, a, w in zip(row, align, widths)).rstrip() for row in rows)

    def summary(self) -> str:
        """One line: which tracker, which session, how many points failed."""
        name = self.session.name or self.session.session_id
        if self.stall:
            return self.stall
        if self.error:
            return self.error
        if self.crash:
            return self.crash
        bad = len(self.failures)
        verdict = "tracks" if not bad else f"is off on {bad} of {len(self.points)} points of"
        return (f"ctxsim: {self.tracker} {verdict} session {name!r} "
                f"(tolerance ±{self.tolerance:,} tokens, window {self.session.window:,})")

    def diagnosis(self) -> list[str]:
        """What helps to find the cause, after the table: the traceback of a tracker that raised; a hint to
        :class:`FromRatio` when the tracker failed with a ratio (a float in [0, 1]) where the truth is tokens."""
        out = [self.traceback] if self.traceback else []
        ratio = next((p for p in self.failures if looks_like_ratio(p.estimate)), None)
        if ratio is not None:
            out.append(ratio_hint(self.tracker, ratio.estimate, ratio.observation.label, ratio.low,
                                  self.session.window))
        return out

    def __str__(self) -> str:
        return "\n".join([self.summary(), *([self.table()] if self.points else []), *self.diagnosis()])


class TrackingError(AssertionError):
    """A tracker did not track a session: the message is the report's readable table."""

    def __init__(self, report: Report) -> None:
        super().__init__(str(report))
        self.report = report


# --- running ----------------------------------------------------------------------------------------------------


def _yielded(script: Script) -> list[Frame]:
    """The frames of ``script`` the SDK will yield as messages, in order (:func:`ctxsim.sdk.client_message`: the
    client keeps the others to itself)."""
    out = []
    for frame in script.frames:
        data = frame.data
        if not isinstance(data, dict):
            continue
        try:
            if client_message(data) is None:
                continue
        except Exception:
            pass  # the SDK raises on it too; the run stops there
        out.append(frame)
    return out


class _Probe:
    """Feeds one tracker and records its estimate at each observation point."""

    def __init__(self, tracker: Tracker | AsyncTracker, report: Report) -> None:
        self.tracker = tracker
        self.report = report
        self.observe_frame: Callable[[Any, dict[str, Any]], object] | None = getattr(tracker, "observe_frame", None)
        """Set for a tracker fed the raw stream-json line with each message (:class:`RawDicts`)."""
        self.judged_at: frozenset[str] | None = getattr(tracker, "judged_at", None)
        self.seen: set[int] = set()

    async def feed(self, message: Any, frame: Frame) -> bool:
        """Hand ``message`` to the tracker (awaiting what an async tracker returns) and, at an observation point,
        record its estimate; False when the tracker raised or gave something other than a token count."""
        self.report.messages += 1
        try:
            done = self._observe(message, frame)
            if done is not None and inspect.isawaitable(done):
                await done
            observation = frame.observation
            if observation is not None and self._judged(observation):
                estimate = self.tracker.context_tokens()
                if estimate is not None and not isinstance(estimate, int) and inspect.isawaitable(estimate):
                    estimate = await estimate
                return self._record(estimate, observation, message, frame)
        except Exception as exc:
            return self._raised(exc, message, frame)
        return True

    def feed_now(self, message: Any, frame: Frame) -> bool:
        """:meth:`feed` without an event loop or a coroutine a message: an async tracker must be done in a step."""
        self.report.messages += 1
        try:
            done = self._observe(message, frame)
            if done is not None and inspect.isawaitable(done) and not step_once(done)[0]:
                return self._waits(message, frame)
            observation = frame.observation
            if observation is not None and self._judged(observation):
                estimate = self.tracker.context_tokens()
                if estimate is not None and not isinstance(estimate, int) and inspect.isawaitable(estimate):
                    finished, estimate = step_once(estimate)
                    if not finished:
                        return self._waits(message, frame)
                return self._record(estimate, observation, message, frame)
        except Exception as exc:
            return self._raised(exc, message, frame)
        return True

    def _observe(self, message: Any, frame: Frame) -> object:
        return self.observe_frame(message, frame.data) if self.observe_frame is not None else self.tracker.observe(
            message)

    def _judged(self, observation: Observation) -> bool:
        """True the first time an observation point the tracker is judged at comes by."""
        if observation.index in self.seen or (self.judged_at is not None and observation.kind not in self.judged_at):
            return False
        self.seen.add(observation.index)
        return True

    def _record(self, estimate: Any, observation: Observation, message: Any, frame: Frame) -> bool:
        if estimate is not None and not is_token_count(estimate):
            return self._fail(f"returned {estimate!r} from context_tokens(), not a token count,", message, frame)
        self.report.points.append(Point(observation, estimate, self.report.tolerance))
        return True

    def _raised(self, exc: Exception, message: Any, frame: Frame) -> bool:
        self.report.traceback = user_traceback(exc)
        return self._fail(f"raised {type(exc).__name__}: {exc}", message, frame)

    def _waits(self, message: Any, frame: Frame) -> bool:
        self.report.crash = (f"ctxsim: tracker {self.report.tracker} waits on an event loop "
                             f"{self._where(message, frame)}, and run_tracker_parsed has none: run it with "
                             f"run_tracker or arun_tracker")
        return False

    def _fail(self, what: str, message: Any, frame: Frame) -> bool:
        self.report.crash = f"ctxsim: tracker {self.report.tracker} {what} {self._where(message, frame)}"
        return False

    def _where(self, message: Any, frame: Frame) -> str:
        label = frame.observation.label if frame.observation else ""
        ident = getattr(message, "message_id", None) or getattr(message, "subtype", None) or ""
        return (f"on message #{self.report.messages} ({type(message).__name__} {ident}"
                f"{', ' + label if label else ''})")


def _run_points(tracker: PointTracker, session: Session, report: Report, faults: FaultPlan | None) -> Report:
    """Judge a :class:`PointTracker` at the observation points of the transcript (:mod:`ctxsim.check._points`)."""
    try:
        for observation, estimate in point_estimates(tracker, session, faults):
            if isinstance(estimate, tuple):
                point = Point(observation, sum(estimate) // 2, report.tolerance, band=estimate)
            else:
                point = Point(observation, estimate, report.tolerance)
            report.points.append(point)
    except PointTrackerError as exc:
        report.error = str(exc)
    except Exception as exc:
        report.points.clear()
        report.traceback = user_traceback(exc)
        report.crash = f"ctxsim: tracker {report.tracker} {estimates_failure(exc)}"
    return report


async def arun_tracker(
    tracker: AnyTracker,
    session: Session,
    *,
    tolerance: int = 0,
    include_partial_messages: bool = False,
    scripts: Sequence[Script] | None = None,
    silence_timeout: float | None = 30.0,
    faults: FaultPlan | None = None,
) -> Report:
    """Run ``tracker`` over ``session`` through the real ``ClaudeSDKClient`` and report every point.

    ``scripts`` plays frames already rendered (and perhaps transformed) instead of rendering ``session``.
    A tracker that raises stops the run; the report says where. ``silence_timeout`` bounds every wait on the
    client (connecting, sending a prompt, each message, disconnecting) in seconds of silence, not in total time
    (None: no bound): a wait past it, or a message stream that ends before every expected message, stops the run
    and the report's ``stall`` says which query, the last message delivered and what it was waiting for.
    ``faults`` is the plan ``scripts`` were made with: a :class:`PointTracker` is judged at the points of the
    transcript with its transcript form applied (:mod:`ctxsim.check._points`), not at those of ``scripts``.
    """
    if isinstance(tracker, PointTracker):
        report = Report(tracker_name(tracker), session, tolerance)
        return await anyio.to_thread.run_sync(partial(_run_points, tracker, session, report, faults))
    transport = FakeTransport(session, scripts=scripts, include_partial_messages=include_partial_messages)
    report = Report(tracker_name(tracker), session, tolerance)
    probe = _Probe(tracker, report)
    progress = Progress(report, len(transport.scripts), silence_timeout)
    client = ClaudeSDKClient(transport=transport)
    try:
        with progress.scope:
            progress.wait("the SDK client to connect (its initialize request)")
            await client.connect()
            await _play(client, transport.scripts, probe, progress)
        if progress.scope.cancelled_caught:
            progress.stalled()
    finally:
        with anyio.move_on_after(silence_timeout) as waited:
            await client.disconnect()
        if waited.cancelled_caught:
            progress.wait("the SDK client to disconnect")
            progress.stalled()
    return report


async def _play(client: ClaudeSDKClient, scripts: Sequence[Script], probe: _Probe, progress: Progress) -> None:
    """Send each script's prompt and feed the tracker every message the client yields for it."""
    for script in scripts:
        progress.query += 1
        query = progress.query
        expected = _yielded(script)
        progress.wait(f"the SDK client to send the prompt of query {query}")
        await client.query(script.prompt)
        messages = client.receive_messages()
        count = len(expected)
        for number, frame in enumerate(expected, 1):
            progress.wait((script, number, count, frame))
            try:
                message = await messages.__anext__()
            except StopAsyncIteration:
                progress.stalled(ended=True)
                return
            if not await probe.feed(message, frame):
                return
            progress.last = (query, number, message, script, frame)


def run_tracker(tracker: AnyTracker, session: Session, *, tolerance: int = 0,
                include_partial_messages: bool = False, scripts: Sequence[Script] | None = None,
                async_backend: str = "asyncio", silence_timeout: float | None = 30.0,
                faults: FaultPlan | None = None) -> Report:
    """:func:`arun_tracker` from synchronous code, on ``async_backend`` (``asyncio`` or ``trio``); called where an
    event loop already runs, on a worker thread with its own loop while the caller waits."""
    run = partial(arun_tracker, tracker, session, tolerance=tolerance,
                  include_partial_messages=include_partial_messages, scripts=scripts,
                  silence_timeout=silence_timeout, faults=faults)
    return run_blocking(run, backend=async_backend)


def run_tracker_parsed(tracker: AnyTracker, session: Session, scripts: Iterable[Script], *,
                       tolerance: int = 0, faults: FaultPlan | None = None) -> Report:
    """The parser path: each frame through the SDK's own ``parse_message`` to the tracker, no client.

    ``scripts`` may be any iterable, e.g. :func:`ctxsim.wire.render_stream`: each script is let go once read.

    For speed where the client's control protocol is not under test (benchmarks, long fuzz runs); a frame
    the SDK would not yield is skipped as the client skips it (:func:`ctxsim.sdk.client_message`). There is no
    event loop here: an async tracker that waits on one stops the run (the report's ``crash`` says so).
    """
    report = Report(tracker_name(tracker), session, tolerance)
    if isinstance(tracker, PointTracker):
        return _run_points(tracker, session, report, faults)
    probe = _Probe(tracker, report)
    for script in scripts:
        for frame in script.frames:
            message = client_message(frame.data)
            if message is not None and not probe.feed_now(message, frame):
                return report
    return report


def assert_tracks(tracker: AnyTracker, session: Session, *, tolerance: int = 0,
                  include_partial_messages: bool = False, scripts: Sequence[Script] | None = None,
                  async_backend: str = "asyncio", silence_timeout: float | None = 30.0) -> Report:
    """Fail with a readable table unless ``tracker`` tracks ``session`` within ``tolerance`` tokens everywhere.

    Returns the report when it does. The other keywords are :func:`run_tracker`'s (``silence_timeout``:
    :func:`arun_tracker`'s). Works from async tests too (see :func:`run_tracker`); there,
    ``await`` :func:`assert_tracks_async` runs on the test's own loop instead.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the report, not this frame
    report = run_tracker(tracker, session, tolerance=tolerance, include_partial_messages=include_partial_messages,
                         scripts=scripts, async_backend=async_backend, silence_timeout=silence_timeout)
    if not report.ok:
        raise TrackingError(report)
    return report


async def assert_tracks_async(tracker: AnyTracker, session: Session, *, tolerance: int = 0,
                              include_partial_messages: bool = False, scripts: Sequence[Script] | None = None,
                              silence_timeout: float | None = 30.0) -> Report:
    """:func:`assert_tracks` for async code: ``await assert_tracks_async(tracker, session, tolerance=1000)`` plays
    the session on the running event loop (asyncio or trio) with :func:`arun_tracker`."""
    __tracebackhide__ = True
    report = await arun_tracker(tracker, session, tolerance=tolerance, scripts=scripts,
                                include_partial_messages=include_partial_messages, silence_timeout=silence_timeout)
    if not report.ok:
        raise TrackingError(report)
    return report
