"""The transcript rendering held to the real CLI's transcript (ctxsim.lab._transcript).

The live test plays each scripted session through the bundled CLI and compares, at every observation point, every
file the CLI wrote with the rendering of the world that happened, field by field (marked ``live``); the
background-subagent session, whose subagent runs beside the main chain, after each step, its known differences
listed by name. The
self-checks below it (not live) plant a divergence in a rendering for one projected field at a time and assert the
comparison names that field (a field the projection drops, or a comparison that cannot fail, shows there), plant
rows a rendering writes too late and assert the point where they are missing is named, and hold the fake API's
hold to what it waits for.
"""

from __future__ import annotations

import bisect
import copy
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ResultMessage
from test_live import leaves_nothing_behind  # noqa: F401  (autouse: every live test leaves nothing behind)

from ctxsim.lab._fidelity import SESSIONS, play_live
from ctxsim.lab._projection import Difference
from ctxsim.lab._settle import RequestSnapshot, RequestSnapshots
from ctxsim.lab._transcript import (
    ROW_FIELDS,
    compare_files,
    compare_transcripts,
    pair_transcripts,
    project_rows,
)
from ctxsim.live._api import ApiRequest, Reply, Served
from ctxsim.live._claude import LiveClaude
from ctxsim.wire import TranscriptRender, render_transcript
from ctxsim.world import Session, SessionBuilder

HELD = [name for name in SESSIONS if name != "background-subagent"]
"""The sessions whose requests the CLI sends one at a time: a background subagent's run beside the main chain's, so
held requests cannot order its transcript's snapshots (it is compared after each step instead, below, and its REPL
rows with the recordings)."""


@pytest.mark.live
@pytest.mark.parametrize("name", HELD)
def test_rendered_transcript_matches_the_cli_s(name: str) -> None:
    """Every file the CLI wrote, at every observation point of the session, against the rendering there.

    The fake API holds each request the CLI sends (a main-chain or subagent call, the compaction summary request)
    until the CLI's transcript has settled (:class:`~ctxsim.lab._settle.RequestSnapshots`), and the files are
    compared with the rendering just before that call or compaction starts: the last observation point before it,
    with the rows the rendering writes after that point (tool results, the next prompt, a subagent's prompt).
    After each step the files are compared at its result point and at every point after its last request.

    Points the CLI cannot be held at exactly, and where they are compared instead:

    - a call's point *without* the tool results that follow it: the CLI writes the call's rows, runs the tool and
      writes its result with no request between. A ``PreToolUse`` hook would stop it there, but nothing orders the
      transcript's write before the hook (the CLI's queue is flushed on a timer), so it would be a timed guess: the
      point is compared with its tool results, at the next request;
    - a query's last call, and the compaction of ``/compact`` and the reset of ``/clear`` (which make no request
      after their rows): no request comes before the result, and the rendering writes no row trackers read
      between (a ``last-prompt`` line only): compared with the files at the step's end;
    - a subagent's text-only call has no observation point (the stream never shows it); its rows are compared at
      the main chain's next request.
    """
    scripted = SESSIONS[name]
    played = anyio.run(lambda: play_live(scripted, timeout=60.0, hold_at_requests=True))
    assert played.session is not None and len(played.transcripts) == len(scripted.steps)
    assert any(rows for rows in played.transcripts[-1].values())
    held = [s for s in played.served if s.request.kind != "side" and s.reply.error is None]
    assert [s.request_id for step in played.request_transcripts for s in step] == [
        s.request.request_id for s in held]
    rendered = render_transcript(played.session, cli_version=played.cli_version)
    steps = [a.prompt for a in scripted.steps]
    pairs, unpaired = pair_transcripts(played.transcripts, rendered, steps=steps,
                                       requests=played.request_transcripts, session=played.session)
    assert not unpaired, unpaired
    assert {i for pair in pairs for i in pair.points} == set(range(len(rendered.points)))  # every point compared
    differences = compare_transcripts(played.transcripts, rendered, steps=steps,
                                      requests=played.request_transcripts, session=played.session)
    assert not differences, f"{name}: the rendered transcript differs from CLI {played.cli_version}'s:\n" + "\n".join(
        map(str, differences[:30]))


