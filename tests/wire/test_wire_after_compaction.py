"""The statusline payload and the transcript around a compaction, from a SessionBuilder session, against what the
recorded REPL of each bundled CLI wrote (``ctxsim/wire/captures/claude-code-*/repl/``): the payload right after a
compaction is all zeros when the compaction keeps a trailing segment (two or more calls before it) and null when
it keeps none (one call), the payload carries ``prompt_cache`` with every key the CLI writes, and the boundary's
``compactMetadata`` has every key the CLI wrote for that session. The expected keys and values are read from the
recordings, never from the rendering."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ctxsim.wire import CAPTURES, render, render_transcript, statusline_payloads
from ctxsim.world import Session, SessionBuilder

VERSIONS = sorted(p.parent.name.removeprefix("claude-code-") for p in CAPTURES.glob("claude-code-*/repl"))


def _recorded(version: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CAPTURES / f"claude-code-{version}" / "repl" / f"{name}.json").read_text())
    return data


def _boundary(data: dict[str, Any]) -> dict[str, Any]:
    rows = next(rows for path, rows in data["transcripts"].items() if "/" not in path)
    found: dict[str, Any] = next(r for r in rows if r.get("subtype") == "compact_boundary")
    return found


def _after_compact(data: dict[str, Any]) -> dict[str, Any]:
    """The last payload the REPL sent after ``/compact`` was typed and before the next prompt."""
    steps = data["steps"]
    at = next(i for i, s in enumerate(steps) if s["prompt"] == "/compact")
    sent = [p["payload"] for p in data["payloads"] if steps[at]["typed_ns"] < p["ns"] < steps[at + 1]["typed_ns"]]
    return sent[-1]  # type: ignore[no-any-return]


def _session(calls_before: int) -> Session:
    builder = SessionBuilder(seed=7, entrypoint="repl")
    for number in range(calls_before):
        builder.query(f"prompt {number + 1}").call()
    builder.query("/compact").compact(2_900, trigger="manual")
    builder.query("again").call()
    return builder.build()


def _at_compaction(session: Session, version: str) -> dict[str, Any]:
    labels = [f.observation.label for s in render(session) for f in s.frames if f.observation is not None]
    payload: dict[str, Any] = statusline_payloads(session, cli_version=version)[labels.index(
        f"q{len(session.queries) - 1} compaction")]
    return payload


@pytest.mark.parametrize("version", VERSIONS)
def test_two_calls_then_compact_zeroes_the_payload(version: str) -> None:
    recorded = _after_compact(_recorded(version, "compact-two-calls"))["context_window"]
    assert recorded["current_usage"] == dict.fromkeys(recorded["current_usage"], 0)  # what the CLI sent
    rendered = _at_compaction(_session(2), version)["context_window"]
    assert rendered["current_usage"] == {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                                         "cache_read_input_tokens": 0}
    assert (rendered["used_percentage"], rendered["remaining_percentage"]) == (0, 100)
    assert rendered == recorded | {"context_window_size": rendered["context_window_size"]}


@pytest.mark.parametrize("version", VERSIONS)
def test_one_call_then_compact_nulls_the_payload(version: str) -> None:
    recorded = _after_compact(_recorded(version, "compact-one-call"))["context_window"]
    assert recorded["current_usage"] is None
    rendered = _at_compaction(_session(1), version)["context_window"]
    assert rendered == recorded


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("calls", [1, 2])
def test_the_payload_carries_every_prompt_cache_key(version: str, calls: int) -> None:
    recorded = _after_compact(_recorded(version, "compact-two-calls" if calls == 2 else "compact-one-call"))
    rendered = _at_compaction(_session(calls), version)
    assert list(rendered["prompt_cache"]) == list(recorded["prompt_cache"])
    assert list(rendered) == list(recorded)  # every top-level key, in the CLI's order
    assert rendered["prompt_cache"]["recache_tokens_if_cold"] is None is recorded["prompt_cache"][
        "recache_tokens_if_cold"]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("calls", [1, 2])
def test_the_boundary_has_every_key_the_cli_writes(version: str, calls: int) -> None:
    recorded = _boundary(_recorded(version, "compact-two-calls" if calls == 2 else "compact-one-call"))
    session = _session(calls)
    rows = render_transcript(session, cli_version=version).rows
    rendered = next(r for r in rows if r.get("subtype") == "compact_boundary")
    assert list(rendered["compactMetadata"]) == list(recorded["compactMetadata"])
    assert ("preservedSegment" in recorded["compactMetadata"]) is (calls == 2)
    if calls == 2:
        for key in ("preservedSegment", "preservedMessages"):
            assert list(rendered["compactMetadata"][key]) == list(recorded["compactMetadata"][key])
        segment = rendered["compactMetadata"]["preservedSegment"]
        by_uuid = {r.get("uuid"): r for r in rows}
        assert by_uuid[segment["headUuid"]]["type"] == "assistant"  # the last reply, as the CLI keeps it
        assert by_uuid[segment["anchorUuid"]].get("isCompactSummary") is True
    meta = rendered["compactMetadata"]
    assert meta["cumulativeDroppedTokens"] == meta["preTokens"] - meta["postTokens"]


def test_exceeds_200k_counts_the_output() -> None:
    session = (SessionBuilder().query("big").call(input=3, cache_creation=0, cache_read=199_950, output=100)
               .build())
    payload = statusline_payloads(session)[0]
    assert payload["context_window"]["total_input_tokens"] == 199_953  # under 200,000 without the output
    assert payload["exceeds_200k_tokens"] is True


def test_prompt_id_is_new_for_compact_and_gone_after_clear() -> None:
    session = (SessionBuilder().query("one").call().query("two").call().query("/compact").compact(2_000)
               .query("/clear").reset().query("three").call().build())
    payloads = statusline_payloads(session)
    labels = [f.observation.label for s in render(session) for f in s.frames if f.observation is not None]
    ids = {label: p.get("prompt_id") for label, p in zip(labels, payloads)}
    assert ids["q3 compaction"] not in (None, ids["q2 result"])
    assert ids["q4 result"] is None and "prompt_cache" not in payloads[labels.index("q4 result")]
    assert ids["q5 result"] is not None


def test_a_stated_preserved_overrides_the_cli_s_rule() -> None:
    builder = SessionBuilder(seed=3)
    builder.query("one").call().query("two").call().query("/compact").compact(2_000, trigger="manual",
                                                                            preserved=False)
    session = builder.build()
    labels = [f.observation.label for s in render(session) for f in s.frames if f.observation is not None]
    payload = statusline_payloads(session)[labels.index("q3 compaction")]
    assert payload["context_window"]["current_usage"] is None
    boundary = next(r for r in render_transcript(session).rows if r.get("subtype") == "compact_boundary")
    assert "preservedSegment" not in boundary["compactMetadata"]


@pytest.mark.parametrize("entrypoint", ["sdk", "repl"])
def test_the_scenario_chooses_the_transcript_s_shape(entrypoint: str) -> None:
    from ctxsim.scenario import parse_scenario

    text = (f"world: {{entrypoint: {entrypoint}}}\nqueries:\n  - steps:\n      - call: {{}}\n      - call: {{}}\n"
            "  - prompt: /compact\n    steps:\n      - compact: {post: 2000, trigger: manual}\n")
    rows = render_transcript(parse_scenario(text, file="x.yaml").session).rows
    kinds = {r["type"] for r in rows}
    boundary = next(r for r in rows if r.get("subtype") == "compact_boundary")
    by_uuid = {r.get("uuid"): r for r in rows}
    if entrypoint == "repl":
        assert {r.get("entrypoint") for r in rows if "uuid" in r} == {"cli"} and "queue-operation" not in kinds
        assert by_uuid[boundary["logicalParentUuid"]].get("subtype") == "turn_duration"
        assert boundary["compactMetadata"]["preservedSegment"]["tailUuid"] == boundary["logicalParentUuid"]
    else:
        assert {r.get("entrypoint") for r in rows if "uuid" in r} == {"sdk-py"} and "queue-operation" in kinds
        assert by_uuid[boundary["logicalParentUuid"]]["type"] == "assistant"
