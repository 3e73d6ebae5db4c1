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

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="?", type=Path, default=ROOT / "src" / "ctxsim" / "corpus",
                        help="the corpus directory (default: the bundled corpus)")
    args = parser.parse_args()

    from ctxsim._lazy import freeze_imports, thaw_imports
    from ctxsim.scenario import SessionScenario, load_scenario
    from ctxsim.scenario_run import corpus_verdicts
    from ctxsim.trackers.mutants import MUTANTS

    loaded = [load_scenario(p) for p in sorted(args.scenarios.glob("*.yaml"))]
    corpus = [s for s in loaded if isinstance(s, SessionScenario)]
    froze = freeze_imports()
    started = time.perf_counter()
    killed: list[str] = []
    survivors: list[str] = []
    wrong: list[str] = []
    width = max(map(len, MUTANTS))
    try:
        for mutant in MUTANTS.values():
            verdicts = corpus_verdicts(corpus, lambda s, m=mutant: m.factory(s.session.usage), name=mutant.name)
            by = [name for name, (met, _) in verdicts.items() if not met]
            if mutant.equivalent:
                (wrong if by else []).append(mutant.name)
                shown = f"DECLARED EQUIVALENT, YET KILLED by {len(by)}" if by else "equivalent"
            elif by:
                killed.append(mutant.name)
                shown = f"killed by {len(by)}: {', '.join(by[:3])}{', ...' if len(by) > 3 else ''}"
            else:
                survivors.append(mutant.name)
                shown = "SURVIVES"
            print(f"{mutant.name:<{width}}  {shown}\n{'':<{width}}  bug: {mutant.bug}")
            if mutant.equivalent:
                print(f"{'':<{width}}  why equivalent: {mutant.equivalent}")
    finally:
        if froze:
            thaw_imports()
    seconds = time.perf_counter() - started
    total = len(killed) + len(survivors)
    equivalent = [m.name for m in MUTANTS.values() if m.equivalent]
    print(f"\ncorpus alone ({len(corpus)} session scenarios of {args.scenarios}): {len(killed)}/{total} "
          f"non-equivalent mutants killed; survivors: {', '.join(survivors) or 'none'}; {len(equivalent)} "
          f"equivalent ({', '.join(equivalent)}); {seconds:.1f} s")
    return 0 if not survivors and not wrong else 1


if __name__ == "__main__":
    sys.exit(main())
