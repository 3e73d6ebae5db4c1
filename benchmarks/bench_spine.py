"""Throughput of ctxsim's spine: world -> wire -> (real SDK) -> reference tracker -> oracle.

Run ``python benchmarks/bench_spine.py`` (well under a minute) or ``--quick`` (a few seconds, CI smoke). It prints,
from one run, figures measured side by side on one deterministic generated session:

(a) messages/s the real ``ClaudeSDKClient`` yields over ``ctxsim.sdk.FakeTransport``, next to the same client over
    :class:`ReplayTransport` (the cheapest transport doing the same job), and their ratio. Rounds alternate
    A/B/A/B...; each figure is the median of its rounds.
(b) messages/s of the direct path (``SessionBuilder.build()`` + ``render()`` + ``run_tracker_parsed``), with its
    split, next to the SDK's ``parse_message`` alone over the same frames; then both again with the imports frozen
    as ``ctxsim fuzz`` and a scenario run freeze them (``ctxsim.runner.freeze_imports``: the ~110k objects the
    imports left moved out of the cyclic collector's way, young collections every 10,000 allocations instead of
    700).

Targets are printed as PASS/MISS, never asserted: timings depend on the machine.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from typing import Any

import anyio
import claude_agent_sdk
from _bench import mark, print_table
from claude_agent_sdk import ClaudeSDKClient, ResultMessage, Transport

from ctxsim.check import run_tracker_parsed
from ctxsim.reference import ContextTracker
from ctxsim.runner import freeze_imports, thaw_imports
from ctxsim.sdk import FakeTransport, parse_message
from ctxsim.wire import Script, render
from ctxsim.world import Session, SessionBuilder

SEED = 20240611
TARGET_TRANSPORT_RATIO = 0.9
"""FakeTransport must run the client at >= 90% of the speed of the cheapest replay transport."""
TARGET_DIRECT_RATE = 100_000
"""The direct path (build + render + parse + track) must handle >= 100k messages/s."""
TARGET_DIRECT_RATIO = 0.35
"""The direct path's rate over the SDK parser's alone, on the same frames."""


# --- the workload -------------------------------------------------------------------------------------------------


def build_session(queries: int, seed: int = SEED) -> Session:
    """A realistic session: ``queries`` queries of 6 main calls (thinking, text, 2 tool uses with results; the last
    call only thinks and answers), a subagent of 3 calls a third of the way in, an autocompaction half way."""
    b = SessionBuilder(seed=seed, name="bench-spine")
    for q in range(queries):
        b.query(f"Step {q + 1}: continue the refactor and keep the tests green.")
        for _ in range(5):
            b.call(blocks=("thinking", "text", "tool_use", "tool_use"), results=(300, 150), output=180)
        if q == queries // 3:
            b.start_subagent("survey the parser module")
            for _ in range(3):
                b.call(blocks=("thinking", "text", "tool_use"), results=(400,))
            b.end_subagent(result_tokens=500)
        if q == queries // 2:
            b.compact(30_000)
        b.call(blocks=("thinking", "text"), output=250)
    return b.build()


# --- (a) the client over FakeTransport vs the cheapest replay transport ------------------------------------------


class ReplayTransport(Transport):
    """The cheapest transport doing FakeTransport's job: answers control requests with an empty success (only
    ``initialize`` is sent here) and, per user message written, replays that turn's pre-rendered dicts."""

    def __init__(self, turns: Sequence[Sequence[dict[str, Any]]]) -> None:
        self._turns = iter(turns)
        self._out: deque[dict[str, Any]] = deque()
        self._wakeup = anyio.Event()
        self._ready = self._ended = self._closed = False

    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready and not self._closed

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            message = json.loads(line)
            if message["type"] == "control_request":
                self._out.append({"type": "control_response", "response": {
                    "subtype": "success", "request_id": message["request_id"], "response": {}}})
            elif message["type"] == "user":
                self._out.extend(next(self._turns))
        self._wakeup.set()

    async def end_input(self) -> None:
        self._ended = True
        self._wakeup.set()

    async def close(self) -> None:
        self._closed = True
        self._wakeup.set()

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        out = self._out
        while not self._closed:
            if out:
                yield out.popleft()
            elif self._ended:
                return
            else:
                await self._wakeup.wait()
                self._wakeup = anyio.Event()


