"""``ctxsim serve``'s speed: its start-up, and a served scenario's wall time next to the same scenario in-process.

    python benchmarks/bench_serve.py [--runs 3] [--quick]

Figures only (nothing here fails on speed), measured side by side in one run, in interleaved rounds:

- **start-up**: ``ctxsim serve SCENARIO --json`` from the command's start to the settings line a client reads (the
  Python start, the scenario loaded, the fake API listening, the wrapper written for a scenario with faults);
- **served**: the scenario played to the real CLI through :class:`ctxsim.serve.ScenarioServer` by a client on the
  Python SDK (``LiveClaude``, the settings' model, environment, CLI and prompts), the reference tracker fed every
  message; **live start**: ``LiveClaude`` entered and left with no query (the CLI's own start, in every served run);
- **in-process**: :func:`ctxsim.runner.run_scenario` with the reference tracker.

The ratio served / in-process is printed with the served time less the live start beside it (what the scenario's
queries cost live), and that time split in two: **serve's own** (the fake API handling each request, from its
handler's entry to the last byte of its answer, summed) and the rest (the CLI's own work between requests: its turn
set-up, the tools it runs, its transcript, and the SDK reading its stream). Target (issue 35): a served scenario
within 3x its in-process time after start-up, printed as PASS/MISS. The served verdict is checked equal to the
in-process one: a figure for a run that went wrong is no figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
from _bench import mark, print_table

from ctxsim.corpus import find_scenario
from ctxsim.live import _api
from ctxsim.live._claude import LiveClaude
from ctxsim.live._twins import live_twin
from ctxsim.runner import run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.serve import ScenarioServer, ServedPoints, play_served
from ctxsim.trackers.catalogue import reference_for

OWN: list[float] = []
"""Seconds the fake API spent on each request of the current served run (its handler and its answer's stream)."""


def _timed_api() -> None:
    """Time the fake API's own work per request into :data:`OWN` (the benchmark's instrument, not serve's)."""
    handler, stream = _api.FakeMessagesAPI._messages, _api.FakeMessagesAPI._stream

    async def messages(self: Any, request: Any) -> Any:
        started = time.perf_counter()
        answer = await handler(self, request)
        OWN.append(time.perf_counter() - started)
        return answer

    async def streamed(self: Any, served: Any, model: str) -> AsyncIterator[bytes]:
        started = time.perf_counter()
        async for chunk in stream(self, served, model):
            yield chunk
        OWN.append(time.perf_counter() - started)

    _api.FakeMessagesAPI._messages = messages  # type: ignore[method-assign]
    _api.FakeMessagesAPI._stream = streamed  # type: ignore[method-assign]


RATIO = 3.0
"""The served run's time after start-up over the in-process run's, at most."""
SCENARIOS = ("b01-no-dedupe-without-request-id", "b14-resume-invalidates-cache", "statusline-stuck-after-compact",
             "b25-error-result-zeroed-usage", "b19-subagent-line-as-latest", "b27-accumulated-cache-read-clamped")
"""A plain session, three queries, a /compact, a stream fault (the wrapper), a subagent twin, 17 calls split."""


def scenario(name: str) -> SessionScenario:
    loaded = load_scenario(find_scenario(name))
    assert isinstance(loaded, SessionScenario)
    return dataclasses.replace(loaded, session=dataclasses.replace(loaded.session, quantity="tokens"))


def start_up(name: str) -> float:
    """Seconds from ``ctxsim serve NAME --json`` to its settings line."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "ctxsim.cli", "serve", name, "--json", "--timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert process.stdout is not None
    process.stdout.readline()
    seconds = time.perf_counter() - started
    process.send_signal(signal.SIGTERM)
    process.communicate(timeout=30)
    return seconds


async def live_start() -> float:
    started = time.perf_counter()
    async with LiveClaude():
        pass
    return time.perf_counter() - started


def served(played: SessionScenario) -> tuple[float, bool]:
    """Seconds to play ``played`` through serve to the real CLI, and whether the reference was judged right."""
    OWN.clear()
    started = time.perf_counter()
    with ScenarioServer(played) as server:
        messages = anyio.run(play_served, server)
        seconds = time.perf_counter() - started
        tracker, points = reference_for(server.scenario.session), ServedPoints(server.truth())
        estimates = {}
        for message in messages:
            tracker.observe(message)
            if (index := points.observe(message)) is not None:
                estimates[index] = tracker.context_tokens()
        ok = server.judge(estimates).ok and not server.refused and not server.unplayed and not server.unfaulted
    return seconds, ok


def in_process(played: SessionScenario) -> tuple[float, bool]:
    started = time.perf_counter()
    run = run_scenario(played, reference_for(played.session))
    return time.perf_counter() - started, run.ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds (default 3)")
    parser.add_argument("--quick", action="store_true", help="one round")
    args = parser.parse_args()
    runs = 1 if args.quick else args.runs
    _timed_api()
    times: dict[str, dict[str, list[float]]] = {n: {"served": [], "in-process": [], "own": []} for n in SCENARIOS}
    starts: dict[str, list[float]] = {"serve (plain)": [], "serve (faults: wrapper)": [], "live start": []}
    wrong: list[str] = []
    for _ in range(runs):
        starts["serve (plain)"].append(start_up(SCENARIOS[0]))
        starts["serve (faults: wrapper)"].append(start_up("b25-error-result-zeroed-usage"))
        starts["live start"].append(anyio.run(live_start))
        for name in SCENARIOS:
            played = scenario(name)
            seconds, ok = served(played)
            times[name]["served"].append(seconds)
            times[name]["own"].append(sum(OWN))
            local, local_ok = in_process(live_twin(played) or played)  # what serve plays, in-process
            times[name]["in-process"].append(local)
            if ok != local_ok or not ok:
                wrong.append(f"{name}: served {'ok' if ok else 'off'}, in-process {'ok' if local_ok else 'off'}")
    start = statistics.median(starts["live start"])
    print(f"ctxsim serve, {runs} round(s), medians\n")
    print_table([("start-up", "seconds"), *((k, f"{statistics.median(v):.2f}") for k, v in starts.items())])
    print()
    rows = [("scenario", "served s", "in-process s", "ratio", "served - live start", "serve's own ms",
             "CLI and SDK s", "ratio after start", "target")]
    for name in SCENARIOS:
        live_s, local_s, own_s = (statistics.median(times[name][k]) for k in ("served", "in-process", "own"))
        after = max(0.0, live_s - start)
        rows.append((name, f"{live_s:.2f}", f"{local_s:.3f}", f"{live_s / local_s:.0f}x", f"{after:.2f}",
                     f"{own_s * 1000:.1f}", f"{max(0.0, after - own_s):.2f}", f"{after / local_s:.0f}x",
                     mark(after <= RATIO * local_s)))
    print_table(rows)
    for line in wrong:
        print(f"WRONG {line}")


if __name__ == "__main__":
    main()
