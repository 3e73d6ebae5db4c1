"""Scenarios on recorded streams (``stream: FILE``): stream-json and Claude Code transcripts, and their truth.

The truth of a recording is derived from it (the reference semantics). These tests pin that derivation to
numbers worked out by hand from the lines below, to the world's own truth (a session rendered as the CLI writes
it, then read back as a recording), and to the real CLI's transcripts in ``tests/captures``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ctxsim.check import run_tracker
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import ScenarioError, load_scenario
from ctxsim.trackers.catalogue import make
from ctxsim.wire import render
from ctxsim.world import SessionBuilder


def usage(i: int, cc: int, cr: int, out: int) -> dict[str, int]:
    return {"input_tokens": i, "cache_creation_input_tokens": cc, "cache_read_input_tokens": cr,
            "output_tokens": out}


def line(kind: str, uuid: str, *, side: bool = False, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "isSidechain": side, "parentUuid": None, "sessionId": "sess-1", "uuid": uuid, **fields}


def assistant(uuid: str, mid: str, u: dict[str, int], block: dict[str, Any], *, side: bool = False,
              model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    return line("assistant", uuid, side=side, requestId=f"req_{mid}", message={
        "id": mid, "type": "message", "role": "assistant", "model": model, "content": [block], "usage": u})


def user(uuid: str, content: Any, *, side: bool = False, **extra: Any) -> dict[str, Any]:
    return line("user", uuid, side=side, message={"role": "user", "content": content}, **extra)


TEXT = {"type": "text", "text": "ok"}
TASK = {"type": "tool_use", "id": "toolu_task", "name": "Task", "input": {"description": "explore", "prompt": "p"}}
READ = {"type": "tool_use", "id": "toolu_read", "name": "Read", "input": {"file_path": "/x.py"}}

TRANSCRIPT = [
    user("u1", "Fix the bug"),                                                                      # 1
    assistant("a1", "m1", usage(3, 1000, 20_000, 1), {"type": "thinking", "thinking": "t", "signature": "s"}),
    assistant("a2", "m1", usage(3, 1000, 20_000, 250), TASK),                                       # 3
    assistant("s1", "sm1", usage(3, 12_000, 0, 5), READ, side=True),                               # 4
    user("s2", [{"type": "tool_result", "tool_use_id": "toolu_read", "content": "code"}], side=True),
    assistant("s3", "sm2", usage(3, 500, 12_000, 40), TEXT, side=True),                             # 6
    user("u2", [{"type": "tool_result", "tool_use_id": "toolu_task", "content": "found it"}]),
    assistant("a3", "m2", usage(1, 800, 21_000, 60), TEXT),                                         # 8
    assistant("a4", "m-synthetic", usage(0, 0, 0, 0), TEXT, model="<synthetic>"),
    line("progress", "p1", data={"message": {"usage": usage(1, 0, 900_000, 0)}}),                  # 10
    line("system", "c1", subtype="compact_boundary", content="Conversation compacted",
         compactMetadata={"trigger": "auto", "preTokens": 22_000, "postTokens": 9000}),            # 11
    user("u3", "This session is being continued...", isCompactSummary=True),
    assistant("a5", "m3", usage(3, 9500, 20_000, 30), TEXT),                                        # 13
    assistant("a6", "m1", usage(3, 1000, 20_000, 250), TASK),                                       # 14: a replay
]


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return path


def scenario_for(tmp_path: Path, stream: str, expect: str = "") -> Path:
    path = tmp_path / "rec.yaml"
    path.write_text(f"stream: {stream}\n{expect}")
    return path


def test_a_transcript_plays_with_the_truth_derived_by_hand(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "t.jsonl", TRANSCRIPT)
    sc = load_scenario(scenario_for(tmp_path, "t.jsonl", "expect:\n  fail: [arbiter-msgid]\n"))
    assert sc.recording is not None and sc.recording.format == "transcript"
    points = [(o.label, o.truth.prompt, o.truth.next_request, sc.points[o.label]) for o in sc.observations()]
    assert points == [
        ("q1 call 1", 21_003, 21_003 + 250, 3),           # m1: 3 + 1,000 + 20,000; its last line says out 250
        ("q1 subagent call 1", 21_003, 21_253, 4),        # sidechain calls leave the main truth alone
        ("q1 subagent call 2", 21_003, 21_253, 6),
        ("q1 call 2", 21_801, 21_861, 8),                 # m2: 1 + 800 + 21,000, out 60; <synthetic> skipped
        ("q1 compaction", 29_000, 30_003, 11),            # not knowable: postTokens and the system prefix the first
                                                          # call read from cache (20,000) up to its whole prompt
                                                          # (21,003); the progress line's usage is dropped
        ("q1 call 3", 29_503, 29_533, 13),                # m3; the replay of m1 on line 14 changes nothing
    ]
    compaction = sc.observations()[4].truth
    assert not compaction.knowable and compaction.unseen == (29_000, 30_003)
    assert "post_tokens" in compaction.why
    assert run_scenario(sc, make("reference")).ok
    arbiter = run_scenario(sc, make("arbiter-msgid"))
    # max(cache_read) over every message, sidechains included, survives the compaction
    assert not arbiter.ok and [p.observation.label for p in arbiter.report.failures][-2:] == [
        "q1 compaction", "q1 call 3"]


def test_sidechain_lines_become_subagent_messages_of_the_open_task(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "t.jsonl", TRANSCRIPT)
    sc = load_scenario(scenario_for(tmp_path, "t.jsonl"))
    frames = [f.data for s in sc.scripts() for f in s.frames]
    assert [f["type"] for f in frames] == ["user", "assistant", "assistant", "assistant", "user", "assistant",
                                           "user", "assistant", "assistant", "system", "user", "assistant",
                                           "assistant"]
    assert [f["parent_tool_use_id"] for f in frames if f["type"] == "assistant"] == [
        None, None, "toolu_task", "toolu_task", None, None, None, None]
    boundary = frames[9]
    assert boundary["subtype"] == "compact_boundary" and boundary["compact_metadata"] == {
        "trigger": "auto", "pre_tokens": 22_000, "post_tokens": 9000}
    assert frames[1]["request_id"] == "req_m1" and frames[1]["session_id"] == "sess-1"


def test_a_compaction_without_its_size_leaves_the_truth_unknown_until_the_next_call(tmp_path: Path) -> None:
    lines = [dict(d) for d in TRANSCRIPT[:11]] + [TRANSCRIPT[12]]
    lines[10] = {**lines[10], "compactMetadata": {"trigger": "auto", "preTokens": 22_000}}
    write_jsonl(tmp_path / "t.jsonl", lines)
    sc = load_scenario(scenario_for(tmp_path, "t.jsonl"))
    assert [o.label for o in sc.observations()][-2:] == ["q1 call 2", "q1 call 3"]


@pytest.mark.parametrize("partial", [False, True])
def test_a_rendered_stream_read_back_has_the_worlds_truth(tmp_path: Path, partial: bool) -> None:
    session = (SessionBuilder(seed=4, name="world")
               # the first call reads the 12,000-token baseline from cache, as the builder's own calls do: the
               # system prefix a recording shows after a compaction
               .query("one").call(input=3, cache_creation=18_900, cache_read=12_000, output=140, results=(2000,))
               .call(output=60).start_subagent("look", prompt_tokens=300).call(results=(4000,)).call(results=(10,))
               .end_subagent(result_tokens=500).call(output=80)
               .query("two").compact(12_000).call(results=(700,)).call()
               .build())
    scripts = render(session, include_partial_messages=partial)
    write_jsonl(tmp_path / "s.jsonl", [f.data for s in scripts for f in s.frames])
    sc = load_scenario(scenario_for(tmp_path, "s.jsonl"))
    assert sc.recording is not None and sc.recording.format == "stream-json"
    world = [f.observation for s in scripts for f in s.frames if f.observation is not None]
    derived = sc.observations()
    assert [o.label for o in derived] == [o.label for o in world]
    # after the compaction a recording (which carries no get_context_usage figure) is not knowable exactly: its band
    # holds the world's truth
    compacted = [(o.truth, w.truth) for o, w in zip(derived, world) if o.kind == "compaction"]
    assert compacted and all(not d.knowable and d.unseen is not None and d.unseen[0] <= w.prompt <= d.unseen[1]
                             for d, w in compacted)
    assert [o.truth.prompt for o in derived if o.kind != "compaction"] == [
        o.truth.prompt for o in world if o.kind != "compaction"]
    if partial:  # the final output arrives in message_delta: the whole band is the world's
        assert [o.truth for o in derived if o.kind != "compaction"] == [
            o.truth for o in world if o.kind != "compaction"]
    assert len(sc.session.queries) == 2 and sc.session.model == session.model
    assert run_tracker(make("reference"), sc.session, scripts=sc.scripts()).ok


def test_stream_as_a_mapping_with_a_format(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "t.jsonl", TRANSCRIPT)
    path = tmp_path / "m.yaml"
    path.write_text("stream: {file: t.jsonl, format: transcript}\nworld: {window: 100000}\n")
    sc = load_scenario(path)
    assert sc.recording is not None and sc.session.window == 100_000 and sc.observations()[0].window == 100_000


@pytest.mark.parametrize(("stream", "content", "expected"), [
    ("t.jsonl", '{"type": "user"}\nnot json\n', "2: stream.file: t.jsonl:2: not a JSON line"),
    ("t.jsonl", "[1, 2]\n", "2: stream.file: t.jsonl:1: a line is a JSON object, got list"),
    ("t.jsonl", '{"type": "assistant", "message": {"content": []}, "session_id": "s", "uuid": "u"}\n',
     "2: stream.file: t.jsonl:1: the SDK cannot parse this line: "),
    ("t.jsonl", json.dumps(TRANSCRIPT[3]) + "\n", "2: stream.file: t.jsonl: no main-chain call with usage"),
    ("none.jsonl", None, "2: stream.file: no such file: none.jsonl (relative to the scenario's directory)"),
])
def test_a_bad_recording_is_one_error_naming_its_line(tmp_path: Path, stream: str, content: str | None,
                                                      expected: str) -> None:
    if content is not None:
        (tmp_path / stream).write_text(content)
    path = tmp_path / "rec.yaml"
    path.write_text(f"name: r\nstream: {stream}\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, display="rec.yaml")
    message = str(info.value)
    assert message.startswith(f"ctxsim: rec.yaml:{expected}"), message
    assert "\n" not in message


@pytest.mark.parametrize(("text", "expected"), [
    ("stream: {file: t.jsonl, partial: true}\n",
     "1: stream.partial: partial applies to a rendered session, not to a recorded stream"),
    ("stream: {file: t.jsonl, format: csv}\n", "1: stream.format: expected one of auto, stream-json, transcript"),
    ("stream: 5\n", "1: stream: expected a file name (a recorded stream) or a mapping, got 5"),
    ("stream: {partial: true}\n", "1: queries: required key is missing (or give a recorded stream: stream.file)"),
])
def test_stream_key_mistakes(tmp_path: Path, text: str, expected: str) -> None:
    write_jsonl(tmp_path / "t.jsonl", TRANSCRIPT)
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match="^" + re.escape(f"ctxsim: s.yaml:{expected}")):
        load_scenario(path, display="s.yaml")


# --- the real CLI's transcripts -----------------------------------------------------------------------------------


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def call_ids(rows: list[dict[str, Any]]) -> list[str]:
    """The message ids of the calls a transcript's rows state, in order (a call writes one row per block)."""
    return list(dict.fromkeys(r["message"]["id"] for r in rows if r["type"] == "assistant"))


