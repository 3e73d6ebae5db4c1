"""A gauge: a tracker whose number is not tokens but a declared quantity (% of the window, % until autocompact,
tokens left), and the gauges that show the wrong one.

:class:`Gauge` wraps a token tracker and shows what it counts as ``quantity`` (:data:`~ctxsim.world.Quantity`),
over the window and autocompact point it is given; its ``quantity`` attribute declares what its number means, so
:mod:`ctxsim.check` reads the number as that and judges it against the truth computed for the quantity the scenario
asks (:attr:`ctxsim.world.Session.quantity`). A gauge given the wrong window, or declaring the wrong quantity, fails
there, and the check's verdict names the confusion.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..world import Quantity, in_quantity
from ._base import tracker_name

__all__ = ["Gauge"]


@dataclass
class Gauge:
    """Shows ``tracker``'s tokens as ``quantity`` of a ``window``-token window that autocompacts at ``threshold``,
    rounded to a whole number (as gauges print it); None stays None."""

    tracker: Any
    quantity: Quantity
    window: int
    threshold: int

    @property
    def name(self) -> str:
        own = tracker_name(self.tracker)
        return f"{own} as {self.quantity} of {self.window:,}"

    @property
    def judged_at(self) -> frozenset[str] | None:
        judged: frozenset[str] | None = getattr(self.tracker, "judged_at", None)
        return judged

    def observe(self, message: Any) -> Any:
        return self.tracker.observe(message)

    def context_tokens(self) -> int | None:
        tokens = self.tracker.context_tokens()
        if tokens is None:
            return None
        return round(in_quantity(tokens, self.quantity, self.window, self.threshold))
