"""Asking a :class:`~ctxsim.trackers.PointTracker` for its estimates at a session's observation points, checked
(:func:`ctxsim.check.arun_tracker` judges them as it judges a message-fed tracker's).

A point tracker reads the world as Claude Code shows it, so its points (and their truths) are those of the run's
transcript (:meth:`ctxsim.surfaces.Rendition.points`: the fault plan's transcript form applied): a fault may place a
point elsewhere there than in the stream (the older layout writes a subagent's rows into the main file), or make it
unknowable there."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..processes import described
from ..trackers import Estimate, PointTracker, is_token_count

if TYPE_CHECKING:
    from ..surfaces import Rendition
    from ..wire import Observation

__all__ = ["InvalidEstimates", "estimates_failure", "point_estimates"]


class InvalidEstimates(ValueError):
    """What ``estimate_points`` returned is not one estimate per point, each tokens, a (low, high) band or None."""


def _valid(estimate: object) -> bool:
    if estimate is None:
        return True
    if isinstance(estimate, tuple):
        return (len(estimate) == 2 and all(is_token_count(v) for v in estimate) and estimate[0] <= estimate[1])
    return is_token_count(estimate)


def point_estimates(tracker: PointTracker, rendition: Rendition) -> list[tuple[Observation, Estimate]]:
    """Each observation point of ``rendition``'s transcript ``tracker`` is judged at, with its estimate there (a
    band's ends and a figure made ``int``). Raises what the tracker raises, or :class:`InvalidEstimates`."""
    points = rendition.points(getattr(tracker, "judged_at", None))
    estimates = list(tracker.estimate_points(rendition.session, points, rendition.faults))
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
    return f"raised {described(exc)} in estimate_points()"
