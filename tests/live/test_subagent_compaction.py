"""A subagent past its own autocompact window, as the recordings of ``subagent_recorder.py`` hold it.

Offline: the recordings under ``tests/captures/subagent/claude-code-<version>/`` say what the real CLI did
with an agent given ``autoCompactWindow`` 100,000 (point 67,000) whose calls reported 80,000 then 81,000: one
summary request with the subagent's system prompt, a ``compact_boundary`` and a summary row in the subagent's
transcript only, ``PreCompact`` hooks naming the agent, nothing in the SDK's stream, the main chain unmoved; and
nothing at all under the point or without a window of its own. The builder's point agrees with them; it compacts
a subagent where the CLI did and refuses to where it did not, and refuses a call the compaction should have
preceded. The world's twin of each recorded session that compacted is rendered and held to the recording: the
subagent file's boundary and summary rows, nothing in the stream or the SDK's messages, the summary request in
``modelUsage`` and the cost, the main chain's context unmoved, the hooks in their recorded order. Live (marked
``live``): the sessions recorded again with the installed CLI do the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, SystemMessage
from subagent_recorder import SUBAGENT_SESSIONS, record_subagent_compaction
from test_live import leaves_nothing_behind  # noqa: F401  (autouse: every live test leaves nothing behind)

from ctxsim.live import bundled_cli_version
from ctxsim.sdk import HOOK_EVENTS, patch_sdk
from ctxsim.wire import render, render_transcript, statusline_payloads, version_key
from ctxsim.world import Call, ClaudeSettings, Session, SessionBuilder, SubagentCompaction

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


def _subagent(*prompts: int, compact_after: int | None = None, auto_compact: bool = True) -> SessionBuilder:
    """A subagent of the recorded agent whose calls report ``prompts`` (50 out, a one-token tool result each, as
    the recorded ones), compacted after call ``compact_after`` (1-based) when given."""
    b = SessionBuilder(seed=0, settings=ClaudeSettings(subagent_compact_window=100_000, auto_compact=auto_compact))
    b.query("go").call().start_subagent()
    for n, prompt in enumerate(prompts, 1):
        b.call(input=3, cache_creation=1_000, cache_read=prompt - 1_003, output=50, blocks=("tool_use",),
               results=(1,))
        if n == compact_after:
            b.compact(2_734)
    return b


def test_the_builder_s_point_is_the_recorded_one() -> None:
    """The recordings bracket the point and say when: a subagent holding about 80,000 after its second call
    compacted before its third, one holding about 67,000 did not, and one past the point after its first call
    called again uncompacted. The builder puts the point of subagent_compact_window 100,000 at 67,000, and without
    it the session's (past 81,000)."""
    assert ClaudeSettings(subagent_compact_window=100_000).subagent_point(200_000, 32_000) == POINT
    assert ClaudeSettings().subagent_point(200_000, 32_000) == 167_000
    _subagent(80_000, 81_000 - 70)  # the first past the point is followed by another call (subagent-autocompact)
    _subagent(60_000, 66_949, 12_000)  # 66,949 + 50 + 1 = 67,000 held: not past (subagent-under-point)


def test_the_builder_compacts_a_subagent_where_claude_code_did_and_refuses_where_it_did_not() -> None:
    """Where the recordings compacted (past the point after a call not the first) the builder compacts when asked,
    and a call made there uncompacted is refused, saying so; where they did not (after the first call, or not past
    the point), asking for a compaction is refused."""
    _subagent(20_000, 80_000, 12_000, compact_after=2)  # subagent-past-on-second-call
    _subagent(80_000, 81_000, 12_000, compact_after=2)  # subagent-autocompact
    with pytest.raises(ValueError, match=r"^ctxsim: the subagent holds 80,051 tokens after its call 2, past its "
                                         r"autocompact point \(67,000, .*Claude Code compacts the subagent there, "
                                         r"before its next call, in its own transcript; compact it first"):
        _subagent(20_000, 80_000, 12_000)
    with pytest.raises(ValueError, match=r"holds 67,001 tokens after its call 2"):
        _subagent(60_000, 66_950, 12_000)
    with pytest.raises(ValueError, match=r"^ctxsim: the subagent made 1 call\(s\): Claude Code compacts a subagent "
                                         r"only after a call that is not its first"):
        _subagent(80_000, compact_after=1)
    with pytest.raises(ValueError, match=r"^ctxsim: the subagent holds 67,000 tokens, not past its autocompact "
                                         r"point \(67,000\)"):
        _subagent(60_000, 66_949, compact_after=2)
    with pytest.raises(ValueError, match=r"trigger auto"):
        _subagent(20_000, 80_000).compact(2_734, trigger="manual")
    # auto-compact off: nothing compacts on its own, so the calls go on uncompacted and no compaction is taken
    assert _subagent(20_000, 80_000, 81_000, auto_compact=False).build()
    with pytest.raises(ValueError, match=r"^ctxsim: auto-compact is off: Claude Code compacts no subagent"):
        _subagent(20_000, 80_000, compact_after=2, auto_compact=False)


