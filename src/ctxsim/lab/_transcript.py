"""The transcript rendering held to the real CLI: what trackers read of each row, projected and compared.

:func:`project_rows` reduces one transcript file to what a tracker reads of it, row by row: values where the CLI
writes them deterministically (usage, ``stop_reason``, model, block kinds, tool use ids, ``isSidechain``,
``compactMetadata``, prompts, flags) and the shape where it draws them (ids: whether they are there, and which rows
share one; ``parentUuid``: null or an earlier row of the file; ``timestamp``: ISO or not; ``sessionId`` and
``agentId``: the file's own or not). Lines trackers skip (attachments, queue operations, API request records, hook
summaries...) are left out; which kinds of them a rendering writes that the CLI does not is compared on its own.

:func:`compare_transcripts` plays nothing: it takes what ``play_live`` kept of a scripted
session's transcript and the rendering of the world that happened (:func:`ctxsim.wire.render_transcript`), pairs them at
every observation point (:func:`pair_transcripts`) and names every field of every row where the two differ, file by
file. The CLI writes its transcript through a queue flushed on a timer, so a snapshot taken when a message reaches the
SDK races it; the points are made deterministic by the fake API instead
(``RequestSnapshots``): each request the CLI sends is held until the CLI's transcript has
settled, and compared with the rendering just before that request's call or compaction (the last point before it, with
the tool results or prompt written after it); after each step, its files are compared at the points after the step's
last request (the CLI makes none between a query's last call, a ``/compact`` or ``/clear``, and its result, and writes
no row trackers read there) and at its result point.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..wire import Renderer, TranscriptRender, text_blocks
from ..world import Call, Compaction, Session
from ._projection import Difference, Projection
from ._settle import RequestSnapshot

__all__ = ["ROW_FIELDS", "SKIPPED_KINDS", "TranscriptPair", "compare_files", "compare_rows", "compare_transcripts",
           "pair_transcripts", "project_rows"]

ROW_FIELDS: Mapping[str, tuple[str, ...]] = {
    "assistant": ("isSidechain", "uuid", "parentUuid", "timestamp", "sessionId", "agentId", "version",
                  "message.id", "requestId", "message.model", "message.role", "message.stop_reason",
                  "message.content", "usage.input_tokens", "usage.cache_creation_input_tokens",
                  "usage.cache_read_input_tokens", "usage.output_tokens", "apiBlockIndex", "isApiErrorMessage"),
    "user": ("isSidechain", "uuid", "parentUuid", "timestamp", "sessionId", "agentId", "version", "kind", "prompt",
             "tool_results", "is_error", "sourceToolAssistantUUID", "isCompactSummary", "isMeta"),
    "system": ("isSidechain", "uuid", "parentUuid", "logicalParentUuid", "timestamp", "sessionId", "subtype",
               "compactMetadata.trigger", "compactMetadata.preTokens", "compactMetadata.postTokens"),
}
"""The fields projected for each kind of row a tracker reads (``type`` besides)."""

SKIPPED_KINDS = ("attachment", "queue-operation", "api-request", "api-request-blob", "api-request-shape",
                 "last-prompt", "atis-latch", "tools-used", "cost-state", "mode")
"""Line kinds trackers skip, left out of the projection."""

_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
_SYSTEM_SUBTYPES = ("compact_boundary", "local_command", "turn_duration")


class _Shapes:
    """Names drawn ids by first appearance in one file (``message.id`` of the 1st call: ``#1``...), so two files
    written with different ids project alike where they share the same ids in the same places."""

    def __init__(self) -> None:
        self.seen: dict[str, dict[str, int]] = {}

    def __call__(self, kind: str, value: Any) -> str | None:
        if value is None:
            return None
        names = self.seen.setdefault(kind, {})
        return f"#{names.setdefault(str(value), len(names) + 1)}"


def _user_kind(row: Mapping[str, Any]) -> tuple[str, Any]:
    content = row.get("message", {}).get("content")
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return "tool_result", None
    if row.get("isCompactSummary"):
        return "compact_summary", None
    text = "\n".join(text_blocks(content))
    if row.get("isMeta") or text.startswith(("<command-name>", "<local-command-")):
        return "command", re.sub(r">[^<]*<", "><", text.split("\n", 1)[0])  # the tags, not what they hold
    return "prompt", text


def project_rows(rows: Sequence[Mapping[str, Any]], *, path: str, cli_version: str) -> list[Projection]:
    """What a tracker reads of each row of the file at ``path`` (relative to the project directory) that it reads
    at all, in order (see the module's docstring). ``cli_version`` is the version the rows should claim."""
    shapes = _Shapes()
    stem = path.split("/", 1)[0].removesuffix(".jsonl")
    agent = path.rsplit("agent-", 1)[1].removesuffix(".jsonl") if "/subagents/agent-" in path else None
    uuids: set[str] = set()
    tool_rows: dict[str, str] = {}
    out: list[Projection] = []
    for row in rows:
        kind = row.get("type")
        uid = row.get("uuid")
        if kind in ROW_FIELDS and not (kind == "system" and row.get("subtype") not in _SYSTEM_SUBTYPES):
            out.append(_project(row, shapes, uuids, tool_rows, stem, agent, cli_version))
        if isinstance(uid, str):
            uuids.add(uid)
            if kind == "assistant":
                for block in row.get("message", {}).get("content") or ():
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        tool_rows[uid] = str(block.get("id"))
    return out


def _project(row: Mapping[str, Any], shapes: _Shapes, uuids: set[str], tool_rows: Mapping[str, str], stem: str,
             agent: str | None, cli_version: str) -> Projection:
    kind = str(row["type"])

    def link(value: Any) -> str | None:
        return None if value is None else "an earlier row" if value in uuids else "no earlier row"

    def own(value: Any, expected: str | None) -> Any:
        return "the file's" if value is not None and value == expected else value

    full: Projection = {
        "type": kind, "isSidechain": row.get("isSidechain"), "uuid": "uuid" in row,
        "parentUuid": link(row.get("parentUuid")),
        "timestamp": "iso" if _ISO.fullmatch(str(row.get("timestamp"))) else row.get("timestamp"),
        "sessionId": own(row.get("sessionId"), stem), "agentId": own(row.get("agentId"), agent),
        "version": own(row.get("version"), cli_version),
    }
    if kind == "assistant":
        message = row.get("message") or {}
        usage = message.get("usage") or {}
        full.update({
            "message.id": shapes("message", message.get("id")), "requestId": shapes("request", row.get("requestId")),
            "message.model": message.get("model"), "message.role": message.get("role"),
            "message.stop_reason": message.get("stop_reason"),
            "message.content": [(b.get("type"), b.get("id"), b.get("name")) if b.get("type") == "tool_use"
                                else (b.get("type"),) for b in message.get("content") or () if isinstance(b, dict)],
            **{f"usage.{k}": usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens",
                                                    "cache_read_input_tokens", "output_tokens")},
            "apiBlockIndex": row.get("apiBlockIndex"), "isApiErrorMessage": row.get("isApiErrorMessage"),
        })
    elif kind == "user":
        what, text = _user_kind(row)
        content = row.get("message", {}).get("content")
        results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"] if isinstance(
            content, list) else []
        source = row.get("sourceToolAssistantUUID")
        full.update({
            "kind": what, "prompt": text, "tool_results": [b.get("tool_use_id") for b in results],
            "is_error": [bool(b.get("is_error")) for b in results],
            "sourceToolAssistantUUID": None if source is None else (
                "the row of its tool use" if tool_rows.get(source) in {b.get("tool_use_id") for b in results}
                else "another row"),
            "isCompactSummary": row.get("isCompactSummary"), "isMeta": row.get("isMeta"),
        })
    else:
        meta = row.get("compactMetadata")
        full.update({"subtype": row.get("subtype"), "logicalParentUuid": link(row.get("logicalParentUuid"))})
        if isinstance(meta, Mapping):
            full.update({f"compactMetadata.{k}": meta.get(k) for k in ("trigger", "preTokens", "postTokens")})
    return {k: v for k, v in full.items() if k == "type" or k in ROW_FIELDS[kind]}


