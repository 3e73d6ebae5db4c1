"""Corpus adequacy: how many behavioural mutants of the reference the shipped corpus alone kills.

Run ``python benchmarks/bench_adequacy.py`` (about half a minute). Each mutant of :mod:`ctxsim.trackers.mutants` is
the reference with one guarantee broken (one per bug class: every fault kind, every event the reference handles,
every field it reads). It runs as the tracker under test over every scenario of ``scenarios/`` that expects
something of one (``expect.ctx_tracker``), exactly as ``pytest --ctx-scenarios scenarios --ctx-tracker=...`` would,
and is *killed* when at least one scenario's verdict is not met. Nothing else runs: not the suite, not the
conformance contracts, not the fuzzer. The figure is killed / non-equivalent mutants; the survivors are listed.

An equivalent mutant (one no session can tell from the reference at the points a tracker is judged) is printed
with the reason it is equivalent, from :attr:`ctxsim.trackers.mutants.Mutant.equivalent`, and left out of the
denominator; it is never hidden. A mutant declared equivalent that some scenario kills is reported as such (its
declaration is wrong).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from _bench import print_table

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="?", type=Path, default=ROOT / "scenarios", help="the corpus directory")
    args = parser.parse_args()

    from ctxsim._lazy import freeze_imports, thaw_imports
    from ctxsim.scenario import SessionScenario, load_scenario
    from ctxsim.scenario_run import corpus_verdicts
    from ctxsim.trackers.mutants import MUTANTS

    loaded = [load_scenario(p) for p in sorted(args.scenarios.glob("*.yaml"))]
    corpus = [s for s in loaded if isinstance(s, SessionScenario)]
    froze = freeze_imports()
    started = time.perf_counter()
    rows = [("mutant", "killed by", "bug class")]
    killed = survivors = wrongly_equivalent = 0
    try:
        for mutant in MUTANTS.values():
            verdicts = corpus_verdicts(corpus, lambda s, m=mutant: m.factory(s.session.usage), name=mutant.name)
            by = [name for name, (met, _) in verdicts.items() if not met]
            if mutant.equivalent:
                wrongly_equivalent += bool(by)
                shown = f"{len(by)} scenarios: DECLARED EQUIVALENT WRONGLY" if by else "equivalent: " + mutant.equivalent
            elif by:
                killed += 1
                shown = f"{len(by)}: {', '.join(by[:3])}{' ...' if len(by) > 3 else ''}"
            else:
                survivors += 1
                shown = "SURVIVES"
            rows.append((mutant.name, shown, mutant.bug))
    finally:
        if froze:
            thaw_imports()
    seconds = time.perf_counter() - started
    print_table(rows)
    total = killed + survivors
    equivalent = sum(1 for m in MUTANTS.values() if m.equivalent)
    print(f"\ncorpus alone ({len(corpus)} session scenarios): {killed}/{total} non-equivalent mutants killed, "
          f"{survivors} survivors, {equivalent} equivalent (explained above); {seconds:.1f} s")
    return 0 if survivors == 0 and wrongly_equivalent == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
