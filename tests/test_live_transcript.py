"""The transcript rendering held to the real CLI's transcript (ctxsim.live.transcript).

The live test plays each scripted session through the bundled CLI and compares, at the end of every step, every
file the CLI wrote with the rendering of the world that happened, field by field (marked ``live``). The
self-checks below it (not live) plant a divergence in a rendering for one projected field at a time and assert the
comparison names that field: a field the projection drops, or a comparison that cannot fail, shows there.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ResultMessage
from test_live import leaves_nothing_behind  # noqa: F401  (autouse: every live test leaves nothing behind)

from ctxsim.live.claude import LiveClaude
from ctxsim.live.conformance import SESSIONS, play_live
from ctxsim.live.transcript import ROW_FIELDS, compare_transcripts, project_rows
from ctxsim.wire import TranscriptRender, render_transcript
from ctxsim.world import Session, SessionBuilder


@pytest.mark.live
@pytest.mark.parametrize("name", list(SESSIONS))
def test_rendered_transcript_matches_the_cli_s(name: str) -> None:
    """Every file the CLI wrote, after every step, against the rendering at that step's result point."""
    scripted = SESSIONS[name]
    played = anyio.run(lambda: play_live(scripted, timeout=60.0))
    assert played.session is not None and len(played.transcripts) == len(scripted.steps)
    assert any(rows for rows in played.transcripts[-1].values())
    rendered = render_transcript(played.session, cli_version=played.cli_version)
    differences = compare_transcripts(played.transcripts, rendered, steps=[a.prompt for a in scripted.steps])
    assert not differences, f"{name}: the rendered transcript differs from CLI {played.cli_version}'s:\n" + "\n".join(
        map(str, differences[:30]))


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