COMPACTED = ("subagent-autocompact", "subagent-past-on-second-call")
"""The recorded sessions whose subagent compacted."""


def _twin(recording: dict[str, Any]) -> Session:
    """The world's twin of a recorded session whose subagent compacted: the same calls (the usage the fake API
    served, 50 out, a one-token tool result after each Bash call, as the CLI counted "one" and "two"), and where
    the CLI compacted the subagent a compaction whose summary is the boundary's and whose request is the recorded
    one. ``preTokens`` and the rest are derived."""
    _, sub = _files(recording)
    (boundary,) = [r for r in sub if r.get("subtype") == "compact_boundary"]
    b = SessionBuilder(seed=0, settings=ClaudeSettings(subagent_compact_window=100_000))
    b.query("delegate this").start_subagent("a subtask", prompt_tokens=3)
    served = recording["served"]
    for s in served[1:]:
        if s["kind"] == "main":
            break
        if s["kind"] == "compact":
            b.compact(boundary["compactMetadata"]["postTokens"], summary=(*s["usage"], s["output_tokens"]))
            continue
        tools = [k for k in s["blocks"] if k.startswith("ToolUse:")]
        b.call(input=s["usage"][0], cache_creation=s["usage"][1], cache_read=s["usage"][2],
               output=s["output_tokens"], blocks=("tool_use",) * len(tools) or ("text",), results=(1,) * len(tools))
    b.end_subagent().call(blocks=("text",))
    return b.query("thanks").call(blocks=("text",)).build()


def _chain_back(rows: list[dict[str, Any]], start: dict[str, Any]) -> list[str]:
    """The uuids from ``start`` back along ``parentUuid`` within one file."""
    by_uuid = {r["uuid"]: r for r in rows if "uuid" in r}
    out, row = [], start
    while row is not None:
        out.append(row["uuid"])
        row = by_uuid.get(row.get("parentUuid") or "")
    return out


