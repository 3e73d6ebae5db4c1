"""``ctxsim import`` killed (SIGKILL) or hung up on (SIGHUP) in the middle of a large transcript holding an API key:
no unscrubbed copy of it is left anywhere a temporary file could be (the temporary directory, ``/dev/shm``), and
SIGHUP ends it as SIGTERM does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _tally import Tally, default_signals

KEY = "sk-ant-api03-" + "Q" * 80 + "-hostileAA"


def _transcript(path: Path, calls: int) -> None:
    common = {"sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "version": "2.1.39", "userType": "external",
              "cwd": "/tmp/project"}
    with path.open("w") as out:
        parent = None
        for n in range(calls):
            stamp = f"2026-02-11T{10 + n // 3600 % 10:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z"
            text = f"step {n}: export ANTHROPIC_API_KEY={KEY} " + "lorem ipsum " * 40
            user = {"type": "user", "uuid": f"u-{n}", "parentUuid": parent, "isSidechain": False,
                    "timestamp": stamp, "message": {"role": "user", "content": text}, **common}
            assistant = {"type": "assistant", "uuid": f"a-{n}", "parentUuid": f"u-{n}", "isSidechain": False,
                         "timestamp": stamp, "requestId": f"req_{n}", **common,
                         "message": {"id": f"msg_{n}", "model": "claude-opus-4-6", "role": "assistant",
                                     "content": [{"type": "text", "text": text}],
                                     "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                               "cache_read_input_tokens": 1_000 + n, "output_tokens": 10}}}
            out.write(json.dumps(user) + "\n" + json.dumps(assistant) + "\n")
            parent = f"a-{n}"


def _holding(root: Path) -> list[str]:
    found = []
    for directory, _, files in os.walk(root):
        for name in files:
            path = Path(directory) / name
            try:
                if KEY.encode() in path.read_bytes():
                    found.append(str(path))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("how", ["SIGKILL", "SIGHUP"])
def test_an_interrupted_import_leaves_no_unscrubbed_copy(hostile: Tally, tmp_path: Path, how: str) -> None:
    source = tmp_path / "session.jsonl"
    _transcript(source, 6_000)
    private = tmp_path / "tmp"
    private.mkdir()
    shm_before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    process = subprocess.Popen([sys.executable, "-m", "ctxsim.cli", "import", str(source), "-o",
                                str(tmp_path / "out" / "x.yaml")], cwd=tmp_path, env={**os.environ,
                                                                                        "TMPDIR": str(private)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=default_signals)
    try:
        time.sleep(1.5)  # reading and scrubbing a transcript of this size takes longer
        assert process.poll() is None, process.communicate()
        process.send_signal(getattr(signal, how))
        _, err = process.communicate(timeout=30)
    finally:
        Tally.stopped(process)
    case = f"{how} during ctxsim import"
    shm = [f"/dev/shm/{n}" for n in set(os.listdir("/dev/shm")) - shm_before] if shm_before else []
    hostile.survived(case, _holding(private) + [p for p in shm if _holding(Path(p)) or KEY in p])
    hostile.leaked(case, [str(p) for p in private.iterdir()])
    if how == "SIGHUP":
        assert process.returncode == 129, err
        hostile.line(case, err, "ctxsim: import: interrupted (SIGHUP); stopped, with every process and temporary "
                                "directory it started")


def test_no_unscrubbed_copy_ever_reaches_the_temporary_directory(hostile: Tally, tmp_path: Path) -> None:
    """Watched all through an import (every 5 ms), the temporary directory never holds the key: what a SIGKILL at
    any moment would leave."""
    source = tmp_path / "session.jsonl"
    _transcript(source, 300)
    private = tmp_path / "tmp"
    private.mkdir()
    process = subprocess.Popen([sys.executable, "-m", "ctxsim.cli", "import", str(source), "-o",
                                str(tmp_path / "out" / "x.yaml")], cwd=tmp_path, env={**os.environ,
                                                                                        "TMPDIR": str(private)},
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    seen: set[str] = set()
    deadline = time.monotonic() + 300
    try:
        while process.poll() is None and time.monotonic() < deadline:
            seen.update(_holding(private))
            time.sleep(0.005)
        _, err = process.communicate(timeout=30)
    finally:
        Tally.stopped(process)
    assert process.returncode == 0, err
    hostile.case("an import watched throughout")
    hostile.survived("an import watched throughout", sorted(seen))
