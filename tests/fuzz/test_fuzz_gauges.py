"""The fuzz on gauges: the windows, models, /model switches and compaction settings it draws find every gauge that
gets the denominator wrong within 300 sessions, shrunk to a setting that shows it, and pass a correct gauge of each
quantity (told the session's world, following /model)."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from ctxsim.fuzz import fuzz
from ctxsim.reference import ContextTracker
from ctxsim.trackers import CATALOGUE, Gauge, TrackerWorld
from ctxsim.world import Quantity


def _correct(quantity: Quantity) -> Callable[..., Gauge]:
    def made(world: TrackerWorld = TrackerWorld()) -> Gauge:  # noqa: B008  (a frozen default world)
        return Gauge(ContextTracker(usage=world.usage), quantity, world.window, world.threshold_of(world.window),
                     world=world)
    return made


@pytest.mark.parametrize(("name", "setting"), [
    ("fixed-200k-gauge", r"\[1m\]"),  # a 1M window: a [1m] model, first or switched to
    ("hard-coded-buffer-gauge", r"auto_compact: false|auto_compact_window: \d+|max_output: (8192|16000)"),
    ("old-model-window-gauge", r"\n    model: "),  # a /model switch before a query
    ("compact-window-when-off-gauge", r"auto_compact: false, auto_compact_window: \d+"),  # both, or it is right
    ("subagent-as-session-gauge", r"- subagent:"),  # a subagent's calls
])
def test_a_wrong_denominator_is_found_within_300_sessions_shrunk_to_its_setting(name: str, setting: str) -> None:
    result = fuzz(CATALOGUE[name].factory, examples=300, seed=0, progress=None)
    assert result.found_at is not None and result.found_at <= 300, result.report
    assert result.scenario is not None and re.search(setting, result.scenario), result.scenario


@pytest.mark.slow
@pytest.mark.parametrize("quantity", ["percent_of_window", "percent_until_autocompact", "tokens_left"])
def test_a_correct_gauge_of_each_quantity_passes_1000_fuzzed_sessions(quantity: Quantity) -> None:
    result = fuzz(_correct(quantity), examples=1000, seed=0, progress=None)
    assert result.scenario is None, result.report