def test_a_real_autocompaction_is_tracked_by_the_reference_and_not_by_max_cache_read(
        tmp_path: Path, captured: Path) -> None:
    path = captured / "transcript-autocompact.jsonl"
    rows = rows_of(path)
    sc = load_scenario(scenario_for(tmp_path, str(path)))
    observations = sc.observations()
    # one point per call (a call's rows share its message id), and the compaction the CLI made by itself
    assert [o.kind for o in observations].count("call") == len(call_ids(rows)) >= 3
    boundary = next(i for i, r in enumerate(rows, 1) if r.get("subtype") == "compact_boundary")
    assert rows[boundary - 1]["compactMetadata"]["trigger"] == "auto"
    compaction = next(o for o in observations if o.kind == "compaction")
    assert sc.points[compaction.label] == boundary
    usages = {r["message"]["id"]: r["message"]["usage"] for r in rows if r["type"] == "assistant"}
    assert [o.truth.prompt for o in observations if o.kind == "call"] == [
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"] for u in usages.values()]
    assert run_scenario(sc, make("reference")).ok
    # max(cache_read) over every message survives the compaction: every point from it on fails
    failed = {p.observation.label for p in run_scenario(sc, make("arbiter-msgid")).report.failures}
    after = [o.label for o in observations if sc.points[o.label] >= boundary]
    assert after and set(after) <= failed


def test_inline_sidechains_are_subagent_points(tmp_path: Path, captured: Path) -> None:
    """Claude Code 1.0 wrote a subagent's rows into the main transcript (``isSidechain: true``) where today it writes
    them to a file of their own: the captured subagent's rows, put back after the row of its ``Agent`` call."""
    main = rows_of(captured / "transcript-main.jsonl")
    (sub_file,) = captured.glob("transcript-subagent-agent-*.jsonl")
    sub = rows_of(sub_file)
    at = next(i for i, r in enumerate(main, 1) if r["type"] == "assistant"
              and any(b.get("name") == "Agent" for b in r["message"]["content"]))
    assert all(r["isSidechain"] for r in sub if "uuid" in r)  # the request records carry no chain
    write_jsonl(tmp_path / "inline.jsonl", main[:at] + sub + main[at:])
    sc = load_scenario(scenario_for(tmp_path, "inline.jsonl"))
    kinds = [o.kind for o in sc.observations()]
    assert kinds.count("call") == len(call_ids(main)) and kinds.count("subagent") == len(call_ids(sub)) == 2
    assert run_scenario(sc, make("reference")).ok


def test_a_subagents_own_transcript_has_nothing_to_check(tmp_path: Path, captured: Path) -> None:
    (sub_file,) = captured.glob("transcript-subagent-agent-*.jsonl")
    with pytest.raises(ScenarioError, match="no main-chain call with usage: nothing to check against"):
        load_scenario(scenario_for(tmp_path, str(sub_file)))


# --- what a recording's calls are: ids reused, per-block lines split by tool results, calls without usage --------

READ_2 = {"type": "tool_use", "id": "toolu_b", "name": "Read", "input": {"file_path": "/y.py"}}


def _labels_and_truths(tmp_path: Path, lines: list[dict[str, Any]]) -> list[tuple[str, int | None, bool, int]]:
    write_jsonl(tmp_path / "t.jsonl", lines)
    sc = load_scenario(scenario_for(tmp_path, "t.jsonl"))
    assert run_scenario(sc, make("reference")).ok, run_scenario(sc, make("reference")).report
    return [(o.label, o.truth.prompt if o.truth.knowable else None, o.truth.knowable, sc.points[o.label])
            for o in sc.observations()]


def test_an_id_reappearing_later_with_another_prompt_is_a_new_call(tmp_path: Path) -> None:
    # a proxy that gives every response the same id: three calls, three prompts (Claude Code's own ids never repeat)
    lines = [user("u1", "go"),
             assistant("a1", "msg_proxy", usage(3, 100, 12_000, 50), TEXT),                               # 2
             user("u2", [{"type": "tool_result", "tool_use_id": "toolu_read", "content": "x"}]),
             assistant("a2", "msg_other", usage(3, 400, 12_103, 50), TEXT),                                # 4
             assistant("a3", "msg_proxy", usage(3, 700, 12_503, 50), TEXT),                                # 5
             assistant("a4", "msg_proxy", usage(3, 100, 12_000, 50), TEXT)]                                # 6: a replay
    assert _labels_and_truths(tmp_path, lines) == [
        ("q1 call 1", 12_103, True, 2), ("q1 call 2", 12_506, True, 4), ("q1 call 3", 13_206, True, 5)]


def test_a_call_whose_blocks_are_split_by_its_tool_results_is_one_call_with_its_point_on_its_last_line(
        tmp_path: Path) -> None:
    lines = [user("u1", "go"),
             assistant("a1", "m1", usage(3, 100, 12_000, 80), READ),                                       # 2
             user("r1", [{"type": "tool_result", "tool_use_id": "toolu_read", "content": "x"}]),
             assistant("a2", "m1", usage(3, 100, 12_000, 80), READ_2),                                     # 4
             user("r2", [{"type": "tool_result", "tool_use_id": "toolu_b", "content": "y"}]),
             assistant("a3", "m2", usage(3, 900, 12_103, 20), TEXT)]                                       # 6
    assert _labels_and_truths(tmp_path, lines) == [("q1 call 1", 12_103, True, 4), ("q1 call 2", 13_006, True, 6)]


def test_a_call_without_usage_is_a_call_whose_size_is_not_knowable(tmp_path: Path) -> None:
    no_usage = assistant("a2", "m2", usage(0, 0, 0, 0), TEXT)
    del no_usage["message"]["usage"]
    lines = [user("u1", "go"),
             assistant("a1", "m1", usage(3, 100, 12_000, 80), TEXT),                                       # 2
             no_usage,                                                                                     # 3
             assistant("a3", "m3", usage(3, 900, 12_103, 20), TEXT)]                                       # 4
    assert _labels_and_truths(tmp_path, lines) == [
        ("q1 call 1", 12_103, True, 2), ("q1 call 2", None, False, 3), ("q1 call 3", 13_006, True, 4)]


# --- the world of a recording -----------------------------------------------------------------------------------

GATEWAY = [  # a LiteLLM-style gateway: input_tokens is the whole prompt, the cache read a part of it (aider#5516)
    assistant("g1", "mg1", usage(17_111, 0, 17_102, 250), TEXT),
    user("g2", "next"),
    assistant("g3", "mg2", usage(18_000, 0, 17_111, 90), TEXT),
]


def test_usage_inclusive_changes_the_truth_of_a_recording(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "t.jsonl", GATEWAY)
    additive = load_scenario(scenario_for(tmp_path, "t.jsonl"))
    (tmp_path / "inc.yaml").write_text("stream: t.jsonl\nworld: {usage: inclusive}\n")
    inclusive = load_scenario(tmp_path / "inc.yaml")
    assert [o.truth.prompt for o in additive.observations()][:2] == [34_213, 35_111]
    assert [o.truth.prompt for o in inclusive.observations()][:2] == [17_111, 18_000]
    # a tracker that adds the cache read to an inclusive input passes the additive reading, fails the inclusive one
    assert run_scenario(additive, make("claude-code-statusline")).ok
    assert not run_scenario(inclusive, make("claude-code-statusline")).ok
    assert run_scenario(inclusive, make("reference")).ok is False  # the catalogue's reference is told nothing...
    from ctxsim.trackers.catalogue import reference_for
    assert run_scenario(inclusive, reference_for(inclusive.session)).ok  # ...the scenario's reference is told


@pytest.mark.parametrize(("world", "message"), [
    ("{model: claude-opus-4-6}", "2: world.model: does not apply to a recorded stream (stream.file): a recording "
                                 "carries its own model"),
    ("{baseline: 30000}", "2: world.baseline: does not apply to a recorded stream"),
    ("{max_output: 64000}", "2: world.max_output: does not apply to a recorded stream"),
])
def test_a_world_key_that_cannot_apply_to_a_recording_is_refused(tmp_path: Path, world: str, message: str) -> None:
    write_jsonl(tmp_path / "t.jsonl", GATEWAY)
    (tmp_path / "r.yaml").write_text(f"stream: t.jsonl\nworld: {world}\n")
    with pytest.raises(ScenarioError, match=re.escape(message)):
        load_scenario(tmp_path / "r.yaml")


def test_the_truth_reader_of_recordings_shares_no_code_with_the_reference() -> None:
    root = Path(__file__).resolve().parents[2] / "src" / "ctxsim" / "recordings"
    for name in ("_recording.py", "_truth.py"):
        text = (root / name).read_text()
        assert "reference" not in re.findall(r"^from \.\.(\w+)", text, re.MULTILINE), name
        assert not re.search(r"\b(system_prefix|compaction_truth|prompt_tokens|cache_read_tokens)\b", text), name
