"""The rendering held to the REPL recordings of every bundled CLI (ctxsim.lab._repl).

Offline: each recording under ``src/ctxsim/wire/captures/claude-code-<version>/repl/`` is compared with the rendering
of the world it recorded, every payload (at start and after each step) and every compaction boundary; the recorded
facts the rendering follows are asserted from the recordings themselves; a divergence planted in a recording is
named. Live (marked ``live``): one session recorded with the installed CLI under tmux and compared the same way.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from builder_twin import builder_twin
from test_live import leaves_nothing_behind  # noqa: F401  (autouse: every live test leaves nothing behind)

from ctxsim.lab import check_release, tmux_skip_reason
from ctxsim.lab._repl._compare import (
    ReplRecording,
    compare_repl_boundaries,
    compare_repl_payloads,
    compare_repl_transcripts,
    load_repl_recordings,
)
from ctxsim.lab._repl._recorder import REPL_SESSIONS, record_repl
from ctxsim.lab.release._check import REPL_CHECKED
from ctxsim.wire import CAPTURES, version_key

RECORDINGS = load_repl_recordings(CAPTURES)
VERSIONS = sorted({r.cli_version for r in RECORDINGS})


def _named(name: str, version: str) -> ReplRecording:
    return next(r for r in RECORDINGS if r.name == name and r.cli_version == version)


def test_every_bundled_cli_is_recorded() -> None:
    assert {"2.1.330", "2.1.331", "2.1.332"} <= set(VERSIONS)
    newest_only = {"one-million-autocompact", "max-context-tokens", "autocompact-pct-override", "autocompact-disabled",
                   "model-switch", "autocompact-window-disabled"}  # recorded with the newest CLI only
    wanted = set(REPL_SESSIONS) - newest_only
    for version in VERSIONS:
        assert {r.name for r in RECORDINGS if r.cli_version == version} >= wanted, version


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: f"{r.cli_version}-{r.name}")
def test_rendering_matches_the_recorded_repl(recording: ReplRecording) -> None:
    differences = compare_repl_payloads(recording) + compare_repl_boundaries(recording)
    assert not differences, "\n".join(map(str, differences))


FOREGROUND = [r for r in RECORDINGS if r.name != "subagent"]
"""The recordings the builder twin can rebuild: in the REPL the Agent tool ran in the background (above), and the
builder draws its own ``Agent`` call around a subagent, which a recording cannot state."""


KNOWN_ROWS: dict[str, dict[str, str]] = {
    "subagent": {
        "prompt": "the background subagent's <task-notification> text: the CLI's also names its output file (a "
                  "temporary path), a note, the subagent's answer and its usage; ctxsim writes the task id, tool use "
                  "id, status and summary (a text no tracker reads; the row, its place and links are compared)",
    },
}
"""Per recording: the transcript fields where ctxsim is known to differ from the CLI, with why. The test fails on any
other difference, and on a known one that no longer occurs (then delete it here)."""


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: f"{r.cli_version}-{r.name}")
def test_the_repl_transcript_matches_row_by_row(recording: ReplRecording) -> None:
    known = KNOWN_ROWS.get(recording.name, {})
    differences = compare_repl_transcripts(recording)
    assert not [d for d in differences if d.field not in known], "\n".join(map(str, differences))
    assert {d.field for d in differences} == set(known), "a known difference no longer occurs: delete it"


def _command_rows(files: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str, bool]]:
    """Each local command's row in the main files: which it is (caveat, name, output), its ``rowSource``, and
    whether it carries a ``promptId``."""
    out = []
    for path, rows in files.items():
        for row in (r for r in rows if "/" not in path and r.get("type") == "user"):
            content = str((row.get("message") or {}).get("content"))
            for tag in ("<local-command-caveat>", "<command-name>", "<local-command-stdout>"):
                if content.startswith(tag):
                    out.append((tag, str(row.get("rowSource")), "promptId" in row))
    return out


COMMANDS = [r for r in FOREGROUND if r.name in ("model-switch", "compact-one-call", "clear")]


@pytest.mark.parametrize("recording", COMMANDS, ids=lambda r: f"{r.cli_version}-{r.name}")
def test_a_command_s_rows_are_marked_as_the_cli_marks_them(recording: ReplRecording) -> None:
    """``/model``, ``/compact`` and ``/clear`` rows: their ``rowSource`` (none before 2.1.331) and their prompt id,
    row for row as the recording has them."""
    import ctxsim.lab._repl._compare as compare
    from ctxsim.wire import render_transcript

    world = compare.world_of_recording(recording)
    rendered = render_transcript(world, cli_version=recording.cli_version)
    theirs = _command_rows({p: list(rows) for p, rows in recording.transcripts.items()})
    assert theirs  # every one of these recordings ran a local command
    assert _command_rows({p: list(f.rows) for p, f in rendered.files.items()}) == theirs


@pytest.mark.parametrize("version", VERSIONS)
def test_the_repl_runs_the_agent_tool_in_the_background(version: str) -> None:
    """Why the subagent recording's world runs its subagent in the background: the Agent call (run_in_background
    false) came back at once as an async launch, and the subagent's end started a turn of its own."""
    rows = next(rows for path, rows in _named("subagent", version).transcripts.items() if "/" not in path)
    results = [b for r in rows if r.get("type") == "user" and isinstance(r["message"]["content"], list)
               for b in r["message"]["content"] if b.get("type") == "tool_result"]
    assert "Async agent launched" in str(results[0]["content"])
    assert any(str(r["message"]["content"]).startswith("<task-notification>") for r in rows
               if r.get("type") == "user")


