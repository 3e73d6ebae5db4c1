"""Faults of the transcript: what statusline tools meet in the JSONL files Claude Code writes.

A :class:`TranscriptFault` edits a :class:`~ctxsim.wire.TranscriptRender` (the files and the rows written at each
point) as a stream fault edits stream-json: named, seeded, documented with the report it models, and either
keeping the truth or saying how it changes it. It is a :class:`~ctxsim.faults.Fault`, so a
:class:`~ctxsim.faults.FaultPlan` may hold it beside stream faults; applied to stream-json it changes nothing.
:func:`ctxsim.faults.apply_transcript` plays a plan on a transcript: its transcript faults, and for the stream
faults that model the same report in a transcript (:func:`ctxsim.faults.transcript_faults`: ``interleaved_subagents``,
``replayed_messages``, ``compaction_metadata`` without the post size, ``synthetic_errors``, ``usage_iterations``,
``cache_read_drop``, ``uncached_gateway_usage``, ``nested_cache_creation``, ``model_switch``, ``garbage_values``, and
those that edit a call's per-block rows: ``duplicate_blocks``, ``missing_request_ids``, ``stale_output_tokens``,
``reused_message_ids``) their transcript form, so one scenario's ``faults:`` list breaks its stream and its transcript
alike (each draws its own choices)::

    transcript = apply_transcript(plan, render_transcript(session))

==============================  =====  =================================================================
fault                           truth  what it does
==============================  =====  =================================================================
interleaved_sidechains          keeps  subagent rows in the main file, in write order (the older layout)
replayed_rows                   keeps  a call's rows written again into a new (resumed) file, later
synthetic_error_rows            keeps  ``<synthetic>`` ``isApiErrorMessage`` zero-usage rows
compaction_without_post_tokens  param  ``compactMetadata`` without ``postTokens`` (or no metadata)
half_written_row                keeps  the next row half-written (no newline) when a point is read
==============================  =====  =================================================================
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from typing import Any, ClassVar

from ...wire import Script, TranscriptFile, TranscriptPoint, TranscriptRender, iso
from .._base import Fault, FaultStream

__all__ = ["TRANSCRIPT_REGISTRY", "CompactionWithoutPostTokens", "HalfWrittenRow", "InterleavedSidechains",
           "ReplayedRows", "SyntheticErrorRows", "TranscriptFault"]

SYNTHETIC_MODEL = "<synthetic>"


@dataclass(frozen=True)
class TranscriptFault(Fault):
    """A fault of the transcript files. Subclasses implement :meth:`edit`; stream-json passes through unchanged."""

    def __call__(self, scripts: Sequence[Script], rng: random.Random) -> list[Script]:
        """Stream-json unchanged: a transcript fault acts on the transcript only
        (:func:`ctxsim.faults.apply_transcript`)."""
        return list(scripts)

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        """Nothing: see :meth:`__call__`."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        """Edit ``transcript`` (a copy the caller owns) in place, drawing every choice from ``rng``; the caller
        re-counts the rows at each point from the files' write order afterwards."""
        raise NotImplementedError


def _main_files(transcript: TranscriptRender) -> list[TranscriptFile]:
    return [f for f in transcript.files.values() if "/" not in f.path]


