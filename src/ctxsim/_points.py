"""Asking a :class:`~ctxsim.trackers.base.PointTracker` for its estimates at a run's observation points, checked
(:func:`ctxsim.check.arun_tracker` judges them as it judges a message-fed tracker's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .trackers._diagnosis import is_token_count
from .trackers.base import Estimate, PointTracker

if TYPE_CHECKING:
    from .wire import Observation, Script
    from .world import Session

__all__ = ["InvalidEstimates", "estimates_failure", "observations", "point_estimates"]


class InvalidEstimates(ValueError):
    """What ``estimate_points`` returned is not one estimate per point, each tokens, a (low, high) band or None."""


def observations(scripts: Iterable[Script], judged_at: frozenset[str] | None) -> list[Observation]:
    """The observation points of ``scripts`` a tracker judged at ``judged_at`` (None: every kind) is compared at, in
    order, each once."""
    seen: set[int] = set()
    out = []
    for script in scripts:
        for frame in script.frames:
            observation = frame.observation
            if observation is None or observation.index in seen:
                continue
            if judged_at is None or observation.kind in judged_at:
                seen.add(observation.index)
                out.append(observation)
    return out


def _valid(estimate: object) -> bool:
    if estimate is None:
        return True
    if isinstance(estimate, tuple):
        return (len(estimate) == 2 and all(is_token_count(v) for v in estimate) and estimate[0] <= estimate[1])
    return is_token_count(estimate)


def point_estimates(tracker: PointTracker, session: Session,
                    scripts: Iterable[Script]) -> list[tuple[Observation, Estimate]]:
    """Each observation point of ``scripts`` ``tracker`` is judged at, with its estimate there (a band's ends and a
    figure made ``int``). Raises what the tracker raises, or :class:`InvalidEstimates`."""
    points = observations(scripts, getattr(tracker, "judged_at", None))
    estimates = list(tracker.estimate_points(session, points))
    if len(estimates) != len(points):
        raise InvalidEstimates(f"gave {len(estimates)} estimates for {len(points)} points from estimate_points()")
    out: list[tuple[Observation, Estimate]] = []
    for observation, estimate in zip(points, estimates):
        if not _valid(estimate):
            raise InvalidEstimates(f"gave {estimate!r} at point #{observation.index} ({observation.label}), not a "
                                   f"token count, a (low, high) band or None")
        if isinstance(estimate, tuple):
            estimate = (round(estimate[0]), round(estimate[1]))
        elif estimate is not None:
            estimate = round(estimate)
        out.append((observation, estimate))
    return out


def estimates_failure(exc: Exception) -> str:
    """What the report's ``crash`` says of a point tracker that raised ``exc`` (after ``tracker NAME``)."""
    if isinstance(exc, InvalidEstimates):
        return str(exc)
    return f"raised {type(exc).__name__}: {exc} in estimate_points()"
