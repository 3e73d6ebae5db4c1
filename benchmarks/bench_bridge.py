"""The sync-over-async bridge: a run on the thread's reused event loop against a fresh loop per run.

``ctxsim._sync.run_blocking`` is the one bridge every synchronous entry point goes through (``check.run_tracker``,
``assert_tracks``, ``runner.run_scenario``, the loop checks, the contracts). On asyncio it keeps one event loop per
thread; a fresh loop per run (``anyio.run``, ``asyncio.run``) costs about as much as playing a short scenario through
the SDK client. This plays every session scenario of the corpus through the real ``ClaudeSDKClient`` with
``check.arun_tracker`` both ways, rounds alternating A/B, and prints the median per scenario of each and the median
of the per-round ratios (fresh / reused: above 1, the reused loop is faster). Run ``python
benchmarks/bench_bridge.py`` (about 30 s) or ``--quick``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio
from _bench import print_table

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="rounds per way (default 7)")
    parser.add_argument("--quick", action="store_true", help="two rounds")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds

    from ctxsim._sync import run_blocking
    from ctxsim.check import arun_tracker
    from ctxsim.reference import ContextTracker
    from ctxsim.scenario import SessionScenario, load_scenario

    scenarios = [s for s in (load_scenario(p) for p in sorted((ROOT / "scenarios").glob("*.yaml")))
                 if isinstance(s, SessionScenario)]
    runs = [partial(arun_tracker, ContextTracker(), s.session, scripts=s.scripts(), tolerance=s.tolerance)
            for s in scenarios]

    def reused() -> None:
        for run in runs:
            run_blocking(run)

    def fresh() -> None:
        for run in runs:
            anyio.run(run)

    def timed(way: Callable[[], None]) -> float:
        start = time.perf_counter()
        way()
        return (time.perf_counter() - start) / len(runs)

    reused()  # warm-up: imports, the first loop
    fresh()
    a, b = [], []
    for _ in range(rounds):
        a.append(timed(reused))
        b.append(timed(fresh))
    ratio = statistics.median(f / r for r, f in zip(a, b))
    print(f"{len(runs)} session scenarios of {ROOT / 'scenarios'}, {rounds} rounds each way, alternating")
    print_table([("way", "ms per scenario (median)"),
                 ("run_blocking: the thread's reused loop", f"{1000 * statistics.median(a):.2f}"),
                 ("anyio.run: a fresh loop per run", f"{1000 * statistics.median(b):.2f}")])
    print(f"fresh / reused: {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
