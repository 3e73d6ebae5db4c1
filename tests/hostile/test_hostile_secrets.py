"""Secrets where a scrubber might keep them: as mapping keys, in the fields it keeps (``level``, ``status``,
``operation``, ``subtype``), as a model name's suffix, in ``modelUsage``'s keys. Scrubbing goes by shape wherever a
string sits: none survives an import, of stream-json or of a transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _tally import Tally

from ctxsim.importer import write_import
from ctxsim.wire import render
from ctxsim.world import SessionBuilder

SECRETS = {
    "an AWS key id": "AKIAIOSFODNN7EXAMPL3",
    "a GitHub token": "ghp_9fKQ2xLmP7vR3tYs8WcN4bZ1hJ6dE0gA5uTq",
    "a lowercase GitHub token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "a 32-hex key": "0123456789abcdef0123456789abcdef",
    "an Anthropic key": "sk-ant-api03-Zx8QmW3rT9vLp2KdN7yH4sFj6GcB1aEu",
    "a Slack token": "xoxb-123456789012-abcdefghij",
    "a Google key": "AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "a JSON web token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    "a base64 secret": "Q2hhbmdlTWUyMDI2IXNlY3JldEtleTAwMQ",
}


def _places(secret: str) -> dict[str, Any]:
    """Every place a scrubber keeps something, holding ``secret``."""
    return {"level": secret, "status": secret, "operation": secret, secret: 1, "nested": {secret: secret}}


def _stream_json(tmp_path: Path) -> Path:
    session = SessionBuilder(seed=4).query("go").call(input=3, cache_creation=1000, cache_read=30_000,
                                                      output=50).build()
    frames = [f.data for script in render(session) for f in script.frames]
    planted = [{"type": "system", "subtype": "status", "session_id": frames[0]["session_id"], "uuid": f"p{i}",
                **_places(secret)} for i, secret in enumerate(SECRETS.values())]
    first = next(f for f in frames if f["type"] == "assistant")
    first["message"]["model"] = f"claude-{SECRETS['a 32-hex key']}"
    init = next(f for f in frames if f.get("subtype") == "init")
    init["claude_code_version"] = SECRETS["a base64 secret"]
    result = next(f for f in frames if f["type"] == "result")
    result["modelUsage"] = {f"claude-{secret}": {"contextWindow": 200_000} for secret in SECRETS.values()}
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps(f) + "\n" for f in [frames[0], *planted, *frames[1:]]))
    return path


def _transcript(tmp_path: Path) -> Path:
    usage = {"input_tokens": 3, "cache_creation_input_tokens": 2_000, "cache_read_input_tokens": 20_000,
             "output_tokens": 9}
    common = {"sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "version": SECRETS["a Google key"],
              "isSidechain": False}
    lines: list[dict[str, Any]] = [
        {"type": "user", "uuid": "u-1", "parentUuid": None, "timestamp": "2026-02-11T21:16:01Z",
         "message": {"role": "user", "content": "hello"}, **common},
        {"type": "assistant", "uuid": "a-1", "parentUuid": "u-1", "timestamp": "2026-02-11T21:16:02Z",
         "message": {"id": "msg_01X", "role": "assistant", "model": f"claude-{SECRETS['an AWS key id'].lower()}",
                     "content": [{"type": "text", "text": "ok"}], "usage": usage}, **common},
    ]
    lines += [{"type": "system", "subtype": "informational", "uuid": f"s-{i}", "parentUuid": "a-1",
               "timestamp": "2026-02-11T21:16:03Z", **common, **_places(secret)}
              for i, secret in enumerate(SECRETS.values())]
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


@pytest.mark.parametrize("fmt", ["stream-json", "transcript"])
def test_no_planted_secret_survives_an_import(hostile: Tally, tmp_path: Path, fmt: str) -> None:
    source = _stream_json(tmp_path) if fmt == "stream-json" else _transcript(tmp_path)
    written = write_import([source], tmp_path / "out" / "planted.yaml", steps=False)
    data = b"".join(p.read_bytes() for p in written)
    assert b"planted" in data and len(written) == 2  # the scenario and its scrubbed stream
    for name, secret in SECRETS.items():
        case = f"{name} ({fmt})"
        hostile.case(case)
        hostile.survived(case, [secret] if secret.encode() in data or secret.lower().encode() in data else [])
