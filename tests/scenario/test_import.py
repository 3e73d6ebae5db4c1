"""``ctxsim import``: recordings to shareable scenarios that replay the same numbers, with nothing private left.

The originals are played as they load today (``stream: FILE``, the recording reader); the import must give the
reference the same numbers at every point and every catalogued tracker the same verdict. The CLI's own
``get_context_usage`` figures are read from the captures themselves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeSDKClient

from ctxsim.cli import main
from ctxsim.importer import ImportFailure, import_recordings, write_import
from ctxsim.importer._scrub import Scrubber, filler
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.sdk import FakeTransport
from ctxsim.trackers.catalogue import CATALOGUE, make
from ctxsim.wire import render
from ctxsim.world import Compaction, SessionBuilder


def original(tmp_path: Path, recording: Path, fmt: str = "auto") -> SessionScenario:
    """The recording played as it loads today."""
    path = tmp_path / "original.yaml"
    path.write_text(f"stream: {{file: {json.dumps(str(recording))}, format: {fmt}}}\n")
    scenario = load_scenario(path)
    assert isinstance(scenario, SessionScenario)
    return scenario


def imported(tmp_path: Path, *recordings: Path, **options: Any) -> SessionScenario:
    out = tmp_path / "out" / "imported.yaml"
    write_import(list(recordings), out, **options)
    scenario = load_scenario(out)
    assert isinstance(scenario, SessionScenario)
    return scenario


def numbers(scenario: SessionScenario, kinds: tuple[str, ...] = ("call", "compaction", "result", "subagent")
            ) -> list[tuple[str, int, int, int | None]]:
    """The reference's run: ``(label, prompt, output, estimate)`` at every point of ``kinds``."""
    report = run_scenario(scenario, make("reference")).report
    return [(p.observation.label, p.observation.truth.prompt, p.observation.truth.output, p.estimate)
            for p in report.points if p.observation.kind in kinds]


def verdicts(scenario: SessionScenario) -> dict[str, bool]:
    return {name: run_scenario(scenario, entry.factory(), name=name).report.ok for name, entry in CATALOGUE.items()}


def subagent_file(captured: Path) -> Path:
    """The transcript of the subagent the three-query capture's ``Agent`` call started."""
    (path,) = captured.glob("transcript-subagent-agent-*.jsonl")
    return path


def single_recordings(captured: Path) -> list[tuple[Path, str]]:
    """Every single-file recording of the captures, with the format it loads in today."""
    return [(captured / "stream-json-compact.jsonl", "stream-json"), (captured / "transcript-main.jsonl", "auto"),
            (captured / "transcript-autocompact.jsonl", "auto"),
            (subagent_file(captured), "stream-json")]  # a subagent's own transcript loads only so today


def said_after_each_query(capture: Path) -> list[int]:
    """``get_context_usage()["totalTokens"]`` after each query, as the capture recorded it."""
    rows = [json.loads(x) for x in capture.read_text().splitlines()]
    return [r["context_usage"]["totalTokens"] for r in rows if "context_usage" in r]


def calls_of(transcript: Path) -> dict[str, dict[str, int]]:
    """The usage of every call of a transcript, by message id (the last row of an id states its final output)."""
    rows = [json.loads(x) for x in transcript.read_text().splitlines()]
    return {r["message"]["id"]: r["message"]["usage"] for r in rows if r["type"] == "assistant"}


def prompt_of(usage: dict[str, int]) -> int:
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]


def unwrap(capture: Path, tmp_path: Path) -> Path:
    """A capture's ``{"raw": ...}`` lines as the plain stream-json the CLI printed."""
    lines = [json.loads(line) for line in capture.read_text().splitlines()]
    path = tmp_path / "plain.jsonl"
    path.write_text("".join(json.dumps(d["raw"]) + "\n" for d in lines if "raw" in d))
    return path


# --- the captured recordings --------------------------------------------------------------------------------------


def test_every_captured_recording_imports_with_the_same_numbers_and_verdicts(captured: Path, tmp_path: Path) -> None:
    for i, (recording, fmt) in enumerate(single_recordings(captured)):
        before = original(tmp_path, recording, fmt)  # a capture plays as it is, its get_context_usage figures too
        after = imported(tmp_path / str(i), recording)
        assert numbers(after) == numbers(before), recording.name
        assert verdicts(after) == verdicts(before), recording.name


