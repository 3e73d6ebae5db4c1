"""The captures in ``tests/captures`` against the installed CLI: ``remake.py`` records them again, into a temporary
directory, and the fresh recording must show what the captured one shows (live tier: it runs the bundled CLI).

The default tier reads the captures alone, so a newer CLI never fails it; here a newer CLI that changed what the
captures show fails, naming the difference, and ``python tests/captures/remake.py`` records its own directory.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from scripts import load_script

pytestmark = pytest.mark.live

REMAKE = Path(__file__).resolve().parents[1] / "captures" / "remake.py"


def remake() -> ModuleType:
    return load_script(REMAKE)


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def scripted_calls(directory: Path) -> list[tuple[Any, ...]]:
    """The calls of the sessions whose replies state their usage: every one the CLI made, in order."""
    return [(r["session"], r["kind"], r["message_id"], r["usage"], r["output_tokens"])
            for r in rows(directory / "served.jsonl") if r["session"] in ("three-queries", "partial")]


def classes(directory: Path) -> dict[str, list[str]]:
    """Per query of the three-query session, the kinds of SDK message (sorted: tools and the subagent's reports
    interleave as the run goes)."""
    out: dict[str, list[str]] = {}
    for row in rows(directory / "sdk-messages-three-queries.jsonl"):
        if "class" in row:
            out.setdefault(row["query"], []).append(row["class"])
    return {query: sorted(kinds) for query, kinds in out.items()}


def compaction(directory: Path) -> tuple[int, int, int]:
    """``post_tokens``, ``get_context_usage`` after ``/compact``, and the host-only session-state frames."""
    lines = rows(directory / "stream-json-compact.jsonl")
    frames = [r["raw"] for r in lines if "raw" in r]
    post = next(f for f in frames if f.get("subtype") == "compact_boundary")["compact_metadata"]["post_tokens"]
    after = next(r["context_usage"]["totalTokens"] for r in lines if r.get("after_query") == "/compact")
    return post, after, sum(f.get("sdk_host_only") is True for f in frames)


def test_a_fresh_recording_shows_what_the_captures_show(tmp_path: Path, captured: Path) -> None:
    assert remake().main(["--dir", str(tmp_path)]) == 0
    (fresh,) = tmp_path.glob("claude-code-*")
    assert {p.name for p in fresh.iterdir() if not p.name.startswith("transcript-subagent-")} == {
        p.name for p in captured.iterdir() if not p.name.startswith("transcript-subagent-")}
    assert scripted_calls(fresh) == scripted_calls(captured)
    assert classes(fresh) == classes(captured)
    (post, after, states), (was_post, was_after, was_states) = compaction(fresh), compaction(captured)
    assert after > post and was_after > was_post and states == was_states
