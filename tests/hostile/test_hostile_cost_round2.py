"""What hostile input costs, round two: a command printing 65,000 digits read through every preset (the presets'
regexes backtracked after the command exited, outside its timeout: 60 to 150 s a point), a recording of 32 and
96 MiB of ``{}`` lines (980 MB of memory, then a MemoryError), and the merge of an import whose subagent lines are
stamped before the main chain's (quadratic: 258 s). Each ends within a bound far below what the bug took, with its
outcome: a number, or one ``ctxsim:`` line. How the cost grows is measured by ``benchmarks/bench_hostile_cost.py``,
not asserted here."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _tally import Tally
from test_hostile_import_round2 import _transcript

from ctxsim.importer._importer import read_sources
from ctxsim.trackers._readout import PRESETS, UnreadableOutput, read_output

DIGITS = "9" * 65_000

OUTPUTS = {"65,000 digits": DIGITS, "65,000 digits then ' tokens'": DIGITS + " tokens",
           "65,000 digits then ' (5%)'": DIGITS + " (5%)", "two runs of 65,000 digits": DIGITS + "." + DIGITS,
           "65,000 commas": "," * 65_000 + " tokens"}


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("output", list(OUTPUTS))
def test_a_preset_reads_a_flood_of_digits_in_bounded_time(hostile: Tally, preset: str, output: str) -> None:
    case = f"cmd[preset={preset}] over {output}"
    started = time.monotonic()
    try:
        read = read_output(OUTPUTS[output], PRESETS[preset], 200_000)
    except UnreadableOutput as exc:
        hostile.line(case, f"ctxsim: {exc}", "ctxsim: *")
        assert len(str(exc)) < 1000, len(str(exc))  # the output is not quoted whole
    else:
        hostile.case(case)
        assert read is None or all(0 <= n <= 200_000 for n in read), read  # a number of tokens, or none
    hostile.hang(case, time.monotonic() - started, 2.0)


@pytest.mark.slow
@pytest.mark.parametrize("mebibytes", [32, 96])
def test_a_recording_of_empty_objects_is_one_line_in_bounded_memory(hostile: Tally, tmp_path: Path,
                                                                   mebibytes: int) -> None:
    case = f"a {mebibytes} MiB recording of {{}} lines"
    with (tmp_path / "big.jsonl").open("w") as out:
        line = "{}\n" * (1 << 16)
        for _ in range(mebibytes * (1 << 20) // len(line)):
            out.write(line)
    (tmp_path / "s.yaml").write_text("name: s\nstream: big.jsonl\n")
    probe = ("import resource, runpy, sys; sys.argv = ['ctxsim', 'run', 's.yaml']\n"
             "try:\n    runpy.run_module('ctxsim.cli', run_name='__main__')\nfinally:\n"
             "    print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, file=sys.stderr)\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    hostile.hang(case, time.monotonic() - started, 300)
    assert "MemoryError" not in done.stderr, done.stderr[-2000:]
    hostile.line(case, done.stdout + done.stderr, "ctxsim: s.yaml:2: stream.file: *big.jsonl*: more than 500,000 "
                                                  "lines: ctxsim reads at most that many*")
    peak = int(done.stderr.rpartition("PEAK ")[2].split()[0])
    assert peak < 500, f"{case}: {peak} MiB at the peak (the bug took 980 MB for 32 MiB)"


def _transcripts(directory: Path, calls: int) -> list[Path]:
    """A main transcript of ``calls`` calls and a subagent's of ``calls // 4``, every subagent line stamped an hour
    before the main chain's first: the order that made the merge quadratic."""
    paths = [directory / "session.jsonl", directory / "subagents" / "agent-a1ice5.jsonl"]
    _transcript(paths[0], calls)
    paths[1].parent.mkdir()
    with paths[1].open("w") as out:
        for n in range(calls // 4):
            row = {"type": "assistant", "uuid": f"s-{n}", "parentUuid": None, "isSidechain": True,
                   "agentId": "a1ice5", "timestamp": f"2026-02-11T09:{n // 60 % 60:02d}:{n % 60:02d}Z",
                   "sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "version": "2.1.39",
                   "message": {"id": f"msg_s{n}", "model": "claude-haiku-4-5", "role": "assistant",
                               "content": [{"type": "text", "text": "ok"}],
                               "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                         "cache_read_input_tokens": 1_000 + n, "output_tokens": 10}}}
            out.write(json.dumps(row) + "\n")
    return paths


@pytest.mark.slow
def test_merging_a_subagent_stamped_earlier_ends_in_bounded_time(hostile: Tally, tmp_path: Path) -> None:
    """The merge of an import's transcripts (what took 258 s of a 6 MB import, 7 s without the subagent): 6,000
    calls and 1,500 subagent calls stamped before them, merged in bounded time, every call kept in order."""
    case = "merging 6,000 calls with a subagent stamped earlier"
    paths = _transcripts(tmp_path, 6_000)
    started = time.monotonic()
    source = read_sources(paths)
    hostile.case(case)
    hostile.hang(case, time.monotonic() - started, 60)
    assert source.files == 2