def test_a_capture_without_its_figures_declares_the_compaction_not_knowable(captured: Path, tmp_path: Path) -> None:
    capture = captured / "stream-json-compact.jsonl"
    said = original(tmp_path, capture, "stream-json")
    plain = original(tmp_path, unwrap(capture, tmp_path), "stream-json")
    with_figure = next(o.truth for o in said.observations() if o.kind == "compaction")
    band = next(o.truth for o in plain.observations() if o.kind == "compaction")
    frames = [json.loads(x)["raw"] for x in capture.read_text().splitlines() if "raw" in json.loads(x)]
    post = next(f for f in frames if f.get("subtype") == "compact_boundary")["compact_metadata"]["post_tokens"]
    first = next(f for f in frames if f["type"] == "assistant")["message"]["usage"]
    cli = said_after_each_query(capture)[1]
    # what the CLI said after /compact: the truth where the capture carries it, within the band where it does not
    assert with_figure.knowable and with_figure.prompt == cli
    assert not band.knowable and band.unseen is not None and band.unseen[0] <= cli <= band.unseen[1]
    assert band.unseen == (post, post + prompt_of(first))  # the summary, plus nothing cached .. the first call's
    assert "post_tokens" in band.why


def test_a_main_transcript_and_its_subagent_in_any_order_with_copies(captured: Path, tmp_path: Path) -> None:
    main_file, sub = captured / "transcript-main.jsonl", subagent_file(captured)
    copy = tmp_path / "resumed.jsonl"  # a resumed session repeats lines it resumes
    copy.write_text("".join(main_file.read_text().splitlines(keepends=True)[:30]))
    merged = imported(tmp_path / "a", sub, copy, main_file, sub)
    alone = original(tmp_path, main_file)
    main_kinds = ("call", "compaction", "result")
    assert numbers(merged, main_kinds) == numbers(alone, main_kinds)
    # the subagent's two calls are subagent points now, under the Agent tool use (a transcript reads as one query)
    assert len(calls_of(sub)) == 2
    assert [p.label for p in merged.observations() if p.kind == "subagent"] == [
        "q1 subagent call 1", "q1 subagent call 2"]
    stream = [json.loads(x) for x in (tmp_path / "a" / "out" / "imported.jsonl").read_text().splitlines()]
    parents = {d["parent_tool_use_id"] for d in stream if d.get("parent_tool_use_id")}
    agent_uses = {b["id"] for d in stream if d["type"] == "assistant" for b in d["message"]["content"]
                  if b.get("type") == "tool_use" and b.get("name") == "Agent"}
    assert parents == agent_uses and len(parents) == 1
    assert imported(tmp_path / "b", main_file, sub).observations() == merged.observations()


def test_the_cli_capture_replays_its_own_get_context_usage(captured: Path, tmp_path: Path) -> None:
    capture = captured / "stream-json-compact.jsonl"
    said = said_after_each_query(capture)
    frames = [json.loads(x)["raw"] for x in capture.read_text().splitlines() if "raw" in json.loads(x)]
    post = next(f for f in frames if f.get("subtype") == "compact_boundary")["compact_metadata"]["post_tokens"]
    assert len(said) == 3 and said[1] > post
    scenario = imported(tmp_path, capture)
    results = [estimate for label, _, _, estimate in numbers(scenario, ("result",))]
    # after q1 and q3 the reference reads what the CLI's /context said
    assert (results[0], results[2]) == (said[0], said[2])
    # after /compact the CLI said more than post_tokens (system prompt, tools and the summary): the imported
    # compaction states it, so the replay's truth and its get_context_usage are the CLI's own
    compaction = next(s for q in scenario.session.queries for s in q.steps if isinstance(s, Compaction))
    assert (compaction.post_tokens, compaction.context_tokens) == (post, said[1])

    async def after_compact() -> int:
        with anyio.fail_after(30):
            async with ClaudeSDKClient(transport=FakeTransport(scenario.session)) as client:
                for query in scenario.session.queries[:2]:
                    await client.query(query.prompt)
                    async for _ in client.receive_response():
                        pass
                return int((await client.get_context_usage())["totalTokens"])

    assert anyio.run(after_compact) == said[1]
    assert f"{said[0]:,}, {said[1]:,}, {said[2]:,}" in scenario.path.read_text()


def test_the_transcript_capture_holds_the_sdk_get_context_usage_figures(captured: Path, tmp_path: Path) -> None:
    dump = captured / "sdk-messages-three-queries.jsonl"
    said = said_after_each_query(dump)
    assert len(said) == 3
    scenario = imported(tmp_path, captured / "transcript-main.jsonl")
    estimates = iter(e for _, _, _, e in numbers(scenario, ("call",)))
    assert all(value in estimates for value in said)  # in order: the last call of each query
    with pytest.raises(ImportFailure, match="a dump of SDK Message objects, not a recording"):
        import_recordings([dump], name="x")


