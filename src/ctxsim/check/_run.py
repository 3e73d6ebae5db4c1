"""Running a tracker over a session through the real SDK and building its :class:`Report` (the package's face
says what the oracle judges and how)."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict, cast

import anyio
from claude_agent_sdk import ClaudeSDKClient

from .._sync import run_blocking, step_once
from ..processes import described
from ..sdk import FakeTransport, client_message
from ..trackers import (
    AnyTracker,
    AsyncTracker,
    Feeding,
    FromRatio,
    NotATracker,
    PointTracker,
    PointTrackerError,
    RawDicts,
    ResultsOnly,
    Tracker,
    feeding,
    is_token_count,
    tracker_name,
    user_traceback,
)
from ..wire import Frame, Observation, Script, render
from ..world import Session
from ._points import estimates_failure, point_estimates
from ._progress import Progress
from ._quantity import judged_quantity
from ._report import Point, Report, TrackingError

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..faults import FaultPlan
    from ..surfaces import Rendition

__all__ = [
    "AsyncTracker",
    "FromRatio",
    "Point",
    "RawDicts",
    "Report",
    "ResultsOnly",
    "RunOptions",
    "Tracker",
    "TrackingError",
    "arun_tracker",
    "assert_tracks",
    "assert_tracks_async",
    "run_tracker",
    "run_tracker_parsed",
    "tracker_name",
]

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

    def __init__(self, tracker: Tracker | AsyncTracker, report: Report, fed: Feeding) -> None:
        self.tracker = tracker
        self.report = report
        self.observe_frame: Callable[[Any, dict[str, Any]], object] | None = (
            getattr(tracker, "observe_frame") if fed.fed == "frames" else None)  # noqa: B009 (fed frames: it has one)
        """Set for a tracker fed the raw stream-json line with each message (:class:`RawDicts`)."""
        self.judged_at = fed.judged_at
        self.seen: set[int] = set()
        report.quantity = judged_quantity(tracker, report.session)
        report.declared = getattr(tracker, "quantity", None)

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
        gauge = self.report.quantity != "tokens" and isinstance(estimate, int | float) and not isinstance(estimate,
                                                                                                      bool)
        if not gauge and estimate is not None and not is_token_count(estimate):
            return self._fail(f"returned {estimate!r} from context_tokens(), not a token count,", message, frame)
        self.report.points.append(self.report.point(observation, estimate))
        return True

    def _raised(self, exc: Exception, message: Any, frame: Frame) -> bool:
        if isinstance(exc, PointTrackerError):  # a tracker's process that could not be read (stream:): no verdict
            self.report.error = str(exc)
            return False
        self.report.traceback = user_traceback(exc)
        return self._fail(f"raised {described(exc)}", message, frame)

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


def _run_points(tracker: PointTracker, rendition: Rendition, report: Report) -> Report:
    """Judge a :class:`PointTracker` at the observation points of the transcript (:mod:`ctxsim.check`)."""
    shown = getattr(tracker, "payload_figures", None)
    if callable(shown):
        report.shown = shown(rendition.session, rendition.faults)
    try:
        for observation, estimate in point_estimates(tracker, rendition):
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


def _rendition(session: Session, scripts: Iterable[Script] | None, faults: FaultPlan | None,
               rendition: Rendition | None, partial: bool = False) -> Rendition:
    """The run's world on every surface: ``rendition`` when given, else one playing ``scripts`` (made with
    ``faults``, never applied here) or ``session`` rendered plain."""
    from ..surfaces import Rendition

    if rendition is not None:
        return rendition
    if scripts is not None:
        made = list(scripts)
        return Rendition(session, faults, partial=partial, played=lambda: made)
    return Rendition(session, faults, partial=partial,
                     played=lambda: render(session, include_partial_messages=partial))


def _feeding(tracker: object) -> Feeding:
    """How ``tracker`` is fed (:func:`ctxsim.trackers.feeding`, asked once a run); an object that is no tracker is
    fed messages, and the run reports where it fails."""
    try:
        return feeding(tracker)
    except NotATracker:
        return Feeding("messages", getattr(tracker, "judged_at", None))


class RunOptions(TypedDict, total=False):
    """The keywords of a tracker run, said once: :func:`arun_tracker` takes them (its defaults are theirs), and
    :func:`run_tracker`, :func:`assert_tracks` and :func:`assert_tracks_async` pass them on unchanged, so the four
    cannot drift apart."""

    tolerance: int
    include_partial_messages: bool
    scripts: Sequence[Script] | None
    silence_timeout: float | None
    faults: FaultPlan | None
    rendition: Rendition | None


async def arun_tracker(
    tracker: AnyTracker,
    session: Session,
    *,
    tolerance: int = 0,
    include_partial_messages: bool = False,
    scripts: Sequence[Script] | None = None,
    silence_timeout: float | None = 30.0,
    faults: FaultPlan | None = None,
    rendition: Rendition | None = None,
) -> Report:
    """Run ``tracker`` over ``session`` through the real ``ClaudeSDKClient`` and report every point.

    ``scripts`` plays frames already rendered (and perhaps transformed) instead of rendering ``session``.
    A tracker that raises stops the run; the report says where. ``silence_timeout`` bounds every wait on the
    client (connecting, sending a prompt, each message, disconnecting) in seconds of silence, not in total time
    (None: no bound): a wait past it, or a message stream that ends before every expected message, stops the run
    and the report's ``stall`` says which query, the last message delivered and what it was waiting for.
    ``faults`` is the plan ``scripts`` were made with: a :class:`PointTracker` is judged at the points of the
    transcript with its transcript form applied (:mod:`ctxsim.check`), not at those of ``scripts``.
    A tracker with a ``bind_client(client)`` method is handed the connected ``ClaudeSDKClient`` before the first
    query, so it can ask it (``await client.get_context_usage()`` in an async ``context_tokens``) as an app holding
    its client does; what it answers is judged against the truth like any estimate.
    ``rendition`` is the run's world already rendered (:class:`ctxsim.surfaces.Rendition`, e.g.
    :meth:`ctxsim.scenario.SessionScenario.rendition`): the stream played and the points judged are its, each
    surface rendered once for the whole run; ``scripts`` and ``faults`` are then not given.
    """
    world = _rendition(session, scripts, faults, rendition, include_partial_messages)
    fed = _feeding(tracker)
    report = Report(tracker_name(tracker), session, tolerance)
    if fed.fed == "points":
        return await anyio.to_thread.run_sync(partial(_run_points, cast(PointTracker, tracker), world, report))
    transport = FakeTransport(session, scripts=world.stream, include_partial_messages=include_partial_messages)
    probe = _Probe(cast("Tracker | AsyncTracker", tracker), report, fed)
    progress = Progress(report, len(transport.scripts), silence_timeout)
    client = ClaudeSDKClient(transport=transport)
    try:
        with progress.scope:
            progress.wait("the SDK client to connect (its initialize request)")
            await client.connect()
            bind = getattr(tracker, "bind_client", None)
            if callable(bind):  # a tracker that asks the client (get_context_usage) is handed the one it tracks
                bind(client)
            await _play(client, transport.scripts, probe, progress)
        if progress.scope.cancelled_caught:
            progress.stalled()
    finally:
        with anyio.move_on_after(silence_timeout) as waited:
            await client.disconnect()
        if waited.cancelled_caught:
            progress.wait("the SDK client to disconnect")
            progress.stalled()
        _close(tracker)
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


def run_tracker(tracker: AnyTracker, session: Session, *, async_backend: str = "asyncio",
                **options: Unpack[RunOptions]) -> Report:
    """:func:`arun_tracker` from synchronous code, on ``async_backend`` (``asyncio`` or ``trio``); called where an
    event loop already runs, on a worker thread with its own loop while the caller waits. The other keywords are
    :func:`arun_tracker`'s (:class:`RunOptions`)."""
    return run_blocking(partial(arun_tracker, tracker, session, **options), backend=async_backend)


