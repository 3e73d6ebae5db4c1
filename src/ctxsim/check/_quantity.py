"""Judging a gauge's number as the quantity it is asked for, and naming the confusion when it shows another.

A scenario asks what its gauge must show (:attr:`ctxsim.world.Session.quantity`); a tracker may declare what its
own number means (a ``quantity`` attribute, as :class:`ctxsim.trackers.Gauge` has). The number is read as the
scenario's quantity (or, where the scenario asks plain tokens, as the tracker's declared one) and turned into the
tokens it stands for on the session's window (:func:`ctxsim.world.tokens_band`), so it is compared with the truth
as any estimate is. When it fails, :func:`confusion` looks for the reading under which every point would have
been right — another quantity, or the same over another window (200,000, 1,000,000, the autocompact window) — and
names it: "shows % of the window where the scenario asks % until autocompact", "divides by 200,000 on a 1,000,000
window".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast, get_args

from ..world import QUANTITY_NAMES, Quantity, auto_compact_threshold, tokens_band

if TYPE_CHECKING:
    from ..wire import Observation
    from ..world import Session
    from ._report import Point, Report

__all__ = ["asked_quantity", "confusion", "quantity_point"]

_WINDOWS = (200_000, 1_000_000)
"""The windows a gauge may wrongly divide by, besides the session's own."""


def asked_quantity(tracker: object, session: Session) -> Quantity:
    """What ``tracker``'s number is read as: the scenario's quantity, else the one the tracker declares, else
    tokens."""
    declared = getattr(tracker, "quantity", None)
    if session.quantity != "tokens":
        return session.quantity
    if isinstance(declared, str) and declared in get_args(Quantity):
        return cast(Quantity, declared)
    return "tokens"


def quantity_point(observation: Observation, value: float, tolerance: int, session: Session,
                   quantity: Quantity) -> Point:
    """The :class:`~ctxsim.check.Point` of a gauge showing ``value`` as ``quantity`` at ``observation``: the
    tokens it stands for as a band, the number shown kept (:attr:`Point.shown`)."""
    from ._report import Point

    low, high = tokens_band(value, quantity, session.window, session.auto_compact_threshold)
    return Point(observation, (low + high) // 2, tolerance, band=(low, high), shown=value)


def _fits(points: list[Point], quantity: Quantity, window: int, threshold: int, tolerance: int) -> bool:
    from ._report import Point

    for point in points:
        if point.shown is None:
            continue
        band = tokens_band(point.shown, quantity, window, threshold)
        again = Point(point.observation, (band[0] + band[1]) // 2, tolerance, band=band, shown=point.shown)
        if not again.ok:
            return False
    return True


def confusion(report: Report, declared: Any = None) -> str | None:
    """What the failing gauge of ``report`` shows instead of what its scenario asks, when one reading of its
    numbers fits every point (``declared``: the quantity the tracker says it shows, tried first); None when the
    run did not fail, was not a gauge's, or no reading fits."""
    session = report.session
    shown = [p for p in report.points if p.shown is not None]
    if not shown or not report.failures:
        return None
    asked = report.quantity
    own = session.window
    candidates: list[tuple[Quantity, int]] = []
    kinds = list(get_args(Quantity))
    if declared in kinds:
        kinds.remove(declared)
        kinds.insert(0, declared)
    for kind in kinds:
        for window in (own, *(w for w in _WINDOWS if w != own), session.context_window):
            if (kind, window) != (asked, own) and (kind, window) not in candidates:
                candidates.append((kind, window))
    for kind, window in candidates:
        threshold = (session.auto_compact_threshold if window == session.context_window
                     else auto_compact_threshold(window, session.max_output_tokens))
        if _fits(shown, kind, window, threshold, report.tolerance):
            parts = []
            if kind != asked:
                parts.append(f"shows {QUANTITY_NAMES[kind]} where the scenario asks {QUANTITY_NAMES[asked]}")
            if window != own:
                parts.append(f"divides by {window:,} on a {own:,} window")
            return "ctxsim: the gauge " + ", and ".join(parts)
    return None
