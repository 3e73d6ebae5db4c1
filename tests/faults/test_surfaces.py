"""Every fault says on which surface it is real (SDK stream, transcript files, statusline payload) and where that
is reported; a tracker is judged only on faults its input can carry."""

from __future__ import annotations

import dataclasses
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxsim.corpus import bundled_scenarios
from ctxsim.faults import (
    REGISTRY,
    TRANSCRIPT_REGISTRY,
    AdvisorIterations,
    CacheReadDrop,
    DuplicateBlocks,
    Fault,
    FaultPlan,
    GarbageValues,
    MissingRequestIds,
    MissingUsage,
    ModelSwitch,
    NestedCacheCreationOnly,
    ReusedMessageIds,
    StaleOutputTokens,
    StreamingPartials,
    UncachedGatewayUsage,
    WrongContextWindow,
    apply,
    apply_transcript,
)
from ctxsim.runner import run_scenario, verdict
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.surfaces import FAULT_SURFACES, SURFACES, apply_statusline, carried_on, judged_on, surfaces_of
from ctxsim.trackers.catalogue.mutants import MUTANTS
from ctxsim.wire import TranscriptRender, render, render_transcript, statusline_payloads
from ctxsim.world import Session, SessionBuilder

SDK = frozenset({"sdk"})
COMMAND = frozenset({"transcript", "statusline"})


def test_every_fault_says_where_it_is_real_and_its_source() -> None:
    assert FAULT_SURFACES.keys() == REGISTRY.keys() | TRANSCRIPT_REGISTRY.keys()
    for name, where in FAULT_SURFACES.items():
        assert where.names and where.names <= SURFACES.keys(), name
        assert len(where.source) > 20, name
    for name in TRANSCRIPT_REGISTRY:
        assert FAULT_SURFACES[name].names == {"transcript"}, name


def test_a_replay_is_real_only_in_transcript_files() -> None:
    assert surfaces_of(["replayed_messages"]) == {"transcript"}
    why = judged_on(["replayed_messages"], SDK)
    assert why is not None and "real only on the transcript files" in why and "aiusage#32" in why
    assert judged_on(["replayed_messages"], COMMAND) is None
    assert judged_on(["cache_read_drop", "usage_iterations"], SDK) is None
    assert surfaces_of([]) == SURFACES.keys()


def test_a_correct_sdk_stream_tracker_without_a_replay_filter_passes_every_scenario_it_is_judged_on() -> None:
    # on the SDK stream no message is replayed, so a tracker that keeps no replay filter is right there
    mutant = MUTANTS["no-replay-filter"]
    judged = skipped = 0
    for path in bundled_scenarios():
        scenario = load_scenario(path)
        if not isinstance(scenario, SessionScenario) or scenario.ctx_tracker != "pass":
            continue
        run = run_scenario(scenario, mutant.edit(scenario.session.usage), name="no-replay-filter")
        if scenario.not_judged(SDK) is not None:
            skipped += 1
            continue
        judged += 1
        met, does = verdict(run, "pass")
        assert met, f"{scenario.name}: {does}"
    assert judged >= 30 and skipped >= 2


def test_the_plugin_skips_a_tracker_on_a_fault_its_input_never_carries(tmp_path: Path) -> None:
    # a tracker under test (the catalogue's own factory named by module would be the reference, judged as such)
    (tmp_path / "mine.py").write_text("from ctxsim.reference import ContextTracker\n\n\n"
                                      "class Mine(ContextTracker):\n    pass\n", encoding="utf-8")
    b06 = next(p for p in bundled_scenarios() if p.stem == "b06-message-in-several-files")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", str(b06),
                           "--ctx-tracker=mine:Mine", f"--rootdir={tmp_path}", "-c", "/dev/null"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "is not judged here: fault replayed_messages is real only on the transcript files" in done.stdout


def test_the_reference_page_lists_every_fault_with_its_surfaces() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "fault-surfaces.md").read_text()
    for name, where in FAULT_SURFACES.items():
        assert f"| `{name}` | {', '.join(n for n in SURFACES if n in where.names)} |" in page, name