BACKGROUND_KNOWN: dict[tuple[str, str], str] = {
    ("main 1 row 7 (user)", "prompt"): "the task notification's prompt: the CLI's carries the task's output file, a "
                                       "summary of its own ('Agent \"<description>\" finished'), a note, the "
                                       "subagent's result and its usage; the rendering's the notification's summary "
                                       "alone",
}
"""The differences of the background-subagent session's transcript, by file, row and field, each with why: the test
fails on any other, and on one of these that no longer occurs (then delete it here)."""


@pytest.mark.live
def test_rendered_background_subagent_transcript_matches_the_cli_s_after_each_step() -> None:
    """The background-subagent session, its subagent's own file (``subagents/agent-*.jsonl``) included, against the
    rendering at the end of each step (the point of the step's last result). Its requests are not held (see
    :data:`HELD`): the subagent runs beside the main chain, so the files at a request are not one moment of the
    rendering; after a step, both chains have ended."""
    scripted = SESSIONS["background-subagent"]
    played = anyio.run(lambda: play_live(scripted, timeout=60.0))
    assert played.session is not None and len(played.transcripts) == len(scripted.steps)
    rendered = render_transcript(played.session, cli_version=played.cli_version)
    results = [p for p in rendered.points if p.observation.kind == "result"]
    assert len(results) == sum(a.results for a in scripted.steps)
    ends = [results[sum(a.results for a in scripted.steps[:n]) - 1] for n in range(1, len(scripted.steps) + 1)]
    differences: list[tuple[str, str, Difference]] = []
    for number, (files, end) in enumerate(zip(played.transcripts, ends), 1):
        ours = {path: rendered.files[path].rows[:rows] for path, rows in end.rows.items()}
        for rows in (files, ours):  # the subagent's own file is there, with rows trackers read, on both sides
            assert any("/subagents/agent-" in path and project_rows(r, path=path, cli_version=played.cli_version)
                       for path, r in rows.items()), sorted(rows)
        where = f"step {number} at {end.observation.label}"
        differences += [(d.where.removeprefix(f"{where} "), d.field, d) for d in compare_files(
            where, files, ours, cli_version=played.cli_version)]
    new = [str(d) for where, field, d in differences if (where, field) not in BACKGROUND_KNOWN]
    gone = sorted(set(BACKGROUND_KNOWN) - {(where, field) for where, field, _ in differences})
    assert not new and not gone, (f"CLI {played.cli_version}: differences not known:\n" + "\n".join(new[:30])
                                  + f"\nknown differences that no longer occur: {gone}")


@pytest.mark.live
def test_transcript_path_is_where_the_cli_writes() -> None:
    async def run() -> tuple[bool, str]:
        async with LiveClaude(timeout=60.0) as live:
            messages = await live.ask("hello")
            result = messages[-1]
            assert isinstance(result, ResultMessage)
            path = live.transcript_path(result.session_id)
            return path.is_file(), path.name
    exists, name = anyio.run(run)
    assert exists, name


# --- self-checks: a divergence planted in one field is named -----------------------------------------------------


def _session() -> Session:
    return (SessionBuilder(seed=4)
            .query("one").call(blocks=("thinking", "text", "tool_use"), results=(200,)).call()
            .start_subagent().call(results=(100,)).call().end_subagent().call()
            .query("/compact").compact(2_000, pre_tokens=30_000)
            .query("two").call()
            .query("/clear").reset()
            .query("three").call()
            .build())