def _at(moment: str, ms: int) -> str:
    parsed = datetime.strptime(moment, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
    return iso(parsed + timedelta(milliseconds=ms))


def _timestamp_before(file: TranscriptFile, index: int) -> str | None:
    return next((r["timestamp"] for r in reversed(file.rows[:index]) if "timestamp" in r), None)


def _runs(file: TranscriptFile, *, main_only: bool) -> list[list[int]]:
    """The row indices of each call of ``file`` (consecutive non-synthetic ``assistant`` rows of one
    ``message.id``), in order; main-chain calls only, if asked."""
    out: list[list[int]] = []
    last: Any = None
    for index, row in enumerate(file.rows):
        message = row.get("message")
        if (row.get("type") != "assistant" or not isinstance(message, dict) or not message.get("id")
                or message.get("model") == SYNTHETIC_MODEL or (main_only and row.get("isSidechain"))):
            last = None
            continue
        if out and message["id"] == last and out[-1][-1] == index - 1:
            out[-1].append(index)
        else:
            out.append([index])
        last = message["id"]
    return out


def _file_runs(transcript: TranscriptRender, *, main_only: bool) -> list[tuple[TranscriptFile, list[int]]]:
    return [(file, run) for file in transcript.files.values() for run in _runs(file, main_only=main_only)]


@dataclass(frozen=True)
class InterleavedSidechains(TranscriptFault):
    """Subagent rows written into the main file, in the order they were written, as older Claude Code did.

    Newer CLIs write a subagent's rows to ``<session>/subagents/agent-<id>.jsonl``; older ones interleaved
    ``isSidechain: true`` rows in the main file (Bugs in the wild B19: main 141,275, sidechain 19,833, main
    144,227; tiann/hapi#1256, sirmalloc/ccstatusline#70). A tool that takes the last ``assistant`` row without
    looking at ``isSidechain`` reads the subagent's small context as the main one (ccline and ccusage's transcript
    path, docs/explanation/shipped-trackers.md). Keeps the truth.
    """

    name = "interleaved_sidechains"
    source = "Bugs in the wild B19; tiann/hapi#1256; sirmalloc/ccstatusline#70; docs/explanation/shipped-trackers.md"
    rate: float = 1.0
    """The share of subagents whose rows move (at least one, when there is any)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        agents = [f for f in transcript.files.values() if "/subagents/" in f.path]
        for agent in FaultStream.pick(rng, agents, self.rate):
            main = transcript.files[agent.path.split("/", 1)[0] + ".jsonl"]
            merged = sorted(zip(main.order + agent.order, main.rows + agent.rows), key=lambda pair: pair[0])
            main.order = [moment for moment, _ in merged]
            main.rows = [row for _, row in merged]
            del transcript.files[agent.path]


@dataclass(frozen=True)
class ReplayedRows(TranscriptFault):
    """A main call's ``assistant`` rows written again into a new file, as resuming a session does: a file of a new
    session id in the same project directory, whose rows carry new uuids, that session id, the same
    ``message.id``, usage and ``requestId``, and timestamps later than the rows around them.

    Resume and session copies re-append earlier rows into a new file (danielmiessler/LifeOS#1894,
    juliantanx/aiusage#32, ccusage's note on replayed parent messages); the session's own file is not written
    again. ``where="later"`` writes the copy right after a later main call, once the context has moved on: a tool
    that takes the latest row of every file in the project by timestamp reads the old call (ccusage's fallback:
    Statusline tools as shipped), while a tool reading the session's own file (the payload's ``transcript_path``)
    is not fooled; ``"after"`` right after its own call. Keeps the truth.
    """

    name = "replayed_rows"
    source = "danielmiessler/LifeOS#1894; juliantanx/aiusage#32; docs/explanation/shipped-trackers.md"
    rate: float = 0.3
    """The share of the calls it can replay that it replays (at least one, when there is any)."""
    where: str = "later"
    """``later`` (after a later main call) or ``after`` (right after its own call)."""

    choices: ClassVar = {"where": ("after", "later")}

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        for file in _main_files(transcript):
            calls = _calls(file)
            spots = [(n, calls[n + 1][-1] if self.where == "later" else calls[n][-1])
                     for n in range(len(calls) - (self.where == "later"))]
            picked = FaultStream.pick(rng, spots, self.rate)
            if not picked:
                continue
            session = FaultStream.new_uuid(rng)
            resumed = TranscriptFile(f"{session}.jsonl")
            for n, spot in sorted(picked, key=lambda p: p[1]):
                stamp = file.rows[spot]["timestamp"]
                moment = file.order[spot]
                step = 1 / (len(calls[n]) + 1)
                for k, index in enumerate(calls[n], 1):
                    row = copy.deepcopy(file.rows[index])
                    row.update(uuid=FaultStream.new_uuid(rng), timestamp=_at(stamp, k), sessionId=session)
                    resumed.rows.append(row)
                    resumed.order.append(moment + step * k)
            transcript.files[resumed.path] = resumed


def _calls(file: TranscriptFile) -> list[list[int]]:
    """The row indices of each main-chain call of ``file`` (rows of one ``message.id`` in a run), in order."""
    out: list[list[int]] = []
    last = None
    for index, row in enumerate(file.rows):
        if row.get("type") != "assistant" or row.get("isSidechain"):
            continue
        mid = row["message"].get("id")
        if out and mid == last and out[-1][-1] == index - 1:
            out[-1].append(index)
        else:
            out.append([index])
        last = mid
    return out


@dataclass(frozen=True)
class SyntheticErrorRows(TranscriptFault):
    """Rows Claude Code writes for an API error, a limit or an interrupt: an ``assistant`` row of model
    ``<synthetic>``, ``isApiErrorMessage: true``, all-zero usage.

    sirmalloc/ccstatusline#98, ai-driven-dev/framework#686, Bugs in the wild. One goes at the end of chosen queries
    (before their ``last-prompt`` line), so the query's result point judges a tool that took it as the latest call
    (ccline reads 0 there, ccusage's fallback too: Statusline tools as shipped). The CLI's own payload skips it.
    Keeps the truth.
    """

    name = "synthetic_error_rows"
    source = "sirmalloc/ccstatusline#98; ai-driven-dev/framework#686; Bugs in the wild; Statusline tools as shipped"
    rate: float = 0.3
    """The share of queries that end with one (at least one)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        for file in _main_files(transcript):
            ends = [i for i, row in enumerate(file.rows) if row.get("type") == "last-prompt"]
            for index in sorted(FaultStream.pick(rng, ends, self.rate), reverse=True):
                before = next((r for r in reversed(file.rows[:index]) if "uuid" in r), None)
                stamp = _timestamp_before(file, index)
                zero = {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 0, "server_tool_use": {"web_search_requests": 0},
                        "service_tier": None}
                row: dict[str, Any] = {
                    "parentUuid": before["uuid"] if before else None, "isSidechain": False, "type": "assistant",
                    "message": {"id": FaultStream.new_uuid(rng), "type": "message", "role": "assistant",
                                "model": SYNTHETIC_MODEL, "content": [{"type": "text", "text": (
                                    "API Error: 500 {\"type\":\"error\",\"error\":{\"type\":\"api_error\","
                                    "\"message\":\"Internal server error\"}}")}],
                                "stop_reason": "stop_sequence", "stop_sequence": "", "usage": zero},
                    "isApiErrorMessage": True, "uuid": FaultStream.new_uuid(rng),
                    "timestamp": _at(stamp, 2) if stamp else None,
                }
                if before is not None:
                    row.update({k: before[k] for k in ("userType", "entrypoint", "cwd", "sessionId", "version",
                                                       "gitBranch") if k in before})
                file.rows.insert(index, row)
                file.order.insert(index, file.order[index] - 0.5)


@dataclass(frozen=True)
class CompactionWithoutPostTokens(TranscriptFault):
    """``compact_boundary`` rows without ``compactMetadata.postTokens`` (or without ``compactMetadata``).

    Only newer Claude Code writes ``postTokens`` (Bugs in the wild; anthropics/claude-code#72600). Without it a
    transcript tells nothing of the size after the compaction: ccstatusline's transcript path says 0, ccusage and
    ccline stay at the pre-compaction size (docs/explanation/shipped-trackers.md). Changes the truth on purpose, as
    ``compaction_metadata`` does for stream-json: the compaction's point and the points after it until the next
    main call become not knowable.
    """

    name = "compaction_without_post_tokens"
    source = "anthropics/claude-code#72600; Bugs in the wild B16; docs/explanation/shipped-trackers.md"
    rate: float = 1.0
    """The share of compactions it acts on (at least one, when there is any)."""
    mode: str = "no_post"
    """``no_post`` (``postTokens`` left out) or ``no_metadata`` (``compactMetadata`` left out)."""

    choices: ClassVar = {"mode": ("no_post", "no_metadata")}

    @property
    def keeps_truth(self) -> bool:
        return False

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        boundaries = [(file, row) for file in _main_files(transcript) for row in file.rows
                      if row.get("subtype") == "compact_boundary"]
        for file, row in FaultStream.pick(rng, boundaries, self.rate):
            if self.mode == "no_metadata":
                row.pop("compactMetadata", None)
            elif isinstance(row.get("compactMetadata"), dict):
                row["compactMetadata"].pop("postTokens", None)
            moment = file.order[file.rows.index(row)]
            transcript.points = [_unknowable(p) if p.transcript == file.path and p.written >= moment
                                 and not _call_since(file, moment, p.written) else p for p in transcript.points]


def _call_since(file: TranscriptFile, start: float, end: float) -> bool:
    return any(start < moment <= end and row.get("type") == "assistant" and not row.get("isSidechain")
               for moment, row in zip(file.order, file.rows))


def _unknowable(point: TranscriptPoint, why: str | None = None) -> TranscriptPoint:
    """``point`` not knowable; with ``why``, the number still readable there (its band an answer, as unknown is)."""
    truth = replace(point.observation.truth, knowable=False, estimated=None)
    if why is not None:
        truth = replace(truth, unseen=(truth.prompt, truth.next_request), why=why)
    return replace(point, observation=replace(point.observation, truth=truth))


def _unknowable_from(transcript: TranscriptRender, file: TranscriptFile, first: int, why: str | None = None) -> None:
    """The points of ``file`` from its row ``first`` (a main call's) until the next main call's or compaction's row
    made not knowable (:func:`_unknowable`, ``why``)."""
    ident, start = file.rows[first]["message"]["id"], file.order[first]
    ends = [moment for moment, row in zip(file.order, file.rows) if moment > start and (
        row.get("subtype") == "compact_boundary" or (row.get("type") == "assistant" and not row.get("isSidechain")
                                                     and row["message"].get("id") != ident))]
    end = min(ends, default=float("inf"))
    transcript.points = [_unknowable(p, why) if p.transcript == file.path and start <= p.written < end else p
                         for p in transcript.points]


@dataclass(frozen=True)
class HalfWrittenRow(TranscriptFault):
    """The file read while the CLI appends a row: the next row's first half, without its newline, at the end.

    Tools read the transcript while Claude Code writes it (the statusline runs during the turn); a reader that
    parses every line, or takes the last line whole, breaks on it (the half line is not JSON). At chosen points the
    main file's next row is half there. Keeps the truth: the rows before it are whole.
    """

    name = "half_written_row"
    source = "JSONL appended while read: a torn last line (docs/explanation/shipped-trackers.md)"
    rate: float = 0.3
    """The share of points it can act on (those with a row still to come) that it acts on (at least one)."""

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        spots = []
        for index, point in enumerate(transcript.points):
            file = transcript.files[point.transcript]
            later = [n for n, moment in enumerate(file.order) if moment > point.written]
            if later:
                spots.append((index, file.path, json.dumps(file.rows[later[0]], separators=(",", ":"))))
        for index, path, line in FaultStream.pick(rng, spots, self.rate):
            point = transcript.points[index]
            transcript.points[index] = replace(point, partial={**point.partial, path: line[:len(line) // 2]})


TRANSCRIPT_REGISTRY: dict[str, type[TranscriptFault]] = {cls.name: cls for cls in (
    InterleavedSidechains, ReplayedRows, SyntheticErrorRows, CompactionWithoutPostTokens, HalfWrittenRow)}
"""Every transcript fault class by name."""
