"""Judging a gauge's number as the quantity it declares, and naming the confusion when it shows another.

A tracker may declare what its number means (a ``quantity`` attribute, as :class:`ctxsim.trackers.catalogue.Gauge` has):
it is judged on that quantity, the truth computed for it (:func:`judged_quantity`), whatever its scenario asks. A
tracker that declares none is read as tokens, what ``context_tokens()`` says it returns, so a correct token tracker
passes a scenario that asks a gauge for a percentage; a statusline command (a point tracker) is read through its
preset, in tokens. The scenario's quantity (:attr:`ctxsim.world.Session.quantity`) is what the gauge built for it
shows (:func:`ctxsim.trackers.catalogue.reference_for`). A gauge's number is
turned into the tokens it stands for on the window in force at its point (``/model`` moves it) and the autocompact
point the session's settings give that window (:func:`ctxsim.world.tokens_band`), so it is compared with the truth
as any estimate is. When it fails, :func:`confusion` looks for the reading under which every point would have been
right -- another quantity, another window (200,000, 1,000,000, the autocompact window, the first model's kept
after ``/model``), another autocompact point (the model's own whatever the settings, a fixed 33,000 buffer) -- and
names it: "shows % of the window where it declares % until autocompact", "divides by 200,000 on a 1,000,000
window", "keeps the first model's window (200,000) after /model", "counts to an autocompact point of 167,000 where
the session compacts at 67,000", "counts to the point of the autocompact window (80,000 of 100,000) though
auto-compact is off". :func:`loop_fitness` says whether a tracker's number can feed a restart loop,
which reads tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast, get_args

from ..world import QUANTITY_NAMES, Quantity, auto_compact_threshold, autocompact_point, tokens_band

if TYPE_CHECKING:
    from ..world import Session

__all__ = ["HARD_CODED_BUFFER", "Judged", "confusion", "declared_quantity", "judged_quantity", "loop_fitness",
           "percent_window", "shown_band"]


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

HARD_CODED_BUFFER = 33_000
"""The buffer gauges hard-code between the window and the autocompact point (20,000 of output reserve plus
13,000): right only for a max output of 20,000 or more, with auto-compact on and no override."""


def declared_quantity(tracker: object) -> Quantity | None:
    """The quantity ``tracker`` declares its number means (its ``quantity`` attribute), or None."""
    declared = getattr(tracker, "quantity", None)
    return cast(Quantity, declared) if isinstance(declared, str) and declared in get_args(Quantity) else None


def judged_quantity(tracker: object, session: Session) -> Quantity:
    """What ``tracker``'s number is judged as on ``session``: the quantity it declares, else tokens (what
    ``context_tokens()`` and a statusline command's preset give), whatever ``session`` asks a gauge to show."""
    declared = declared_quantity(tracker)
    return declared if declared is not None else "tokens"


def loop_fitness(tracker: object, session: Session | None = None) -> str | None:
    """Why ``tracker`` cannot feed a restart loop, which reads tokens: the quantity it is judged on (on
    ``session``, :func:`judged_quantity`) is not tokens; None when it is."""
    quantity = declared_quantity(tracker) if session is None else judged_quantity(tracker, session)
    if quantity is None or quantity == "tokens":
        return None
    return (f"ctxsim: the tracker declares {QUANTITY_NAMES[quantity]}, not tokens: a restart loop reads its number "
            f"as the tokens in the context")


def percent_window(session: Session, window: int) -> int:
    """The window Claude Code's ``used_percentage`` counts against in ``session`` while the raw window is ``window``
    (:meth:`ctxsim.world.ClaudeSettings.percent_window`, for the release the session renders as): what a gauge of %
    of the window divides by."""
    from ..wire import rendered_version

    return session.settings.percent_window(window, auto_compact_window=session.auto_compact_window,
                                           cli_version=rendered_version(session))


def shown_band(value: float, session: Session, quantity: Quantity, window: int | None = None) -> tuple[int, int]:
    """The tokens a gauge showing ``value`` as ``quantity`` stands for while the raw window is ``window``
    (default: the session's) and the autocompact point is the one the session's settings give it; a percentage of
    the window counts against the window Claude Code's own ``used_percentage`` does (:func:`percent_window`)."""
    window = window or session.window
    threshold = session.threshold_of(window)
    if quantity == "percent_of_window":
        window = percent_window(session, window)
    return tokens_band(value, quantity, window, threshold)


