"""The fuzz on gauges: the windows, models, /model switches and compaction settings it draws find every gauge that
gets the denominator wrong within 300 sessions, shrunk to a setting that shows it (a correct gauge of each quantity
passes 1,000 of them: ``tests/check/test_correct_gauges.py``)."""

from __future__ import annotations

import re

import pytest

from ctxsim.fuzz import fuzz
from ctxsim.trackers.catalogue import CATALOGUE


@pytest.mark.parametrize(("name", "setting"), [
    # a 1M window: a [1m] model, first or switched to (or, where Claude Code counts a share of the window against the
    # autocompact window, that window: rule statusline-percent-of-autocompact-window)
    ("fixed-200k-gauge", r"\[1m\]|auto_compact_window: \d+"),
    ("hard-coded-buffer-gauge", r"auto_compact: false|auto_compact_window: \d+|max_output: (8192|16000)"),
    ("old-model-window-gauge", r"\n    model: |auto_compact_window: \d+"),  # a /model switch (or as above)
    ("compact-window-when-off-gauge", r"auto_compact: false, auto_compact_window: \d+"),  # both, or it is right
    ("subagent-as-session-gauge", r"- subagent:"),  # a subagent's calls
])
def test_a_wrong_denominator_is_found_within_300_sessions_shrunk_to_its_setting(name: str, setting: str) -> None:
    result = fuzz(CATALOGUE[name].factory, examples=300, seed=0, progress=None)
    assert result.found_at is not None and result.found_at <= 300, result.report
    assert result.scenario is not None and re.search(setting, result.scenario), result.scenario
