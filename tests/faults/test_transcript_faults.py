"""Transcript faults (ctxsim.faults._transcript): each does what its report describes, to the reader it breaks.

The readers here are written for the test from the research page's descriptions of the tools (a last-row reader
like ccline, a main-chain reader like ccstatusline), and judged against the world's truth.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

import ctxsim.faults as F
from ctxsim.wire import TranscriptRender, render, render_transcript
from ctxsim.world import Session, SessionBuilder


def _session() -> Session:
    return (SessionBuilder(seed=9)
            .query("one").call(results=(500,)).call()
            .start_subagent().call(results=(100,)).call().end_subagent().call()
            .query("two").call(results=(300,)).call(results=(300,)).call()
            .query("/compact").compact(2_500)
            .query("three").call()
            .build())


def _prompt(row: dict[str, Any]) -> int:
    usage = row["message"]["usage"]
    return int(usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"])


def last_row(rows: list[dict[str, Any]]) -> int | None:
    """ccline's way: the last assistant row with usage, whatever it is."""
    found = [r for r in rows if r.get("type") == "assistant"]
    return _prompt(found[-1]) if found else None


def main_chain(rows: list[dict[str, Any]]) -> int | None:
    """A careful reader: the last main-chain, non-synthetic assistant row, first of its message id (replays
    skipped)."""
    seen: set[str] = set()
    value = None
    for row in rows:
        if row.get("type") != "assistant" or row.get("isSidechain") or row.get("isApiErrorMessage"):
            continue
        if row["message"]["id"] in seen:
            continue
        seen.add(row["message"]["id"])
        value = _prompt(row)
    return value


def _faulted(*faults: F.Fault, seed: int = 0) -> tuple[TranscriptRender, TranscriptRender]:
    clean = render_transcript(_session())
    return clean, F.apply_transcript(F.FaultPlan(faults, seed), clean)


def _call_points(transcript: TranscriptRender) -> list[int]:
    return [i for i, p in enumerate(transcript.points) if p.observation.kind in ("call", "subagent", "result")
            and p.observation.truth.knowable and p.observation.truth.output]


def test_interleaved_sidechains_fool_a_last_row_reader_only() -> None:
    clean, faulted = _faulted(F.InterleavedSidechains())
    assert not [p for p in faulted.files if "/subagents/" in p]
    assert [p.observation for p in faulted.points] == [p.observation for p in clean.points]
    sub = next(i for i, p in enumerate(faulted.points) if p.observation.kind == "subagent")
    rows = faulted.rows_at(sub)
    assert rows[-1]["isSidechain"] is True
    truth = faulted.points[sub].observation.truth.prompt
    assert last_row(rows) != truth and main_chain(rows) == truth
    assert last_row(clean.rows_at(sub)) == truth  # the newer layout: the main file has no sidechain row


def test_replayed_rows_go_into_a_new_file_and_fool_only_a_reader_of_every_file() -> None:
    clean, faulted = _faulted(F.ReplayedRows(rate=1.0))
    own = clean.main.path
    assert faulted.files[own].rows == clean.files[own].rows  # the session's own file is not written again
    resumed = [path for path in faulted.files if path not in clean.files]
    assert len(resumed) == 1 and "/" not in resumed[0]
    copies = faulted.files[resumed[0]].rows
    assert copies and {r["sessionId"] for r in copies} == {resumed[0].removesuffix(".jsonl")}
    fooled = []
    for index in _call_points(faulted):
        truth = faulted.points[index].observation.truth.prompt
        assert faulted.points[index].transcript == own and last_row(faulted.rows_at(index)) == truth
        every = sorted((r for path in faulted.files for r in faulted.rows_at(index, path)
                        if r.get("type") == "assistant" and not r.get("isSidechain")), key=lambda r: r["timestamp"])
        fooled.append(last_row(every) != truth)  # the latest row of the project by time: the replay
    assert any(fooled)
    ids = [r["uuid"] for path in faulted.files for r in faulted.files[path].rows if "uuid" in r]
    assert len(ids) == len(set(ids))