@pytest.mark.parametrize("version", VERSIONS)
def test_the_recorded_compaction_facts(version: str) -> None:
    """Read from the recordings alone: null after one call then /compact, zeros after two or more (prompts, a
    tool round, autocompact), and preservedSegment exactly where the payload is zero."""
    for name, zero in (("compact-one-call", False), ("compact-two-calls", True), ("compact-three-calls", True),
                       ("compact-tool-round", True)):
        recording = _named(name, version)
        at = next(i for i, s in enumerate(recording.steps) if s["prompt"] == "/compact")
        after = recording.after(at)
        assert after is not None
        usage = after["context_window"]["current_usage"]
        assert (usage == dict.fromkeys(usage, 0) if zero else usage is None), name
        (boundary,) = recording.boundaries()
        assert ("preservedSegment" in boundary["compactMetadata"]) is zero, name
    (auto,) = _named("autocompact", version).boundaries()
    assert auto["compactMetadata"]["trigger"] == "auto" and "preservedSegment" in auto["compactMetadata"]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_recorded_request_lines(version: str) -> None:
    """Read from the recordings alone: a shape and one blob before a conversation's first request, one blob before
    each later one (it extends the one before it), a shape and three blobs before the first request after a
    compaction that kept a segment (summary, kept reply, prompt), one where none was kept; each reply's
    ``requestRef`` names a request of its file; ``thread`` on requests from 2.1.332 on."""
    def lines(name: str) -> list[str]:
        rows = next(rows for path, rows in _named(name, version).transcripts.items() if "/" not in path)
        kinds = {"api-request-shape": "S", "api-request-blob": "b", "api-request": "R "}
        return "".join(kinds.get(str(r.get("type")), "") for r in rows).split()

    assert lines("compact-two-calls") == ["SbR", "bR", "SbbbR"]
    assert lines("compact-one-call") == ["SbR", "SbR"]
    assert lines("cache-miss") == ["SbR", "bR", "bR"]
    for recording in (r for r in RECORDINGS if r.cli_version == version):
        rows = [r for path, rows in recording.transcripts.items() if "/" not in path for r in rows]
        requests = {r["id"]: r for r in rows if r.get("type") == "api-request"}
        assert all(r["requestRef"] in requests for r in rows if r.get("type") == "assistant"), recording.name
        assert {"thread" in r for r in requests.values()} == {version_key(version) >= (2, 1, 332)}, recording.name


@pytest.mark.parametrize("version", VERSIONS)
def test_the_recorded_turn_rows(version: str) -> None:
    """Read from the recordings alone: a fresh turn's first round ends with a prompt_snapshot; an autocompaction
    writes session_context and date between its boundary and its summary, whose parent is the date; /clear ends
    the old file with cost-state."""
    def chain(name: str) -> list[Mapping[str, Any]]:
        return [r for path, rows in _named(name, version).transcripts.items() if "/" not in path for r in rows
                if r.get("uuid")]

    def kind(row: Mapping[str, Any]) -> str:
        return str((row.get("attachment") or {}).get("type") or row.get("subtype") or row.get("type"))

    rows = chain("compact-one-call")
    assert [kind(r) for r in rows[11:14]] == ["assistant", "prompt_snapshot", "turn_duration"]
    rows = chain("autocompact")
    at = next(i for i, r in enumerate(rows) if kind(r) == "compact_boundary")
    assert [kind(r) for r in rows[at:at + 4]] == ["compact_boundary", "session_context", "date", "user"]
    assert rows[at + 3]["parentUuid"] == rows[at + 2]["uuid"] and rows[at + 3].get("isCompactSummary")
    ended = [rows for path, rows in _named("clear", version).transcripts.items()
             if "/" not in path and any(r.get("type") == "cost-state" for r in rows)]
    assert len(ended) == 1 and ended[0][-1]["type"] == "cost-state"


