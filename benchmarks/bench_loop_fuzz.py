"""Time to the first counterexample for every loop mutant: ``ctxsim fuzz --loop`` alone, no corpus.

Run ``python benchmarks/bench_loop_fuzz.py`` (3 seeds; a few minutes) or ``--quick`` (one seed). For every
non-equivalent mutant of the reference restart loop (:mod:`ctxsim.loops.mutants`) and each seed it runs the command
a user runs, ``ctxsim fuzz --loop ctxsim.loops.mutants:<function> --seed S --examples N``, as a fresh process: only
generated tasks (:func:`ctxsim.strategies.task_scenarios`), never a scenario of the corpus. From the command's own
last line it takes how far in the first failing task came (tasks, seconds since the fuzz run started: the time
*past startup*), and times the whole process from the outside (startup, search, shrinking, the written scenario).
Then the reference loop itself (``ctxsim.loops.mutants:reference``) runs over the same budget (``--examples N``,
each seed) and must keep every invariant on every task; and the startup alone (``--examples 1`` on the reference).

Targets: every mutant found, the median over the seeds within 5 s past startup; the reference clean. Printed as
PASS/MISS, never asserted; the load average is printed beside them (the figures are for an idle 2-core machine).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _bench import mark, print_table
from bench_detect import command

TARGET_SECONDS = 5.0
"""Median seconds past startup to the first failing task, per mutant."""
_FOUND = re.compile(r"fails after (\d+) tasks \(first failing: #(\d+), ([\d.]+) s in; run ([\d.]+) s\)")
_CLEAN = re.compile(r"kept every invariant on all (\d+) generated tasks")


def run(spec: str, seed: int, out: Path, examples: int) -> dict[str, float | int | None]:
    """One ``ctxsim fuzz --loop`` process: its wall time, and what its last lines say."""
    argv = [*command(), "fuzz", "--loop", spec, "--seed", str(seed), "--examples", str(examples), "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    found, clean = _FOUND.search(done.stdout), _CLEAN.search(done.stdout)
    if done.returncode == 1 and found is not None:
        return {"wall": wall, "found": 1, "tasks": int(found[1]), "first": int(found[2]), "after": float(found[3]),
                "run": float(found[4])}
    if done.returncode == 0 and clean is not None:
        return {"wall": wall, "found": 0, "tasks": int(clean[1]), "first": None, "after": None, "run": None}
    print(f"  {spec} seed {seed}: exit {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}",
          file=sys.stderr)
    return {"wall": wall, "found": None, "tasks": None, "first": None, "after": None, "run": None}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument("--seeds", type=int, help="seeds per mutant (default 3, quick 1)")
    parser.add_argument("--examples", type=int, default=1000, help="ctxsim fuzz --examples: the budget (default "
                                                                    "1000)")
    parser.add_argument("-m", "--mutant", action="append", default=[], help="only these mutants (by name)")
    args = parser.parse_args(argv)
    seeds = range(args.seeds or (1 if args.quick else 3))

    import claude_agent_sdk
    import hypothesis

    from ctxsim.loops.mutants import MUTANTS, reference

    chosen = [m for m in MUTANTS.values() if not args.mutant or m.name in args.mutant]
    live = [m for m in chosen if not m.equivalent]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    started = time.perf_counter()
    rows: list[tuple[str, ...]] = [("mutant", "median s past startup", "max s", "first failing task", "wall s",
                                    "")]
    medians: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-loop-fuzz-") as tmp:
        spec = f"{reference.__module__}:{reference.__name__}"
        startup = statistics.median(float(run(spec, 0, Path(tmp) / "none.yaml", 1)["wall"] or 0.0)
                                    for _ in range(3))
        for mutant in live:
            runs = [run(mutant.spec, seed, Path(tmp) / f"{mutant.name}-{seed}.yaml", args.examples)
                    for seed in seeds]
            after = [float(r["after"]) if r["found"] and r["after"] is not None else float("inf") for r in runs]
            median = statistics.median(after)
            medians.append(median)
            firsts = [f"#{r['first']}" for r in runs if r["found"]]
            walls = [f"{float(r['wall'] or 0.0):.1f}" for r in runs]
            rows.append((mutant.name, f"{median:.2f}", f"{max(after):.2f}", ", ".join(firsts) or "not found",
                         ", ".join(walls), mark(median < TARGET_SECONDS)))
            print(f"  {mutant.name}: {', '.join(f'{a:.2f}' for a in after)} s past startup", file=sys.stderr,
                  flush=True)
        clean = [run(spec, seed, Path(tmp) / f"reference-{seed}.yaml", args.examples) for seed in seeds]
    elapsed = time.perf_counter() - started
    kept = [r for r in clean if r["found"] == 0]
    reference_seconds = [float(r["wall"] or 0.0) for r in clean]

    print(f"ctxsim loop fuzz benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()}, "
          f"claude_agent_sdk {claude_agent_sdk.__version__}, hypothesis {hypothesis.__version__}, cpu_count "
          f"{os.cpu_count()}, load average at start {load:.2f}")
    print(f"each row: `ctxsim fuzz --loop ctxsim.loops.mutants:<function> --seed S --examples {args.examples}` as a "
          f"fresh process, seeds {list(seeds)}, generated tasks only (no corpus); seconds from the start of the fuzz "
          f"run (past startup) to the first failing task")
    print()
    print_table(rows)
    for mutant in chosen:
        if mutant.equivalent:
            print(f"{mutant.name}: equivalent, not fuzzed ({mutant.equivalent[:100]}...)")
    print()
    worst = max(medians) if medians else 0.0
    found = sum(m != float("inf") for m in medians)
    print_table([
        ("figure", "measured", "target", ""),
        ("non-equivalent mutants found (median run)", f"{found} of {len(live)}", f"{len(live)} of {len(live)}",
         mark(found == len(live))),
        ("slowest median, past startup", f"{worst:.2f} s", f"< {TARGET_SECONDS:g} s", mark(worst < TARGET_SECONDS)),
        ("median of the medians", f"{statistics.median(medians):.2f} s" if medians else "-", "", ""),
        (f"reference loop clean over {args.examples} tasks", f"{len(kept)} of {len(clean)} seeds",
         f"{len(clean)} of {len(clean)}", mark(len(kept) == len(clean))),
        ("reference run, wall (startup included)", ", ".join(f"{s:.1f} s" for s in reference_seconds), "", ""),
        ("startup alone (ctxsim fuzz --loop ... --examples 1)", f"{startup:.2f} s", "", ""),
    ])
    print(f"\nrun took {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
