"""Likely causes: how often a failure names a cause (recall) and how often the cause is right (precision), over the
corpus, for buggy trackers and for correct ones.

Run ``python benchmarks/bench_causes.py`` (about a minute). The trackers under test, each over every session
scenario of ``scenarios/`` (under a neutral name):

- every catalogue entry but the reference; every non-equivalent mutant of
  :mod:`ctxsim.trackers.catalogue.mutants`; the buggy version of every port of a real tracker
  (:mod:`ctxsim.tools.ports`): the *buggy* trackers;
- the reference and the fixed version of every port: the *correct* trackers (a fix may still fail a scenario whose
  fault it never handled; what it is named there must be its own formula).

Each knows what its numbers are: its declared reading (:attr:`ctxsim.trackers.catalogue.Entry.reading`,
:attr:`ctxsim.trackers.catalogue.mutants.Mutant.reading`, :attr:`ctxsim.tools.ports.Port.buggy_reading` and
``fixed_reading``), else the readings of the catalogue entries whose bug it carries (an entry's ``variant_of``, a
mutant's ``cause``); a gauge's cause is the quantity or window it confuses (:attr:`ctxsim.check.Report.confusion`).
On each failing run (off the truth: not a crash or a stall) the likely cause at the first failing point
(:func:`ctxsim.check.explain`) is *named* when it gives a formula (or a gauge's confusion, or says the truth is not
knowable there), and *right* when the formula named is one of the tracker's own: the readings the stream cannot
tell apart (:attr:`ctxsim.check.Diagnosis.ties`) hold one of them, and the fit is not partial unless the tracker's
own reading explains the same points.

Printed: per tracker, the failing runs, causes named and wrong ones; then recall (named / failing, target 95%),
precision (right / named, target 98%) and the share of correct trackers' failing runs named wrongly (target at most
1%, and none on the reference). The exit status is 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _bench import mark, print_table

ROOT = Path(__file__).resolve().parent.parent
RECALL, PRECISION, WRONG_ON_CORRECT = 0.95, 0.98, 0.01
UNDER_TEST = "tracker under test"


@dataclass
class Subject:
    """One tracker under test: how to make it, what its numbers are, and whether it is correct."""

    label: str
    make: Callable[[Any], Any]
    """Makes a fresh tracker for a session."""
    readings: frozenset[Any]
    correct: bool = False
    gauge: bool = False
    failing: int = 0
    named: int = 0
    right: int = 0
    wrong: list[str] = field(default_factory=list)
    silent: list[str] = field(default_factory=list)


def subjects() -> list[Subject]:
    from ctxsim.tools.ports import PORTS
    from ctxsim.trackers import make_tracker
    from ctxsim.trackers.catalogue import CATALOGUE, reference_for
    from ctxsim.trackers.catalogue.mutants import MUTANTS

    def own(name: str) -> frozenset[Any]:
        entry = CATALOGUE[name]
        reading = entry.reading or (CATALOGUE[entry.variant_of].reading if entry.variant_of else None)
        return frozenset({reading} - {None})

    out = [Subject("reference", reference_for, frozenset(), correct=True)]
    for name, entry in CATALOGUE.items():
        if name != "reference":
            out.append(Subject(f"entry {name}", lambda s, f=entry.factory: make_tracker(f, s), own(name),
                               gauge=entry.reading is None and not entry.variant_of and name != "debussy-chars"))
    for m in MUTANTS.values():
        if not m.equivalent:
            readings = frozenset({m.reading} - {None}) | frozenset().union(*(own(c) for c in m.cause))
            out.append(Subject(f"mutant {m.name}", lambda s, f=m.edit: f(s.usage), readings))
    for port in PORTS.values():
        out.append(Subject(f"port {port.name}", lambda s, f=port.buggy: f(), frozenset({port.buggy_reading})))
        out.append(Subject(f"fix  {port.name}", lambda s, f=port.fixed: f(),
                           frozenset({port.fixed_reading} - {None}), correct=True))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="?", type=Path, default=ROOT / "scenarios",
                        help="the corpus directory (default: scenarios/)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list the failing runs named no cause")
    args = parser.parse_args()

    from ctxsim.check import Readings, diagnose, not_knowable, run_tracker_parsed
    from ctxsim.scenario import SessionScenario, load_scenario

    started = time.perf_counter()
    corpus = [s for s in (load_scenario(p) for p in sorted(args.scenarios.glob("*.yaml")))
              if isinstance(s, SessionScenario)]
    every = subjects()
    for scenario in corpus:
        readings = Readings(scenario.scripts())
        for subject in every:
            report = run_tracker_parsed(subject.make(scenario.session), scenario.session, scenario.scripts(),
                                        tolerance=scenario.tolerance)
            report.tracker = UNDER_TEST
            if report.ok or report.crash is not None or report.stall is not None or not report.failures:
                continue
            subject.failing += 1
            first = report.failures[0].observation.index
            unknowable = not_knowable(report)
            if first in unknowable:  # the truth is not knowable there: the note says return None, and why
                subject.named += 1
                subject.right += 1
                continue
            if subject.gauge:
                named = report.confusion is not None
                subject.named += named
                subject.right += named
                (subject.silent if not named else []).append(scenario.name)
                continue
            diagnosis = diagnose(report, readings, exclude=unknowable)
            if diagnosis is None or first not in diagnosis.explained:
                subject.silent.append(scenario.name)
                continue
            subject.named += 1
            if subject.readings & set(diagnosis.ties):
                subject.right += 1
            else:
                subject.wrong.append(f"{scenario.name} -> {diagnosis.text()}")
    rows = [("tracker", "failing runs", "causes named", "right", "wrong")]
    for s in every:
        rows.append((s.label, str(s.failing), str(s.named), str(s.right), str(len(s.wrong))))
    print_table(rows)
    wrong = [(s.label, w) for s in every for w in s.wrong]
    if wrong:
        print("\nwrong causes named:")
        for label, w in wrong:
            print(f"  {label}: {w}")
    if args.verbose:
        print("\nfailing runs named no cause:")
        for s in every:
            for name in s.silent:
                print(f"  {s.label}: {name}")
    buggy = [s for s in every if not s.correct]
    correct = [s for s in every if s.correct]
    failing, named, right = (sum(getattr(s, k) for s in buggy) for k in ("failing", "named", "right"))
    recall = named / max(1, failing)
    precision = right / named if named else 1.0
    c_failing = sum(s.failing for s in correct)
    c_wrong = sum(len(s.wrong) for s in correct)
    reference_wrong = len(every[0].wrong)
    share = c_wrong / max(1, c_failing)
    print(f"\n{len(buggy)} buggy trackers and {len(correct)} correct ones over {len(corpus)} session scenarios of "
          f"{args.scenarios}; {time.perf_counter() - started:.1f} s")
    print(f"buggy: {failing} failing runs, a cause named at the first failing point on {named} "
          f"({recall:.1%}; target >= {RECALL:.0%}: {mark(recall >= RECALL)})")
    print(f"buggy: the cause named is right on {right}/{named} = {precision:.1%} (target >= {PRECISION:.0%}: "
          f"{mark(precision >= PRECISION)})")
    print(f"correct: {c_failing} failing runs, a wrong cause named on {c_wrong} ({share:.1%}; target <= "
          f"{WRONG_ON_CORRECT:.0%}, none on the reference: {reference_wrong}: "
          f"{mark(share <= WRONG_ON_CORRECT and reference_wrong == 0)})")
    ok = recall >= RECALL and precision >= PRECISION and share <= WRONG_ON_CORRECT and reference_wrong == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