def _surfaces_session() -> Session:
    b = SessionBuilder(seed=11, name="surfaces")
    b.query("Fix the parser", prompt_tokens=40)
    b.call(blocks=("thinking", "text", "tool_use"), results=(1_500,), output=410)
    b.call(results=(2_000,), output=95)
    b.start_subagent("explore", prompt_tokens=300)
    b.call(results=(800,), output=60).call(blocks=("text",), output=30)
    b.end_subagent(result_tokens=500)
    b.call(output=300)
    b.query("Run everything", prompt_tokens=20)
    b.call(results=(5_000,), output=130)
    b.compact(20_000)
    b.call(output=75)
    b.query("Again", prompt_tokens=10)
    b.call(results=(300,), output=64)
    return b.build()


_SESSION = _surfaces_session()


def _dump(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@functools.cache
def _edited(name: str) -> frozenset[str]:
    """The surfaces fault ``name`` (acting everywhere it can, on a session with per-block calls, a subagent, a
    compaction and three queries) edits: the SDK stream (stream-json, partial messages on), the transcript files
    (:func:`ctxsim.faults.apply_transcript`), the statusline payloads (:func:`ctxsim.surfaces.apply_statusline`)."""
    cls = ALL_FAULTS[name]
    plan = FaultPlan((cls(**({"rate": 1.0} if "rate" in cls.__dataclass_fields__ else {})),), seed=3)
    scripts = render(_SESSION, include_partial_messages=True)
    sdk = _dump([[f.data for f in s.frames] for s in apply(plan, scripts)]) != _dump(
        [[f.data for f in s.frames] for s in scripts])
    plain = render_transcript(_SESSION)
    faulted = apply_transcript(plan, plain)
    transcript = _dump([{p: f.rows for p, f in faulted.files.items()}, [dataclasses.asdict(p) for p in faulted.points]]
                       ) != _dump([{p: f.rows for p, f in plain.files.items()},
                                   [dataclasses.asdict(p) for p in plain.points]])
    payloads = statusline_payloads(_SESSION)
    statusline = _dump(apply_statusline(plan, faulted, payloads)) != _dump(payloads)
    return frozenset(n for n, edited in (("sdk", sdk), ("transcript", transcript), ("statusline", statusline))
                     if edited)


ALL_FAULTS = {**REGISTRY, **TRANSCRIPT_REGISTRY}

NOT_YET_ON = {
    "transcript": {"inserted_compaction"},
    "statusline": {"garbage_values"},
}
"""Declared on a surface their stream form has no counterpart on yet: the transcript files and payloads a statusline
command reads are rendered from the session, and these faults do not reach them (a command is judged on such a
scenario as if the fault were not there). Expected to fail that way until each has its transcript or payload form."""


@pytest.mark.parametrize(("name", "surface"), [(n, s) for n in ALL_FAULTS for s in SURFACES if s != "sdk"])
def test_a_fault_edits_a_command_s_surface_exactly_where_it_is_declared_real(
        name: str, surface: str, request: pytest.FixtureRequest) -> None:
    # the SDK stream is where every stream fault is written down (a transcript-only one too: judged_on keeps an
    # SDK-stream tracker off it), so only a command's surfaces are compared with the declaration
    declared = surface in FAULT_SURFACES[name].names
    if declared and name in NOT_YET_ON.get(surface, ()):
        request.applymarker(pytest.mark.xfail(raises=AssertionError, strict=True,
                                              reason=f"{name} is declared on {surface} but does not reach it yet"))
    assert (surface in _edited(name)) == declared, (f"{name}: declared on {sorted(FAULT_SURFACES[name].names)}, "
                                                    f"edits {sorted(_edited(name))}")


def test_every_stream_fault_edits_the_sdk_stream() -> None:
    for name in REGISTRY:
        assert "sdk" in _edited(name), name


def test_a_call_over_several_iterations_reaches_every_surface_as_claude_code_writes_it() -> None:
    plan = FaultPlan((AdvisorIterations(rate=1.0),), seed=3)
    transcript = apply_transcript(plan, render_transcript(_SESSION))
    rows = [r["message"] for f in transcript.files.values() for r in f.rows if r.get("type") == "assistant"]
    for message in rows:  # every call's rows, main and subagent: the top level sums the message iterations
        usage = message["usage"]
        steps = [i for i in usage["iterations"] if i["type"] == "message"]
        assert len(steps) == 2, message["id"]
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            assert usage[key] == steps[0][key] + steps[1][key], (message["id"], key)
    by_call = {c.message_id: c for c in _SESSION.calls}
    for message in rows:  # the last message iteration is the call as the world made it
        call, last = by_call[message["id"]], message["usage"]["iterations"][-1]
        assert last["cache_read_input_tokens"] == call.cache_read_input_tokens, message["id"]
        assert last["cache_creation_input_tokens"] == call.cache_creation_input_tokens, message["id"]
    payloads = apply_statusline(plan, transcript, statusline_payloads(_SESSION))
    shown = [p["context_window"]["current_usage"] for p in payloads]
    plain = [p["context_window"]["current_usage"] for p in statusline_payloads(_SESSION)]
    inflated = [(s, p) for s, p in zip(shown, plain) if s is not None and p is not None and any(p.values())]
    assert inflated and all(s["cache_read_input_tokens"] == 2 * p["cache_read_input_tokens"]
                            and s["cache_creation_input_tokens"] == p["cache_creation_input_tokens"]
                            for s, p in inflated)  # Claude Code adds up the top level: its own gauge inflates
    assert [s for s, p in zip(shown, plain) if p is None or not any(p.values())] == [
        p for p in plain if p is None or not any(p.values())]  # after a compaction it shows what it showed


def test_where_a_fault_is_carried_is_where_it_is_real_and_edits_what_a_tracker_reads() -> None:
    # what the fuzz draws for a tracker (ctxsim.strategies.fault_plans(reads=...)): never a fault its input is the
    # same without
    for name in ALL_FAULTS:
        assert carried_on(name) == FAULT_SURFACES[name].names & _edited(name), name
    assert carried_on("usage_iterations") == SURFACES.keys()
    assert carried_on("replayed_messages") == {"transcript"}  # real in transcripts, written there as a new file


@pytest.mark.parametrize("fault", [CacheReadDrop(rate=1.0), UncachedGatewayUsage(rate=1.0)], ids=lambda f: f.name)
def test_a_call_s_usage_split_otherwise_reaches_the_rows_and_the_payload_as_the_api_sent_it(fault: Fault) -> None:
    plan = FaultPlan((fault,), seed=3)
    transcript = apply_transcript(plan, render_transcript(_SESSION))
    by_call = {c.message_id: c for c in _SESSION.calls}
    moved = 0
    for file in transcript.files.values():
        for row in (r for r in file.rows if r.get("type") == "assistant"):
            usage, call = row["message"]["usage"], by_call[row["message"]["id"]]
            prompt = sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"))
            assert prompt == call.input_tokens + call.cache_creation_input_tokens + call.cache_read_input_tokens
            moved += usage.get("cache_read_input_tokens", 0) != call.cache_read_input_tokens
    assert moved
    plain = statusline_payloads(_SESSION)
    shown = apply_statusline(plan, transcript, plain)
    changed = [(s["context_window"], p["context_window"]) for s, p in zip(shown, plain) if s != p]
    assert changed and all(s["current_usage"]["cache_read_input_tokens"] < p["current_usage"]["cache_read_input_tokens"]
                           and s["used_percentage"] == p["used_percentage"] for s, p in changed)


def test_a_wrong_window_reaches_the_payload_as_the_window_claude_code_reports() -> None:
    # anthropics/claude-code#76751: context_window_size 200000 on a 1M session, used 80% at 160,781, then 100%
    b = SessionBuilder(seed=5, name="wrong-window", window=1_000_000)
    b.query("Load", prompt_tokens=40)
    b.call(results=(150_000,), output=100).call(results=(60_000,), output=50).call(output=20)
    session = b.build()
    plan = FaultPlan((WrongContextWindow(reported=200_000),), seed=3)
    plain = statusline_payloads(session)
    shown = apply_statusline(plan, apply_transcript(plan, render_transcript(session)), plain)
    assert [p["context_window"]["current_usage"] for p in shown] == [p["context_window"]["current_usage"]
                                                                     for p in plain]
    assert {p["context_window"]["context_window_size"] for p in shown} == {200_000}
    used = [p["context_window"]["used_percentage"] for p in shown if p["context_window"]["current_usage"]]
    assert used and used[-1] == 100 and any(u < 100 for u in used)


def _assistant_rows(transcript: TranscriptRender) -> list[tuple[str, dict[str, Any]]]:
    return [(path, row) for path, f in transcript.files.items() for row in f.rows if row.get("type") == "assistant"]


def test_a_call_s_per_block_messages_reach_its_rows_as_claude_code_writes_them() -> None:
    # one row per content block, each with the API's message.id, requestId and usage: what a fault does to a call's
    # messages on the stream it does to the call's rows
    plain = render_transcript(_SESSION)
    rows = _assistant_rows(plain)

    def faulted(fault: Fault) -> list[tuple[str, dict[str, Any]]]:
        return _assistant_rows(apply_transcript(FaultPlan((fault,), seed=3), plain))

    doubled = faulted(DuplicateBlocks(rate=1.0, copies=2))
    seen = [_dump(r) for _, r in doubled]
    assert len(doubled) > len(rows) and {_dump(r) for _, r in rows} == set(seen)
    assert all(seen.count(s) in (1, 3) for s in seen)  # a repeated row: byte for byte, twice more
    without = [r for _, r in faulted(MissingRequestIds(rate=1.0))]
    assert len(without) == len(rows) and all("requestId" not in r for r in without)
    empty = [r for _, r in faulted(MissingRequestIds(rate=1.0, mode="empty"))]
    assert {r.get("requestId") for r in empty} == {""}
    stale = faulted(StaleOutputTokens(rate=1.0))
    by_id: dict[str, list[int]] = {}
    for (_, row), (_, was) in zip(stale, rows):
        assert not row.get("isSidechain") or row == was
        if not row.get("isSidechain"):
            by_id.setdefault(row["message"]["id"], []).append(row["message"]["usage"]["output_tokens"])
    finals = {c.message_id: c.output_tokens for c in _SESSION.calls if c.is_main}
    several = [(ident, outs) for ident, outs in by_id.items() if len(outs) > 1]
    assert several
    for ident, outs in several:  # stale on every row, the final count on the call's last (9,9,9 -> 243)
        assert 1 <= outs[0] <= 9 and set(outs[:-1]) == {outs[0]} and outs[-1] == max(finals[ident], outs[0]), outs
    reused = faulted(ReusedMessageIds(rate=1.0))
    changed = [(r, w) for (_, r), (_, w) in zip(reused, rows) if r != w]
    assert changed and all(r["requestId"] == w["requestId"] and r["message"]["usage"] == w["message"]["usage"]
                           and not r.get("isSidechain") for r, w in changed)
    ids = [r["message"]["id"] for _, r in rows if not r.get("isSidechain")]
    assert all(r["message"]["id"] in ids and r["message"]["id"] != w["message"]["id"] for r, w in changed)


def test_a_call_s_rows_without_usage_leave_its_prompt_known_only_while_one_row_keeps_it() -> None:
    plain = render_transcript(_SESSION)
    some = apply_transcript(FaultPlan((MissingUsage(rate=1.0),), seed=3), plain)
    calls: dict[str, list[object]] = {}
    for _, row in _assistant_rows(some):
        calls.setdefault(row["message"]["id"], []).append(row["message"]["usage"])
    assert any(None in usages for usages in calls.values())
    assert all(any(isinstance(u, dict) for u in usages) for usages in calls.values())  # one row keeps it
    assert [p.observation.truth for p in some.points] == [p.observation.truth for p in plain.points]
    whole = apply_transcript(FaultPlan((MissingUsage(rate=1.0, scope="whole_call", shape="empty"),), seed=3), plain)
    assert {_dump(r["message"]["usage"]) for _, r in _assistant_rows(whole)} == {"{}"}
    lost = [p.observation.label for p, q in zip(whole.points, plain.points)
            if q.observation.truth.knowable and not p.observation.truth.knowable]
    assert lost and len(lost) < len(whole.points)  # a compaction's point tells the size again


def test_a_main_call_s_rows_come_after_their_streaming_partials_as_before_claude_code_2_1_97() -> None:
    plain = render_transcript(_SESSION)
    faulted = apply_transcript(FaultPlan((StreamingPartials(rate=1.0, partials=2),), seed=3), plain)
    main = {c.message_id: c for c in _SESSION.calls if c.is_main}
    rows: dict[str, list[dict[str, Any]]] = {}
    for _, row in _assistant_rows(faulted):
        if not row.get("isSidechain"):
            rows.setdefault(row["message"]["id"], []).append(row)
    plain_rows = [r for _, r in _assistant_rows(plain) if not r.get("isSidechain")]
    for ident, call_rows in rows.items():
        assert len(call_rows) == 3 * sum(r["message"]["id"] == ident for r in plain_rows)  # two partials each
        assert len({r["uuid"] for r in call_rows}) == len(call_rows)
        *partial, last = call_rows
        assert {r["message"]["stop_reason"] for r in partial} == {None} and len(
            {r["message"]["usage"]["output_tokens"] for r in partial}) == 1
        assert partial[0]["message"]["usage"]["output_tokens"] <= 9  # first-wins keeps the stale out
        assert last["message"]["usage"]["output_tokens"] == main[ident].output_tokens
        assert last["message"]["stop_reason"] == main[ident].stop_reason


def test_a_cache_write_only_in_the_breakdown_reaches_the_rows_and_the_payload_as_the_api_sent_it() -> None:
    plan = FaultPlan((NestedCacheCreationOnly(rate=1.0),), seed=3)
    transcript = apply_transcript(plan, render_transcript(_SESSION))
    by_call = {c.message_id: c for c in _SESSION.calls}
    nested = 0
    for _, row in _assistant_rows(transcript):
        usage, call = row["message"]["usage"], by_call[row["message"]["id"]]
        breakdown = usage["cache_creation"]
        assert breakdown["ephemeral_5m_input_tokens"] + breakdown["ephemeral_1h_input_tokens"] == (
            call.cache_creation_input_tokens)  # the write is still told, in the breakdown
        if call.cache_creation_input_tokens:
            nested += 1
            assert usage["cache_creation_input_tokens"] == 0
        assert (usage["input_tokens"], usage["cache_read_input_tokens"]) == (
            _SESSION.reported_input(call), call.cache_read_input_tokens)
    assert nested
    plain = statusline_payloads(_SESSION)
    shown = apply_statusline(plan, transcript, plain)
    changed = [(s["context_window"], p["context_window"]) for s, p in zip(shown, plain) if s != p]
    assert changed
    for now, was in changed:  # Claude Code's own gauge reads low by the write it shows as 0
        written = was["current_usage"]["cache_creation_input_tokens"]
        assert written and now["current_usage"] == {**was["current_usage"], "cache_creation_input_tokens": 0}
        assert now["total_input_tokens"] == was["total_input_tokens"] - written
        assert now["used_percentage"] <= was["used_percentage"]
    assert all(p["context_window"]["current_usage"]["cache_creation_input_tokens"] == 0 for p, _ in zip(shown, plain)
               if p["context_window"]["current_usage"] is not None)


@pytest.mark.parametrize("at", [0.0, 0.5, 0.9])
def test_a_model_switch_reaches_the_rows_and_the_payload_from_the_call_it_reaches_the_stream_at(at: float) -> None:
    plan = FaultPlan((ModelSwitch(to_model="claude-opus-4-6", at=at),), seed=3)
    stream = [f.observation for s in apply(plan, render(_SESSION)) for f in s.frames if f.observation is not None]
    transcript = apply_transcript(plan, render_transcript(_SESSION))
    assert [(p.observation.label, p.observation.window) for p in transcript.points] == [
        (o.label, o.window) for o in stream]  # the window switches at the same point on both surfaces
    assert {o.window for o in stream} == ({1_000_000} if at == 0.0 else {200_000, 1_000_000})
    main = [r["message"]["model"] for _, r in _assistant_rows(transcript) if not r.get("isSidechain")]
    first = main.index("claude-opus-4-6")
    assert set(main[first:]) == {"claude-opus-4-6"} and "claude-opus-4-6" not in main[:first]
    assert (first == 0) == (at == 0.0)
    assert all(r["message"]["model"] == _SESSION.model for _, r in _assistant_rows(transcript) if r.get("isSidechain"))
    requests = [r["params"]["model"] for f in transcript.files.values() for r in f.rows if r["type"] == "api-request"]
    assert requests.count("claude-opus-4-6") == len({
        r["message"]["id"] for _, r in _assistant_rows(transcript) if not r.get("isSidechain")
        and r["message"]["model"] == "claude-opus-4-6"})  # one request line per switched main call
    plain = statusline_payloads(_SESSION)
    shown = apply_statusline(plan, transcript, plain)
    for point, now, was in zip(transcript.points, shown, plain):
        after = point.observation.window == 1_000_000
        assert now["model"] == ({"id": "claude-opus-4-6", "display_name": "Opus 4.6"} if after else was["model"])
        assert now["context_window"]["context_window_size"] == point.observation.window
        assert now["context_window"]["current_usage"] == was["context_window"]["current_usage"]
        used = was["context_window"]["used_percentage"]
        assert used is None or now["context_window"]["used_percentage"] == (
            int(now["context_window"]["total_input_tokens"] / 10_000 + 0.5) if after else used)


def test_garbage_reaches_the_rows_as_claude_code_writes_json() -> None:
    plain = render_transcript(_SESSION)
    rows = _assistant_rows(plain)
    kinds = ("negative", "text", "numeric_string", "nan", "huge", "null", "bool")  # each a count no more
    bystander = apply_transcript(FaultPlan((GarbageValues(rate=1.0, kinds=kinds),), seed=3), plain)
    outputs = [r["message"]["usage"]["output_tokens"] for _, r in _assistant_rows(bystander)]
    assert len(outputs) == len(rows) and all(type(o) is not int or o < 0 or o == 10**15 for o in outputs), outputs
    for file in bystander.files.values():  # JSON.stringify writes no NaN: a strict reader reads every row
        json.loads(json.dumps(file.rows, allow_nan=False))
    assert [p.observation.truth for p in bystander.points] == [p.observation.truth for p in plain.points]
    for kind, readable in (("text", False), ("numeric_string", True), ("nan", False)):
        prompt = apply_transcript(FaultPlan((GarbageValues(rate=1.0, kinds=(kind,), fields="prompt"),), seed=3), plain)
        spoiled = [r for _, r in _assistant_rows(prompt) if any(
            type(r["message"]["usage"].get(k)) is not int for k in ("input_tokens", "cache_creation_input_tokens",
                                                                   "cache_read_input_tokens"))]
        assert len(spoiled) == len(rows), kind
        if kind == "nan":
            assert all(r["message"]["usage"]["input_tokens"] is None for r in spoiled)  # NaN is written null
        lost = [(p, q) for p, q in zip(prompt.points, plain.points) if q.observation.truth.knowable
                and not p.observation.truth.knowable]
        assert lost and len(lost) < len(plain.points), kind  # a compaction's point tells the size again
        assert all((p.observation.truth.unseen is not None) == readable for p, _ in lost), kind
    whole = apply_transcript(FaultPlan((GarbageValues(rate=1.0, kinds=("float",), fields="prompt"),), seed=3), plain)
    assert [p.observation.truth for p in whole.points] == [p.observation.truth for p in plain.points]
    assert _dump(whole.files) == _dump(plain.files)  # a whole float is written as the integer it equals
