"""The transcript and statusline renderings (ctxsim.wire._transcript, ctxsim.wire._statusline).

Expected values come from the world that was rendered (its calls' usage) and from what the real CLI was seen to
write and send (the captures in tests/captures, the statusline payloads docs/explanation/compaction.md describes),
never from the renderer itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings

from ctxsim.strategies import sessions
from ctxsim.wire import Observation, project_slug, render, render_transcript, statusline_payloads
from ctxsim.wire._statusline import context_window
from ctxsim.wire._versions import installed_cli_version
from ctxsim.world import Call, Compaction, Query, Session, SessionBuilder, Text, ToolResult, ToolUse, display_name

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")


def _session() -> Session:
    return (SessionBuilder(seed=5, name="wire-transcript")
            .query("hello").call(blocks=("thinking", "text", "tool_use"), results=(300,)).call()
            .start_subagent().call(results=(100,)).call().end_subagent().call()
            .query("/compact").compact(2_000)
            .query("go on").call()
            .build())


def _points(session: Session) -> list[Observation]:
    return [f.observation for s in render(session) for f in s.frames if f.observation is not None]


def test_points_are_the_stream_json_points() -> None:
    session = _session()
    transcript = render_transcript(session)
    assert [p.observation for p in transcript.points] == _points(session)
    assert len(statusline_payloads(session)) == len(_points(session))


def test_one_finalized_row_per_block_sharing_id_request_and_usage() -> None:
    session = _session()
    rows = render_transcript(session).rows
    for call in session.main_calls:
        mine = [r for r in rows if r["type"] == "assistant" and r["message"]["id"] == call.message_id]
        assert len(mine) == len(call.blocks)
        assert [r["apiBlockIndex"] for r in mine] == list(range(len(call.blocks)))
        assert [r["message"]["content"][0]["type"] for r in mine] == [
            type(b).__name__.lower().replace("tooluse", "tool_use") for b in call.blocks]
        for row in mine:
            usage = row["message"]["usage"]
            assert (usage["input_tokens"], usage["cache_creation_input_tokens"], usage["cache_read_input_tokens"],
                    usage["output_tokens"]) == (call.input_tokens, call.cache_creation_input_tokens,
                                                call.cache_read_input_tokens, call.output_tokens)
            assert row["message"]["stop_reason"] == call.stop_reason
            assert row["requestId"] == call.request_id
            assert row["isSidechain"] is False
        assert len({id(r["message"]["usage"]) for r in mine}) == len(mine)  # each line its own dict


def test_rows_chain_and_time_moves_forward() -> None:
    transcript = render_transcript(_session())
    for file in transcript.files.values():
        chained = [r for r in file.rows if "uuid" in r]
        assert len({r["uuid"] for r in chained}) == len(chained)
        previous = None
        for row in chained:
            if row.get("subtype") == "compact_boundary":
                assert row["parentUuid"] is None and row["logicalParentUuid"] == previous
            else:
                assert row["parentUuid"] == previous
            previous = row["uuid"]
        stamps = [r["timestamp"] for r in file.rows if "timestamp" in r]
        assert all(ISO.fullmatch(s) for s in stamps)
        assert stamps == sorted(stamps)


def test_tool_results_name_the_row_of_their_tool_use() -> None:
    rows = render_transcript(_session()).rows
    by_uuid = {r["uuid"]: r for r in rows if "uuid" in r}
    results = [r for r in rows if r["type"] == "user" and isinstance(r["message"]["content"], list)]
    assert results
    for row in results:
        block = row["message"]["content"][0]
        source = by_uuid[row["sourceToolAssistantUUID"]]["message"]["content"][0]
        assert source["type"] == "tool_use" and source["id"] == block["tool_use_id"]


def test_compaction_rows() -> None:
    session = _session()
    compaction = next(s for q in session.queries for s in q.steps if isinstance(s, Compaction))
    rows = render_transcript(session).rows
    at = next(i for i, r in enumerate(rows) if r.get("subtype") == "compact_boundary")
    meta = rows[at]["compactMetadata"]
    assert {k: meta[k] for k in ("trigger", "preTokens", "postTokens", "cumulativeDroppedTokens")} == {
        "trigger": compaction.trigger, "preTokens": compaction.pre_tokens, "postTokens": compaction.post_tokens,
        "cumulativeDroppedTokens": compaction.pre_tokens - compaction.post_tokens}
    assert rows[at + 1]["isCompactSummary"] is True and rows[at + 1]["parentUuid"] == rows[at]["uuid"]
    # the compaction request's own usage gets no assistant row (docs/explanation/wire.md)
    assert sum(r["type"] == "assistant" for r in rows) == sum(len(c.blocks) for c in session.main_calls)


def test_subagent_rows_go_to_their_own_file() -> None:
    session = _session()
    transcript = render_transcript(session)
    main, *others = transcript.files.values()
    assert all(not r.get("isSidechain") for r in main.rows)
    (agent,) = others
    assert re.fullmatch(rf"{session.session_id}/subagents/agent-a[0-9a-f]{{16}}\.jsonl", agent.path)
    assert agent.rows[0]["type"] == "user" and agent.rows[0]["parentUuid"] is None
    assert all(r["isSidechain"] is True and r["agentId"] == agent.rows[0]["agentId"] for r in agent.rows)
    sub_ids = {c.message_id for c in session.calls if not c.is_main}
    assert {r["message"]["id"] for r in agent.rows if r["type"] == "assistant"} == sub_ids


def test_rows_written_at_each_point() -> None:
    session = _session()
    transcript = render_transcript(session)
    for index, point in enumerate(transcript.points):
        rows = transcript.rows_at(index)
        if point.observation.kind == "call":
            last = [r for r in rows if r["type"] == "assistant"][-1]
            usage = last["message"]["usage"]
            prompt = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
            assert prompt == point.observation.truth.prompt
            assert rows[-1] is last
        if point.observation.kind == "compaction":
            assert any(r.get("subtype") == "compact_boundary" for r in rows)
    counts = [p.rows[transcript.main.path] for p in transcript.points]
    assert counts == sorted(counts) and counts[-1] == len(transcript.rows)


def test_write_truncates_to_the_point(tmp_path: Path) -> None:
    transcript = render_transcript(_session())
    path = transcript.write(tmp_path / "projects" / transcript.slug, 0)
    lines = path.read_text().splitlines()
    assert [json.loads(line) for line in lines] == transcript.rows_at(0)
    assert path.name == f"{transcript.points[0].session_id}.jsonl"


def test_same_session_same_bytes() -> None:
    first, second = render_transcript(_session()), render_transcript(_session())
    assert [first.text(i) for i in range(len(first.points))] == [second.text(i) for i in range(len(second.points))]


def test_project_slug_as_the_cli_names_it() -> None:
    # the live CLI, run in /tmp/ctxsim-live-wg0_3gon/project, wrote under -tmp-ctxsim-live-wg0-3gon-project
    assert project_slug("/tmp/ctxsim-live-wg0_3gon/project") == "-tmp-ctxsim-live-wg0-3gon-project"


def test_clear_starts_a_new_file() -> None:
    session = SessionBuilder(seed=2).query("one").call().query("/clear").reset().query("two").call().build()
    transcript = render_transcript(session)
    assert len(transcript.files) == 2
    new = [p for p in transcript.points if p.session_id != session.session_id]
    assert new and all(p.transcript == f"{p.session_id}.jsonl" for p in new)


def test_other_line_kinds_are_present() -> None:
    kinds = {r["type"] for r in render_transcript(_session()).rows}
    assert {"queue-operation", "attachment", "api-request", "last-prompt"} <= kinds


def test_row_keys_are_the_captured_cli_s(captured: Path) -> None:
    """Every key the renderer writes on an assistant, prompt or tool-result row, the captured CLI wrote too."""
    rows = [json.loads(line) for line in (captured / "transcript-main.jsonl").read_text().splitlines()]
    rendered = render_transcript(_session()).rows

    def keys(rows: list[dict[str, object]], kind: str) -> set[str]:
        return {k for r in rows if r["type"] == kind for k in r}

    assert keys(rendered, "assistant") - {"requestId"} <= keys(rows, "assistant")
    # this capture has no compaction: the summary's and local commands' flags are held to the live CLI instead
    assert keys(rendered, "user") - {"isCompactSummary", "isVisibleInTranscriptOnly", "isMeta"} <= keys(
        rows, "user")


def test_the_captured_cli_writes_no_row_for_the_compaction_request(captured: Path) -> None:
    """What the renderer leaves out, the CLI left out: the summary request of its own autocompaction has no
    assistant row in the transcript, every main-chain call has one."""
    served = [json.loads(line) for line in (captured / "served.jsonl").read_text().splitlines()]
    calls = [r for r in served if r["session"] == "autocompact"]
    rows = [json.loads(line) for line in (captured / "transcript-autocompact.jsonl").read_text().splitlines()]
    written = {r["message"]["id"] for r in rows if r["type"] == "assistant"}
    assert {r["kind"] for r in calls} == {"main", "compact"}
    assert written == {r["message_id"] for r in calls if r["kind"] == "main"}


# --- statusline -----------------------------------------------------------------------------------------------


def _research_session() -> Session:
    """An interactive session recorded under tmux: one call, /compact, one call (docs/explanation/compaction.md)."""
    first = Call(3, 2_000, 148_000, 120, (Text("ok"),), "msg_1")
    second = Call(4, 1_000, 20_000, 50, (Text("ok"),), "msg_2")
    return Session("s-1", (Query("hello", (first,)), Query("/compact", (Compaction(150_345, 2_680, "manual"),)),
                           Query("again", (second,))))


def test_payload_context_window_as_the_cli_sent_it() -> None:
    payloads = statusline_payloads(_research_session(), compaction="zero")
    labels = [o.label for o in _points(_research_session())]
    windows = dict(zip(labels, (p["context_window"] for p in payloads)))
    # real payloads captured from the REPL: 150,003 / 75%; all-zero and 0 after /compact; 21,004 / 11%
    assert windows["q1 call 1"]["total_input_tokens"] == 150_003
    assert windows["q1 call 1"]["used_percentage"] == 75
    assert windows["q1 call 1"]["total_output_tokens"] == 120
    assert windows["q2 compaction"]["current_usage"] == {"input_tokens": 0, "output_tokens": 0,
                                                         "cache_creation_input_tokens": 0,
                                                         "cache_read_input_tokens": 0}
    assert windows["q2 compaction"]["used_percentage"] == 0
    for version in ("2.1.330", "2.1.331", "2.1.332", "9.0.0"):  # one call before /compact: no segment kept, null
        after = statusline_payloads(_research_session(), cli_version=version)[labels.index("q2 compaction")][
            "context_window"]
        assert after["current_usage"] is None and after["used_percentage"] is None
    assert windows["q3 call 1"]["total_input_tokens"] == 21_004 and windows["q3 call 1"]["used_percentage"] == 11
    assert {w["context_window_size"] for w in windows.values()} == {200_000}


def test_before_any_call_the_window_is_null() -> None:
    assert context_window(None, 200_000) == {
        "total_input_tokens": 0, "total_output_tokens": 0, "context_window_size": 200_000, "current_usage": None,
        "used_percentage": None, "remaining_percentage": None}


def test_percentage_rounds_half_up_and_clamps() -> None:
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 1}
    assert context_window({**usage, "cache_read_input_tokens": 1_000}, 200_000)["used_percentage"] == 1  # 0.5
    assert context_window({**usage, "cache_read_input_tokens": 500_000}, 200_000)["used_percentage"] == 100


def test_subagent_calls_do_not_move_the_payload() -> None:
    session = _session()
    payloads = statusline_payloads(session)
    for point, payload in zip(_points(session), payloads):
        if point.kind == "subagent":
            assert payload["context_window"]["total_input_tokens"] == point.truth.prompt


def test_payload_fields() -> None:
    session = _research_session()
    payload = statusline_payloads(session, transcript_path="/h/.claude/projects/-p/s-1.jsonl", cwd="/p",
                                  cli_version="9.9.9")[0]
    assert payload["session_id"] == "s-1" and payload["transcript_path"] == "/h/.claude/projects/-p/s-1.jsonl"
    assert payload["cwd"] == "/p" and payload["workspace"]["current_dir"] == "/p"
    assert payload["model"] == {"id": "claude-sonnet-4-5", "display_name": "Sonnet 4.5"}
    assert payload["version"] == "9.9.9"
    assert payload["exceeds_200k_tokens"] is False
    assert payload["cost"]["total_cost_usd"] > 0
    bare = statusline_payloads(session, with_context_window=False)
    assert all("context_window" not in p for p in bare)


def test_display_names() -> None:
    # the capture's model attachment: claude-sonnet-4-5 is "Sonnet 4.5"
    assert display_name("claude-sonnet-4-5") == "Sonnet 4.5"
    assert display_name("claude-opus-4-1-20250805") == "Opus 4.1"
    assert display_name("some-gateway-model") == "some-gateway-model"


def test_installed_cli_version_is_the_bundled_one() -> None:
    from ctxsim.live._claude import bundled_cli_version

    assert installed_cli_version() == bundled_cli_version()
    assert render_transcript(_research_session()).rows[2]["version"] == bundled_cli_version()


def test_tool_result_rows_of_a_hand_built_session() -> None:
    call = Call(1, 10, 100, 5, (ToolUse("t1", "Bash", {"command": "ls"}),), "m1")
    session = Session("s", (Query("q", (call, ToolResult("t1", "out", 3), Call(1, 10, 120, 5, (Text("x"),), "m2"))),))
    rows = render_transcript(session).rows
    result = next(r for r in rows if r["type"] == "user" and isinstance(r["message"]["content"], list))
    assert result["message"]["content"][0]["tool_use_id"] == "t1"
    assert "requestId" not in next(r for r in rows if r["type"] == "assistant")  # the call had none


# --- any session --------------------------------------------------------------------------------------------------


@settings(max_examples=40)
@given(sessions(calls=(1, 12)))
def test_any_session_renders_consistently(session: Session) -> None:
    """For generated sessions (subagents, compactions, cache expiries, resets): the points are the stream-json
    points, every file's rows chain and only grow from point to point, every main call has one finalized row per
    block, and the payload's gauge at each main call is that call's prompt."""
    transcript = render_transcript(session)
    assert [p.observation for p in transcript.points] == _points(session)
    for file in transcript.files.values():
        uuids: set[str] = set()
        for row in file.rows:
            if "uuid" in row:
                parent = row.get("parentUuid") or row.get("logicalParentUuid")
                assert parent is None or parent in uuids
                uuids.add(row["uuid"])
    previous: dict[str, int] = {}
    for point in transcript.points:
        assert all(point.rows.get(path, 0) >= n for path, n in previous.items())
        previous = dict(point.rows)
    rows = [r for f in transcript.files.values() for r in f.rows if r["type"] == "assistant"]
    for call in session.calls:
        mine = [r for r in rows if r["message"]["id"] == call.message_id]
        assert len(mine) == len(call.blocks)
        assert all(r["message"]["usage"]["output_tokens"] == call.output_tokens for r in mine)
    for point, payload in zip(transcript.points, statusline_payloads(session)):
        if point.observation.kind == "call":
            assert payload["context_window"]["total_input_tokens"] == point.observation.truth.prompt
            assert payload["session_id"] == point.session_id
