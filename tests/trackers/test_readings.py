"""Readings (ctxsim.trackers.Reading): what a catalogue entry or a port declares its numbers to be is what a run of
it gives, at every point it is judged at, over the whole corpus; and every port's headline bug is named right on
the scenario built from its report."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxsim.check import Readings, agrees, diagnose, run_tracker_parsed
from ctxsim.corpus import bundled_dir
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.tools.ports import PORTS
from ctxsim.trackers import Reading, every_reading, make_tracker
from ctxsim.trackers.catalogue import CATALOGUE

CORPUS = [s for s in (load_scenario(p) for p in sorted(Path(bundled_dir()).glob("*.yaml")))
          if isinstance(s, SessionScenario)]
DECLARED: list[tuple[str, Callable[[], Any], Reading]] = [
    *((f"entry {name}", e.factory, e.reading) for name, e in CATALOGUE.items() if e.reading is not None),
    *((f"port {p.name}", p.buggy, p.buggy_reading) for p in PORTS.values()),
    *((f"fix {p.name}", p.fixed, p.fixed_reading) for p in PORTS.values() if p.fixed_reading is not None),
]


@pytest.mark.parametrize(("label", "factory", "reading"), DECLARED, ids=[d[0] for d in DECLARED])
def test_a_declared_reading_is_what_a_run_gives_at_every_point_of_the_corpus(
        label: str, factory: Callable[[], Any], reading: Reading) -> None:
    off = []
    for scenario in CORPUS:
        report = run_tracker_parsed(make_tracker(factory, scenario.session), scenario.session, scenario.scripts(),
                                    tolerance=scenario.tolerance)
        if report.crash is not None:
            continue  # garbage counts: the formula raises where the reading reads 0
        readings = Readings(scenario.scripts())
        off += [(scenario.name, p.observation.label, p.estimate, readings.value(reading, p.observation.index))
                for p in report.points if not agrees(p, readings.value(reading, p.observation.index))]
    assert not off, off[:5]


def test_every_declared_reading_is_one_a_cause_is_fitted_against() -> None:
    every = set(every_reading())
    assert {reading for _, _, reading in DECLARED} <= every


def _on_its_scenario(name: str, fixed: bool) -> tuple[Any, Any]:
    """The port ``name`` (its fix with ``fixed``) run over the scenario built from its report, and that scenario."""
    port = PORTS[name]
    scenario = load_scenario(bundled_dir() / f"{port.scenario}.yaml")
    assert isinstance(scenario, SessionScenario)
    tracker = port.fixed() if fixed else port.buggy()
    return run_tracker_parsed(tracker, scenario.session, scenario.scripts(), tolerance=scenario.tolerance), scenario


@pytest.mark.parametrize("name", sorted(PORTS))
def test_a_port_s_headline_bug_is_named_right_on_the_scenario_of_its_report(name: str) -> None:
    port = PORTS[name]
    report, scenario = _on_its_scenario(name, fixed=False)
    assert not report.ok, f"{name} must fail the scenario built from its report"
    diagnosis = diagnose(report, Readings(scenario.scripts()))
    assert diagnosis is not None and not diagnosis.partial
    assert port.buggy_reading in diagnosis.ties
    assert port.cause in diagnosis.examples, diagnosis.text()


@pytest.mark.parametrize("name", sorted(PORTS))
def test_a_port_s_fix_passes_the_scenario_of_its_report(name: str) -> None:
    report, _ = _on_its_scenario(name, fixed=True)
    assert report.ok, str(report)