def test_a_subagent_transcript_alone_is_its_own_main_chain(captured: Path, tmp_path: Path) -> None:
    recording = subagent_file(captured)
    scenario = imported(tmp_path, recording)
    # every call of the subagent's own file is a call of its one query, its prompt the usage its rows state
    assert numbers(scenario) == [(f"q1 call {i}", prompt_of(u), u["output_tokens"], prompt_of(u))
                                 for i, u in enumerate(calls_of(recording).values(), 1)]
    assert "a subagent's own transcript" in scenario.path.read_text()


# --- scrubbing --------------------------------------------------------------------------------------------------

SECRETS = {
    "api key": "sk-ant-api03-Zx8QmW3rT9vLp2KdN7yH4sFj6GcB1aEu",
    "token": "ghp_9fKQ2xLmP7vR3tYs8WcN4bZ1hJ6dE0gA5uTq",
    "email": "alice.liddell@wonder.example.org",
    "path": "/Users/alice/acme-secret/src/payroll.py",
    "slug": "-Users-alice-acme-secret",
    "user": "alice",
    "host": "alice-mbp.corp.wonder.example",
    "url": "https://intranet.wonder.example/wiki/Payroll?session=77Q",
    "free text": "the merger with Globex closes on Friday",
}
LEAKS = [*SECRETS.values(), "alice", "acme", "Globex", "wonder", "sk-ant", "ghp_", "payroll", "Payroll", "@",
         "https://", "/Users/", "msg_01Planted", "toolu_01Planted"]


def planted_transcript(tmp_path: Path) -> tuple[Path, Path]:
    s = SECRETS
    text = f"Ask {s['email']} about {s['path']} on {s['host']}; {s['free text']}. Key {s['api key']}"
    common = {"sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "cwd": s["path"].rsplit("/", 2)[0],
              "gitBranch": f"{s['user']}/secret-branch", "version": "2.1.39", "userType": "external"}

    def line(kind: str, uuid: str, parent: str | None, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": False, "message": message,
                "timestamp": f"2026-02-11T21:16:0{uuid[-1]}Z", **common, **extra}

    def usage(i: int, cc: int, cr: int, out: int) -> dict[str, int]:
        return {"input_tokens": i, "cache_creation_input_tokens": cc, "cache_read_input_tokens": cr,
                "output_tokens": out}

    agent = {"type": "tool_use", "id": "toolu_01PlantedAgent", "name": "Agent",
             "input": {"description": s["free text"], "prompt": text, s["user"]: s["url"]}}
    main = [
        line("user", "u-1", None, {"role": "user", "content": text}),
        line("assistant", "a-1", "u-1", {"id": "msg_01PlantedA", "model": "claude-opus-4-6", "role": "assistant",
                                         "content": [{"type": "text", "text": text}],
                                         "usage": usage(3, 2_000, 20_000, 9)}, requestId="req_01Planted"),
        line("assistant", "a-2", "a-1", {"id": "msg_01PlantedA", "model": "claude-opus-4-6", "role": "assistant",
                                         "content": [agent], "usage": usage(3, 2_000, 20_000, 240)},
             requestId="req_01Planted"),
        line("user", "u-3", "a-2", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01PlantedAgent", "content": s["url"]}]},
             toolUseResult={"agentId": "a1ice5", "outputFile": f"/tmp/claude/{s['slug']}/x.output",
                            "prompt": text}),
        line("assistant", "a-5", "u-3", {"id": "msg_01PlantedB", "model": "claude-opus-4-6", "role": "assistant",
                                         "content": [{"type": "thinking", "thinking": text, "signature": s["token"]}],
                                         "usage": usage(1, 900, 22_000, 70)}),
        {"type": "system", "subtype": "compact_boundary", "uuid": "c-6", "parentUuid": "a-5", "isSidechain": False,
         "content": f"Conversation compacted for {s['user']}", "timestamp": "2026-02-11T21:16:06Z",
         "compactMetadata": {"trigger": "manual", "preTokens": 23_000, "postTokens": 4_000}, **common},
        line("assistant", "a-7", "c-6", {"id": "msg_01PlantedC", "model": "claude-opus-4-6", "role": "assistant",
                                         "content": [{"type": "text", "text": s["slug"] + s["url"]}],
                                         "usage": usage(3, 5_000, 12_000, 30)}),
    ]
    sub = [{**line("assistant", "s-4", None, {
        "id": "msg_01PlantedS", "model": "claude-haiku-4-5", "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01PlantedRead", "name": "Read",
                     "input": {"file_path": s["path"]}}],
        "usage": usage(3, 11_000, 0, 12)}), "isSidechain": True, "agentId": "a1ice5"}]
    (tmp_path / "rec").mkdir()
    main_path, sub_path = tmp_path / "rec" / "session.jsonl", tmp_path / "rec" / "agent-a1ice5.jsonl"
    main_path.write_text("".join(json.dumps(d) + "\n" for d in main))
    sub_path.write_text("".join(json.dumps(d) + "\n" for d in sub))
    return main_path, sub_path


