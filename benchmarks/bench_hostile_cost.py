"""What hostile input costs, at one size and at ten times it, side by side in one run: each ratio of times should
stay near 10 (linear), at most 12.

Run ``python benchmarks/bench_hostile_cost.py`` (``--quick``: smaller sizes). It times:

- **import merge**: reading the sources of an import of a main transcript of N calls with a subagent
  transcript of N/4 calls all stamped earlier than the main chain (the order that made the merge quadratic);
- **preset readouts**: each ``cmd[preset=NAME]`` readout over a command output of N digits and nothing else (the
  output that made the presets' regexes backtrack);
- **recording read**: :func:`ctxsim.recordings.read_jsonl` of N lines of ``{}``, with its peak memory.

Targets (10x input at most 12x time, or at most 1.2x the ratio of a plainly linear pass over the same inputs, the
yardstick: on a busy shared machine, caches and the allocator alone make 10x more data cost well over 10x) are
printed as PASS/MISS, never asserted.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from _bench import mark, print_table

from ctxsim.importer._importer import read_sources
from ctxsim.recordings import RecordingError, read_jsonl
from ctxsim.trackers._readout import PRESETS, UnreadableOutput, clean_output, read_output

RATIO = 12.0


def _transcripts(directory: Path, calls: int) -> list[Path]:
    common = {"sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "version": "2.1.39", "userType": "external",
              "cwd": "/tmp/project"}

    def usage(n: int) -> dict[str, int]:
        return {"input_tokens": 3, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 1_000 + n,
                "output_tokens": 10}

    main, parent = [], None
    for n in range(calls):
        stamp = f"2026-02-11T{10 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
        user, assistant = f"u-{n}", f"a-{n}"
        main.append({"type": "user", "uuid": user, "parentUuid": parent, "isSidechain": False, "timestamp": stamp,
                     "message": {"role": "user", "content": f"step {n}"}, **common})
        main.append({"type": "assistant", "uuid": assistant, "parentUuid": user, "isSidechain": False,
                     "timestamp": stamp, "requestId": f"req_{n}", **common,
                     "message": {"id": f"msg_{n}", "model": "claude-opus-4-6", "role": "assistant",
                                 "content": [{"type": "text", "text": "ok"}], "usage": usage(n)}})
        parent = assistant
    sub = [{"type": "assistant", "uuid": f"s-{n}", "parentUuid": None, "isSidechain": True, "agentId": "a1ice5",
            "timestamp": f"2026-02-11T09:{n // 60 % 60:02d}:{n % 60:02d}Z", **common,
            "message": {"id": f"msg_s{n}", "model": "claude-haiku-4-5", "role": "assistant",
                        "content": [{"type": "text", "text": "ok"}], "usage": usage(n)}} for n in range(calls // 4)]
    paths = [directory / "session.jsonl", directory / "agent-a1ice5.jsonl"]
    for path, lines in zip(paths, (main, sub)):
        path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return paths


def _seconds(work: Callable[[], object], rounds: int = 3) -> float:
    """The best of ``rounds`` timings of ``work``, each after a full collection (what the previous left)."""
    best = float("inf")
    for _ in range(rounds):
        gc.collect()
        start = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - start)
    return best


def _readout(preset: str, digits: int) -> Callable[[], object]:
    def work() -> object:
        try:
            return read_output("9" * digits, PRESETS[preset], 200_000)
        except UnreadableOutput:
            return None

    return work


def _read(path: Path) -> Callable[[], object]:
    def work() -> object:
        try:
            return read_jsonl(path)
        except RecordingError:  # past the line limit: read that far
            return None

    return work


def _row(case: str, ours: tuple[Callable[[], object], Callable[[], object]],
         yardstick: tuple[Callable[[], object], Callable[[], object]]) -> tuple[str, ...]:
    """One case: our times at 1x and 10x, and the ratio of a plainly linear pass over the same inputs (the
    yardstick: what the machine's caches and allocator make of 10x more data), measured interleaved."""
    small, large = _seconds(ours[0]), _seconds(ours[1])
    linear = _seconds(yardstick[1]) / _seconds(yardstick[0])
    ratio = large / small
    return (case, f"{small:.4f}", f"{large:.4f}", f"{ratio:.1f}", f"{linear:.1f}",
            mark(ratio <= RATIO or ratio <= 1.2 * linear))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes")
    args = parser.parse_args()
    calls, digits, lines = (400, 65_000, 40_000) if args.quick else (1_000, 65_000, 100_000)
    rows = [("case", "1x (s)", "10x (s)", "ratio", "yardstick", f"<= {RATIO:g}x or 1.2x the yardstick")]
    with tempfile.TemporaryDirectory(prefix="ctxsim-bench-") as tmp:
        root = Path(tmp)
        for n, name in ((calls, "small"), (calls * 10, "large")):
            (root / name).mkdir()
            _transcripts(root / name, n)
        sources = [sorted((root / name).iterdir()) for name in ("small", "large")]
        rows.append(_row(f"import merge, {calls:,} vs {calls * 10:,} calls",
                         (lambda: read_sources(sources[0]), lambda: read_sources(sources[1])),
                         (lambda: [read_jsonl(p) for p in sources[0]], lambda: [read_jsonl(p) for p in sources[1]])))
        texts = ["9" * digits, "9" * digits * 10]
        for preset in PRESETS:
            rows.append(_row(f"cmd[preset={preset}], {digits:,} vs {digits * 10:,} digits",
                             (_readout(preset, digits), _readout(preset, digits * 10)),
                             (lambda: clean_output(texts[0]), lambda: clean_output(texts[1]))))
        files = []
        for n, name in ((lines, "small.jsonl"), (lines * 10, "large.jsonl")):
            (root / name).write_text("{}\n" * n)
            files.append(root / name)
        peaks = []
        for path in files:
            tracemalloc.start()
            _read(path)()
            peaks.append(tracemalloc.get_traced_memory()[1] / 2**20)
            tracemalloc.stop()
        rows.append(_row(f"read_jsonl, {lines:,} vs {lines * 10:,} lines of {{}} (peak {peaks[0]:.0f} vs "
                         f"{peaks[1]:.0f} MiB)", (_read(files[0]), _read(files[1])),
                         (lambda: [json.loads(x) for x in files[0].read_text().split("\n") if x],
                          lambda: [json.loads(x) for x in files[1].read_text().split("\n") if x])))
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
