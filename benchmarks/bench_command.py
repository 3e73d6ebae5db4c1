"""Per-point cost of a command tracker (``cmd:``) next to a bare spawn of the same command, side by side in one run.

Run ``python benchmarks/bench_command.py`` (``--quick``: fewer rounds; ``--command CMD``: another command, default a
Node statusline reading the transcript, ``tests/statusline_trackers/last_row.js``, or ``sh`` when Node is absent).

For a session of ``--points`` observation points it times, in interleaved rounds (so a busy machine slows each the
same way):

- **bare**: the command spawned once per point the way the tracker spawns it (``/bin/sh -c``, payload on stdin,
  output read), one at a time, with the payload and transcript prepared beforehand: what any harness pays;
- **tracker, 1 worker**: :meth:`ctxsim.trackers.CommandTracker.estimate_points` with ``workers=1``: rendering the
  transcript and payloads, a private ``HOME`` per point, the transcript written up to the point, the spawn, reading
  the output;
- **tracker, 2 workers**: the same with ``workers=2``.

Targets: the tracker's overhead over the bare spawn at most 5 ms a point; two workers at least 1.8x one worker
(needs two free cores). Printed as PASS/MISS, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import mark, print_table

from ctxsim.trackers._command import CommandTracker
from ctxsim.wire import render_transcript
from ctxsim.wire._statusline import statusline_payloads
from ctxsim.world import Session, SessionBuilder

OVERHEAD_MS = 5.0
"""The tracker's cost a point beyond the bare spawn, at most."""
SPEEDUP = 1.8
"""Two workers over one, at least."""
ROOT = Path(__file__).resolve().parent.parent


def session(points: int) -> Session:
    """A main chain of ``points - 1`` calls (one point each) and the query's result."""
    builder = SessionBuilder(seed=3).query("Work through the backlog")
    for _ in range(points - 1):
        builder.call(blocks=("text", "tool_use"), results=(600,))
    return builder.build()


def bare(command: str, session: Session, home: Path) -> float:
    """Seconds to spawn ``command`` once per point, one at a time, payload and transcript prepared beforehand."""
    transcript = render_transcript(session)
    project = home / ".claude" / "projects" / transcript.slug
    inputs = []
    for index, payload in enumerate(statusline_payloads(session)):
        path = transcript.write(project / f"point-{index}", index)
        inputs.append(json.dumps(dict(payload, transcript_path=str(path))).encode())
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "LANG": "C.UTF-8", "TERM": "dumb"}
    start = time.perf_counter()
    for stdin in inputs:
        process = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=home, env=env, start_new_session=True)
        process.communicate(stdin, timeout=30)
    return time.perf_counter() - start


def tracked(command: str, session: Session, workers: int) -> float:
    """Seconds for :meth:`CommandTracker.estimate_points` over every point with ``workers`` workers."""
    tracker = CommandTracker(command, workers=workers, timeout=30)
    observations = [p.observation for p in render_transcript(session).points]
    start = time.perf_counter()
    estimates = tracker.estimate_points(session, observations)
    seconds = time.perf_counter() - start
    assert len(estimates) == len(observations)
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--points", type=int, default=40, help="observation points of the session (default 40)")
    default = (f"node {ROOT / 'tests' / 'statusline_trackers' / 'last_row.js'}" if shutil.which("node") else
               "cat > /dev/null; echo 0")
    parser.add_argument("--command", default=default, help=f"the command (default: {default})")
    args = parser.parse_args()
    rounds = 3 if args.quick else 7
    world = session(args.points)
    points = len(render_transcript(world).points)
    times: dict[str, list[float]] = {"bare": [], "one": [], "two": []}
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-command-") as scratch:
        for n in range(rounds):
            times["bare"].append(bare(args.command, world, Path(scratch) / f"bare-{n}"))
            times["one"].append(tracked(args.command, world, 1))
            times["two"].append(tracked(args.command, world, 2))
    per_point = {k: statistics.median(v) / points * 1000 for k, v in times.items()}
    overhead = per_point["one"] - per_point["bare"]
    speedup = per_point["one"] / per_point["two"]
    print(f"bench_command: {args.command!r}, {points} points, median of {rounds} interleaved rounds, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}")
    print_table([
        ("", "ms a point", "vs bare"),
        ("bare spawn (one at a time)", f"{per_point['bare']:.2f}", "1.00x"),
        ("CommandTracker, 1 worker", f"{per_point['one']:.2f}", f"{per_point['one'] / per_point['bare']:.2f}x"),
        ("CommandTracker, 2 workers", f"{per_point['two']:.2f}", f"{per_point['two'] / per_point['bare']:.2f}x"),
    ])
    print(f"overhead over the bare spawn: {overhead:+.2f} ms a point (target <= {OVERHEAD_MS:g}): "
          f"{mark(overhead <= OVERHEAD_MS)}")
    print(f"two workers over one: {speedup:.2f}x (target >= {SPEEDUP:g}): {mark(speedup >= SPEEDUP)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
