"""The live backend's speed: seconds per live session start and per API call, next to the in-process figure.

    python benchmarks/bench_live.py [--calls 50] [--runs 3]

Figures only (nothing here fails on speed). A *session start* is ``LiveClaude`` entered and left with no query: the
fake API started, the bundled CLI spawned and connected through ``ClaudeSDKClient``, disconnected, everything
stopped. The *N-call session* is the scripted session of N queries of one call each (``get_context_usage`` after
every query, as the fidelity suite does), played live, then its recorded world played in-process through
FakeTransport. Targets: <= 1.5 s per session start, a 50-call session <= 10 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import anyio

from ctxsim.lab._fidelity import Ask, ScriptedSession, play_inprocess, play_live
from ctxsim.live._claude import LiveClaude, bundled_cli_version


async def session_start() -> float:
    started = time.perf_counter()
    async with LiveClaude():
        pass
    return time.perf_counter() - started


async def session(calls: int) -> tuple[float, float, int]:
    scripted = ScriptedSession(f"bench-{calls}", tuple(Ask(f"query {i}") for i in range(calls)))
    started = time.perf_counter()
    live = await play_live(scripted)
    live_seconds = time.perf_counter() - started
    assert live.session is not None
    started = time.perf_counter()
    await play_inprocess(live.session, timeout=60)
    return live_seconds, time.perf_counter() - started, len(live.served)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    starts = [anyio.run(session_start) for _ in range(args.runs)]
    runs = [anyio.run(session, args.calls) for _ in range(args.runs)]
    print(f"Claude Code {bundled_cli_version()} (bundled), {args.runs} runs")
    print(f"session start (spawn, connect, disconnect, stop): median {statistics.median(starts):.2f} s "
          f"(min {min(starts):.2f}, max {max(starts):.2f}; target <= 1.5 s)")
    live = [r[0] for r in runs]
    inprocess = [r[1] for r in runs]
    served = runs[0][2]
    print(f"{args.calls}-call session live: median {statistics.median(live):.2f} s (min {min(live):.2f}, "
          f"max {max(live):.2f}; target <= 10 s), {served} API calls served")
    print(f"  per API call (session start taken off): "
          f"{(statistics.median(live) - statistics.median(starts)) / served * 1000:.0f} ms")
    print(f"same session in-process: median {statistics.median(inprocess) * 1000:.0f} ms "
          f"({statistics.median(live) / statistics.median(inprocess):.0f}x faster than live)")


if __name__ == "__main__":
    main()
