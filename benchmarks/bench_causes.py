"""Likely causes: how often the cause a failure names is the tracker's own bug (precision), over the corpus.

Run ``python benchmarks/bench_causes.py`` (a few seconds). Every catalogue entry but the reference, and every
non-equivalent mutant of :mod:`ctxsim.trackers.mutants`, runs as a tracker under test (under a neutral name, so it
is never excluded from its own candidates) over every session scenario of ``scenarios/``; on each run that fails
(off the truth: not a crash or a stall), :func:`ctxsim.check.name_cause` names a catalogue entry or nothing, as the
``likely cause`` column of ``pytest --ctx-scenarios`` does. Each tracker knows its cause: a catalogue entry is its own
(or the entry it is a variant of, :attr:`ctxsim.trackers.Entry.variant_of`, where its own bug does not show); a
mutant's is :attr:`ctxsim.trackers.mutants.Mutant.cause` (empty when no entry carries its bug: then every name is
wrong). Printed: per tracker, the failing runs, the causes named and the wrong ones; then the precision (right /
named, target at least 95%) and how many failing runs got a cause at all (the rest say nothing, by design).
The exit status is 1 when the precision is below the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _bench import mark, print_table

ROOT = Path(__file__).resolve().parent.parent
TARGET = 0.95
UNDER_TEST = "tracker under test"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="?", type=Path, default=ROOT / "scenarios",
                        help="the corpus directory (default: scenarios/)")
    args = parser.parse_args()

    from ctxsim.check import catalogue_runs, features, name_cause, run_tracker_parsed
    from ctxsim.scenario import SessionScenario, load_scenario
    from ctxsim.trackers import CATALOGUE
    from ctxsim.trackers.mutants import MUTANTS

    started = time.perf_counter()
    corpus = [s for s in (load_scenario(p) for p in sorted(args.scenarios.glob("*.yaml")))
              if isinstance(s, SessionScenario)]
    subjects = [(f"entry {name}", {name, entry.variant_of} - {""}, entry.factory)
                for name, entry in CATALOGUE.items() if name != "reference"]
    subjects += [(f"mutant {m.name}", set(m.cause), m.edit) for m in MUTANTS.values() if not m.equivalent]
    tally = {label: [0, 0, 0, []] for label, _, _ in subjects}  # failing runs, named, right, wrong names
    for scenario in corpus:
        session = scenario.session
        runs = catalogue_runs(session, scenario.scripts, scenario.tolerance)
        shown = features(scenario.scripts(), session.window)
        for label, causes, factory in subjects:
            tracker = factory(session.usage) if label.startswith("mutant") else factory()  # type: ignore[call-arg]
            report = run_tracker_parsed(tracker, session, scenario.scripts(), tolerance=scenario.tolerance)
            report.tracker = UNDER_TEST
            if report.ok or report.crash is not None or report.stall is not None or not report.failures:
                continue
            row = tally[label]
            row[0] += 1
            named = name_cause(report, runs, shown)
            if named is None:
                continue
            row[1] += 1
            if named in causes:
                row[2] += 1
            else:
                row[3].append(f"{scenario.name} -> {named}")
    rows = [("tracker", "failing runs", "causes named", "right", "wrong")]
    for label, (failing, named, right, wrong) in tally.items():
        rows.append((label, str(failing), str(named), str(right), str(len(wrong))))
    print_table(rows)
    wrong_all = [(label, w) for label, row in tally.items() for w in row[3]]
    if wrong_all:
        print("\nwrong causes named:")
        for label, w in wrong_all:
            print(f"  {label}: {w}")
    failing = sum(r[0] for r in tally.values())
    named = sum(r[1] for r in tally.values())
    right = sum(r[2] for r in tally.values())
    precision = right / named if named else 1.0
    print(f"\n{len(subjects)} trackers ({len(CATALOGUE) - 1} catalogue entries, "
          f"{len(subjects) - len(CATALOGUE) + 1} mutants) over {len(corpus)} session scenarios of {args.scenarios}: "
          f"{failing} failing runs, a cause named on {named} ({named / max(1, failing):.0%}), none on the rest")
    print(f"precision of the named causes: {right}/{named} = {precision:.1%} (target >= {TARGET:.0%}: "
          f"{mark(precision >= TARGET)}); {time.perf_counter() - started:.1f} s")
    return 0 if precision >= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
