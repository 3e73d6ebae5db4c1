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

``--compare`` adds, in this process, the search with each task drawn afresh (what ``ctxsim fuzz --loop`` does) side
by side with Hypothesis' default engine (which mostly mutates tasks it drew before): tasks and seconds to the first
counterexample per mutant, and how many different tasks and shapes each engine draws in ``--examples`` tasks.
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
from typing import Any

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


def _shape(task: Any) -> tuple[object, ...]:
    """A task's coarse shape: its number of steps, checkpoint plan, policy, compaction and garbled turns."""
    doc = task.document["task"]
    return (len(doc["steps"]), repr(doc.get("checkpoints")), repr(doc["policy"]), "autocompact_at" in doc,
            repr(doc.get("unreadable_usage")))


def _drawn(backend: str, seed: int, examples: int) -> tuple[int, int]:
    """Different tasks and different shapes among ``examples`` tasks drawn by ``backend``."""
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings

    from ctxsim.strategies import task_scenarios

    texts: list[str] = []
    shapes: list[tuple[object, ...]] = []

    @hypothesis_seed(seed)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate], backend=backend,
              suppress_health_check=list(HealthCheck))
    @given(task_scenarios())
    def draw(task: Any) -> None:
        texts.append(task.text())
        shapes.append(_shape(task))

    draw()
    return len(set(texts)), len(set(shapes))


def compare(mutants: Sequence[Any], seeds: range, examples: int) -> None:
    """Tasks drawn afresh against Hypothesis' default engine, side by side in this process."""
    from ctxsim.fuzz import fuzz_loop, independent_backend

    rows: list[tuple[str, ...]] = [("mutant", "afresh: median s", "max s", "default engine: median s", "max s",
                                    "ratio of medians")]
    ratios: list[float] = []
    for mutant in mutants:
        timed: dict[bool, list[float]] = {}
        for independent in (True, False):
            found = [fuzz_loop(mutant.edit, examples=examples, seed=seed, progress=None, independent=independent)
                     for seed in seeds]
            timed[independent] = [r.found_after if r.found_after is not None else float("inf") for r in found]
        afresh, default = statistics.median(timed[True]), statistics.median(timed[False])
        ratio = default / afresh if afresh > 0 else float("nan")
        ratios.append(ratio)
        rows.append((mutant.name, f"{afresh:.2f}", f"{max(timed[True]):.2f}", f"{default:.2f}",
                     f"{max(timed[False]):.2f}", f"{ratio:.1f}x"))
        print(f"  compare {mutant.name}: afresh {afresh:.2f} s, default engine {default:.2f} s", file=sys.stderr,
              flush=True)
    print(f"\n--compare: seconds from the start of the search to the first failing task, in this process, seeds "
          f"{list(seeds)}, --examples {examples}")
    print_table(rows)
    finite = [r for r in ratios if r == r and r != float("inf")]
    print(f"median ratio (default engine / afresh): {statistics.median(finite):.1f}x" if finite else "")
    drawn = [("engine", "different tasks", "different shapes")]
    for name, backend in (("afresh", independent_backend()), ("default engine", "hypothesis")):
        counts = [_drawn(backend, seed, examples) for seed in seeds]
        drawn.append((name, ", ".join(str(c[0]) for c in counts), ", ".join(str(c[1]) for c in counts)))
    print(f"\nin {examples} drawn tasks per seed (shape: steps, checkpoint plan, policy, compaction, garbled turns)")
    print_table(drawn)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    parser.add_argument("--seeds", type=int, help="seeds per mutant (default 3, quick 1)")
    parser.add_argument("--examples", type=int, default=1000, help="ctxsim fuzz --examples: the budget (default "
                                                                    "1000)")
    parser.add_argument("-m", "--mutant", action="append", default=[], help="only these mutants (by name)")
    parser.add_argument("--compare", action="store_true", help="also Hypothesis' default engine, side by side")
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
    slowest: list[float] = []
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
            slowest.append(max(after))
            firsts = [f"#{r['first']}" for r in runs if r["found"]]
            walls = [f"{float(r['wall'] or 0.0):.1f}" for r in runs]
            rows.append((mutant.name, f"{median:.2f}", f"{max(after):.2f}", ", ".join(firsts) or "not found",
                         ", ".join(walls), mark(median < TARGET_SECONDS)))
            print(f"  {mutant.name}: {', '.join(f'{a:.2f}' for a in after)} s past startup", file=sys.stderr,
                  flush=True)
        clean = [run(spec, seed, Path(tmp) / f"reference-{seed}.yaml", args.examples) for seed in seeds]
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
        ("slowest run, any seed, past startup", f"{max(slowest):.2f} s" if slowest else "-", "", ""),
        ("median of the medians", f"{statistics.median(medians):.2f} s" if medians else "-", "", ""),
        (f"reference loop clean over {args.examples} tasks", f"{len(kept)} of {len(clean)} seeds",
         f"{len(clean)} of {len(clean)}", mark(len(kept) == len(clean))),
        ("reference run, wall (startup included)", ", ".join(f"{s:.1f} s" for s in reference_seconds), "", ""),
        ("startup alone (ctxsim fuzz --loop ... --examples 1)", f"{startup:.2f} s", "", ""),
    ])
    if args.compare:
        compare(live, seeds, args.examples)
    print(f"\nrun took {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