def _compaction_rows(rows: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A file's boundary, its summary row, and the chained row just before the boundary."""
    (boundary,) = [r for r in rows if r.get("subtype") == "compact_boundary"]
    (summary,) = [r for r in rows if r.get("isCompactSummary")]
    before = [r for r in rows[:rows.index(boundary)] if "uuid" in r][-1]
    return boundary, summary, before


@pytest.mark.parametrize("name", COMPACTED)
def test_the_world_s_twin_writes_the_subagent_s_compaction_as_recorded(name: str) -> None:
    """The twin's subagent file holds the boundary and summary rows the recording holds: the same keys (but the
    ``slug`` no row ctxsim writes carries), the same kinds and flags, ``preTokens`` and ``cumulativeDroppedTokens``
    as the CLI counted them, and the same links (the boundary after the subagent's last row, its kept segment from
    its last call's row on, the summary anchored there and chained back to the boundary); the main file holds
    none, as recorded."""
    recording = RECORDED[VERSIONS[-1], name]
    main, sub = _files(recording)
    rendered = render_transcript(_twin(recording))
    (twin_main,) = [f.rows for p, f in rendered.files.items() if "/subagents/" not in p]
    (twin_sub,) = [f.rows for p, f in rendered.files.items() if "/subagents/" in p]
    recorded, twin = _compaction_rows(sub), _compaction_rows(twin_sub)
    for want, got in zip(recorded[:2], twin[:2]):  # the boundary and the summary row
        assert set(got) == set(want) - {"slug"}, (sorted(set(got) ^ set(want)))
    (r_boundary, r_summary, _), (t_boundary, t_summary, _) = recorded, twin
    for key in ("type", "subtype", "content", "isMeta", "level", "isSidechain", "parentUuid"):
        assert t_boundary[key] == r_boundary[key], key
    for key in ("type", "isSidechain", "isCompactSummary", "isVisibleInTranscriptOnly"):
        assert t_summary[key] == r_summary[key], key
    r_meta, t_meta = r_boundary["compactMetadata"], t_boundary["compactMetadata"]
    assert set(t_meta) == set(r_meta)
    for key in ("trigger", "preTokens", "postTokens", "cumulativeDroppedTokens"):
        assert t_meta[key] == r_meta[key], key
    for (boundary, summary, before, rows) in ((*recorded, sub), (*twin, twin_sub)):
        agent = boundary["agentId"]
        assert summary["agentId"] == agent and all(r.get("agentId") == agent for r in rows if "uuid" in r)
        assert boundary["logicalParentUuid"] == before["uuid"] == boundary["compactMetadata"]["preservedSegment"][
            "tailUuid"]
        head = boundary["compactMetadata"]["preservedSegment"]["headUuid"]
        (last_call,) = [r for r in rows if r.get("uuid") == head]
        assert last_call["type"] == "assistant" and last_call["message"]["usage"]["cache_read_input_tokens"] == max(
            r["message"]["usage"]["cache_read_input_tokens"] for r in rows if r.get("type") == "assistant")
        assert boundary["compactMetadata"]["preservedSegment"]["anchorUuid"] == summary["uuid"]
        assert boundary["uuid"] in _chain_back(rows, summary)
        assert rows.index(summary) > rows.index(boundary)
    for rows in (main, twin_main):  # the main transcript has no compaction
        assert not [r for r in rows if r.get("subtype") == "compact_boundary" or r.get("isCompactSummary")]


@pytest.mark.parametrize("name", COMPACTED)
def test_the_world_s_twin_shows_nothing_of_it_in_the_stream_and_counts_its_request(name: str) -> None:
    """As recorded: no ``compact_boundary`` and no compacting status in the stream, the main chain's context
    unmoved at every point (``get_context_usage`` said the main chain's last prompt), and the summary request
    counted in the result's ``modelUsage`` (the recorded one is the served requests' sum, the compaction's
    included): the rendered result counts the twin's calls and its summary request."""
    recording = RECORDED[VERSIONS[-1], name]
    served = recording["served"]
    assert recording["steps"][0]["context_usage"]["totalTokens"] == sum(served[5]["usage"])
    result = recording["steps"][0]["messages"][-1]
    assert result["model_usage[claude-sonnet-4-5].cacheReadInputTokens"] == sum(s["usage"][2] for s in served[:6])
    session = _twin(recording)
    frames = [f for script in render(session) for f in script.frames]
    assert not [f for f in frames if f.data.get("subtype") == "compact_boundary"
                or f.data.get("status") == "compacting"]
    points = [f.observation for f in frames if f.observation is not None]
    main_calls = session.main_calls
    assert [p.truth.prompt for p in points if p.kind == "result"] == [main_calls[1].prompt, main_calls[2].prompt]
    assert {p.truth.prompt for p in points} <= {c.prompt for c in main_calls}  # only ever a main call's prompt
    (compaction,) = [s for s in session.queries[0].steps if isinstance(s, SubagentCompaction)]
    assert compaction.summary is not None
    first_result = next(f.data for f in frames if f.data["type"] == "result")
    usage = first_result["modelUsage"][session.model]
    calls = session.queries[0].steps
    assert usage["cacheReadInputTokens"] == sum(c.cache_read_input_tokens for c in calls if isinstance(c, Call)
                                                ) + compaction.summary.cache_read_input_tokens
    assert usage["inputTokens"] == sum(c.input_tokens for c in calls if isinstance(c, Call)) + \
        compaction.summary.input_tokens
    # the statusline's cost counts it too, and its context fields stay the main chain's
    payloads = statusline_payloads(session)
    results = [n for n, p in enumerate(points) if p.kind == "result"]
    assert payloads[results[0]]["cost"]["total_cost_usd"] == first_result["total_cost_usd"]
    shown = [p["context_window"]["current_usage"] for p in payloads]
    assert {sum(u[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            for u in shown if u} <= {c.prompt for c in main_calls}


def _hooks_played(session: Session) -> tuple[list[dict[str, Any]], list[Any], list[int]]:
    """Every hook ``ctxsim.sdk`` sends while the real SDK client plays ``session`` query by query, every message
    the client yields, and ``get_context_usage``'s ``totalTokens`` after each query."""
    played: list[dict[str, Any]] = []
    messages: list[Any] = []
    totals: list[int] = []

    async def record(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        played.append(dict(hook_input))
        return {}

    async def main() -> None:
        options = ClaudeAgentOptions(hooks={e: [HookMatcher(hooks=[record])]  # type: ignore[misc]
                                            for e in HOOK_EVENTS})
        async with ClaudeSDKClient(options) as client:
            for query in session.queries:
                await client.query(query.prompt)
                async for message in client.receive_response():
                    messages.append(message)
                totals.append((await client.get_context_usage())["totalTokens"])

    with patch_sdk(session):
        anyio.run(main)
    return played, messages, totals


@pytest.mark.parametrize("name", COMPACTED)
def test_the_world_s_twin_fires_the_hooks_of_the_subagent_s_compaction_as_recorded(name: str) -> None:
    """Through the real SDK client, the twin's hooks come in the recorded order, with ``PreCompact`` naming the
    agent (its ``agent_type``, ``trigger: auto``, the recorded keys) after the ``PostToolUse`` of the subagent's
    last tool, then the summary agent's ``SubagentStop`` (``agent_type`` empty). Not played: a ``PreCompact`` the
    CLI fired with no summary after it (recorded after a first call past the point): no step of the world stands
    for it, so it is left out of the recorded order (a ``PreCompact`` not followed by the summary agent's stop)."""
    recording = RECORDED[VERSIONS[-1], name]
    hooks = [h for step in recording["steps"] for h in step["hooks"]]
    compacted = [h for n, h in enumerate(hooks) if h["event"] != "PreCompact" or (
        n + 1 < len(hooks) and hooks[n + 1]["event"] == "SubagentStop" and hooks[n + 1]["agent_type"] == "")]
    twin = _twin(recording)
    played, messages, totals = _hooks_played(twin)
    # get_context_usage is the main chain's last prompt after each query, as recorded after the first
    assert recording["steps"][0]["context_usage"]["totalTokens"] == sum(recording["served"][5]["usage"])
    assert totals == [twin.queries[0].main_calls[-1].prompt, twin.queries[1].main_calls[-1].prompt]
    # the SDK's messages show nothing of it, as recorded: no boundary, no compacting status
    recorded_subtypes = {m["subtype"] for step in recording["steps"] for m in step["messages"] if m["type"] == "system"}
    subtypes = {m.subtype for m in messages if isinstance(m, SystemMessage)}
    assert "init" in subtypes and not {"compact_boundary", "status"} & (subtypes | recorded_subtypes)
    twin_type = {"counter": "general-purpose"}  # the builder's subagents are general-purpose
    assert [(h["hook_event_name"], h.get("agent_type")) for h in played] == [
        (h["event"], twin_type.get(h.get("agent_type"), h.get("agent_type"))) for h in compacted]
    (recorded_pre,) = [h for h in compacted if h["event"] == "PreCompact"]
    (pre,) = [h for h in played if h["hook_event_name"] == "PreCompact"]
    assert sorted(pre) == recorded_pre["keys"] and pre["trigger"] == recorded_pre["trigger"] == "auto"
    assert pre["custom_instructions"] is recorded_pre["custom_instructions"] is None


@pytest.mark.live
def test_the_installed_cli_compacts_a_subagent_as_recorded(tmp_path: Path) -> None:
    installed = bundled_cli_version()
    below = [v for v in VERSIONS if version_key(v) <= version_key(installed)] or VERSIONS[:1]
    written = record_subagent_compaction(tmp_path, timeout=90.0)
    assert len(written) == len(SUBAGENT_SESSIONS)
    live = _recordings(tmp_path)
    for name in SUBAGENT_SESSIONS:
        assert _facts(live[installed, name]) == _facts(RECORDED[below[-1], name]), name
