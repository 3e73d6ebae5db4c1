"""Judging a tracker of any kind on a scenario renders each surface it reads once: the stream, the transcript files,
the statusline payloads (one run's :class:`ctxsim.surfaces.Rendition`, shared by the check, a command's harness and
the likely causes of a failure).

The renderers are counted where they are defined and wherever a module bound them by name, so a consumer that
rendered a surface again on its own would be counted too.
"""

from __future__ import annotations

import shutil
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import ctxsim.wire
from ctxsim.corpus import find_scenario
from ctxsim.runner import judgement
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers import resolve

TESTS = Path(__file__).resolve().parent.parent
NODE = shutil.which("node")

RENDERERS = {"stream": "render", "transcript": "render_transcript", "payloads": "statusline_payloads"}
"""Each surface's renderer, by its name on :mod:`ctxsim.wire`."""


@pytest.fixture
def renderings(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """How many times each surface was rendered, counting every binding of each renderer in a loaded module."""
    counts: Counter[str] = Counter()
    for surface, name in RENDERERS.items():
        original = getattr(ctxsim.wire, name)

        def counted(*args: Any, _original: Callable[..., Any] = original, _surface: str = surface,
                    **kwargs: Any) -> Any:
            counts[_surface] += 1
            return _original(*args, **kwargs)

        for loaded in list(sys.modules.values()):
            if getattr(loaded, "__name__", "").startswith("ctxsim") and getattr(loaded, name, None) is original:
                monkeypatch.setattr(loaded, name, counted)
    yield counts


def _scenario(name: str) -> SessionScenario:
    scenario = load_scenario(find_scenario(name))
    assert isinstance(scenario, SessionScenario)
    return scenario


SPECS = {
    "reference": ("reference", {"stream"}),
    "catalogued": ("every-row-totals", {"stream"}),
    "python": ("ctxsim.reference:ContextTracker", {"stream"}),
    "cmd": (f"cmd:node {TESTS}/statusline_trackers/sum_rows.js", {"transcript", "payloads"}),
    "stream": (f"stream:node {TESTS}/stream_trackers/sum_all.mjs", {"stream"}),
}


@pytest.mark.parametrize("scenario", ["b06-message-in-several-files", "b20-wrong-window-pegs-at-200k", "compaction",
                                      "advisor-iterations"])
@pytest.mark.parametrize("kind", sorted(SPECS))
def test_judging_a_tracker_renders_each_surface_it_reads_once(kind: str, scenario: str,
                                                              renderings: Counter[str]) -> None:
    spec, reads = SPECS[kind]
    if spec.startswith(("cmd:", "stream:")) and NODE is None:
        pytest.skip("node is not on PATH: the process trackers here are Node scripts")
    verdict = judgement(_scenario(scenario), resolve(spec)).run()
    verdict.as_dict()  # every door renders the verdict: its likely causes included
    counts = {s: renderings[s] for s in RENDERERS}
    if verdict.run is None:  # a tracker not judged here (a fault its input never carries) costs no rendering
        assert verdict.skipped and counts == dict.fromkeys(RENDERERS, 0), (kind, scenario, counts)
        return
    assert verdict.run.report.points, verdict.does
    # what it reads, once; the stream once more for a statusline command only where it fails (its likely causes
    # read the stream's features), and then once
    wanted = {s: int(s in reads or (s == "stream" and bool(verdict.run.report.failures))) for s in RENDERERS}
    assert counts == wanted, (kind, scenario, verdict.does)


def test_the_counter_counts_a_second_rendering(renderings: Counter[str]) -> None:
    """The counting above can fail: a scenario whose stream is asked for twice, outside one run, is rendered twice."""
    scenario = _scenario("compaction")
    scenario.scripts()
    scenario.scripts()
    assert renderings["stream"] == 2