def test_synthetic_error_rows() -> None:
    _, faulted = _faulted(F.SyntheticErrorRows(rate=1.0))
    results = [i for i, p in enumerate(faulted.points) if p.observation.kind == "result"
               and p.observation.truth.output]
    for index in results:
        rows = faulted.rows_at(index)
        assistant = [r for r in rows if r["type"] == "assistant"][-1]
        assert assistant["isApiErrorMessage"] is True and assistant["message"]["model"] == "<synthetic>"
        assert last_row(rows) == 0
        assert main_chain(rows) == faulted.points[index].observation.truth.prompt


def test_compaction_without_post_tokens_makes_the_point_unknowable() -> None:
    clean, faulted = _faulted(F.CompactionWithoutPostTokens())
    boundary = next(r for r in faulted.rows if r.get("subtype") == "compact_boundary")
    assert "postTokens" not in boundary["compactMetadata"] and "preTokens" in boundary["compactMetadata"]
    kinds = [(p.observation.label, p.observation.truth.knowable) for p in faulted.points]
    compaction = next(i for i, (label, _) in enumerate(kinds) if label.endswith("compaction"))
    assert not kinds[compaction][1]
    assert kinds[compaction + 1] == ("q3 result", False)  # no call since
    assert kinds[compaction + 2] == ("q4 call 1", True)
    assert clean.points[compaction].observation.truth.knowable
    _, bare = _faulted(F.CompactionWithoutPostTokens(mode="no_metadata"))
    assert "compactMetadata" not in next(r for r in bare.rows if r.get("subtype") == "compact_boundary")


def test_half_written_row_is_torn_at_the_end() -> None:
    clean, faulted = _faulted(F.HalfWrittenRow(rate=1.0))
    torn = [i for i, p in enumerate(faulted.points) if p.partial]
    assert torn
    for index in torn:
        text = faulted.text(index)
        *whole, tail = text.split("\n")
        assert tail and whole
        with pytest.raises(json.JSONDecodeError):
            json.loads(tail)
        assert [json.loads(line) for line in whole] == clean.rows_at(index)


def test_counterparts_of_stream_faults() -> None:
    plan = F.FaultPlan((F.InterleavedSubagents(), F.CompactionMetadata(mode="no_post"), F.MissingResult()))
    assert [type(f) for f in F.transcript_faults(plan.faults)] == [F.InterleavedSidechains,
                                                                 F.CompactionWithoutPostTokens]
    assert F.transcript_faults([F.CompactionMetadata(mode="camel_case")]) == ()
    faulted = F.apply_transcript(plan, render_transcript(_session()))
    assert not [p for p in faulted.files if "/subagents/" in p]


def test_stream_json_passes_through() -> None:
    scripts = render(_session())
    plan = F.FaultPlan((F.ReplayedRows(), F.HalfWrittenRow()), seed=3)
    assert [s.dicts() for s in F.apply(plan, scripts)] == [s.dicts() for s in scripts]


def test_deterministic_and_input_untouched() -> None:
    clean = render_transcript(_session())
    before = [clean.text(i) for i in range(len(clean.points))]
    plan = F.FaultPlan(tuple(cls() for cls in F.TRANSCRIPT_REGISTRY.values()), seed=11)
    first, second = F.apply_transcript(plan, clean), F.apply_transcript(plan, clean)
    assert [first.text(i) for i in range(len(first.points))] == [second.text(i) for i in range(len(second.points))]
    assert [clean.text(i) for i in range(len(clean.points))] == before


def test_bad_parameters_are_named() -> None:
    with pytest.raises(ValueError, match="ctxsim: fault replayed_rows: where"):
        F.ReplayedRows(where="sometime")
    with pytest.raises(ValueError, match="ctxsim: fault half_written_row: rate"):
        F.HalfWrittenRow(rate=0)


def test_transcript_faults_stand_beside_stream_faults_in_a_plan() -> None:
    rng = random.Random(0)
    scripts = render(_session())
    assert F.InterleavedSidechains()(scripts, rng) == list(scripts)
