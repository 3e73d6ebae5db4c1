"""What the benchmark scripts share: PASS/MISS marks, aligned tables, timed subprocess runs.

The scripts run as ``python benchmarks/<script>.py``, so this directory is on ``sys.path`` and they import it as
``_bench``. Nothing here asserts a timing: targets are printed, never enforced.
"""

from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path


def mark(ok: bool) -> str:
    """How a target is reported."""
    return "PASS" if ok else "MISS"


def print_table(rows: Sequence[tuple[str, ...]]) -> None:
    """Rows of cells: the first column left-aligned, the others right-aligned."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join((f"{c:<{w}}" if i == 0 else f"{c:>{w}}") for i, (c, w) in
                        enumerate(zip(row, widths))).rstrip())


def timed(argv: list[str], cwd: Path, env: dict[str, str], rounds: int) -> tuple[float, str]:
    """Median wall seconds of running ``argv``, and the last line it printed."""
    times, last = [], ""
    for _ in range(rounds):
        start = time.perf_counter()
        done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        lines = done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or [""]
        last = lines[-1]
    return statistics.median(times), last
