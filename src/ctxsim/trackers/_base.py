"""What a tracker is: the :class:`Tracker` protocol ctxsim checks, how reports name one, and the adapters that let
trackers of other shapes run.

A tracker is anything with ``observe(message)`` (a ``claude_agent_sdk`` ``Message``) and
``context_tokens() -> int | None`` (None: unknown); ``reset()`` is optional. Either may be ``async def``
(:class:`AsyncTracker`): the oracle awaits what they return. The adapters cover the shapes seen in
the wild: :class:`RawDicts` (fed the raw stream-json dicts), :class:`ResultsOnly` (fed only ``ResultMessage``\\ s)
and :class:`FromRatio` (a tracker that returns a ratio). A tracker (or adapter) with a ``judged_at`` set of
observation kinds is compared at those points only.

A tracker factory may take the world of the session its tracker will track: a factory with a ``world`` parameter
is called ``factory(world=TrackerWorld(...))`` (:func:`make_tracker`), so one ``module:factory`` can configure its
tracker per scenario (the window, the provider's usage convention, the model)::

    def make(world: TrackerWorld) -> MyTracker:
        return MyTracker(window=world.window, input_includes_cache=world.usage == "inclusive")

A :class:`PointTracker` is the other kind: it is not fed the SDK's messages but reads the world as Claude Code shows
it at each observation point (the transcript written so far, the statusline payload), each point on its own, and
may give a band rather than a figure (:data:`Estimate`). :class:`ctxsim.trackers.CommandTracker` (``cmd:``) is one.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from claude_agent_sdk import ResultMessage

from ..world import DEFAULT_MODEL, ClaudeSettings, Session, UsageConvention

if TYPE_CHECKING:
    from ..faults import FaultPlan
    from ..wire import Observation

__all__ = [
    "AnyTracker",
    "AnyTrackerFactory",
    "AsyncTracker",
    "Estimate",
    "FromRatio",
    "PointTracker",
    "PointTrackerError",
    "RawDicts",
    "ResultsOnly",
    "Tracker",
    "TrackerFactory",
    "TrackerWorld",
    "make_tracker",
    "takes_world",
    "tracker_name",
]


@runtime_checkable
class Tracker(Protocol):
    """What ctxsim can check: it sees SDK messages and says how full the main context is."""

    def observe(self, message: Any) -> None: ...

    def context_tokens(self) -> int | None: ...


@runtime_checkable
class AsyncTracker(Protocol):
    """A tracker whose ``observe`` is ``async def`` (and its ``context_tokens`` too, or not): the oracle
    (:mod:`ctxsim.check`) awaits them, whether run from sync code or async."""

    def observe(self, message: Any) -> Awaitable[None]: ...

    def context_tokens(self) -> int | Awaitable[int | None] | None: ...


Estimate = int | tuple[int, int] | None
"""What a :class:`PointTracker` says at a point: tokens, a ``(low, high)`` band of tokens (a percentage shown to a
precision: 70% of a 200k window is 139,000..141,000), or None (no estimate)."""


@runtime_checkable
class PointTracker(Protocol):
    """A tracker fed the world as Claude Code shows it, point by point, instead of the SDK's message stream.

    :func:`ctxsim.check.run_tracker` hands it the session, the observation points it is judged at (in order) and
    the fault plan the stream was played with (None: none), and compares what it returns, one :data:`Estimate` per
    point, with the truth as it does a :class:`Tracker`'s.
    Points are independent: it may read them in any order, or at once. It raises :class:`PointTrackerError` when it
    cannot be read at all (the run's report carries the message, and the run counts as no verdict).
    """

    def estimate_points(self, session: Session, observations: Sequence[Observation],
                        faults: FaultPlan | None) -> Sequence[Estimate]: ...


class PointTrackerError(Exception):
    """A :class:`PointTracker` could not be read (a command that exits non-zero, hangs or prints nonsense): the
    message is one ``ctxsim:`` line naming the tracker, the session and the point."""

    __module__ = "ctxsim.trackers"  # its public name, as tracebacks and reprs show it


def tracker_name(tracker: object) -> str:
    """How reports name a tracker: its ``name`` attribute, else its class name."""
    name = getattr(tracker, "name", None)
    return name if isinstance(name, str) and name else type(tracker).__name__


# --- adapters ---------------------------------------------------------------------------------------------------


@dataclass
class RawDicts:
    """Runs a tracker that reads the raw stream-json dicts (the lines the CLI writes) instead of messages.

    The SDK still runs: for each message it yields, the tracker gets the line that message was parsed from; where
    the caller holds no line (a restart loop feeding it messages), the line rebuilt from the message.
    """

    tracker: Any
    """The wrapped tracker; its ``observe`` takes a dict."""

    @property
    def name(self) -> str:
        return tracker_name(self.tracker)

    def observe_frame(self, message: Any, raw: dict[str, Any]) -> Any:
        return self.tracker.observe(raw)  # an async tracker's awaitable: the oracle awaits it

    def observe(self, message: Any) -> Any:
        """Outside :mod:`ctxsim.check` (a restart loop of a task scenario calls ``observe`` itself): the line is
        rebuilt from the message's fields (``frame_of``)."""
        from ._frames import frame_of

        return self.tracker.observe(frame_of(message))  # an async tracker's awaitable: the caller awaits it

    def context_tokens(self) -> int | None:
        value: int | None = self.tracker.context_tokens()
        return value


@dataclass
class ResultsOnly:
    """Runs a tracker that only ever sees ``ResultMessage``\\ s, as many orchestrators wire theirs.

    Such a tracker can only be read once a query has ended, so it is judged at result points only.
    """

    tracker: Any
    feed: Callable[[Any, ResultMessage], None] | None = None
    """How to hand a result to the tracker; default ``tracker.observe(result)``."""
    judged_at: frozenset[str] = frozenset({"result"})
    """The observation kinds this tracker is compared at."""

    @property
    def name(self) -> str:
        return tracker_name(self.tracker)

    def observe(self, message: Any) -> Any:
        if isinstance(message, ResultMessage):
            return (self.feed or type(self.tracker).observe)(self.tracker, message)
        return None

    def context_tokens(self) -> int | None:
        value: int | None = self.tracker.context_tokens()
        return value


@dataclass
class FromRatio:
    """Runs a tracker that reports a pressure ratio (a share of the window, 0..1 and past 1 when over) rather than
    tokens: tokens = ratio x ``window``, rounded; None stays unknown.

    The ratio is read by calling the tracker's method named ``method``, without arguments: ``pressure_ratio()`` by
    default, ``FromRatio(tracker, 200_000, method="usage_fraction")`` for another name, and
    ``FromRatio(tracker, 200_000, method="context_tokens")`` for a tracker whose ``context_tokens()`` returns the
    ratio. ``ratio`` (a function of the tracker) reads it any other way and takes precedence over ``method``.
    """

    tracker: Any
    window: int
    ratio: Callable[[Any], float | None] | None = None
    """How to read the ratio off the tracker, when not by calling ``method``."""
    method: str = field(default="pressure_ratio", kw_only=True)
    """The tracker's method that returns the ratio (called without arguments)."""

    def __post_init__(self) -> None:
        if self.ratio is None and not callable(getattr(self.tracker, self.method, None)):
            raise TypeError(f"ctxsim: FromRatio: {tracker_name(self.tracker)} has no {self.method}() method; name "
                            f"the method that returns its ratio: FromRatio(tracker, {self.window}, method='...'), "
                            f"or read it with ratio=lambda tracker: ...")

    @property
    def name(self) -> str:
        return tracker_name(self.tracker)

    def observe(self, message: Any) -> Any:
        return self.tracker.observe(message)  # an async tracker's awaitable: the oracle awaits it

    def context_tokens(self) -> int | None:
        value = self.ratio(self.tracker) if self.ratio is not None else getattr(self.tracker, self.method)()
        return None if value is None else round(value * self.window)


TrackerFactory = Callable[[], Tracker]
"""Makes a fresh tracker: a tracker class, or a function without arguments."""


@dataclass(frozen=True)
class TrackerWorld:
    """What a tracker factory with a ``world`` parameter is told of the session its tracker will track: what a real
    agent knows of its own configuration (never the truth of the session)."""

    window: int = 200_000
    """The context window in tokens."""
    usage: UsageConvention = "additive"
    """How the provider reports usage: ``additive`` (the Anthropic API: input, cache creation and cache read add
    up) or ``inclusive`` (a gateway whose ``input_tokens`` already holds the cache reads)."""
    model: str = DEFAULT_MODEL
    """The model the session runs."""
    auto_compact_threshold: int = 0
    """Where Claude Code compacts on its own, in tokens (0: not stated)."""
    settings: ClaudeSettings = field(default_factory=ClaudeSettings)
    """The Claude Code settings the session runs with (what its environment says)."""
    auto_compact_window: int | None = None
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW``, when set."""
    max_output_tokens: int = 32_000
    """The model's max output tokens."""
    cli_version: str | None = None
    """The Claude Code release the session renders as (None: the CLI in use)."""

    def window_of(self, model: str) -> int:
        """The raw window ``model`` runs in: :attr:`window` for the session's own model, else as the settings give
        it (a ``/model`` switch)."""
        return self.window if model == self.model else self.settings.window_for(model)

    def threshold_of(self, window: int) -> int:
        """Where Claude Code autocompacts while the raw window is ``window``: :attr:`auto_compact_threshold` where
        stated for the session's own window, else computed under the settings."""
        if self.auto_compact_threshold and window == self.window:
            return self.auto_compact_threshold
        return self.settings.point(window, self.max_output_tokens, auto_compact_window=self.auto_compact_window)

    def percent_window_of(self, window: int) -> int:
        """The window Claude Code's ``used_percentage`` counts against while the raw window is ``window``
        (:meth:`ctxsim.world.ClaudeSettings.percent_window`, for :attr:`cli_version`)."""
        from ..wire import cli_version_rendered

        return self.settings.percent_window(window, auto_compact_window=self.auto_compact_window,
                                            cli_version=cli_version_rendered(self.cli_version))

    def environment(self, cli_version: str | None = None) -> dict[str, str]:
        """The world as a command is told it, in environment variables: ``CTXSIM_WINDOW``, ``CTXSIM_USAGE``
        (``additive`` or ``inclusive``), ``CTXSIM_AUTOCOMPACT_TOKENS`` (0: not stated), ``CTXSIM_MODEL`` and
        ``CTXSIM_CLI_VERSION`` (the Claude Code version rendered: ``cli_version``, else the installed CLI's)."""
        from ..wire import cli_version_rendered

        return {"CTXSIM_WINDOW": str(self.window), "CTXSIM_USAGE": self.usage,
                "CTXSIM_AUTOCOMPACT_TOKENS": str(self.auto_compact_threshold), "CTXSIM_MODEL": self.model,
                "CTXSIM_CLI_VERSION": cli_version_rendered(cli_version or self.cli_version)}

    @classmethod
    def of(cls, session: Session) -> TrackerWorld:
        """The world of ``session``."""
        return cls(window=session.window, usage=session.usage, model=session.model,
                   auto_compact_threshold=session.auto_compact_threshold, settings=session.settings,
                   auto_compact_window=session.auto_compact_window, max_output_tokens=session.max_output_tokens,
                   cli_version=session.cli)


def takes_world(factory: Callable[..., Any]) -> bool:
    """Whether ``factory`` has a ``world`` parameter (and is to be told the :class:`TrackerWorld`)."""
    try:
        return "world" in inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable without a signature
        return False


def make_tracker(factory: Callable[..., Any], session: Session | None = None) -> Any:
    """A fresh tracker from ``factory``: called with ``world=`` (``session``'s, else the default world) when it
    takes one (:func:`takes_world`), else without arguments."""
    if takes_world(factory):
        return factory(world=TrackerWorld() if session is None else TrackerWorld.of(session))
    return factory()


AnyTracker = Tracker | AsyncTracker | PointTracker
"""Anything the oracle (:mod:`ctxsim.check`) judges: fed messages (sync or async) or read at points."""

AnyTrackerFactory = Callable[[], AnyTracker]
"""Makes a fresh :data:`AnyTracker`."""