async def drive(transport: Transport, prompts: Sequence[str]) -> int:
    """The real client over ``transport``: one query per prompt, each response read to its result."""
    messages = 0
    client = ClaudeSDKClient(transport=transport)
    await client.connect()
    try:
        for prompt in prompts:
            await client.query(prompt)
            last = None
            async for message in client.receive_response():
                messages += 1
                last = message
            if not isinstance(last, ResultMessage):
                raise RuntimeError("bench: a response ended without its ResultMessage")
    finally:
        await client.disconnect()
    return messages


async def transport_rounds(session: Session, scripts: list[Script], rounds: int) -> dict[str, Any]:
    prompts = [s.prompt for s in scripts]
    turns = [s.dicts() for s in scripts]
    makers: dict[str, Callable[[], Transport]] = {
        "fake": lambda: FakeTransport(session, scripts=scripts),
        "replay": lambda: ReplayTransport(turns),
    }
    times: dict[str, list[float]] = {name: [] for name in makers}
    counts: dict[str, set[int]] = {name: set() for name in makers}
    for make in makers.values():  # warm-up, untimed
        await drive(make(), prompts)
    for _ in range(rounds):
        for name, make in makers.items():  # A/B/A/B...
            gc.collect()
            start = time.perf_counter()
            counts[name].add(await drive(make(), prompts))
            times[name].append(time.perf_counter() - start)
    if len(counts["fake"] | counts["replay"]) != 1:
        raise RuntimeError(f"bench: the transports yielded different message counts: {counts}")
    messages = counts["fake"].pop()
    return {"messages": messages,
            **{name: messages / statistics.median(ts) for name, ts in times.items()},
            **{f"{name}_spread": (messages / max(ts), messages / min(ts)) for name, ts in times.items()},
            # each A/B pair ran back to back: the median of their ratios cancels drift between pairs
            "ratio": statistics.median(r / f for f, r in zip(times["fake"], times["replay"]))}


# --- (b) the direct path vs the SDK parser alone -----------------------------------------------------------------


def direct_rounds(queries: int, rounds: int) -> dict[str, Any]:
    splits: list[tuple[float, float, float]] = []
    parser: list[float] = []
    messages = parsed = points = 0
    ok = True
    for i in range(rounds + 1):  # the first round warms up
        gc.collect()
        t0 = time.perf_counter()
        session = build_session(queries)
        t1 = time.perf_counter()
        scripts = render(session)
        t2 = time.perf_counter()
        report = run_tracker_parsed(ContextTracker(), session, scripts)
        t3 = time.perf_counter()
        frames = [f.data for s in scripts for f in s.frames]
        gc.collect()
        t4 = time.perf_counter()
        n = 0
        for data in frames:
            if parse_message(data) is not None:
                n += 1
        t5 = time.perf_counter()
        if i:
            splits.append((t1 - t0, t2 - t1, t3 - t2))
            parser.append(t5 - t4)
        messages, parsed, points, ok = report.messages, n, len(report.points), ok and report.ok
    total = statistics.median(sum(s) for s in splits)
    return {
        "messages": messages, "parsed": parsed, "points": points, "ok": ok,
        "build": statistics.median(s[0] for s in splits),
        "render": statistics.median(s[1] for s in splits),
        "track": statistics.median(s[2] for s in splits),
        "total": total, "direct": messages / total, "parser": parsed / statistics.median(parser),
    }


