"""Correct gauges of each quantity, told the session's world (the model in force after ``/model``, the settings),
as a user would name them to ``--ctx-tracker``: ``correct_gauges:percent_of_window`` and so on."""

from __future__ import annotations

from collections.abc import Callable

from ctxsim.reference import ContextTracker
from ctxsim.trackers import TrackerWorld
from ctxsim.trackers.catalogue import Gauge
from ctxsim.world import Quantity


def _correct(quantity: Quantity) -> Callable[..., Gauge]:
    def made(world: TrackerWorld = TrackerWorld()) -> Gauge:  # noqa: B008  (a frozen default world)
        return Gauge(ContextTracker(usage=world.usage), quantity, world.window, world.threshold_of(world.window),
                     world=world)
    made.__name__ = made.__qualname__ = quantity
    return made


percent_of_window = _correct("percent_of_window")
percent_until_autocompact = _correct("percent_until_autocompact")
tokens_left = _correct("tokens_left")
