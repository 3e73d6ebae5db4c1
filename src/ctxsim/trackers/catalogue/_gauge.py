"""A gauge: a tracker whose number is not tokens but a declared quantity (% of the window, % until autocompact,
tokens left), and the gauges that get the denominator wrong.

:class:`Gauge` wraps a token tracker and shows what it counts as ``quantity`` (:data:`~ctxsim.world.Quantity`);
its ``quantity`` attribute declares what its number means, so :mod:`ctxsim.check` judges the number as that, on the
window in force at each point. Told the session's world (``world``, a :class:`~ctxsim.trackers.TrackerWorld`), it
follows ``/model``: the window is the one the world's settings give the model in force (the ``init`` message's, or
the latest main-chain reply's), and the autocompact point the one they give that window. Without a world it divides
by the ``window`` and counts to the ``threshold`` it is given. A gauge that shows another quantity than it declares
(``shows``), divides by another window or counts to another point fails, and the check's verdict names the
confusion.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import AssistantMessage, SystemMessage

from ...world import Quantity, in_quantity
from .._base import TrackerWorld, tracker_name

__all__ = ["Gauge"]


@dataclass
class Gauge:
    """Shows ``tracker``'s tokens as ``quantity`` of a ``window``-token window that autocompacts at ``threshold``,
    rounded to a whole number (as gauges print it); None stays None. With ``world``, the window and the point
    follow the model in force (``window_of``/``threshold_of`` replace the world's when given: a gauge's own wrong
    idea of them). ``shows``: the quantity it really computes, when not the one it declares. ``cap``: the most it
    shows (a bar pegged at 100%)."""

    tracker: Any
    quantity: Quantity
    window: int
    threshold: int
    world: TrackerWorld | None = None
    shows: Quantity | None = None
    cap: float | None = None
    window_of: Callable[[str], int] | None = None
    threshold_of: Callable[[int], int] | None = None
    model: str | None = field(default=None, init=False)
    """The model in force, as the stream last said it."""

    @property
    def name(self) -> str:
        own = tracker_name(self.tracker)
        return f"{own} as {self.quantity} of {self.window:,}"

    @property
    def judged_at(self) -> frozenset[str] | None:
        judged: frozenset[str] | None = getattr(self.tracker, "judged_at", None)
        return judged

    def observe(self, message: Any) -> Any:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            model = message.data.get("model")
            self.model = model if isinstance(model, str) and model else self.model
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None and message.model:
            # the API's model: the live CLI strips the [1m] suffix of the model in force before it asks
            same = self.model is not None and self.model.removesuffix("[1m]") == message.model
            self.model = self.model if message.model == "<synthetic>" or same else message.model
        return self.tracker.observe(message)

    def denominator(self) -> tuple[int, int]:
        """The window and autocompact point the gauge counts against now."""
        if self.world is None or self.model is None:
            return self.window, self.threshold
        window = (self.window_of or self.world.window_of)(self.model)
        threshold = (self.threshold_of or self.world.threshold_of)(window)
        if (self.shows or self.quantity) == "percent_of_window" and self.window_of is None:
            window = self.world.percent_window_of(window)  # what Claude Code's used_percentage counts against
        return window, threshold

    def context_tokens(self) -> int | None:
        tokens = self.tracker.context_tokens()
        if tokens is None:
            return None
        window, threshold = self.denominator()
        shown = in_quantity(tokens, self.shows or self.quantity, window, threshold)
        return round(min(shown, self.cap) if self.cap is not None else shown)
