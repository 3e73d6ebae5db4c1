"""A subagent past its own autocompact window, as the recordings of ``subagent_recorder.py`` hold it.

Offline: the recordings under ``tests/captures/subagent/claude-code-<version>/`` say what the real CLI did
with an agent given ``autoCompactWindow`` 100,000 (point 67,000) whose calls reported 80,000 then 81,000: one
summary request with the subagent's system prompt, a ``compact_boundary`` and a summary row in the subagent's
transcript only, ``PreCompact`` hooks naming the agent, nothing in the SDK's stream, the main chain unmoved; and
nothing at all under the point or without a window of its own. The builder's point agrees with them, and it
refuses a subagent call past that point saying so. Live (marked ``live``): the sessions recorded again with the
installed CLI do the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from subagent_recorder import SUBAGENT_SESSIONS, record_subagent_compaction
from test_live import leaves_nothing_behind  # noqa: F401  (autouse: every live test leaves nothing behind)

from ctxsim.live import bundled_cli_version
from ctxsim.wire import version_key
from ctxsim.world import ClaudeSettings, SessionBuilder

POINT = 67_000
"""100,000 - 20,000 - 13,000: the point of an agent whose autoCompactWindow is 100,000, max output 32,000."""


def _recordings(directory: Path) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["cli_version"], d["name"]): d for d in (json.loads(p.read_text())
                                                        for p in sorted(directory.glob("claude-code-*/*.json")))}


CAPTURES = Path(__file__).parents[1] / "captures" / "subagent"
RECORDED = _recordings(CAPTURES)
VERSIONS = sorted({v for v, _ in RECORDED}, key=version_key)


def _files(recording: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The main transcript's rows and the subagent's."""
    files = recording["transcripts"]
    (main,) = [rows for path, rows in files.items() if "/subagents/" not in path]
    (sub,) = [rows for path, rows in files.items() if "/subagents/" in path and path.endswith(".jsonl")]
    return main, sub


def _facts(recording: dict[str, Any]) -> dict[str, Any]:
    """What a live run is held to: the requests' kinds, where the boundaries and summary rows are, the hooks."""
    main, sub = _files(recording)
    hooks = [h for step in recording["steps"] for h in step["hooks"]]
    return {"kinds": [s["kind"] for s in recording["served"]],
            "boundaries": [sum(r.get("subtype") == "compact_boundary" for r in rows) for rows in (main, sub)],
            "summaries": [sum(bool(r.get("isCompactSummary")) for r in rows) for rows in (main, sub)],
            "pre_compact": sorted({(h.get("agent_type"), h.get("trigger"))
                                   for h in hooks if h["event"] == "PreCompact"}),
            "stream_boundaries": [k for k in recording["frame_keys"] if "compact_boundary" in k]
            + [m for step in recording["steps"] for m in step["messages"] if m.get("subtype") == "compact_boundary"]}


