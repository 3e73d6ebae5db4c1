"""The transcript rendering held to the real CLI: what trackers read of each row, projected and compared.

:func:`project_rows` reduces one transcript file to what a tracker reads of it, row by row: values where the CLI
writes them deterministically (usage, ``stop_reason``, model, block kinds, tool use ids, ``isSidechain``,
``compactMetadata``, prompts, flags) and the shape where it draws them (ids: whether they are there, and which rows
share one; ``parentUuid``: null or an earlier row of the file; ``timestamp``: ISO or not; ``sessionId`` and
``agentId``: the file's own or not). Lines trackers skip (attachments, queue operations, API request records, hook
summaries...) are left out; which kinds of them a rendering writes that the CLI does not is compared on its own.

:func:`compare_transcripts` plays nothing: it takes a scripted session :func:`~ctxsim.live.conformance.play_live`
played (the CLI's transcript files after each step, :attr:`~ctxsim.live.conformance.Played.transcripts`), renders
the world that happened with :func:`ctxsim.wire.render_transcript`, and names every field of every row where the
two differ, at the end of each step (the query's result point), file by file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..wire import TranscriptRender, text_blocks
from .projection import Difference, Projection

__all__ = ["ROW_FIELDS", "SKIPPED_KINDS", "compare_rows", "compare_transcripts", "project_rows"]

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
_SYSTEM_SUBTYPES = ("compact_boundary", "local_command")


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


def compare_transcripts(live: Sequence[Mapping[str, Sequence[Mapping[str, Any]]]], transcript: TranscriptRender,
                        *, steps: Sequence[str]) -> list[Difference]:
    """Every projected field where the CLI's transcript files after each step (``live``, one mapping of files per
    step; ``steps`` their prompts) differ from ``transcript`` at the step's result point, file by file; then the
    line kinds trackers skip that the rendering writes and the CLI never did."""
    results = [i for i, p in enumerate(transcript.points) if p.observation.kind == "result"]
    out: list[Difference] = []
    version = transcript.cli_version
    for number, files in enumerate(live):
        where = f"step {number + 1} ({steps[number][:30]!r})" if number < len(steps) else f"step {number + 1}"
        if number >= len(results):
            out.append(Difference(where, "(result point)", "a step", None, number + 1))
            continue
        rendered = _rendered_files(transcript, results[number])
        theirs, ours = _ordered(files), _ordered(rendered)
        for k in range(max(len(theirs), len(ours))):
            a = theirs[k] if k < len(theirs) else None
            b = ours[k] if k < len(ours) else None
            label = (a or b or ("", ""))[0]
            if a is None or b is None or a[0] != b[0]:
                out.append(Difference(f"{where} {label}", "(file)", a and a[0], b and b[0], number + 1))
                continue
            out += [replace(d, step=number + 1) for d in compare_rows(
                f"{where} {label}", project_rows(files[a[1]], path=a[1], cli_version=version),
                project_rows(rendered[b[1]], path=b[1], cli_version=version))]
    if live:
        written = {str(r.get("type")) for rows in live[-1].values() for r in rows}
        ours_kinds = {str(r.get("type")) for f in transcript.files.values() for r in f.rows}
        for kind in sorted(ours_kinds - written):
            out.append(Difference("the whole transcript", "(line kind)", None, kind))
    return out
