"""``ctxsim judge`` over the bundled corpus for a compiled ``cmd:`` statusline and a compiled ``stream:`` tracker,
next to the in-process reference, side by side in one run.

Run ``python benchmarks/bench_doors.py`` (``--quick``: 3 rounds instead of 7). It compiles the two trackers in
``benchmarks/trackers/`` with the C compiler on ``PATH`` (``cc``; the script says so and stops without one):

- ``statusline.c``: a statusline command printing the payload's ``context_window.current_usage`` prompt, nothing
  where it is null (what a Go or Rust statusline does, at a native program's start-up cost);
- ``stream.c``: a stream tracker answering each stream-json line with the last main-chain call's prompt.

It times, in interleaved rounds (so a busy machine slows each the same way), the whole command a user runs, from
its start to its exit: ``ctxsim judge reference``, ``ctxsim judge cmd:STATUSLINE``, ``ctxsim judge stream:STREAM``
(every session scenario of the corpus, each judged as ``expect.ctx_tracker`` says). Median seconds and the ratio to
the reference's are printed, with the number of points each judged.

Target: each compiled tracker's judgement at most 2x the reference's. Printed as PASS/MISS, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import mark, print_table

HERE = Path(__file__).resolve().parent
TARGET = 2.0
"""A compiled tracker's judgement over the corpus, at most this many times the reference's."""


def compile_trackers(into: Path) -> dict[str, str]:
    """The two trackers compiled into ``into``, by kind, as tracker specs."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SystemExit("bench_doors: no C compiler on PATH (cc, gcc or clang): nothing to time")
    specs = {}
    for kind, source in (("cmd", "statusline.c"), ("stream", "stream.c")):
        binary = into / source.removesuffix(".c")
        subprocess.run([cc, "-O2", "-o", str(binary), str(HERE / "trackers" / source)], check=True)
        specs[kind] = f"{kind}:{binary}"
    return specs


def judge(spec: str, report: Path) -> tuple[float, int]:
    """Seconds ``ctxsim judge SPEC`` takes over the corpus, and the points it judged."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ctxsim.cli", "judge", spec, "--json", str(report)], capture_output=True,
                   check=False)
    seconds = time.perf_counter() - start
    rows = [json.loads(line) for line in report.read_text().splitlines()]
    return seconds, sum(row.get("points", 0) for row in rows if "tally" not in row)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-doors-") as scratch:
        root = Path(scratch)
        specs = {"reference (in-process)": "reference", **{f"compiled {k}:": v for k, v in
                                                             compile_trackers(root).items()}}
        times: dict[str, list[float]] = {name: [] for name in specs}
        points: dict[str, int] = {}
        for _ in range(rounds):
            for name, spec in specs.items():
                seconds, points[name] = judge(spec, root / "verdicts.json")
                times[name].append(seconds)
    median = {name: sorted(t)[len(t) // 2] for name, t in times.items()}
    base = median["reference (in-process)"]
    print(f"bench_doors: ctxsim judge over the bundled corpus, median of {rounds} interleaved rounds, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print_table([("", "seconds", "points judged", "vs reference"),
                 *((name, f"{median[name]:.2f}", f"{points[name]:,}", f"{median[name] / base:.2f}x")
                   for name in specs)])
    for name in specs:
        if name.startswith("compiled"):
            ratio = median[name] / base
            print(f"{name} judgement vs the reference's: {ratio:.2f}x (target <= {TARGET:g}x): {mark(ratio <= TARGET)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
