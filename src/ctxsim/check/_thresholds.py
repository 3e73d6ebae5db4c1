"""Ratio-threshold firing: where a series of context sizes crosses a threshold, once per crossing.

The rule is the simple one the scenario format documents (``expect.threshold``): a threshold fires at the first
point at or over it and re-arms once the value falls below it (a compaction, a reset); an unknown value (None)
is below. The truth fires on the prompt; a tracker on its estimate. A tracker's firing may come earlier or later
than the truth's only where the truth band, widened by the tolerance, allows it. Graduated zones and the restart
policy are judged elsewhere (``ctxsim.reference.PressurePolicy`` and the restart-loop checks); this is the whole
contract of one threshold.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Firing", "Match", "crossings", "match_firings"]


def crossings(values: Sequence[int | None], limit: float) -> list[int]:
    """The indices of ``values`` where the threshold ``limit`` fires: at or over it, and armed."""
    fired: list[int] = []
    armed = True
    for i, value in enumerate(values):
        if value is not None and value >= limit:
            if armed:
                fired.append(i)
                armed = False
        else:
            armed = True
    return fired


@dataclass(frozen=True)
class Firing:
    """One truth crossing and the tracker firing paired with it (either may be missing)."""

    truth: int | None
    """Index of the point where the truth crosses, or None for a tracker firing with no crossing to match."""
    tracker: int | None
    """Index of the point where the tracker fires, or None when it does not."""
    ok: bool


@dataclass(frozen=True)
class Match:
    """How a tracker's firings compare with the truth's."""

    firings: tuple[Firing, ...]

    @property
    def ok(self) -> bool:
        """True when every crossing has its firing and every firing its crossing."""
        return all(f.ok for f in self.firings)


def match_firings(truth: Sequence[int], tracker: Sequence[int], low: Sequence[int | None],
                  high: Sequence[int | None], limit: float) -> Match:
    """Pair the tracker's firings with the truth's, in order.

    ``low``/``high`` are the truth band at every point, already widened by the tolerance (None: unknown). A
    firing at ``f`` for a crossing at ``t`` is right when ``f == t``; early (``f < t``) when the band's top
    reaches ``limit`` at every point from ``f`` up to ``t``; late (``f > t``) when the band's bottom stays below
    ``limit`` at every point from ``t`` up to ``f``. Unpaired firings on either side are wrong.
    """
    out: list[Firing] = []
    for k in range(max(len(truth), len(tracker))):
        t = truth[k] if k < len(truth) else None
        f = tracker[k] if k < len(tracker) else None
        if t is None or f is None:
            out.append(Firing(t, f, False))
            continue
        if f <= t:
            ok = all((high[j] or 0) >= limit for j in range(f, t))
        else:
            ok = all(value is None or value < limit for value in low[t:f])
        out.append(Firing(t, f, ok))
    return Match(tuple(out))