def test_planted_secrets_never_survive_an_import(tmp_path: Path) -> None:
    main_path, sub_path = planted_transcript(tmp_path)
    out = tmp_path / "out" / "planted.yaml"
    written = write_import([main_path, sub_path], out)
    data = b"".join(p.read_bytes() for p in written)
    for leak in LEAKS:
        assert leak.encode() not in data, leak
    # every usage number and the compaction's sizes survive, on the same (re-keyed) calls
    stream = [json.loads(x) for x in written[1].read_text().splitlines()]
    usages = [d["message"]["usage"] for d in stream if d["type"] == "assistant"]
    assert [(u["input_tokens"], u["cache_creation_input_tokens"], u["cache_read_input_tokens"],
             u["output_tokens"]) for u in usages] == [
        (3, 2_000, 20_000, 9), (3, 2_000, 20_000, 240), (3, 11_000, 0, 12), (1, 900, 22_000, 70),
        (3, 5_000, 12_000, 30)]
    boundary = next(d for d in stream if d.get("subtype") == "compact_boundary")
    assert boundary["compact_metadata"] == {"trigger": "manual", "pre_tokens": 23_000, "post_tokens": 4_000}
    ids = [d["message"]["id"] for d in stream if d["type"] == "assistant"]
    assert ids[0] == ids[1] and len(set(ids)) == 4 and all(re.fullmatch(r"msg_0+\d+", i) for i in ids)
    # texts keep their length (character-based estimators see the same sizes)
    texts = [b["text"] for d in stream if d["type"] == "assistant" for b in d["message"]["content"]
             if b.get("type") == "text"]
    s = SECRETS
    assert [len(t) for t in texts] == [len(f"Ask {s['email']} about {s['path']} on {s['host']}; "
                                           f"{s['free text']}. Key {s['api key']}"), len(s["slug"] + s["url"])]
    # the same input gives the same bytes; the replay gives every tracker the original's verdict
    again = tmp_path / "again" / "planted.yaml"
    assert b"".join(p.read_bytes() for p in write_import([sub_path, main_path], again)) == data
    merged = load_scenario(out)
    assert isinstance(merged, SessionScenario)
    assert verdicts(merged) == verdicts(original(tmp_path, written[1], "stream-json"))
    alone = original(tmp_path, main_path)
    kinds = ("call", "compaction")
    assert numbers(merged, kinds) == numbers(alone, kinds)


def test_planted_secrets_in_a_stream_json_capture(tmp_path: Path) -> None:
    s = SECRETS
    session = SessionBuilder(seed=3).query("go").call(input=3, cache_creation=1000, cache_read=30_000,
                                                       output=50).build()
    frames = [f.data for script in render(session) for f in script.frames]
    frames.insert(0, {"type": "system", "subtype": "init", "cwd": s["path"], "session_id": frames[0]["session_id"],
                      "model": "claude-sonnet-4-5", "claude_code_version": "2.1.330", "apiKeySource": s["api key"],
                      "mcp_servers": [{"name": s["host"], "status": "connected"}], "tools": ["Bash", s["user"]],
                      "memory_paths": {"user": f"/home/{s['user']}/.claude/{s['slug']}"}, "uuid": "x"})
    first = next(f for f in frames if f["type"] == "assistant")
    first["message"]["content"] = [{"type": "text", "text": s["free text"] + s["email"] + s["token"]}]
    path = tmp_path / "capture.jsonl"
    path.write_text("".join(json.dumps({"raw": f}) + "\n" for f in frames)
                    + json.dumps({"context_usage": {"totalTokens": 31_003, "maxTokens": 200_000}}) + "\n")
    out = tmp_path / "out" / "cap.yaml"
    data = b"".join(p.read_bytes() for p in write_import([path], out, steps=False))
    for leak in LEAKS:
        assert leak.encode() not in data, leak
    assert b"31,003" in data and b"2.1.330" in data