def _snapshots(transcript: TranscriptRender) -> list[dict[str, list[dict[str, Any]]]]:
    """What a CLI that wrote exactly ``transcript`` would leave after each query: its files at each result point."""
    out = []
    for point in transcript.points:
        if point.observation.kind == "result":
            out.append({path: copy.deepcopy(transcript.files[path].rows[:n]) for path, n in point.rows.items()})
    return out


def _main(files: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return next(rows for path, rows in files.items() if "/" not in path)


def _last(rows: list[dict[str, Any]], where: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    return [r for r in rows if where(r)][-1]


def _is(kind: str, subtype: str | None = None) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get("type") == kind and (subtype is None or r.get("subtype") == subtype)


def _user(kind: str) -> Callable[[dict[str, Any]], bool]:
    def match(row: dict[str, Any]) -> bool:
        content = row.get("message", {}).get("content") if row.get("type") == "user" else None
        if kind == "tool_result":
            return isinstance(content, list)
        if kind == "summary":
            return bool(row.get("isCompactSummary"))
        return isinstance(content, str) and not row.get("isMeta") and not content.startswith("<") and not row.get(
            "isCompactSummary")
    return match


def _later_block(row: dict[str, Any]) -> bool:
    return row.get("type") == "assistant" and row.get("apiBlockIndex", 0) > 0


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def plant(row: dict[str, Any]) -> None:
        *parents, key = path.split(".")
        target = row
        for name in parents:
            target = target[name]
        target[key] = value(target.get(key)) if callable(value) else value
    return plant


def _subagent_file(files: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    return next(rows for path, rows in files.items() if "/subagents/" in path)


PLANTS: dict[tuple[str, str], tuple[Callable[[dict[str, Any]], bool], Callable[[dict[str, Any]], None]]] = {
    ("assistant", "isSidechain"): (_is("assistant"), _set("isSidechain", True)),
    ("assistant", "uuid"): (_is("assistant"), lambda r: r.pop("uuid")),
    ("assistant", "parentUuid"): (_is("assistant"), _set("parentUuid", "not-a-row")),
    ("assistant", "timestamp"): (_is("assistant"), _set("timestamp", "yesterday")),
    ("assistant", "sessionId"): (_is("assistant"), _set("sessionId", "another-session")),
    ("assistant", "agentId"): (_is("assistant"), _set("agentId", "a0")),
    ("assistant", "version"): (_is("assistant"), _set("version", "0.0.1")),
    # ids are projected by their sharing: a call's later block that stops sharing its call's id
    ("assistant", "message.id"): (_later_block, _set("message.id", "msg_planted")),
    ("assistant", "requestId"): (_later_block, _set("requestId", "req_planted")),
    ("assistant", "message.model"): (_is("assistant"), _set("message.model", "claude-opus-4-1")),
    ("assistant", "message.role"): (_is("assistant"), _set("message.role", "user")),
    ("assistant", "message.stop_reason"): (_is("assistant"), _set("message.stop_reason", "max_tokens")),
    ("assistant", "message.content"): (_is("assistant"), _set("message.content", [{"type": "thinking"}])),
    ("assistant", "usage.input_tokens"): (_is("assistant"), _set("message.usage.input_tokens", lambda v: v + 1)),
    ("assistant", "usage.cache_creation_input_tokens"): (
        _is("assistant"), _set("message.usage.cache_creation_input_tokens", lambda v: v + 1)),
    ("assistant", "usage.cache_read_input_tokens"): (
        _is("assistant"), _set("message.usage.cache_read_input_tokens", lambda v: v + 1)),
    ("assistant", "usage.output_tokens"): (_is("assistant"), _set("message.usage.output_tokens", lambda v: v + 1)),
    ("assistant", "apiBlockIndex"): (_is("assistant"), _set("apiBlockIndex", 7)),
    ("assistant", "isApiErrorMessage"): (_is("assistant"), _set("isApiErrorMessage", True)),
    ("user", "isSidechain"): (_user("prompt"), _set("isSidechain", True)),
    ("user", "uuid"): (_user("prompt"), lambda r: r.pop("uuid")),
    ("user", "parentUuid"): (_user("prompt"), _set("parentUuid", "not-a-row")),
    ("user", "timestamp"): (_user("prompt"), _set("timestamp", "yesterday")),
    ("user", "sessionId"): (_user("prompt"), _set("sessionId", "another-session")),
    ("user", "agentId"): (_user("prompt"), _set("agentId", "a0")),
    ("user", "version"): (_user("prompt"), _set("version", "0.0.1")),
    ("user", "kind"): (_user("prompt"), _set("isMeta", True)),
    ("user", "prompt"): (_user("prompt"), _set("message.content", "another prompt")),
    ("user", "tool_results"): (_user("tool_result"), lambda r: r["message"]["content"][0].update(
        tool_use_id="toolu_planted")),
    ("user", "is_error"): (_user("tool_result"), lambda r: r["message"]["content"][0].update(is_error=True)),
    ("user", "sourceToolAssistantUUID"): (_user("tool_result"), _set("sourceToolAssistantUUID", "not-a-row")),
    ("user", "isCompactSummary"): (_user("summary"), _set("isCompactSummary", None)),
    ("user", "isMeta"): (_user("prompt"), _set("isMeta", True)),
    ("system", "isSidechain"): (_is("system", "compact_boundary"), _set("isSidechain", True)),
    ("system", "uuid"): (_is("system", "local_command"), lambda r: r.pop("uuid")),
    ("system", "parentUuid"): (_is("system", "compact_boundary"), _set("parentUuid", "not-a-row")),
    ("system", "logicalParentUuid"): (_is("system", "compact_boundary"), _set("logicalParentUuid", None)),
    ("system", "timestamp"): (_is("system", "compact_boundary"), _set("timestamp", "yesterday")),
    ("system", "sessionId"): (_is("system", "compact_boundary"), _set("sessionId", "another-session")),
    ("system", "subtype"): (_is("system", "local_command"), _set("subtype", "compact_boundary")),
    ("system", "compactMetadata.trigger"): (_is("system", "compact_boundary"), _set(
        "compactMetadata.trigger", lambda v: "manual" if v == "auto" else "auto")),
    ("system", "compactMetadata.preTokens"): (_is("system", "compact_boundary"),
                                              _set("compactMetadata.preTokens", lambda v: v + 1)),
    ("system", "compactMetadata.postTokens"): (_is("system", "compact_boundary"),
                                               _set("compactMetadata.postTokens", lambda v: v + 1)),
}
"""For each projected field of each row kind: the row to plant it in (the last of its kind in the last snapshot
that has one) and the divergence."""


def test_every_projected_field_has_a_self_check() -> None:
    assert set(PLANTS) == {(kind, name) for kind, names in ROW_FIELDS.items() for name in names}


@pytest.mark.parametrize(("kind", "name"), list(PLANTS), ids=[f"{k}-{n}" for k, n in PLANTS])
def test_a_divergence_in_one_field_is_named(kind: str, name: str) -> None:
    rendered = render_transcript(_session())
    snapshots = _snapshots(rendered)
    where, plant = PLANTS[(kind, name)]
    step = next(n for n in reversed(range(len(snapshots))) if any(
        where(r) for rows in snapshots[n].values() for r in rows))
    files = snapshots[step]
    rows = _subagent_file(files) if name == "agentId" and kind == "assistant" else next(
        rows for rows in reversed(list(files.values())) if any(where(r) for r in rows))
    if name == "agentId" and kind == "user":
        rows = _main(files)
    plant(_last(rows, where))
    differences = compare_transcripts(snapshots, rendered, steps=[q.prompt for q in _session().queries])
    assert differences, f"a planted {kind} {name} went unnoticed"
    first = differences[0].where  # the planted row (ids drawn later, and links to it, may follow)
    assert name in {d.field for d in differences if d.where == first}, [str(d) for d in differences]
    assert {d.step for d in differences} == {step + 1}


def test_an_extra_or_missing_row_and_file_are_named() -> None:
    rendered = render_transcript(_session())
    snapshots = _snapshots(rendered)
    _main(snapshots[0]).append(copy.deepcopy(_last(_main(snapshots[0]), _is("assistant"))))
    differences = compare_transcripts(snapshots, rendered, steps=["one"])
    assert [(d.field, d.left, d.right) for d in differences] == [("(row)", "assistant", None)]
    snapshots = _snapshots(rendered)
    del snapshots[0][next(p for p in snapshots[0] if "/subagents/" in p)]
    assert [d.field for d in compare_transcripts(snapshots, rendered, steps=["one"])] == ["(file)"]


def test_the_same_rendering_has_no_difference() -> None:
    rendered = render_transcript(_session())
    assert compare_transcripts(_snapshots(rendered), rendered, steps=[q.prompt for q in _session().queries]) == []
    projected = [p for rows in rendered.files.values() for p in project_rows(rows.rows, path=rows.path,
                                                                              cli_version=rendered.cli_version)]
    assert {p["type"] for p in projected} == {"assistant", "user", "system"}


# --- self-checks: the comparison at each point ------------------------------------------------------------------


def _request_snapshots(transcript: TranscriptRender) -> list[list[RequestSnapshot]]:
    """What a CLI that wrote exactly ``transcript`` would leave at each request, per query: when each call's first
    row (by ``requestId``) or each compaction's boundary is written, every row written before it."""
    written = sorted((at, path, row) for path, file in transcript.files.items()
                     for at, row in zip(file.order, file.rows))
    results = [p.written for p in transcript.points if p.observation.kind == "result"]
    out: list[list[RequestSnapshot]] = [[] for _ in results]
    seen: set[str] = set()
    for at, _, row in written:
        if row.get("type") == "assistant" and str(row.get("requestId")) not in seen:
            seen.add(str(row["requestId"]))
            key, kind = str(row["requestId"]), "subagent" if row.get("isSidechain") else "main"
        elif row.get("subtype") == "compact_boundary":
            key, kind = f"summary of the compaction at {at}", "compact"
        else:
            continue
        files: dict[str, list[dict[str, Any]]] = {}
        for earlier, path, before in written:
            if earlier < at:
                files.setdefault(path, []).append(copy.deepcopy(before))
        out[bisect.bisect_left(results, at)].append(RequestSnapshot(key, kind, files, True))  # type: ignore[arg-type]
    return out


def _written_late(transcript: TranscriptRender,
                  rows: Callable[[str, int, dict[str, Any]], bool]) -> TranscriptRender:
    """``transcript`` with the rows ``rows(path, position, row)`` selects written just before the next result point
    (their place in their file kept: each selected run must end its file's rows up to that point)."""
    late = copy.deepcopy(transcript)
    results = [p.written for p in late.points if p.observation.kind == "result"]
    for file in late.files.values():
        for n, row in enumerate(file.rows):
            if rows(file.path, n, row):
                result = results[bisect.bisect_left(results, file.order[n])]
                file.order[n] = result - 1 + (n + 1) / (len(file.rows) + 2)  # in file order, before the result
        assert file.order == sorted(file.order), "a planted row moved past a later row of its file"
    late.recount()
    return late


def _steps() -> list[str]:
    return [q.prompt for q in _session().queries]


def _compare(snapshots: list[dict[str, list[dict[str, Any]]]], rendered: TranscriptRender,
             requests: list[list[RequestSnapshot]] | None) -> list[Difference]:
    """:func:`compare_transcripts` of what a CLI left after each step and (unless None) at each request, against
    ``rendered``, a rendering of :func:`_session`."""
    return compare_transcripts(snapshots, rendered, steps=_steps(), requests=requests,
                               session=None if requests is None else _session())


def test_every_point_is_paired_with_the_requests() -> None:
    rendered = render_transcript(_session())
    requests = _request_snapshots(rendered)
    pairs, unpaired = pair_transcripts(_snapshots(rendered), rendered, steps=_steps(), requests=requests,
                                       session=_session())
    assert not unpaired
    assert {i for pair in pairs for i in pair.points} == set(range(len(rendered.points)))
    assert len(pairs) > len(rendered.points)  # every request, and every point after a step's last request
    assert _compare(_snapshots(rendered), rendered, requests) == []
    only_results, _ = pair_transcripts(_snapshots(rendered), rendered, steps=_steps())
    assert [p.points for p in only_results] == [(i,) for i, p in enumerate(rendered.points)
                                                if p.observation.kind == "result"]


def test_call_1_s_rows_written_only_at_the_result_are_named_at_its_point() -> None:
    """A rendering that writes the rows of a query's first call (and so every row after it in its file, up to the
    result) only at the result: the step's end matches, the call's point, at the next request, does not."""
    rendered = render_transcript(_session())
    main = rendered.main
    first = next(n for n, r in enumerate(main.rows) if r.get("type") == "assistant")
    result = next(p for p in rendered.points if p.observation.kind == "result")
    late = _written_late(rendered, lambda path, n, row: path == main.path and first <= n < result.rows[path])
    snapshots, requests = _snapshots(rendered), _request_snapshots(rendered)
    assert _compare(snapshots, late, None) == []  # at the results alone, nothing shows
    differences = _compare(snapshots, late, requests)
    assert (differences[0].where, differences[0].field, differences[0].left, differences[0].right) == (
        "step 1 ('one') at the request of q1 call 2 (after q1 call 1) main 1 row 2 (assistant)", "(row)",
        "assistant", None)
    assert {d.step for d in differences} == {1}


def test_the_last_call_s_rows_written_only_at_the_result_are_named_at_its_point() -> None:
    """A rendering that writes the rows of a query's last call only at its result: the step's end matches (the
    files end alike), the call's point does not."""
    rendered = render_transcript(_session())
    last_call = next(p for p in reversed(rendered.points) if p.observation.label == "q1 call 4")
    request = next(r["requestId"] for r in rendered.rows[:last_call.rows[rendered.main.path]][::-1]
                   if r.get("type") == "assistant")
    late = _written_late(rendered, lambda path, n, row: row.get("requestId") == request or (
        row.get("type") == "last-prompt" and row.get("lastPrompt") == "one"))
    snapshots, requests = _snapshots(rendered), _request_snapshots(rendered)
    assert _compare(snapshots, late, None) == []  # at the results alone, nothing shows
    differences = _compare(snapshots, late, requests)
    assert differences and {d.where.split(" main ")[0] for d in differences} == {"step 1 ('one') at q1 call 4"}
    assert {(d.field, d.left, d.right) for d in differences} == {("(row)", "assistant", None)}


def test_a_subagent_s_rows_written_only_at_the_result_are_named_at_its_requests() -> None:
    """A rendering that writes a subagent's file only at the result (its file alone, so the step's end matches):
    named at the subagent's first request (its prompt is written before it), and at every point up to the result."""
    rendered = render_transcript(_session())
    late = _written_late(rendered, lambda path, n, row: "/subagents/" in path)
    snapshots, requests = _snapshots(rendered), _request_snapshots(rendered)
    assert _compare(snapshots, late, None) == []
    differences = _compare(snapshots, late, requests)
    first = differences[0]
    assert (first.where, first.field, first.left, first.right) == (
        "step 1 ('one') at the request of q1 subagent call 1 (after q1 call 3) main 1 subagent 1", "(file)",
        "main 1 subagent 1", None)
    assert not [d for d in differences if d.where.startswith("step 1 ('one') at q1 result")]
    assert {d.step for d in differences} == {1}


def test_a_point_s_missing_row_is_named_at_the_request_after_it() -> None:
    """The CLI's files at a request hold a row the rendering writes later: named at that request."""
    rendered = render_transcript(_session())
    requests = _request_snapshots(rendered)
    main = next(p for p in requests[0][1].files if "/" not in p)
    rows = requests[0][1].files[main]
    rows.append(copy.deepcopy(_last(rows, _user("tool_result"))))
    differences = _compare(_snapshots(rendered), rendered, requests)
    assert [(d.where, d.field, d.left, d.right) for d in differences] == [
        (f"step 1 ('one') at the request of q1 call 2 (after q1 call 1) main 1 row "
         f"{len(project_rows(rows, path=main, cli_version=rendered.cli_version))} (user)", "(row)", "user", None)]


def test_a_request_with_no_call_in_the_rendering_is_named() -> None:
    rendered = render_transcript(_session())
    requests = _request_snapshots(rendered)
    requests[1].append(dataclasses.replace(requests[0][0], request_id="req_unknown"))
    differences = _compare(_snapshots(rendered), rendered, requests)
    assert [(d.where, d.field, d.left, d.step) for d in differences] == [
        ("step 2 ('/compact') at request req_unknown", "(request)", "main", 2)]


# --- self-checks: the hold waits for the CLI's record of the request --------------------------------------------


def _served(kind: str = "main", number: int = 7) -> Served:
    return Served(ApiRequest(number, kind, {}, None), Reply(), f"msg_{number}", (1, 0, 0), ())  # type: ignore[arg-type]


def _append(path: Path, *rows: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as out:
        out.write("".join(json.dumps(r) + "\n" for r in rows))


def test_the_hold_waits_for_the_request_s_record(tmp_path: Path) -> None:
    """Rows the CLI queued before the request reach the disk after it arrives, with its ``api-request`` line:
    the snapshot has them."""
    main = tmp_path / "-project" / "s.jsonl"
    hold = RequestSnapshots(tmp_path)

    async def run() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hold, _served())
            await anyio.sleep(0.15)
            _append(main, {"type": "user", "uuid": "u1"})
            await anyio.sleep(0.05)
            _append(main, {"type": "attachment"}, {"type": "api-request"})
    anyio.run(run)
    [taken] = hold.taken
    assert taken.marked and taken.request_id == "req_ctxsim0007"
    assert [r["type"] for r in taken.files["s.jsonl"]] == ["user", "attachment", "api-request"]
    assert hold.problems == []


def test_the_hold_without_a_record_waits_for_quiet(tmp_path: Path) -> None:
    """The compaction summary request has no ``api-request`` line: the snapshot is taken once the files stop
    changing, with what was written meanwhile; a side request is not held."""
    main = tmp_path / "-project" / "s.jsonl"
    _append(main, {"type": "user", "uuid": "u1"}, {"type": "api-request"})
    hold = RequestSnapshots(tmp_path)

    async def run() -> None:
        await hold(_served("side", 1))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hold, _served("compact", 2))
            await anyio.sleep(0.2)
            _append(main, {"type": "user", "uuid": "u2"})
    hold._markers = 1  # the request before it was recorded
    anyio.run(run)
    [taken] = hold.taken
    assert not taken.marked and taken.kind == "compact"
    assert [r.get("uuid") for r in taken.files["s.jsonl"]] == ["u1", None, "u2"]


def test_the_hold_is_bounded(tmp_path: Path) -> None:
    main = tmp_path / "-project" / "s.jsonl"
    hold = RequestSnapshots(tmp_path, timeout=0.3)

    async def run() -> None:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(hold, _served())
            with anyio.move_on_after(1.0):
                while not hold.taken:
                    _append(main, {"type": "user"})
                    await anyio.sleep(0.01)
    anyio.run(run)
    assert len(hold.taken) == 1 and not hold.taken[0].marked
    assert hold.problems == ["ctxsim: the CLI's transcript was still changing 0.3 s after request req_ctxsim0007 "
                             "(main) reached the fake API"]
