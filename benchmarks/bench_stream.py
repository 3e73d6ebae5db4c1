"""The corpus through a stream tracker (``stream:``, one Node process per session) next to the same corpus with an
in-process tracker, side by side in one run, and the stream tracker on parallel workers.

Run ``python benchmarks/bench_stream.py`` (``--quick``: one round; ``--command CMD``: another stream tracker,
default the example agent's, ``node examples/ts-agent/src/stream-tracker.mjs``, a port of the reference tracker to
JavaScript; ``--workers N``: the parallel run's workers, default 2).

It times, in interleaved rounds (so a busy machine slows each the same way), the run a user makes to put a tracker
under the corpus, ``pytest --ctx-scenarios --ctx-tracker=SPEC`` from an empty directory, over the bundled session
scenarios (every scenario's reference and catalogue items, and one item each for the tracker under test; a task
scenario's restart loop feeds its tracker the SDK's message objects, not lines, so neither run has those):

- **in-process**: ``SPEC`` the reference tracker as a Python ``module:factory`` (told the world);
- **stream, 1 worker**: ``SPEC`` ``stream:CMD``;
- **stream, N workers**: the same with ``-n N`` (pytest-xdist), and the in-process run with ``-n N`` beside it (on a
  machine without N free cores neither gains: the figure to compare it with).

Then, for what a session costs alone, the tracker's own runs (:func:`ctxsim.runner.run_scenario` over each
session scenario, nothing else): the reference in-process, the stream tracker (a process start, and one line each
way a message).

Targets: the stream run at most 3x the in-process run; N workers faster than one (needs N free cores). Printed as
PASS/MISS, never asserted. The stream tracker's verdicts are checked equal to the reference's, scenario by scenario:
a figure for a tracker that does not track is no figure.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _bench import mark, print_table, timed

RATIO = 3.0
"""The stream run's time over the in-process run's, at most."""
ROOT = Path(__file__).resolve().parent.parent
DEFAULT = f"node {ROOT / 'examples' / 'ts-agent' / 'src' / 'stream-tracker.mjs'}"
FACTORY = '''from ctxsim.reference import ContextTracker


def reference(world):
    """The reference tracker, told how the session's provider reports usage."""
    return ContextTracker(usage=world.usage)
'''


def session_scenarios() -> list[Path]:
    """The bundled corpus's session scenario files."""
    from ctxsim.corpus import bundled_scenarios
    from ctxsim.scenario import SessionScenario, load_scenario

    return [p for p in bundled_scenarios() if isinstance(load_scenario(p), SessionScenario)]


def own_runs(spec: str | None) -> tuple[float, dict[str, bool]]:
    """Seconds to run ``spec`` (None: the in-process reference) over each session scenario of the corpus, and
    each run's ok by scenario."""
    from ctxsim.runner import run_scenario
    from ctxsim.scenario import load_scenario
    from ctxsim.trackers import make_tracker, resolve
    from ctxsim.trackers.catalogue import reference_for

    scenarios = [load_scenario(p) for p in session_scenarios()]
    factory = None if spec is None else resolve(spec).factory
    oks = {}
    start = time.perf_counter()
    for scenario in scenarios:
        tracker = reference_for(scenario.session) if factory is None else make_tracker(factory, scenario.session)
        result = run_scenario(scenario, tracker)
        if result.report.error is not None:
            raise SystemExit(f"bench_stream: {result.report.error}")
        oks[scenario.name] = result.ok
    return time.perf_counter() - start, oks


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round instead of 3")
    parser.add_argument("--command", default=DEFAULT, help=f"the stream tracker's command (default: {DEFAULT})")
    parser.add_argument("--workers", type=int, default=2, help="workers of the parallel run (default 2)")
    args = parser.parse_args()
    if args.command == DEFAULT and shutil.which("node") is None:
        print("bench_stream: skipped: node is not on PATH (the default stream tracker is a Node program)")
        return 0
    rounds = 1 if args.quick else 3
    spec = f"stream:{args.command}"
    files = [str(p) for p in session_scenarios()]  # a restart loop feeds a tracker objects, not lines: not these
    pytest = [sys.executable, "-m", "pytest", "--ctx-scenarios", "-q", "-p", "no:cacheprovider", *files]
    runs = {"in-process": [*pytest, "--ctx-tracker=bench_stream_reference:reference"],
            "stream": [*pytest, f"--ctx-tracker={spec}"],
            "parallel": [*pytest, f"--ctx-tracker={spec}", "-n", str(args.workers)],
            "in-process parallel": [*pytest, "--ctx-tracker=bench_stream_reference:reference", "-n",
                                    str(args.workers)]}
    times: dict[str, list[float]] = {k: [] for k in runs}
    last: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-stream-") as scratch:
        empty = Path(scratch)
        (empty / "bench_stream_reference.py").write_text(FACTORY, encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [scratch, os.environ.get("PYTHONPATH")]))}
        for _ in range(rounds):
            for name, argv in runs.items():
                seconds, last[name] = timed(argv, empty, env, 1)
                times[name].append(seconds)
    broken = {name: said for name, said in last.items() if not re.search(r"\d+ passed", said) or "error" in said}
    if broken:
        for name, said in broken.items():
            print(f"bench_stream: the {name} run did not run its items: {said}", file=sys.stderr)
        return 1
    alone = {"reference": own_runs(None), "stream": own_runs(spec)}
    median = {k: statistics.median(v) for k, v in times.items()}
    ratio = median["stream"] / median["in-process"]
    speedup = median["stream"] / median["parallel"]
    print(f"bench_stream: {spec!r}, the bundled corpus, median of {rounds} interleaved round(s), {os.cpu_count()} "
          f"CPUs, Python {sys.version.split()[0]}")
    print_table([
        ("pytest --ctx-scenarios --ctx-tracker=...", "seconds", "vs in-process", "pytest said"),
        ("in-process reference (module:factory)", f"{median['in-process']:.2f}", "1.00x", _cut(last["in-process"])),
        ("stream tracker, 1 worker", f"{median['stream']:.2f}", f"{ratio:.2f}x", _cut(last["stream"])),
        (f"stream tracker, -n {args.workers}", f"{median['parallel']:.2f}",
         f"{median['parallel'] / median['in-process']:.2f}x", _cut(last["parallel"])),
        (f"in-process reference, -n {args.workers}", f"{median['in-process parallel']:.2f}",
         f"{median['in-process parallel'] / median['in-process']:.2f}x", _cut(last["in-process parallel"])),
    ])
    scenarios = len(alone["reference"][1])
    print_table([
        ("the tracker's own runs alone", "seconds", "ms a session"),
        ("reference, in-process", f"{alone['reference'][0]:.2f}", f"{alone['reference'][0] / scenarios * 1000:.1f}"),
        ("stream tracker", f"{alone['stream'][0]:.2f}", f"{alone['stream'][0] / scenarios * 1000:.1f}"),
    ])
    differ = sorted(n for n, ok in alone["reference"][1].items() if alone["stream"][1].get(n) != ok)
    if differ:
        print(f"bench_stream: the stream tracker's verdicts differ from the reference's on {', '.join(differ)}: the "
              f"figures above time a tracker that does not track those")
    else:
        print(f"the stream tracker's verdicts equal the reference's on all {scenarios} session scenarios")
    print(f"stream over in-process: {ratio:.2f}x (target <= {RATIO:g}): {mark(ratio <= RATIO)}")
    print(f"-n {args.workers} over one worker: {speedup:.2f}x (target > 1): {mark(speedup > 1)}; the in-process run's "
          f"on the same machine: {median['in-process'] / median['in-process parallel']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
