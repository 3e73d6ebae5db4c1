"""Corpus adequacy: how many behavioural mutants of the reference the shipped corpus alone kills.

Run ``python benchmarks/bench_adequacy.py`` (about 20 s). Two sections, one run:

- **The reference tracker.** Each mutant of :mod:`ctxsim.trackers.catalogue.mutants` is the reference tracker with one
  guarantee broken (one per bug class: every fault kind, every event the reference handles, every field it reads).
  It runs as the tracker under test over every scenario of ``scenarios/`` that expects something of one
  (``expect.ctx_tracker``), exactly as ``pytest --ctx-scenarios scenarios --ctx-tracker=...`` would, and is
  *killed* when at least one scenario's verdict is not met.
- **The reference restart loop.** Each mutant of :mod:`ctxsim.loops.mutants` is the reference loop with one
  guarantee of its policy, its restart steps or its checkpoint extraction broken. It runs as the loop under test
  over every task scenario, exactly as ``pytest --ctx-scenarios scenarios --ctx-loop=ctxsim.loops.mutants:<name>``
  would (resolved by that spec, judged by the loop checks: every invariant must hold), and is *killed* when at
  least one scenario finds a broken invariant.

Nothing else runs: not the suite, not the conformance contracts, not the fuzzer. Each section's figure is killed /
non-equivalent mutants; the survivors are listed. An equivalent mutant (one no run judged by the corpus can tell
from the reference) is printed with the reason it is equivalent, from its ``equivalent`` attribute, and left out
of the denominator; it is never hidden. A mutant declared equivalent that some scenario kills is reported as such
(its declaration is wrong). The exit status is 1 when either section has a survivor or a wrong declaration.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxsim.trackers.catalogue.mutants import Mutant

ROOT = Path(__file__).resolve().parent.parent


def _section(mutants: Iterable[Mutant[Any]], verdicts: Callable[[Mutant[Any]], dict[str, tuple[bool, str]]]
             ) -> tuple[list[str], list[str], list[str], list[str]]:
    """Run every mutant, printing one entry each: ``(killed, survivors, wrongly declared equivalent, equivalent)``."""
    mutants = list(mutants)
    killed: list[str] = []
    survivors: list[str] = []
    wrong: list[str] = []
    width = max(len(m.name) for m in mutants)
    for mutant in mutants:
        by = [name for name, (met, _) in verdicts(mutant).items() if not met]
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
    return killed, survivors, wrong, [m.name for m in mutants if m.equivalent]


def _summary(killed: list[str], survivors: list[str], equivalent: list[str]) -> str:
    return (f"{len(killed)}/{len(killed) + len(survivors)} non-equivalent mutants killed; survivors: "
            f"{', '.join(survivors) or 'none'}; {len(equivalent)} equivalent ({', '.join(equivalent)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="?", type=Path, default=ROOT / "scenarios",
                        help="the corpus directory (default: the bundled corpus)")
    args = parser.parse_args()

    from ctxsim.loops._resolve import resolve_loop
    from ctxsim.loops.mutants import MUTANTS as LOOP_MUTANTS
    from ctxsim.runner import freeze_imports, thaw_imports
    from ctxsim.runner._scenario import corpus_verdicts
    from ctxsim.runner._task import corpus_loop_verdicts
    from ctxsim.scenario import SessionScenario, TaskScenario, load_scenario
    from ctxsim.trackers.catalogue.mutants import MUTANTS

    loaded = [load_scenario(p) for p in sorted(args.scenarios.glob("*.yaml"))]
    corpus = [s for s in loaded if isinstance(s, SessionScenario)]
    tasks = [s for s in loaded if isinstance(s, TaskScenario)]
    froze = freeze_imports()
    try:
        print("== the reference tracker: ctxsim.trackers.catalogue.mutants over the session scenarios "
              "(pytest --ctx-scenarios --ctx-tracker=...) ==")
        started = time.perf_counter()
        killed, survivors, wrong, equivalent = _section(MUTANTS.values(), lambda m: corpus_verdicts(
            corpus, lambda s: MUTANTS[m.name].edit(s.session.usage), name=m.name))
        seconds = time.perf_counter() - started
        print(f"\ncorpus alone ({len(corpus)} session scenarios of {args.scenarios}): "
              f"{_summary(killed, survivors, equivalent)}; {seconds:.1f} s")

        print("\n== the reference restart loop: ctxsim.loops.mutants over the task scenarios "
              "(pytest --ctx-scenarios --ctx-loop=ctxsim.loops.mutants:...) ==")
        started = time.perf_counter()
        loop_killed, loop_survivors, loop_wrong, loop_equivalent = _section(
            LOOP_MUTANTS.values(), lambda m: corpus_loop_verdicts(tasks, resolve_loop(LOOP_MUTANTS[m.name].spec)))
        seconds = time.perf_counter() - started
        print(f"\ncorpus alone ({len(tasks)} task scenarios of {args.scenarios}): "
              f"{_summary(loop_killed, loop_survivors, loop_equivalent)}; {seconds:.1f} s")
    finally:
        if froze:
            thaw_imports()
    for name in (*wrong, *loop_wrong):
        print(f"{name}: DECLARED EQUIVALENT, YET KILLED: its declaration is wrong")
    return 0 if not (survivors or wrong or loop_survivors or loop_wrong) else 1


if __name__ == "__main__":
    sys.exit(main())