@pytest.mark.parametrize("version", VERSIONS)
def test_the_recorded_windows(version: str) -> None:
    """1M for a [1m] model, 200k under CLAUDE_CODE_DISABLE_1M_CONTEXT, the raw window under an autocompact window."""
    sizes = {name: {p["context_window"]["context_window_size"] for _, p in _named(name, version).payloads}
             for name in ("one-million", "one-million-disabled", "autocompact")}
    assert sizes == {"one-million": {1_000_000}, "one-million-disabled": {200_000}, "autocompact": {200_000}}
    startup = _named("compact-one-call", version).initial
    assert len(startup) == 2 and all(p["context_window"]["current_usage"] is None for p in startup)


def test_an_autocompact_window_moves_nothing_with_auto_compact_off() -> None:
    """Read from the recording alone: DISABLE_AUTO_COMPACT beside a 100,000 autocompact window, a context past
    that window's point (67,000) and no compaction; the world's point is then the raw window's effective window."""
    import ctxsim.lab._repl._compare as compare

    for recording in (r for r in RECORDINGS if r.name == "autocompact-window-disabled"):
        assert recording.env == {"DISABLE_AUTO_COMPACT": "1", "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}
        peak = max(p["context_window"]["total_input_tokens"] for _, p in recording.payloads)
        assert peak > 67_000 and not recording.boundaries()
        assert not [s for step in recording.steps for s in step["served"] if s["kind"] == "compact"]
        world = compare.world_of_recording(recording)
        assert world.threshold_of(world.window) == 200_000 - 20_000 > peak


def test_a_planted_divergence_is_named() -> None:
    recording = _named("compact-two-calls", VERSIONS[-1])
    planted = copy.deepcopy(recording)
    at = next(i for i, s in enumerate(planted.steps) if s["prompt"] == "/compact")
    sent = planted.after(at)
    assert sent is not None
    sent["context_window"]["current_usage"] = None
    sent["prompt_cache"]["requests"] = 99
    named = {d.field for d in compare_repl_payloads(planted)}
    assert {"context_window", "prompt_cache.requests"} <= named
    rows = next(rows for path, rows in planted.transcripts.items() if "/" not in path)
    boundary = next(r for r in rows if r.get("subtype") == "compact_boundary")
    boundary["compactMetadata"]["preservedMessages"]["uuids"].pop()  # one row short
    assert any(d.field == "kept rows and logical parent" for d in compare_repl_boundaries(planted))
    del boundary["compactMetadata"]["preservedSegment"]
    assert any(d.field == "compactMetadata keys" for d in compare_repl_boundaries(planted))
    turn_end = next(r for r in rows if r.get("subtype") == "turn_duration")
    turn_end["messageCount"] += 1
    snapshot = next(r for r in rows if r.get("type") == "file-history-snapshot")
    snapshot["messageId"] = "planted"
    prompt = next(r for r in rows if r.get("promptId"))
    del prompt["promptId"]
    fields = {d.field for d in compare_repl_transcripts(planted)}
    assert {"turn_duration messageCounts", "snapshot messageIds", "prompt_id joins"} <= fields
    turn_end["subtype"] = "informational"
    assert any("(row)" in d.field or "type" in d.field for d in compare_repl_transcripts(planted))


def test_a_planted_divergence_in_the_rows_trackers_skip_is_named() -> None:
    """The outline of each file names a missing attachment, a moved parent, a request line gone, a reply joined
    to the wrong request, a request key changed, and a line kind gone (cost-state)."""
    def planted(name: str, test: Callable[[dict[str, Any]], bool],
                change: Callable[[list[dict[str, Any]], dict[str, Any]], object]) -> set[str]:
        """The fields named once ``change`` is made to the first main file with a row that passes ``test``."""
        recording = copy.deepcopy(_named(name, VERSIONS[-1]))
        rows = next(rows for path, rows in recording.transcripts.items() if "/" not in path and any(map(test, rows)))
        change(rows, next(r for r in rows if test(r)))  # type: ignore[arg-type]
        return {d.field for d in compare_repl_transcripts(recording)}

    def snapshot(r: dict[str, Any]) -> bool:
        return (r.get("attachment") or {}).get("type") == "prompt_snapshot"

    def reply(r: dict[str, Any]) -> bool:
        return r.get("type") == "assistant"

    def drop(rows: list[dict[str, Any]], row: dict[str, Any]) -> None:
        rows.remove(row)

    assert {"chain rows", "chain parents"} <= planted("compact-two-calls", snapshot, drop)
    assert "chain parents" in planted("compact-two-calls", reply,
                                      lambda rows, r: r.update(parentUuid=next(x["uuid"] for x in rows
                                                                                if x.get("type") == "user")))
    assert "request lines" in planted("compact-two-calls", lambda r: r.get("type") == "api-request-blob", drop)
    assert "request lines" in planted("compact-two-calls", lambda r: r.get("type") == "api-request",
                                      lambda rows, r: r.pop("version"))
    assert "requestRef joins" in planted("compact-two-calls", reply, lambda rows, r: r.update(requestRef="x"))
    assert "line kinds" in planted("clear", lambda r: r.get("type") == "cost-state", drop)


def test_the_sdk_shape_is_not_the_repl_s(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison tells the shapes apart: the recording's world rendered as an SDK session differs."""
    import ctxsim.lab._repl._compare as compare

    recording = _named("compact-two-calls", VERSIONS[-1])
    world = dataclasses.replace(compare.world_of_recording(recording), entrypoint="sdk")
    monkeypatch.setattr(compare, "world_of_recording", lambda r: world)
    fields = {d.field for d in compare.compare_repl_transcripts(recording)}
    assert "(line kind)" in fields  # queue-operation lines, which the REPL never writes


@pytest.mark.parametrize("recording", FOREGROUND, ids=lambda r: f"{r.cli_version}-{r.name}")
def test_a_session_built_as_users_build_it_matches_the_recorded_repl(recording: ReplRecording,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The recording's world rebuilt through the public builder (:func:`builder_twin`: each compaction's
    ``preTokens``, the context after it, whether it kept a segment, derived) renders to what the REPL wrote:
    every payload, every boundary, every row."""
    import ctxsim.lab._repl._compare as compare

    twin = builder_twin(dataclasses.replace(compare.world_of_recording(recording), entrypoint="repl"))
    monkeypatch.setattr(compare, "world_of_recording", lambda r: dataclasses.replace(twin, entrypoint="repl"))
    differences = (compare.compare_repl_payloads(recording) + compare.compare_repl_boundaries(recording)
                   + compare.compare_repl_transcripts(recording))
    assert not differences, "\n".join(map(str, differences))


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"ctxsim-repl-{os.getpid()}-*")}


@pytest.mark.live
@pytest.mark.parametrize("name", ["compact-one-call", "compact-two-calls", "cache-miss", "clear"])
def test_the_installed_repl_matches_the_rendering(name: str) -> None:
    reason = tmux_skip_reason()
    if reason is not None:
        pytest.skip(f"ctxsim: {reason}")
    before = _leftovers()
    recording = ReplRecording.from_json(record_repl(REPL_SESSIONS[name], timeout=90.0))
    differences = (compare_repl_payloads(recording) + compare_repl_boundaries(recording)
                   + compare_repl_transcripts(recording))
    assert not differences, "\n".join(map(str, differences))
    assert _leftovers() <= before


@pytest.mark.live
def test_fidelity_holds_the_installed_repl_s_rows() -> None:
    """``ctxsim fidelity`` records the REPL sessions of REPL_CHECKED on the installed CLI and holds every payload,
    boundary and row to the rendering: green on every CLI the package claims (run on the floor and the newest)."""
    reason = tmux_skip_reason()
    if reason is not None:
        pytest.skip(f"ctxsim: {reason}")
    before = _leftovers()
    check = check_release(names=["several-queries"], repl=REPL_CHECKED)
    assert [s.name for s in check.sessions] == ["several-queries", *(f"repl {n}" for n in REPL_CHECKED)]
    assert check.ok, check.table()
    assert _leftovers() <= before
