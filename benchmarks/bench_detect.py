"""Time to the first counterexample: ``ctxsim fuzz`` against every catalogued buggy tracker, startup included.

Run ``python benchmarks/bench_detect.py`` (5 seeds: about ten minutes on an idle 2-core machine) or ``--quick``
(one seed).
For every tracker of ``ctxsim.trackers.catalogue.CATALOGUE`` but the reference, and for each seed, it runs the command a
user runs, ``ctxsim fuzz --tracker NAME --seed S``, as a fresh process, and times it from the outside: Python's and
ctxsim's startup (Hypothesis, the SDK), drawing and checking streams until one fails, shrinking it and writing the
scenario file. Beside the wall time it prints, from the command's own last line, how far in the first failing stream
came (streams, seconds). It ends with the fuzz loop's streams/s on the reference (which never fails, so every stream of
``--examples`` is drawn and checked), and the startup alone (``ctxsim fuzz --examples 1`` on the reference).

Targets: every tracker found on every seed; the slowest median, over the seeds, of the time from the start of the
fuzz run (past startup) to the first failing stream at most 1 s; the whole run, startup included, under 10 s.
Printed as PASS/MISS, never asserted.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _bench import mark, print_table

TARGET_SECONDS = 10.0
"""Median wall seconds, startup included, to a shrunk counterexample for each catalogued tracker."""
TARGET_PAST_STARTUP = 1.0
"""Median seconds past startup to the first failing stream, for each catalogued tracker."""
_LAST = re.compile(r"fails after (\d+) streams \(first failing: #(\d+), ([\d.]+) s in; run ([\d.]+) s[;)]")


def command() -> list[str]:
    """How to run ``ctxsim`` from this interpreter (the console script beside it, else ``-c``)."""
    script = Path(sys.executable).with_name("ctxsim")
    if script.exists():
        return [str(script)]
    found = shutil.which("ctxsim")
    return [found] if found else [sys.executable, "-c", "import sys; from ctxsim.cli import main; sys.exit(main())"]


def run(name: str, seed: int, out: Path, examples: int, tolerance: int) -> dict[str, float | int | None]:
    """One ``ctxsim fuzz`` process: its wall time and what its last line says."""
    argv = [*command(), "fuzz", "--tracker", name, "--seed", str(seed), "--examples", str(examples),
            "--tolerance", str(tolerance), "--out", str(out)]
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    found = _LAST.search(done.stdout)
    if done.returncode != 1 or found is None:  # 1: a counterexample; 0: none found; else an error
        return {"wall": wall, "found": None, "streams": None, "first": None, "after": None}
    return {"wall": wall, "found": 1, "streams": int(found[1]), "first": int(found[2]), "after": float(found[3])}


def loop_rate(examples: int) -> tuple[float, int]:
    """Streams/s of ``ctxsim.fuzz.fuzz`` on the reference, in this process (nothing fails: all are drawn)."""
    from ctxsim.fuzz import fuzz
    from ctxsim.reference import ContextTracker

    fuzz(ContextTracker, examples=10, seed=99, progress=None)  # warm: corpora, imports
    started = time.perf_counter()
    result = fuzz(ContextTracker, examples=examples, seed=1, progress=None)
    return result.examples / (time.perf_counter() - started), result.examples


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed, fewer streams for the loop rate")
    parser.add_argument("--seeds", type=int, help="seeds per tracker (default 5, quick 1)")
    parser.add_argument("--examples", type=int, default=500, help="ctxsim fuzz --examples (default 500)")
    parser.add_argument("--tolerance", type=int, default=0, help="ctxsim fuzz --tolerance (default 0)")
    parser.add_argument("-t", "--tracker", action="append", default=[], help="only these catalogue names")
    args = parser.parse_args(argv)
    seeds = range(args.seeds or (1 if args.quick else 5))

    import claude_agent_sdk
    import hypothesis

    from ctxsim.trackers.catalogue import CATALOGUE

    names = [n for n in CATALOGUE if n != "reference" and (not args.tracker or n in args.tracker)]
    started = time.perf_counter()
    rows: list[tuple[str, ...]] = [("tracker", "median s", "max s", "past startup, median s", "first failing stream",
                                    "streams", "")]
    medians: list[float] = []
    pasts: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-detect-") as tmp:
        startup = statistics.median(run("reference", 0, Path(tmp) / "none.yaml", 1, 0)["wall"] or 0.0
                                    for _ in range(3))
        for name in names:
            runs = [run(name, seed, Path(tmp) / f"{name}-{seed}.yaml", args.examples, args.tolerance)
                    for seed in seeds]
            walls = [float(r["wall"] or 0.0) if r["found"] else float("inf") for r in runs]
            median = statistics.median(walls)
            medians.append(median)
            past = statistics.median(float(r["after"] or 0.0) if r["found"] else float("inf") for r in runs)
            pasts.append(past)
            firsts = [f"#{r['first']} ({r['after']:.2f} s)" for r in runs if r["found"]]
            streams = [str(r["streams"]) for r in runs if r["found"]]
            rows.append((name, f"{median:.2f}", f"{max(walls):.2f}", f"{past:.2f}", ", ".join(firsts) or "not found",
                         ", ".join(streams), mark(median < TARGET_SECONDS and past <= TARGET_PAST_STARTUP)))
            print(f"  {name}: {', '.join(f'{w:.2f}' for w in walls)} s", file=sys.stderr, flush=True)
    rate, streams = loop_rate(60 if args.quick else 300)
    elapsed = time.perf_counter() - started

    print(f"ctxsim detection benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()}, "
          f"claude_agent_sdk {claude_agent_sdk.__version__}, hypothesis {hypothesis.__version__}, "
          f"cpu_count {os.cpu_count()}")
    print(f"each row: `ctxsim fuzz --tracker NAME --seed S --examples {args.examples} --tolerance {args.tolerance}` "
          f"as a fresh process, seeds {list(seeds)}; wall seconds to the written, shrunk counterexample")
    print()
    print_table(rows)
    print()
    worst = max(medians) if medians else 0.0
    worst_past = max(pasts) if pasts else 0.0
    found = sum(m != float("inf") for m in medians)
    print_table([
        ("figure", "measured", "target", ""),
        ("trackers found (median run)", f"{found} of {len(names)}", f"{len(names)} of {len(names)}",
         mark(found == len(names))),
        ("slowest median past startup, to the first failing stream", f"{worst_past:.2f} s",
         f"<= {TARGET_PAST_STARTUP:g} s", mark(worst_past <= TARGET_PAST_STARTUP)),
        ("slowest median, startup included", f"{worst:.2f} s", f"< {TARGET_SECONDS:g} s",
         mark(worst < TARGET_SECONDS)),
        ("median of the medians", f"{statistics.median(medians):.2f} s" if medians else "-", "", ""),
        ("startup alone (ctxsim fuzz --examples 1, reference)", f"{startup:.2f} s", "", ""),
        (f"fuzz loop on the reference, one core ({streams} streams)", f"{rate:,.1f} streams/s", "", ""),
    ])
    print(f"\nrun took {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