def run_tracker_parsed(tracker: AnyTracker, session: Session, scripts: Iterable[Script], *,
                       tolerance: int = 0, faults: FaultPlan | None = None,
                       rendition: Rendition | None = None) -> Report:
    """The parser path: each frame through the SDK's own ``parse_message`` to the tracker, no client.

    ``scripts`` may be any iterable, e.g. :func:`ctxsim.wire.render_stream`: each script is let go once read.

    For speed where the client's control protocol is not under test (benchmarks, long fuzz runs); a frame
    the SDK would not yield is skipped as the client skips it (:func:`ctxsim.sdk.client_message`); ``rendition``: the
    run's world, from which a tracker reading Claude Code's other surfaces is judged. There is no
    event loop here: an async tracker that waits on one stops the run (the report's ``crash`` says so).
    """
    report = Report(tracker_name(tracker), session, tolerance)
    fed = _feeding(tracker)
    if fed.fed == "points":  # judged at the transcript's points: the stream is not read
        return _run_points(cast(PointTracker, tracker), _rendition(session, (), faults, rendition), report)
    probe = _Probe(cast("Tracker | AsyncTracker", tracker), report, fed)
    try:
        for script in scripts:
            for frame in script.frames:
                message = client_message(frame.data)
                if message is not None and not probe.feed_now(message, frame):
                    return report
    finally:
        _close(tracker)
    return report


def _close(tracker: object) -> None:
    """The session is played: a tracker with ``session_ended()`` is told so (a stream tracker stops its process;
    the next session gets a fresh one)."""
    ended = getattr(tracker, "session_ended", None)
    if callable(ended):
        ended()


def assert_tracks(tracker: AnyTracker, session: Session, *, async_backend: str = "asyncio",
                  **options: Unpack[RunOptions]) -> Report:
    """Fail with a readable table unless ``tracker`` tracks ``session`` within ``tolerance`` tokens everywhere.

    Returns the report when it does. The keywords are :func:`run_tracker`'s (:class:`RunOptions`, and
    ``async_backend``). Works from async tests too (see :func:`run_tracker`); there, ``await``
    :func:`assert_tracks_async` runs on the test's own loop instead.
    """
    __tracebackhide__ = True  # pytest shows the test's line and the report, not this frame
    report = run_tracker(tracker, session, async_backend=async_backend, **options)
    if not report.ok:
        raise TrackingError(report)
    return report


async def assert_tracks_async(tracker: AnyTracker, session: Session, **options: Unpack[RunOptions]) -> Report:
    """:func:`assert_tracks` for async code: ``await assert_tracks_async(tracker, session, tolerance=1000)`` plays
    the session on the running event loop (asyncio or trio) with :func:`arun_tracker` (its keywords,
    :class:`RunOptions`)."""
    __tracebackhide__ = True
    report = await arun_tracker(tracker, session, **options)
    if not report.ok:
        raise TrackingError(report)
    return report
