"""How a tracker of any kind is fed and where it is judged, decided once from the tracker itself: :func:`feeding`.

Every door asks this one function (through :attr:`TrackerSpec.feeding <ctxsim.trackers.TrackerSpec>` for a tracker
named on a command line), so a Python factory, a catalogued tracker, a statusline command (``cmd:``), a stream
tracker (``stream:``) and a tracker ``module:factory`` makes in any of those shapes are fed, kept off the scenarios
whose faults their input never carries, and judged the same way whichever door names them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ._base import PointTracker

__all__ = ["ESTIMATES", "Fed", "Feeding", "NotATracker", "feeding"]

Fed = Literal["messages", "frames", "points", "estimates"]
"""How a tracker is fed: ``messages`` (each message the SDK yields: ``observe``), ``frames`` (each message with the
stream-json line it was parsed from: ``observe_frame``; :class:`~ctxsim.trackers.RawDicts`, a ``stream:`` tracker),
``points`` (Claude Code's surfaces at each observation point at once: ``estimate_points``; a ``cmd:`` statusline) or
``estimates`` (not fed: the estimates a client of ``ctxsim serve`` wrote)."""

_READS: dict[Fed, frozenset[str]] = {"messages": frozenset({"sdk"}), "frames": frozenset({"sdk"}),
                                     "points": frozenset({"statusline", "transcript"}),
                                     "estimates": frozenset({"sdk"})}


class NotATracker(TypeError):
    """An object that is no tracker of any kind: the message says what it lacks, in one line."""


@dataclass(frozen=True)
class Feeding:
    """How one tracker is fed, what it reads and where it is judged."""

    fed: Fed
    judged_at: frozenset[str] | None = None
    """The kinds of observation point it is judged at (None: every kind)."""

    @property
    def reads(self) -> frozenset[str]:
        """The surfaces its input carries (:data:`ctxsim.surfaces.SURFACES`): a tracker fed points reads the
        statusline payload and the transcript files, any other the SDK stream."""
        return _READS[self.fed]

    @property
    def points_of(self) -> Literal["stream", "transcript"]:
        """Whose observation points it is judged at: the stream's as played, or (fed points) the transcript's, where
        a fault may place a point elsewhere or make it unknowable."""
        return "transcript" if self.fed == "points" else "stream"


ESTIMATES = Feeding("estimates")
"""The feeding of the estimates a client of ``ctxsim serve`` wrote: judged at every point of the stream served."""


def feeding(tracker: object) -> Feeding:
    """How ``tracker`` is fed (:data:`Fed`) and the kinds of point it is judged at (its ``judged_at``). Raises
    :class:`NotATracker` for an object with neither ``estimate_points`` nor ``observe`` and ``context_tokens``."""
    judged_at = getattr(tracker, "judged_at", None)
    judged = frozenset(judged_at) if judged_at is not None else None
    if isinstance(tracker, PointTracker):
        return Feeding("points", judged)
    missing = [m for m in ("observe", "context_tokens") if not callable(getattr(tracker, m, None))]
    if missing:
        raise NotATracker(f"a {type(tracker).__name__}, which has no {' or '.join(missing)}(): a tracker has "
                          f"observe(message) and context_tokens(), or estimate_points(session, points, faults)")
    return Feeding("frames" if callable(getattr(tracker, "observe_frame", None)) else "messages", judged)