def test_there_are_recordings() -> None:
    assert VERSIONS and all((v, n) in RECORDED for v in VERSIONS for n in SUBAGENT_SESSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_subagent_past_its_point_after_its_second_call_compacts(version: str) -> None:
    """The first call at 20,000, the second at 80,000: one summary request, before the third call."""
    recording = RECORDED[version, "subagent-past-on-second-call"]
    served = recording["served"]
    assert [s["kind"] for s in served] == ["main", "subagent", "subagent", "compact", "subagent", "main", "main"]
    assert [sum(s["usage"]) for s in served[1:3]] == [20_000, 80_000]
    facts = _facts(recording)
    assert facts["boundaries"] == [0, 1] and facts["summaries"] == [0, 1] and facts["stream_boundaries"] == []
    assert facts["pre_compact"] == [("counter", "auto")]


@pytest.mark.parametrize("version", VERSIONS)
def test_a_subagent_past_its_own_point_compacts_in_its_own_transcript(version: str) -> None:
    recording = RECORDED[version, "subagent-autocompact"]
    served = recording["served"]
    assert [s["kind"] for s in served] == ["main", "subagent", "subagent", "compact", "subagent", "main", "main"]
    first, second, summary, after = served[1:5]
    # the first call past the point (80,000) is followed by another call; the summary comes after the second
    assert sum(first["usage"]) == 80_000 > POINT and sum(second["usage"]) == 81_000
    assert summary["subagent_system"] and not served[0]["subagent_system"]  # asked with the subagent's prompt
    _, sub = _files(recording)
    (boundary,) = [r for r in sub if r.get("subtype") == "compact_boundary"]
    meta = boundary["compactMetadata"]
    assert boundary["isSidechain"] and boundary["agentId"] and boundary["parentUuid"] is None
    assert meta["trigger"] == "auto" and 81_000 <= meta["preTokens"] < 81_200  # the second call, and a little
    assert 0 < meta["postTokens"] < sum(after["usage"]) < POINT  # the call after it is measured, small again
    assert {"preservedSegment", "preservedMessages", "cumulativeDroppedTokens"} <= set(meta)
    (summary_row,) = [r for r in sub if r.get("isCompactSummary")]
    assert summary_row["isVisibleInTranscriptOnly"] and sub.index(summary_row) > sub.index(boundary)
    facts = _facts(recording)
    assert facts["boundaries"] == [0, 1] and facts["summaries"] == [0, 1]  # the main transcript has none
    assert facts["stream_boundaries"] == []  # the SDK's stream says nothing of it
    assert facts["pre_compact"] == [("counter", "auto")]
    # the main chain is unmoved: get_context_usage after the query is its last call's prompt
    assert recording["steps"][0]["context_usage"]["totalTokens"] == sum(served[5]["usage"])
    # the summary request is paid for: the result's modelUsage counts its input
    result = recording["steps"][0]["messages"][-1]
    assert result["model_usage[claude-sonnet-4-5].inputTokens"] == sum(s["usage"][0] for s in served[:6])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", ["subagent-under-point", "subagent-inherited-window"])
def test_under_its_point_or_without_its_own_window_a_subagent_does_not_compact(version: str, name: str) -> None:
    recording = RECORDED[version, name]
    served = recording["served"]
    assert [s["kind"] for s in served] == ["main", "subagent", "subagent", "subagent", "main", "main"]
    # under-point: 66,900 of its 67,000; inherited: 81,000 of the session's 167,000
    assert sum(served[2]["usage"]) == (66_900 if name == "subagent-under-point" else 81_000)
    facts = _facts(recording)
    assert facts["boundaries"] == [0, 0] and facts["summaries"] == [0, 0] and facts["pre_compact"] == []


def test_the_builder_s_point_is_the_recorded_one_and_it_refuses_past_it() -> None:
    """The recordings bracket the point and say when: a subagent holding about 80,000 after its second call
    compacted before its third, one holding about 67,000 did not, and one past the point after its first call
    called again uncompacted. The builder puts the point of subagent_compact_window 100,000 at 67,000; it lets a
    subagent's first call pass it and refuses the call after a later one past it, saying that Claude Code compacts
    the subagent there and the world does not model it."""
    settings = ClaudeSettings(subagent_compact_window=100_000)
    assert settings.subagent_point(200_000, 32_000) == POINT
    assert ClaudeSettings().subagent_point(200_000, 32_000) == 167_000  # without it: the session's, past 81,000

    def subagent(*prompts: int) -> SessionBuilder:
        b = SessionBuilder(seed=0, settings=settings).query("go").call().start_subagent()
        for prompt in prompts:
            b.call(input=3, cache_creation=1_000, cache_read=prompt - 1_003, output=50, blocks=("tool_use",),
                   results=(20,))
        return b

    subagent(80_000, 81_000 - 70)  # the first past the point is followed by another call (subagent-autocompact)
    subagent(60_000, POINT - 70, 12_000)  # 66,930 + 50 + 20 = 67,000 held: not past (subagent-under-point)
    with pytest.raises(ValueError, match=r"^ctxsim: the subagent holds 80,070 tokens after its call 2, past its "
                                         r"autocompact point \(67,000, .*Claude Code compacts the subagent there, "
                                         r"before its next call, in its own transcript, which ctxsim's world does "
                                         r"not model"):
        subagent(20_000, 80_000, 12_000)  # subagent-past-on-second-call: compacted before its third call
    with pytest.raises(ValueError, match=r"holds 67,001 tokens after its call 2"):
        subagent(60_000, POINT - 69, 12_000)


@pytest.mark.live
def test_the_installed_cli_compacts_a_subagent_as_recorded(tmp_path: Path) -> None:
    installed = bundled_cli_version()
    below = [v for v in VERSIONS if version_key(v) <= version_key(installed)] or VERSIONS[:1]
    written = record_subagent_compaction(tmp_path, timeout=90.0)
    assert len(written) == len(SUBAGENT_SESSIONS)
    live = _recordings(tmp_path)
    for name in SUBAGENT_SESSIONS:
        assert _facts(live[installed, name]) == _facts(RECORDED[below[-1], name]), name
