"""Judging a gauge's number as the quantity it is asked for, and naming the confusion when it shows another.

A scenario asks what its gauge must show (:attr:`ctxsim.world.Session.quantity`); a tracker may declare what its
own number means (a ``quantity`` attribute, as :class:`ctxsim.trackers.Gauge` has). A tracker that declares none
reports tokens and is judged on them. A gauge's number is read as the scenario's quantity (or, where the scenario
asks plain tokens, as the gauge's declared one) and turned into the
tokens it stands for on the session's window (:func:`ctxsim.world.tokens_band`), so it is compared with the truth
as any estimate is. When it fails, :func:`confusion` looks for the reading under which every point would have
been right — another quantity, the same over another window (200,000, 1,000,000, the autocompact window), or
until another autocompact point — and names it: "shows % of the window where the scenario asks % until
autocompact", "divides by 200,000 on a 1,000,000 window", "counts to an autocompact point of 167,000 where the
session compacts at 67,000".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast, get_args

from ..world import QUANTITY_NAMES, Quantity, auto_compact_threshold, tokens_band

if TYPE_CHECKING:
    from ..world import Session

__all__ = ["Judged", "asked_quantity", "confusion", "shown_band"]


class Judged(Protocol):
    """What :func:`confusion` reads of a report (a :class:`~ctxsim.check.Report`; its points are
    :class:`~ctxsim.check.Point`\\ s, re-judged with :func:`dataclasses.replace`)."""

    session: Session
    tolerance: int
    quantity: Quantity

    @property
    def points(self) -> Sequence[Any]: ...

    @property
    def failures(self) -> Sequence[Any]: ...


_WINDOWS = (200_000, 1_000_000)
"""The windows a gauge may wrongly divide by, besides the session's own."""


def asked_quantity(tracker: object, session: Session) -> Quantity:
    """What ``tracker``'s number is read as. A tracker that declares no quantity reports tokens (what
    ``context_tokens()`` says), whatever the scenario asks a gauge to show, and is judged on them; one that declares a
    quantity (a gauge) is read as the scenario's quantity where the scenario asks one, so a gauge showing another
    fails naming the confusion, else as the quantity it declares."""
    declared = getattr(tracker, "quantity", None)
    if not (isinstance(declared, str) and declared in get_args(Quantity)):
        return "tokens"
    if session.quantity != "tokens":
        return session.quantity
    return cast(Quantity, declared)


def shown_band(value: float, session: Session, quantity: Quantity) -> tuple[int, int]:
    """The tokens a gauge showing ``value`` as ``quantity`` stands for on ``session``'s window and autocompact
    point."""
    return tokens_band(value, quantity, session.window, session.auto_compact_threshold)


def _fits(points: Sequence[Any], quantity: Quantity, window: int, threshold: int) -> bool:
    for point in points:
        band = tokens_band(point.shown, quantity, window, threshold)
        if not dataclasses.replace(point, estimate=(band[0] + band[1]) // 2, band=band).ok:
            return False
    return True


def confusion(report: Judged, declared: Any = None) -> str | None:
    """What the failing gauge of ``report`` shows instead of what its scenario asks, when one reading of its
    numbers fits every point (``declared``: the quantity the tracker says it shows, tried first); None when the
    run did not fail, was not a gauge's, or no reading fits."""
    session = report.session
    shown = [p for p in report.points if p.shown is not None]
    if not shown or not report.failures:
        return None
    asked = report.quantity
    own, at = session.window, session.auto_compact_threshold
    kinds = list(get_args(Quantity))
    if declared in kinds:
        kinds.remove(declared)
        kinds.insert(0, declared)
    readings: list[tuple[Quantity, int, int]] = []
    for kind in kinds:
        for window in (own, *(w for w in _WINDOWS if w != own), session.context_window):
            natural = auto_compact_threshold(window, session.max_output_tokens)
            for threshold in ((at, natural) if window == own else (natural,)):
                if (kind, window, threshold) != (asked, own, at) and (kind, window, threshold) not in readings:
                    readings.append((kind, window, threshold))
    for kind, window, threshold in readings:
        if _fits(shown, kind, window, threshold):
            parts = []
            if kind != asked:
                parts.append(f"shows {QUANTITY_NAMES[kind]} where the scenario asks {QUANTITY_NAMES[asked]}")
            if window != own:
                verb = "subtracts from" if kind == "tokens_left" else "divides by"
                parts.append(f"{verb} {window:,} on a {own:,} window")
            elif threshold != at:
                parts.append(f"counts to an autocompact point of {threshold:,} where the session compacts at {at:,}")
            return "ctxsim: the gauge " + ", and ".join(parts)
    return None
