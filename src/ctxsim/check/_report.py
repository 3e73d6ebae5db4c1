"""What a tracker's run over a session shows: each observation point with its truth and the tracker's estimate
(:class:`Point`), the run's :class:`Report` (points, and a crash, stall or unreadable output), and
:class:`TrackingError`, the assertion that carries a report. :func:`ctxsim.check.run_tracker` makes reports."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import cast

from ..trackers import looks_like_ratio, ratio_hint
from ..wire import Observation
from ..world import Quantity, Session

__all__ = ["Point", "Report", "TrackingError"]


@dataclass(frozen=True)
class Point:
    """The tracker against the truth at one observation point."""

    observation: Observation
    estimate: int | None
    tolerance: int
    band: tuple[int, int] | None = None
    """Where the tracker gave a band (``low``, ``high``) rather than a figure; :attr:`estimate` is then its middle."""
    shown: float | None = None
    """Where the tracker is a gauge of another quantity than tokens: the number it showed (:attr:`band` is the
    tokens it stands for)."""

    @property
    def low(self) -> int:
        """The low end of the truth band: the prompt."""
        return self.observation.truth.prompt

    @property
    def high(self) -> int:
        """The high end of the truth band: prompt + output."""
        return self.observation.truth.next_request

    @property
    def reading(self) -> int | None:
        """What a threshold fires on: the estimate; for a band (a percentage shown rounded), the point of the band
        nearest the truth's prompt, since every value of the band is what the tracker showed."""
        if self.estimate is None or self.band is None:
            return self.estimate
        return min(max(self.low, self.band[0]), self.band[1])

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
    quantity: Quantity = "tokens"
    """What the tracker's numbers were read as (:mod:`ctxsim.check`)."""
    declared: object = None
    """The quantity the tracker declared it shows, if it did."""
    shown: dict[str, int | None] | None = None
    """For a statusline command: what Claude Code's own payload said the context was at each point, by label (None:
    ``current_usage`` null), as :func:`ctxsim.check.payload_wrong` reads it; None for other trackers."""
    error: str | None = None
    """A ``ctxsim:`` line saying the tracker could not be read at all (a command tracker that exited non-zero, hung
    or printed nonsense: the command, the point, the tail of its stderr). Never an expected outcome."""

    def point(self, observation: Observation, estimate: int | float | None) -> Point:
        """The point that judges ``estimate`` at ``observation`` as :attr:`quantity`: in tokens as given; a gauge's
        number (another quantity) as the band of tokens it stands for on the window in force there, its middle the
        estimate and the number kept as :attr:`Point.shown`."""
        if self.quantity != "tokens" and isinstance(estimate, int | float) and not isinstance(estimate, bool):
            from ._quantity import shown_band

            low, high = shown_band(estimate, self.session, self.quantity, observation.window)
            return Point(observation, (low + high) // 2, self.tolerance, band=(low, high), shown=estimate)
        return Point(observation, cast("int | None", estimate), self.tolerance)  # a float kept: a ratio's hint reads it

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
        off = next((p for p in self.points if not p.ok), None)
        if off is not None:
            return "none" if off.error is None else "over" if off.error > 0 else "under"
        return None if self.points else "nowhere"

    def table(self, *, only_failures: bool = False, notes: Mapping[int, str] | None = None,
              notes_title: str = "threshold", likely: Mapping[int, str] | None = None) -> str:
        """The timeline as a table: point, truth band, estimate and error (``>`` marks a failure).

        ``notes`` adds a column (titled ``notes_title``) with a note per observation index, e.g. where a
        threshold fires; with ``only_failures``, rows with a note are shown too. ``likely`` adds a last column,
        ``likely cause``, at failing points (:func:`ctxsim.check.likely_causes` makes one).
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
                share = 100 * p.error / window
                error = f"{p.error:+,} ({share:+.1f}%)" if abs(share) <= 1_000 else f"{p.error:+,} (off the scale)"
            row = (">" if not p.ok else "", str(p.observation.index), p.observation.label, truth, estimate, error)
            rows.append(row + ((note,) if notes is not None else ()) + cause)
        rows = _wrap_last(rows, CAUSE_WIDTH) if likely else rows
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

    @property
    def confusion(self) -> str | None:
        """Where a gauge failed showing another quantity than its scenario asks, or dividing by another window,
        the confusion named (``confusion``); else None."""
        from ._quantity import confusion

        return confusion(self, self.declared)

    def diagnosis(self) -> list[str]:
        """What helps to find the cause, after the table: the traceback of a tracker that raised; a hint to
        :class:`FromRatio` when the tracker failed with a ratio (a float in [0, 1]) where the truth is tokens."""
        out = [self.traceback] if self.traceback else []
        confused = self.confusion
        if confused is not None:
            out.append(confused)
        ratio = next((p for p in self.failures if looks_like_ratio(p.estimate)), None)
        if ratio is not None:
            out.append(ratio_hint(self.tracker, ratio.estimate, ratio.observation.label, ratio.low,
                                  self.session.window))
        return out

    def __str__(self) -> str:
        return "\n".join([self.summary(), *([self.table()] if self.points else []), *self.diagnosis()])


CAUSE_WIDTH = 72
"""The width the ``likely cause`` column wraps at: a cause is wrapped onto more lines, never cut."""


def _wrap_last(rows: list[tuple[str, ...]], width: int) -> list[tuple[str, ...]]:
    """``rows`` with each last cell longer than ``width`` wrapped onto continuation rows (the other cells empty)."""
    import textwrap

    out: list[tuple[str, ...]] = []
    for row in rows:
        lines = textwrap.wrap(row[-1], width, break_long_words=False, break_on_hyphens=False) or [""]
        out.append((*row[:-1], lines[0]))
        out += [("",) * (len(row) - 1) + (line,) for line in lines[1:]]
    return out


class TrackingError(AssertionError):
    """A tracker did not track a session: the message is the report's readable table."""

    __module__ = "ctxsim.check"  # its public name, as tracebacks and reprs show it

    def __init__(self, report: Report) -> None:
        super().__init__(str(report))
        self.report = report


