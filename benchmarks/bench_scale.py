"""The direct path at scale: peak memory for 1,000,000 messages, and time at 1k, 10k and 100k calls.

Run ``python benchmarks/bench_scale.py`` (about half a minute) or ``--quick`` (1k and 10k calls, and 100k
messages instead of 1M: a few seconds). Each figure is one fresh process running the direct path on a deterministic
session (queries of five tool-using calls with thinking, text and two tool results, then an answer; a 3-call
subagent every 10th query; a compaction every 30th, so the context stays in the window), streamed: ``SessionBuilder``
hands over each query as it closes (``take()``), :func:`ctxsim.wire.render_stream` renders it, and
:func:`ctxsim.check.run_tracker_parsed` reads every frame through the SDK's parser into the reference tracker and
checks every point (the report keeps every point). The process reports its peak resident memory (``ru_maxrss``:
Python and the SDK's imports included) and the resident memory after the imports alone. ``--mode built`` builds the
whole session first, ``--mode whole`` also renders it whole (:func:`ctxsim.wire.render`), for comparison.

Targets: < 300 MB peak for 1M messages; time linear in the calls (the time per call at 100k within 1.5x of that at
1k). Printed as PASS/MISS, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from _bench import mark, print_table

TARGET_PEAK_MB = 300
"""Peak resident memory of the direct path over 1M messages."""
TARGET_LINEARITY = 1.5
"""Seconds per call at 100k calls over seconds per call at 1k calls."""
MESSAGES_PER_CALL = 6.44
"""Messages per main-chain call of this workload (thinking, text, two tool uses and their results; subagents)."""
SIZES = (1_000, 10_000, 100_000)


def rss_mb() -> float:
    """Peak resident memory of this process so far, in MB (Linux reports kB, macOS bytes)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1 << 20) if sys.platform == "darwin" else peak / 1024


def queries(b: Any, calls: int) -> Iterator[Any]:
    """Build ``calls`` main-chain calls on builder ``b``; yield the queries as they close (:meth:`take`)."""
    made = q = 0
    while made < calls:
        q += 1
        b.query(f"Step {q}: continue the refactor and keep the tests green.")
        yield from b.take()
        if q % 30 == 0:
            b.compact(30_000)
        for _ in range(min(5, calls - made - 1)):
            b.call(blocks=("thinking", "text", "tool_use", "tool_use"), results=(300, 150), output=180)
            made += 1
        if q % 10 == 0:
            b.start_subagent("survey the parser module")
            for _ in range(3):
                b.call(blocks=("thinking", "text", "tool_use"), results=(400,))
            b.end_subagent(result_tokens=500)
        b.call(blocks=("thinking", "text"), output=250)
        made += 1
    yield from b.build().queries


def builder() -> Any:
    from ctxsim.world import SessionBuilder

    return SessionBuilder(seed=7, name="bench-scale")


def child(calls: int, mode: str) -> dict[str, Any]:
    """The direct path over a session of ``calls`` main-chain calls, in this process."""
    from ctxsim.check import run_tracker_parsed
    from ctxsim.reference import ContextTracker
    from ctxsim.wire import render, render_stream

    for _ in queries(builder(), 10):  # imports and first-use caches out of the timing
        pass
    imported = rss_mb()
    t0 = time.perf_counter()
    b = builder()
    if mode == "stream":  # built, rendered and checked a query at a time
        session = b.world()
        scripts: Any = render_stream(session, queries=queries(b, calls))
    else:
        session = b.world()
        session = replace(session, queries=tuple(queries(b, calls)))
        scripts = render(session) if mode == "whole" else render_stream(session)
    t1 = time.perf_counter()
    report = run_tracker_parsed(ContextTracker(), session, scripts)
    t2 = time.perf_counter()
    return {"mode": mode, "calls": sum(p.observation.kind in ("call", "subagent") for p in report.points),
            "messages": report.messages, "points": len(report.points), "ok": report.ok,
            "build": t1 - t0, "check": t2 - t1, "seconds": t2 - t0, "peak": rss_mb(), "imported": imported}


def spawn(calls: int, mode: str) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", str(calls), "--mode", mode]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 10k calls, 100k messages")
    parser.add_argument("--mode", choices=("stream", "built", "whole"), default="stream",
                        help="stream: built, rendered and checked a query at a time (default); built: the whole "
                             "session built, then render_stream(); whole: built, then render() up front")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.mode)))
        return 0

    import claude_agent_sdk

    started = time.perf_counter()
    sizes = SIZES[:2] if args.quick else SIZES
    runs = [spawn(n, args.mode) for n in sizes]
    target_messages = 100_000 if args.quick else 1_000_000
    big = spawn(int(target_messages / MESSAGES_PER_CALL) + 1, args.mode)
    elapsed = time.perf_counter() - started

    print(f"ctxsim scale benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()}, "
          f"claude_agent_sdk {claude_agent_sdk.__version__}, cpu_count {os.cpu_count()}; "
          f"mode {args.mode}, each row a fresh process")
    print()
    rows: list[tuple[str, ...]] = [("run", "calls", "messages", "up-front build s", "streamed s", "us/msg", "msg/s",
                                    "peak MB", "")]
    for r in [*runs, big]:
        label = f"{r['messages']:,} messages" if r is big else f"{r['calls'] // 1000}k calls"
        rows.append((label, f"{r['calls']:,}", f"{r['messages']:,}", f"{r['build']:.2f}", f"{r['check']:.2f}",
                     f"{1e6 * r['seconds'] / r['messages']:.2f}", f"{r['messages'] / r['seconds']:,.0f}",
                     f"{r['peak']:.0f}", "tracks" if r["ok"] else "FAILS"))
    print_table(rows)
    print()
    per_call = [r["seconds"] / r["calls"] for r in runs]
    linearity = per_call[-1] / per_call[0]
    big_label = f"peak memory, {big['messages']:,} messages"
    full = big["messages"] >= 1_000_000
    print_table([
        ("figure", "measured", "target", ""),
        (big_label, f"{big['peak']:.0f} MB", f"< {TARGET_PEAK_MB} MB at 1M",
         mark(big["peak"] < TARGET_PEAK_MB) if full else "-"),
        ("    of which the imports (Python, SDK, ctxsim)", f"{big['imported']:.0f} MB", "", ""),
        (f"time per call, {sizes[-1] // 1000}k / 1k calls", f"{linearity:.2f}x", f"<= {TARGET_LINEARITY}x",
         mark(linearity <= TARGET_LINEARITY)),
    ])
    print(f"\nrun took {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
