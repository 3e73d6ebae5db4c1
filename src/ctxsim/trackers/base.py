"""What a tracker is: the :class:`Tracker` protocol ctxsim checks, how reports name one, and the adapters that let
trackers of other shapes run.

A tracker is anything with ``observe(message)`` (a ``claude_agent_sdk`` ``Message``) and
``context_tokens() -> int | None`` (None: unknown); ``reset()`` is optional. The adapters cover the shapes seen in
the wild: :class:`RawDicts` (fed the raw stream-json dicts), :class:`ResultsOnly` (fed only ``ResultMessage``\\ s)
and :class:`FromRatio` (a tracker that returns a ratio). A tracker (or adapter) with a ``judged_at`` set of
observation kinds is compared at those points only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from claude_agent_sdk import ResultMessage

__all__ = ["FromRatio", "RawDicts", "ResultsOnly", "Tracker", "TrackerFactory", "tracker_name"]


@runtime_checkable
class Tracker(Protocol):
    """What ctxsim can check: it sees SDK messages and says how full the main context is."""

    def observe(self, message: Any) -> None: ...

    def context_tokens(self) -> int | None: ...


def tracker_name(tracker: object) -> str:
    """How reports name a tracker: its ``name`` attribute, else its class name."""
    name = getattr(tracker, "name", None)
    return name if isinstance(name, str) and name else type(tracker).__name__


# --- adapters ---------------------------------------------------------------------------------------------------


@dataclass
class RawDicts:
    """Runs a tracker that reads the raw stream-json dicts (the lines the CLI writes) instead of messages.

    The SDK still runs: for each message it yields, the tracker gets the line that message was parsed from.
    """

    tracker: Any
    """The wrapped tracker; its ``observe`` takes a dict."""

    @property
    def name(self) -> str:
        return tracker_name(self.tracker)

    def observe_frame(self, message: Any, raw: dict[str, Any]) -> None:
        self.tracker.observe(raw)

    def observe(self, message: Any) -> None:  # pragma: no cover - the oracle calls observe_frame
        raise TypeError("ctxsim: RawDicts needs the raw line; run it through ctxsim.check")

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

    def observe(self, message: Any) -> None:
        if isinstance(message, ResultMessage):
            (self.feed or type(self.tracker).observe)(self.tracker, message)

    def context_tokens(self) -> int | None:
        value: int | None = self.tracker.context_tokens()
        return value


@dataclass
class FromRatio:
    """Runs a tracker that reports a pressure ratio (0..1+) rather than tokens: tokens = ratio x ``window``."""

    tracker: Any
    window: int
    ratio: Callable[[Any], float | None] = field(default=lambda t: t.pressure_ratio())
    """How to read the ratio off the tracker."""

    @property
    def name(self) -> str:
        return tracker_name(self.tracker)

    def observe(self, message: Any) -> None:
        self.tracker.observe(message)

    def context_tokens(self) -> int | None:
        value = self.ratio(self.tracker)
        return None if value is None else round(value * self.window)


TrackerFactory = Callable[[], Tracker]
"""Makes a fresh tracker: a tracker class, or a function without arguments."""