Reading = Callable[[int], tuple[int, int]]
"""A point's window to the ``(window, autocompact point)`` a gauge's number is read against."""


def _fits(points: Sequence[Any], quantity: Quantity, reading: Reading) -> bool:
    for point in points:
        window, threshold = reading(point.observation.window)
        band = tokens_band(point.shown, quantity, window, threshold)
        if not dataclasses.replace(point, estimate=(band[0] + band[1]) // 2, band=band).ok:
            return False
    return True


def _counted(session: Session, reading: Reading) -> Reading:
    """``reading`` with the window a percentage of the window counts against (:func:`percent_window`)."""

    def counted(window: int) -> tuple[int, int]:
        raw, threshold = reading(window)
        return percent_window(session, raw), threshold

    return counted


def _readings(session: Session) -> list[tuple[str, Reading]]:
    """Each wrong denominator a gauge may use, with what the verdict says of it."""
    own, at = session.window, session.auto_compact_threshold
    natural = session.max_output_tokens
    def fixed(window: int) -> Reading:
        return lambda _: (window, auto_compact_threshold(window, natural))

    out: list[tuple[str, Reading]] = [("", lambda w: (w, session.threshold_of(w)))]
    counted = percent_window(session, own)
    if counted != own:  # Claude Code's used_percentage counts against the autocompact window: the model's is wrong
        out.append((f"divides by the model's window ({own:,}) where Claude Code's used_percentage counts against the "
                    f"autocompact window ({counted:,})", lambda w: (w, session.threshold_of(w))))
    ignored = session.auto_compact_window
    if not session.settings.auto_compact and ignored is not None:
        # CLAUDE_CODE_AUTO_COMPACT_WINDOW moves nothing with auto-compact off; tried before the plain windows, which
        # may coincide with it on a short session
        point = autocompact_point(ignored, natural, auto_compact=False)
        out.append((f"counts to the point of the autocompact window ({point:,} of {ignored:,}) though auto-compact "
                    f"is off (the context may grow to {at:,})", lambda w: (w, point)))
    for window in dict.fromkeys((*_WINDOWS, session.context_window)):
        if window != own:
            out.append((f"divides by {window:,} on a {own:,} window", fixed(window)))
    if any(q.model is not None and session.window_of(q.model) != own for q in session.queries):
        out.append((f"keeps the first model's window ({own:,}) after /model",
                    lambda w: (own, session.threshold_of(own))))
    plain = auto_compact_threshold(own, natural)
    if plain != at:
        out.append((f"counts to an autocompact point of {plain:,} where the session compacts at {at:,}",
                    lambda w: (w, auto_compact_threshold(w, natural))))
    hard = own - HARD_CODED_BUFFER
    if hard not in (at, plain):
        out.append((f"subtracts a fixed {HARD_CODED_BUFFER:,} buffer (an autocompact point of {hard:,} where the "
                    f"session compacts at {at:,})", lambda w: (w, w - HARD_CODED_BUFFER)))
    return out


def confusion(report: Judged, declared: Any = None) -> str | None:
    """What the failing gauge of ``report`` shows instead of what it is judged on, when one reading of its numbers
    fits every point (``declared``: the quantity the tracker says it shows, tried first); None when the run did
    not fail, was not a gauge's, or no reading fits."""
    session = report.session
    shown = [p for p in report.points if p.shown is not None]
    if not shown or not report.failures:
        return None
    asked = report.quantity
    kinds = list(get_args(Quantity))
    if declared in kinds:
        kinds.remove(declared)
        kinds.insert(0, declared)
    readings = _readings(session)
    for kind in kinds:
        for said, reading in readings:
            if kind == "percent_of_window" and not said:  # the right reading: Claude Code's own denominator
                reading = _counted(session, reading)
            if (kind, said) == (asked, "") or not _fits(shown, kind, reading):
                continue
            parts = [] if kind == asked else [f"shows {QUANTITY_NAMES[kind]} where it is judged on "
                                                  f"{QUANTITY_NAMES[asked]}"]
            if said:
                parts.append(said.replace("divides by", "subtracts from") if kind == "tokens_left" else said)
            return "ctxsim: the gauge " + ", and ".join(parts)
    return None