def compare_rows(where: str, left: Sequence[Projection], right: Sequence[Projection]) -> list[Difference]:
    """Every field where two projected files differ, row by row (a missing or extra row is one difference,
    ``(row)``, and the comparison goes on at the next position)."""
    out: list[Difference] = []
    for index in range(max(len(left), len(right))):
        a = left[index] if index < len(left) else None
        b = right[index] if index < len(right) else None
        kind = (a or b or {}).get("type")
        at = f"{where} row {index + 1} ({kind})"
        if a is None or b is None:
            out.append(Difference(at, "(row)", a and a.get("type"), b and b.get("type")))
            continue
        out += [Difference(at, key, a.get(key, "<absent>"), b.get(key, "<absent>"))
                for key in sorted(set(a) | set(b), key=lambda k: (k != "type", k))
                if a.get(key, "<absent>") != b.get(key, "<absent>")]
    return out


def _ordered(files: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[tuple[str, str]]:
    """``(label, path)`` of each file: the main files (``main 1``...) in the order they were started (their first
    timestamp), then each subagent's (``main 1 subagent 1``...)."""
    def started(path: str) -> str:
        return next((str(r["timestamp"]) for r in files[path] if r.get("timestamp")), "")

    mains = sorted((p for p in files if "/" not in p), key=started)
    out = []
    for n, main in enumerate(mains, 1):
        out.append((f"main {n}", main))
        stem = main.removesuffix(".jsonl")
        agents = sorted((p for p in files if p.startswith(f"{stem}/subagents/")), key=started)
        out += [(f"main {n} subagent {k}", p) for k, p in enumerate(agents, 1)]
    return out


def _rendered_files(transcript: TranscriptRender, index: int) -> dict[str, list[dict[str, Any]]]:
    point = transcript.points[index]
    return {path: file.rows[:point.rows[path]] for path, file in transcript.files.items() if path in point.rows}


def _written_before(transcript: TranscriptRender, moment: float) -> dict[str, list[dict[str, Any]]]:
    """The rendering's files as they stand just before ``moment`` (:attr:`~ctxsim.wire.TranscriptFile.order`):
    every row written earlier, in file order; files with none left out."""
    out = {path: [row for row, at in zip(file.rows, file.order) if at < moment]
           for path, file in transcript.files.items()}
    return {path: rows for path, rows in out.items() if rows}


# --- pairing and comparing ------------------------------------------------------------------------------------------


Files = Mapping[str, Sequence[Mapping[str, Any]]]


@dataclass(frozen=True)
class TranscriptPair:
    """A moment of a live run where the CLI's transcript files are compared with the rendering's."""

    where: str
    """``step 2 ('run a command') at the request of q2 call 2 (after q2 call 1)``, or ``... at q2 result``."""
    step: int
    """The 1-based step."""
    live: Files
    rendered: Files
    points: tuple[int, ...]
    """The rendering's observation points (0-based) whose transcript this compares: at a request, the last point
    before it, with the rows the rendering writes after that point and before the request's call (its tool
    results, the next prompt); at a step's end, every point after the step's last request, up to its result (no
    row trackers read is written between them, and the CLI makes no request there to be held at)."""


@dataclass(frozen=True)
class _Requested:
    """A step of the world the CLI made a request for (a call, or a compaction's summary request)."""

    after: int | None
    """The first observation point (0-based) at or after the step; None: none follows."""
    own: bool
    """Whether that point is the step's own (a call the stream shows, a compaction)."""


def _requested(session: Session, transcript: TranscriptRender,
               ) -> tuple[dict[str, _Requested], list[tuple[_Requested, int]]]:
    """The world's calls by ``request_id`` and its compactions' summary requests in order (a refused one's before
    its summary's, each with the compaction's number), each with the observation points around it: walked as the
    renderings walk a session (:meth:`ctxsim.wire.Renderer.walk`), so the point a request comes before is the
    world's, whatever rows the rendering writes where."""
    renderer = Renderer(session, False, False, transcript.cwd, transcript.cli_version)
    calls: dict[str, _Requested] = {}
    compactions: list[tuple[_Requested, int]] = []
    pending: list[Call | Compaction] = []

    def mark(step: Call | Compaction, requested: _Requested) -> None:
        if isinstance(step, Compaction):
            number = len({n for _, n in compactions})
            compactions.extend([(requested, number)] * (1 + len(step.rejected)))
        elif step.request_id is not None:
            calls[step.request_id] = requested

    for index, query in enumerate(session.queries):
        for step, frames in renderer.walk(index, query):
            if isinstance(step, (Call, Compaction)):
                pending.append(step)
            observed = next((f.observation for f in frames if f.observation is not None), None)
            if observed is not None:
                for waiting in pending:
                    mark(waiting, _Requested(observed.index - 1, waiting is step))
                pending.clear()
    for waiting in pending:
        mark(waiting, _Requested(None, False))
    return calls, compactions


def _first_rows(transcript: TranscriptRender) -> tuple[dict[str, float], list[float]]:
    """When the rendering writes each call's first row (by ``requestId``) and each compaction's boundary."""
    calls: dict[str, float] = {}
    boundaries: list[float] = []
    for file in transcript.files.values():
        for row, at in zip(file.rows, file.order):
            if row.get("type") == "assistant" and row.get("requestId") is not None:
                request = str(row["requestId"])
                calls[request] = min(calls.get(request, at), at)
            elif row.get("type") == "system" and row.get("subtype") == "compact_boundary":
                boundaries.append(at)
    return calls, sorted(boundaries)


def pair_transcripts(live: Sequence[Files], transcript: TranscriptRender, *, steps: Sequence[str],
                     requests: Sequence[Sequence[RequestSnapshot]] | None = None, session: Session | None = None,
                     ) -> tuple[list[TranscriptPair], list[Difference]]:
    """Pair the CLI's transcript files with the rendering's: after each step (``live``, one mapping of files per step;
    ``steps`` their prompts) at the step's result point, and, with ``requests`` (per step, the snapshots of
    ``RequestSnapshots``) and the world ``session`` the rendering renders, at each request
    too: with the rendering just before that request's call or compaction writes its first row (and before the world's
    next observation point), and after the step at every point from its last request's on. Without ``requests``, only
    the result points. Also what cannot be paired, as differences (a step with no result point, a request the world has
    no call or compaction for)."""
    if requests is not None and session is None:
        raise ValueError("ctxsim: pair_transcripts(requests=...) needs the world session the rendering renders")
    points = transcript.points
    results = [i for i, p in enumerate(points) if p.observation.kind == "result"]
    calls, compactions = _requested(session, transcript) if session is not None else ({}, [])
    first_rows, boundaries = _first_rows(transcript)
    compacted = iter((requested, boundaries[n] if n < len(boundaries) else math.inf) for requested, n in compactions)
    pairs: list[TranscriptPair] = []
    missing: list[Difference] = []
    for number, files in enumerate(live, 1):
        name = f"step {number} ({steps[number - 1][:30]!r})" if number <= len(steps) else f"step {number}"
        if number > len(results):
            missing.append(Difference(name, "(result point)", "a step", None, number))
            continue
        first = results[number - 2] + 1 if number > 1 else 0
        from_point = first
        for snapshot in (requests[number - 1] if requests is not None and number <= len(requests) else ()):
            if snapshot.kind == "compact":
                found = next(compacted, None)
                step, row = found if found is not None else (None, math.inf)
            else:
                step, row = calls.get(snapshot.request_id), first_rows.get(snapshot.request_id, math.inf)
            if step is None:
                missing.append(Difference(f"{name} at request {snapshot.request_id}", "(request)",
                                          snapshot.kind, None, number))
                continue
            after = step.after if step.after is not None else len(points)
            cut = min(row, points[after].written) if after < len(points) else row
            before = after - 1
            coming = points[after].observation.label if after < len(points) else "the end"
            label = (f"{name} at the summary request of {coming}" if snapshot.kind == "compact" else
                     f"{name} at the request of {coming}" if step.own else
                     f"{name} at a {snapshot.kind} request before {coming}")
            if before >= 0:
                label += f" (after {points[before].observation.label})"
            pairs.append(TranscriptPair(label, number, snapshot.files, _written_before(transcript, cut),
                                        (before,) if before >= 0 else ()))
            from_point = min(max(from_point, after), results[number - 1])
        for index in range(from_point if requests is not None else results[number - 1], results[number - 1] + 1):
            pairs.append(TranscriptPair(f"{name} at {points[index].observation.label}", number, files,
                                        _rendered_files(transcript, index), (index,)))
    return pairs, missing


def compare_files(where: str, live: Files, rendered: Files, *, cli_version: str) -> list[Difference]:
    """Every projected field where two sets of transcript files differ, file by file (:func:`_ordered`'s labels):
    a file one has and the other has not is one difference, ``(file)``."""
    out: list[Difference] = []
    theirs, ours = _ordered(live), _ordered(rendered)
    for k in range(max(len(theirs), len(ours))):
        a = theirs[k] if k < len(theirs) else None
        b = ours[k] if k < len(ours) else None
        label = (a or b or ("", ""))[0]
        if a is None or b is None or a[0] != b[0]:
            out.append(Difference(f"{where} {label}", "(file)", a and a[0], b and b[0]))
            continue
        out += compare_rows(f"{where} {label}", project_rows(live[a[1]], path=a[1], cli_version=cli_version),
                            project_rows(rendered[b[1]], path=b[1], cli_version=cli_version))
    return out


def compare_transcripts(live: Sequence[Files], transcript: TranscriptRender, *, steps: Sequence[str],
                        requests: Sequence[Sequence[RequestSnapshot]] | None = None, session: Session | None = None,
                        ) -> list[Difference]:
    """Every projected field where the CLI's transcript files differ from ``transcript`` at each moment
    :func:`pair_transcripts` pairs (after each step; with ``requests`` and ``session``, at every point), file by
    file; then the line kinds trackers skip that the rendering writes and the CLI never did."""
    pairs, out = pair_transcripts(live, transcript, steps=steps, requests=requests, session=session)
    for pair in pairs:
        out += [replace(d, step=pair.step) for d in compare_files(pair.where, pair.live, pair.rendered,
                                                                  cli_version=transcript.cli_version)]
    if live:
        written = {str(r.get("type")) for rows in live[-1].values() for r in rows}
        ours_kinds = {str(r.get("type")) for f in transcript.files.values() for r in f.rows}
        for kind in sorted(ours_kinds - written):
            out.append(Difference("the whole transcript", "(line kind)", None, kind))
    return out