def test_scrubbing_rules() -> None:
    scrub = Scrubber()
    text = "line one\n\tline two with /home/bob"
    assert len(filler(text)) == len(text) and filler(text).count("\n") == 1 and "bob" not in filler(text)
    uuid = "5d1e9f0a-1111-4222-8333-944455556666"
    out = scrub.value({"type": "assistant", "uuid": uuid, "parentUuid": uuid, "message": {
        "id": "msg_01XYZ", "model": "claude-opus-4-6", "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_01A", "name": "mcp__acme__deploy", "input": {"env": "prod"}}],
        "usage": {"input_tokens": 3, "service_tier": "standard"}}})
    assert out["uuid"] == out["parentUuid"] and re.fullmatch(r"0{8}-0{4}-0{4}-0{4}-0{11}1", out["uuid"])
    message = out["message"]
    assert (message["id"], message["model"], message["stop_reason"]) == ("msg_00002", "claude-opus-4-6", "tool_use")
    block = message["content"][0]
    assert block["id"] == "toolu_003" and block["name"] != "mcp__acme__deploy" and len(block["name"]) == 17
    assert list(block["input"]) != ["env"] and "prod" not in json.dumps(block["input"])
    assert message["usage"] == {"input_tokens": 3, "service_tier": "standard"}


# --- steps ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["b17-clear-keeps-old-context", "b14-resume-invalidates-cache",
                                  "seed000-cache-read-719"])
def test_a_stream_of_the_wire_shape_imports_as_readable_steps(tmp_path: Path, name: str) -> None:
    scenario = load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    path = tmp_path / "stream.jsonl"
    path.write_text("".join(json.dumps(f.data) + "\n" for s in render(scenario.session) for f in s.frames))
    out = tmp_path / "out" / "steps.yaml"
    assert write_import([path], out) == [out]  # no stream file: the scenario has steps
    assert "queries:" in out.read_text() and "stream:" not in out.read_text()
    steps = load_scenario(out)
    assert isinstance(steps, SessionScenario)
    kinds = ("call", "subagent", "compaction")
    assert numbers(steps, kinds) == numbers(original(tmp_path, path, "stream-json"), kinds)


def test_ctxsim_import_command(captured: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "scenarios" / "window.yaml"
    recording = captured / "transcript-autocompact.jsonl"
    assert main(["import", str(recording), "-o", str(out)]) == 0
    assert f"wrote {out} and {out.with_suffix('.jsonl')}" in capsys.readouterr().out
    assert main(["scenario", "check", str(out)]) == 0
    assert main(["import", str(recording), "-o", str(out)]) == 2
    assert capsys.readouterr().err.strip().endswith("exists (--force overwrites it)")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "assistant"}\nnot json\n')
    assert main(["import", str(bad), "-o", str(tmp_path / "b.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"ctxsim: import: {bad}:2: not a JSON line") and err.count("\n") == 1


def test_an_empty_or_half_written_recording_names_the_file_and_line(tmp_path: Path) -> None:
    line = json.dumps({"type": "user", "uuid": "u1", "parentUuid": None, "isSidechain": False, "sessionId": "s",
                       "message": {"role": "user", "content": "hi"}})
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ImportFailure) as raised:
        import_recordings([empty], name="x")
    assert str(raised.value) == (f"ctxsim: import: {empty}:1: the file is empty (is the session still writing it? "
                                 f"import it once the session is idle, or give the session's own .jsonl)")
    writing = tmp_path / "writing.jsonl"  # a transcript still being written: its last line is cut off
    writing.write_text(f"{line}\n{line}\n" + line[:40])
    with pytest.raises(ImportFailure) as raised:
        import_recordings([writing], name="x")
    message = str(raised.value)
    assert message.startswith(f"ctxsim: import: {writing}:3: not a JSON line (")
    assert message.endswith("; the last line is cut off (is the session still writing it? import it once the "
                            "session is idle)")
    broken = tmp_path / "broken.jsonl"  # a bad line in the middle is no half-written file
    broken.write_text(f"{line}\n{line[:40]}\n{line}\n")
    where = re.escape(str(broken))
    with pytest.raises(ImportFailure, match=rf"^ctxsim: import: {where}:2: not a JSON line \([^;]*\)$"):
        import_recordings([broken], name="x")
    nothing = tmp_path / "nothing.jsonl"  # lines, but no call to check against: still names the file
    nothing.write_text(f"{line}\n")
    with pytest.raises(ImportFailure, match=rf"^ctxsim: import: {re.escape(str(nothing))}: the recording cannot be "
                                            rf"played: no main-chain call with usage"):
        import_recordings([nothing], name="x")
