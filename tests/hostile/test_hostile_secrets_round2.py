"""Secrets, round two: a scenario directory with a symlink to a file of credentials (``.env``, ``.git-credentials``,
``.netrc``) errors in one short line that does not show them; a huge scalar is not quoted whole; Hugging Face
tokens as keys, and lowercase tokens in the kinds a scrubber keeps (``status``, ``service_tier``,
``terminal_reason``), do not survive an import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _tally import Tally
from test_hostile_secrets import _stream_json

from ctxsim.importer import write_import

CREDENTIALS = {
    ".env": ("OPENAI_API_KEY=sk-proj-Zx8QmW3rT9vLp2KdN7yH4sFj6GcB1aEu\n", "Zx8QmW3rT9vLp2KdN7yH4sFj6GcB1aEu"),
    ".git-credentials": ("https://octocat:ghp_9fKQ2xLmP7vR3tYs8WcN4bZ1hJ6dE0gA5uTq@github.com\n",
                         "9fKQ2xLmP7vR3tYs8WcN4bZ1hJ6dE0gA5uTq"),
    ".netrc": ("machine api.example.com login octocat password hunter2hunter2\n", "hunter2hunter2"),
}


@pytest.mark.parametrize("name", list(CREDENTIALS))
def test_a_scenario_linked_to_a_credentials_file_does_not_show_it(hostile: Tally, tmp_path: Path, name: str) -> None:
    text, secret = CREDENTIALS[name]
    (tmp_path / name).write_text(text)
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "s.yaml").symlink_to(tmp_path / name)
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "run", str(scenarios / "s.yaml")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    case = f"a scenario linked to {name}"
    hostile.line(case, done.stdout + done.stderr, "ctxsim: */s.yaml*")
    hostile.survived(case, [secret] if secret in done.stdout + done.stderr else [])


def test_a_huge_scalar_is_not_quoted_whole(hostile: Tally, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("x" * (5 * 1024 * 1024) + "\n")
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "run", str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    line = hostile.line("a 5 MiB scalar", done.stdout + done.stderr, "ctxsim: *s.yaml*")
    assert len(line) < 500, len(line)


TOKENS = {
    "a Hugging Face token": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "a lowercase token": "abcdefghijklmnopqrstuvwxyzabcdefghijkl",
    "a lowercase token with digits and underscores": "live_abcdefghijklmnopq_rstuvwxyz_0123456789",
}


def _planted(source: Path, secret: str) -> None:
    frames: list[dict[str, Any]] = [json.loads(line) for line in source.read_text().splitlines()]
    result = next(f for f in frames if f["type"] == "result")
    result.update({"status": secret, "service_tier": secret, "terminal_reason": secret, secret: {secret: 1}})
    source.write_text("".join(json.dumps(f) + "\n" for f in frames))


@pytest.mark.parametrize("name", list(TOKENS))
def test_a_token_as_a_key_or_a_kind_does_not_survive_an_import(hostile: Tally, tmp_path: Path, name: str) -> None:
    secret = TOKENS[name]
    source = _stream_json(tmp_path)
    _planted(source, secret)
    written = write_import([source], tmp_path / "out" / "planted.yaml", steps=False)
    data = b"".join(p.read_bytes() for p in written)
    hostile.case(name)
    hostile.survived(name, [secret] if secret.encode() in data else [])


SECRET_KEY = "sk-proj-Zx8QmW3rT9vLp2KdN7yH4sFj6GcB1aEu"


@pytest.mark.parametrize("how", ["a stream: file", "ctxsim import", "a mapping key", "a value", "a duplicate key"])
def test_a_credentials_line_read_by_mistake_is_not_shown(hostile: Tally, tmp_path: Path, how: str) -> None:
    """A ``.env`` line where a recording, a key or a value was expected: the error is one line without it."""
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={SECRET_KEY}\n")
    call = "queries:\n  - prompt: hi\n    steps:\n      - call: {in: 3, cc: 100, cr: 1000, out: 10}\n"
    files = {"a stream: file": "name: s\nstream: .env\n",
             "a mapping key": f"name: s\n{SECRET_KEY}: 1\n{call}",
             "a value": f"name: s\nqueries:\n  - prompt: hi\n    steps:\n      - call: {{in: 3, cc: {SECRET_KEY}, "
                        f"cr: 1000, out: 10}}\n",
             "a duplicate key": f"name: s\n{SECRET_KEY}: 1\n{SECRET_KEY}: 2\n{call}"}
    if how == "ctxsim import":
        argv = ["import", ".env", "-o", "out.yaml"]
    else:
        (tmp_path / "s.yaml").write_text(files[how])
        argv = ["run", "s.yaml"]
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", *argv], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    output = done.stdout + done.stderr
    case = f"a credentials line read as {how}"
    hostile.line(case, output, "ctxsim: *")
    hostile.survived(case, [SECRET_KEY] if SECRET_KEY[8:] in output else [])
    assert done.returncode == 2, output
