"""Wall time of ``pytest --ctx-scenarios`` over a corpus of 100 scenarios, startup included.

Run ``python benchmarks/bench_scenarios.py`` (about a minute) or ``--quick`` (one round). The corpus is the bundled
one (``scenarios/``) copied round-robin into a temporary directory until it holds ``--count`` files
(recordings and other data files the scenarios name are copied along, so relative ``stream:`` paths still
resolve). Each round runs ``python -m pytest --ctx-scenarios=DIR -q`` in a fresh subprocess, exactly as a user
would, and the figure is the median wall time. Targets: 100 scenarios under 4 s, and at most 10 ms a
scenario above the floor (pytest with its plugins, and importing the SDK), printed as PASS/MISS, never asserted.

To say where the time goes it also measures, the same way:

- the floor: the same ``pytest`` with the same plugins collecting nothing (pytest, pytest-asyncio, xdist, anyio,
  hypothesis' and faker's plugins, all loaded in every run of a project that installs ``pytest-ctxsim``);
- importing ``claude_agent_sdk`` (the scenarios run the real SDK client, so every run pays it once);
- the same corpus with hypothesis' and faker's plugins disabled;
- in-process, per scenario: loading it (YAML, checks, the session) and running its items (render, the real
  ``ClaudeSDKClient`` over ``FakeTransport``, the oracle).

Python caches compiled modules in ``__pycache__`` unless ``PYTHONDONTWRITEBYTECODE`` is set; the subprocesses run
with caching on (one warm-up run writes the caches), as an installed package normally is. ``--no-bytecode``
measures with every module compiled afresh instead.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import mark, timed

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "scenarios"
TARGET_SECONDS = 4.0
TARGET_OWN_MS = 10.0
"""Milliseconds a scenario above the floor (pytest with its plugins, importing the SDK)."""
INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def make_corpus(directory: Path, count: int) -> list[Path]:
    """``count`` scenario files in ``directory``, copied round-robin from the bundled corpus, data files alongside."""
    sources = sorted(p for p in SCENARIOS.rglob("*") if p.suffix in (".yaml", ".yml"))
    if not sources:
        raise SystemExit(f"no scenarios under {SCENARIOS}")
    for data in SCENARIOS.rglob("*"):
        if data.is_file() and data.suffix not in (".yaml", ".yml"):
            target = directory / data.relative_to(SCENARIOS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(data, target)
    made = []
    for i in range(count):
        source = sources[i % len(sources)]
        rel = source.relative_to(SCENARIOS)
        target = directory / rel.parent / f"{i:03d}-{rel.name}"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target)
        made.append(target)
    return made


def in_process(files: list[Path]) -> tuple[float, float, int]:
    """Milliseconds per scenario to load and to run its items in this process (imports already paid)."""
    from ctxsim.runner._scenario import run_scenario
    from ctxsim.runner._task import run_task
    from ctxsim.scenario import TaskScenario, load_scenario
    from ctxsim.trackers.catalogue import make

    load_scenario(files[0])  # imports
    start = time.perf_counter()
    loaded = [load_scenario(f) for f in files]
    loaded_at = time.perf_counter()
    items = 0
    for sc in loaded:
        if isinstance(sc, TaskScenario):  # a restart-loop task: the reference loop, then each loop it names
            for loop in (*sc.loop_expect.must_fail, *sc.loop_expect.must_pass):
                run_task(sc, loop=loop)
                items += 1
            run_task(sc)
            items += 1
            continue
        for name in ("reference", *sc.must_fail, *sc.must_pass):
            run_scenario(sc, make(name))
            items += 1
    done = time.perf_counter()
    return 1000 * (loaded_at - start) / len(files), 1000 * (done - loaded_at) / len(files), items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=100, help="scenarios in the corpus (default 100)")
    parser.add_argument("--rounds", type=int, default=3, help="runs per figure; the median is printed")
    parser.add_argument("--quick", action="store_true", help="one round each")
    parser.add_argument("--no-bytecode", action="store_true", help="compile every module afresh in each run")
    args = parser.parse_args()
    rounds = 1 if args.quick else args.rounds

    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    python = sys.executable
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-") as tmp:
        work = Path(tmp)
        if args.no_bytecode:  # an empty cache that is never written: every module compiled in every run
            env["PYTHONDONTWRITEBYTECODE"] = "1"
            env["PYTHONPYCACHEPREFIX"] = str(work / "no-pycache")
        (work / "pytest.ini").write_text(INI)
        corpus = work / "corpus"
        files = make_corpus(corpus, args.count)
        run = [python, "-m", "pytest", f"--ctx-scenarios={corpus}", "-q", "-p", "no:cacheprovider"]
        subprocess.run(run, cwd=work, env=env, capture_output=True)  # warm-up: writes the bytecode caches
        total, outcome = timed(run, work, env, rounds)
        floor, _ = timed([python, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", str(corpus)], work, env,
                         rounds)
        bare, _ = timed([python, "-c", "pass"], work, env, rounds)
        sdk, _ = timed([python, "-c", "import claude_agent_sdk"], work, env, rounds)
        lean, _ = timed([*run, "-p", "no:hypothesispytest", "-p", "no:faker"], work, env, rounds)
        load_ms, run_ms, items = in_process(files)

    own = total - floor - (sdk - bare)
    cpu = os.cpu_count() or 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    distinct = len({f.name[4:] for f in files})
    print(f"pytest --ctx-scenarios over {args.count} scenarios ({items} items; corpus: {distinct} distinct files "
          f"from the bundled corpus), median of {rounds}")
    print(f"python {sys.version.split()[0]}, {cpu} cores, load average {load:.1f}, bytecode cache "
          f"{'off' if args.no_bytecode else 'on'}")
    print(f"  pytest result: {outcome}")
    print(f"  wall time, startup included:      {total:6.2f} s   target < {TARGET_SECONDS:.0f} s: "
          f"{mark(total < TARGET_SECONDS)}")
    print(f"  per scenario (all included):      {1000 * total / args.count:6.1f} ms")
    print("where it goes:")
    print(f"  pytest + plugins, no scenarios:   {floor:6.2f} s   (the floor of any run in this environment)")
    print(f"  importing claude_agent_sdk:       {sdk - bare:6.2f} s   (the real SDK client runs every check)")
    print(f"  ctxsim: collect + run:            {own:6.2f} s   = {1000 * own / args.count:.1f} ms per scenario   "
          f"target <= {TARGET_OWN_MS:.0f} ms: {mark(1000 * own / args.count <= TARGET_OWN_MS)}")
    print(f"    in process, load a scenario:    {load_ms:6.1f} ms   (YAML, checks, building the session)")
    print(f"    in process, run its items:      {run_ms:6.1f} ms   ({items / args.count:.1f} items: render, "
          f"ClaudeSDKClient over FakeTransport, oracle)")
    print(f"  without hypothesis/faker plugins: {lean:6.2f} s   "
          f"{mark(lean < TARGET_SECONDS)} (what those two plugins cost: {total - lean:.2f} s)")


if __name__ == "__main__":
    main()