# --- report -------------------------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds: a smaller session, fewer rounds")
    parser.add_argument("--queries", type=int, help="queries in the session (default 50, quick 10)")
    parser.add_argument("--rounds", type=int, help="timed rounds per figure (default 15, quick 5)")
    args = parser.parse_args(argv)
    queries = args.queries or (10 if args.quick else 50)
    rounds = args.rounds or (5 if args.quick else 15)

    session = build_session(queries)
    scripts = render(session)
    frames = sum(len(s.frames) for s in scripts)
    started = time.perf_counter()
    a = anyio.run(partial(transport_rounds, session, scripts, rounds), backend="asyncio")
    b = direct_rounds(queries, rounds)
    freeze_imports(new_modules=0)  # as ctxsim fuzz and a scenario run do (ctxsim.runner.freeze_imports)
    frozen = direct_rounds(queries, rounds)
    thaw_imports()
    elapsed = time.perf_counter() - started

    ratio = a["ratio"]
    print(f"ctxsim spine benchmark{' (quick)' if args.quick else ''}: Python {platform.python_version()} "
          f"({platform.python_implementation()}), claude_agent_sdk {claude_agent_sdk.__version__}, "
          f"cpu_count {os.cpu_count()}")
    print(f"session: {queries} queries, {len(session.calls)} calls, {frames} frames, "
          f"{a['messages']} messages per round; median of {rounds} rounds, seed {SEED}")
    print()
    rows = [
        ("(a) client over FakeTransport", f"{a['fake']:,.0f} msg/s", "", ""),
        ("(a) client over ReplayTransport", f"{a['replay']:,.0f} msg/s", "", ""),
        ("(a) FakeTransport / replay (median of pairs)", f"{ratio:.3f}", f">= {TARGET_TRANSPORT_RATIO}",
         mark(ratio >= TARGET_TRANSPORT_RATIO)),
        ("(b) direct path", f"{b['direct']:,.0f} msg/s", f">= {TARGET_DIRECT_RATE:,}",
         mark(b["direct"] >= TARGET_DIRECT_RATE)),
        ("(b) SDK parse_message alone", f"{b['parser']:,.0f} msg/s", "", ""),
        ("(b) direct / parser alone", f"{b['direct'] / b['parser']:.3f}", f">= {TARGET_DIRECT_RATIO}",
         mark(b["direct"] / b["parser"] >= TARGET_DIRECT_RATIO)),
        ("(b) direct path, imports frozen", f"{frozen['direct']:,.0f} msg/s", f">= {TARGET_DIRECT_RATE:,}",
         mark(frozen["direct"] >= TARGET_DIRECT_RATE)),
        ("(b) SDK parse_message alone, imports frozen", f"{frozen['parser']:,.0f} msg/s", "", ""),
        ("(b) direct / parser alone, imports frozen", f"{frozen['direct'] / frozen['parser']:.3f}",
         f">= {TARGET_DIRECT_RATIO}", mark(frozen["direct"] / frozen["parser"] >= TARGET_DIRECT_RATIO)),
    ]
    for name, stage in (("build", "SessionBuilder...build()"), ("render", "render()"),
                        ("track", "run_tracker_parsed()")):
        share = b[name] / (b["build"] + b["render"] + b["track"])
        rows.append((f"    {stage}", f"{1e3 * b[name]:.2f} ms", f"{1e6 * b[name] / b['messages']:.2f} us/msg",
                     f"{100 * share:.0f}%"))
    print_table(rows)
    print()
    lo, hi = a["fake_spread"]
    rlo, rhi = a["replay_spread"]
    print(f"spread (slowest..fastest round): FakeTransport {lo:,.0f}..{hi:,.0f}, replay {rlo:,.0f}..{rhi:,.0f} msg/s")
    print(f"oracle: reference tracker {'tracks' if b['ok'] else 'FAILS'} the session on {b['points']} points; "
          f"run took {elapsed:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
