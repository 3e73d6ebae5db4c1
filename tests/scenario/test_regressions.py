"""Counterexamples ``ctxsim fuzz`` found in the reference or the oracle, kept as scenarios that must pass.

Each file in ``tests/regressions`` is the shrunk scenario the fuzzer wrote, with its source saying what it found.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers.catalogue import reference_for

REGRESSIONS = sorted((Path(__file__).resolve().parents[1] / "regressions").glob("*.yaml"))


@pytest.mark.parametrize("path", REGRESSIONS, ids=[p.stem for p in REGRESSIONS])
def test_the_reference_tracks_every_counterexample_the_fuzzer_found(path: Path) -> None:
    scenario = load_scenario(path)
    assert isinstance(scenario, SessionScenario)
    run = run_scenario(scenario, reference_for(scenario.session))
    assert run.ok, run.report
