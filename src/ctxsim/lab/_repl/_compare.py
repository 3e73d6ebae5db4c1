"""The rendering held to the REPL recordings of :mod:`ctxsim.lab`, payload by payload and row by row.

A :class:`ReplRecording` is one recorded REPL session as shipped under ``captures/claude-code-<version>/repl/``.
:func:`world_of_recording` makes the world that happened from it: each step's main-chain calls as the fake API
served them (usage exact), each tool call with the input and the result its transcript's message rows hold (the
result's tokens its characters over four, at least one, as for a recorded stream-json session), each compaction
as its ``compact_boundary`` recorded it (its summary request's usage in the cost), each ``/clear`` as a reset to
the session the next payload names; the model, its window
(:func:`~ctxsim.world.model_window`: ``[1m]``, ``CLAUDE_CODE_DISABLE_1M_CONTEXT``) and the autocompact window from
the recording's environment; ``entrypoint: repl``. Whether a compaction kept a segment is left to the world
(:func:`~ctxsim.world.keeps_segment`), so the comparison tests it.

:func:`compare_repl_payloads` renders that world (:func:`ctxsim.wire.statusline_payloads`,
:func:`ctxsim.wire.startup_payload`) and names every field where the rendering differs from what the REPL sent:
the payloads at start, and the last one after each step against the rendering's at the end of that step's query.
Compared: the keys, ``context_window`` whole, ``exceeds_200k_tokens``, the model, ``version``, the cost, whether a
``prompt_id`` is there and whether it is new, and ``prompt_cache`` key by key (``expires_at``: an integer within the
TTL of the payload's moment, the CLI's clock being the wall's). :func:`compare_repl_boundaries` holds each
``compact_boundary``'s ``compactMetadata`` keys, and whether it preserved a segment, to the rendered transcript's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...wire import render, render_transcript, startup_payload, statusline_payloads, transcript_outline
from ...world import (
    CHARS_PER_TOKEN,
    Call,
    ClaudeSettings,
    Compaction,
    ConversationReset,
    Query,
    Session,
    Step,
    SubagentStart,
    TaskNotification,
    Text,
    ToolResult,
    ToolUse,
)
from .._projection import Difference, field_at
from .._recorded import _text
from .._transcript import _ordered, compare_files

__all__ = ["ReplRecording", "compare_repl_boundaries", "compare_repl_payloads", "compare_repl_transcripts",
           "load_repl_recordings", "world_of_recording"]

_TTL = 300


@dataclass(frozen=True)
class ReplRecording:
    """One recorded REPL session (``record_repl``'s data)."""

    name: str
    cli_version: str
    model: str
    env: Mapping[str, str]
    payloads: Sequence[tuple[int, dict[str, Any]]]
    """Every payload the statusline command was sent: the moment (ns) its command started, and the payload."""
    steps: Sequence[Mapping[str, Any]]
    """Per step: ``prompt``, ``typed_ns``, ``served`` (the calls the fake API answered), ``rows`` per file."""
    transcripts: Mapping[str, Sequence[Mapping[str, Any]]]

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReplRecording:
        """Read a recording's JSON."""
        return cls(str(data["name"]), str(data["cli_version"]), str(data["model"]), dict(data.get("env") or {}),
                   [(int(p["ns"]), dict(p["payload"])) for p in data["payloads"]], list(data["steps"]),
                   dict(data["transcripts"]))

    @property
    def initial(self) -> list[dict[str, Any]]:
        """The payloads sent before the first step was typed."""
        first = int(self.steps[0]["typed_ns"]) if self.steps else None
        return [p for ns, p in self.payloads if first is None or ns < first]

    def after(self, step: int) -> dict[str, Any] | None:
        """The last payload sent after step ``step`` (0-based) was typed and before the next one was."""
        start = int(self.steps[step]["typed_ns"])
        end = int(self.steps[step + 1]["typed_ns"]) if step + 1 < len(self.steps) else None
        sent = [(ns, p) for ns, p in self.payloads if ns > start and (end is None or ns < end)]
        return sent[-1][1] if sent else None

    def boundaries(self) -> list[Mapping[str, Any]]:
        """The ``compact_boundary`` rows of the main transcripts, in the order they were written."""
        return [r for path, rows in self.transcripts.items() if "/" not in path for r in rows
                if r.get("subtype") == "compact_boundary"]


def load_repl_recordings(directory: Path) -> list[ReplRecording]:
    """Every REPL recording under ``directory`` (``claude-code-*/repl/*.json``), by version then name."""
    return [ReplRecording.from_json(json.loads(p.read_text()))
            for p in sorted(directory.glob("claude-code-*/repl/*.json"))]


def _tool_rows(recording: ReplRecording) -> tuple[dict[str, dict[str, object]], dict[str, str]]:
    """What the transcripts' message rows say of each tool call, by its id: the input the model gave it, and its
    result's text as the tool returned it (a request line's copy carries what Claude Code attached later)."""
    inputs: dict[str, dict[str, object]] = {}
    results: dict[str, str] = {}
    for rows in recording.transcripts.values():
        for row in rows:
            message = row.get("message") if row.get("type") in ("user", "assistant") else None
            content = message.get("content") if isinstance(message, dict) else None
            for block in content if isinstance(content, list) else ():
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
                    inputs[str(block.get("id"))] = dict(block["input"])
                elif block.get("type") == "tool_result":
                    results[str(block.get("tool_use_id"))] = _text(block.get("content"))
    return inputs, results


def _call(served: Mapping[str, Any], model: str, inputs: Mapping[str, dict[str, object]]) -> Call:
    blocks: list[Text | ToolUse] = []
    ids = iter(served.get("tool_use_ids") or ())
    for block in served["blocks"]:
        kind, _, rest = str(block).partition(":")
        if kind == "ToolUse":
            ident = next(ids, "")
            blocks.append(ToolUse(ident, rest, dict(inputs.get(ident, {}))))
        else:
            blocks.append(Text(rest))
    usage = served["usage"]
    return Call(int(usage[0]), int(usage[1]), int(usage[2]), int(served["output_tokens"]), tuple(blocks),
                str(served["message_id"]), str(served.get("model") or model), str(served["request_id"]),
                served.get("agent") if served["kind"] == "subagent" else None)


def world_of_recording(recording: ReplRecording) -> Session:
    """The world of a recorded REPL session (see the module's docstring)."""
    boundaries = iter(recording.boundaries())
    queries: list[Query] = []
    launches = {str(b.get("tool_use_id")): r["toolUseResult"] for path, rows in recording.transcripts.items()
                if "/" not in path for r in rows if isinstance(r.get("toolUseResult"), dict)  # in the background
                and r["toolUseResult"].get("status") == "async_launched" for b in r["message"]["content"]}
    running: list[str] = []
    inputs, results = _tool_rows(recording)
    for number, step in enumerate(recording.steps):
        steps: list[Step] = []
        if step["prompt"] == "/clear":
            after = recording.after(number)
            steps.append(ConversationReset(str(after["session_id"]) if after else ""))
        for served in step["served"]:
            if served["error"] is not None:
                continue
            call = _call(served, recording.model, inputs)
            if served["kind"] == "compact":
                meta = dict(next(boundaries, {}).get("compactMetadata") or {})
                steps.append(Compaction(int(meta.get("preTokens", 0)), int(meta.get("postTokens", 0)),
                                        meta.get("trigger", "manual"), summary=call))
            elif served["kind"] in ("main", "subagent"):
                if call.is_main and running:  # the background subagents' calls are done: their notifications
                    steps += [TaskNotification(t, str(launches[t]["agentId"]), "", 0) for t in running]
                    running.clear()
                steps.append(call)
                for b in (b for b in call.blocks if isinstance(b, ToolUse)):
                    if b.id in launches:
                        launch = launches[b.id]
                        steps.append(SubagentStart(b.id, str(launch["agentId"]), str(launch.get("description")),
                                                   str(launch.get("prompt")), background=True))
                    text = results.get(b.id, "")
                    steps.append(ToolResult(b.id, text, max(1, len(text) // CHARS_PER_TOKEN) if text else 0,
                                            parent_tool_use_id=call.parent_tool_use_id))
                if call.parent_tool_use_id in launches and call.parent_tool_use_id not in running:
                    running.append(call.parent_tool_use_id)
        prompt = str(step["prompt"])
        switched = prompt.split()[1] if prompt.startswith("/model ") else None
        queries.append(Query(prompt, tuple(steps), switched))
    first = str(recording.payloads[0][1]["session_id"]) if recording.payloads else ""
    env = recording.env
    pct, most = env.get("CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"), env.get("CLAUDE_CODE_MAX_CONTEXT_TOKENS")
    settings = ClaudeSettings(auto_compact=not env.get("DISABLE_AUTO_COMPACT"), pct_override=int(pct) if pct else None,
                              max_context_tokens=int(most) if most else None,
                              disable_1m_context=bool(env.get("CLAUDE_CODE_DISABLE_1M_CONTEXT")))
    auto = env.get("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    return Session(first, tuple(queries), model=recording.model, window=settings.window_for(recording.model),
                   name=recording.name, auto_compact_window=int(auto) if auto else None, entrypoint="repl",
                   settings=settings, cli=recording.cli_version)


_FIELDS = ("context_window", "exceeds_200k_tokens", "model.id", "model.display_name", "version", "fast_mode",
           "thinking", "output_style", "workspace.added_dirs")


def _project(payload: Mapping[str, Any], previous_id: Any, moment_ns: int | None) -> dict[str, Any]:
    """What is compared of ``payload`` (``previous_id``: the ``prompt_id`` of the payload before it)."""
    out = {name: field_at(payload, name) for name in _FIELDS}
    out["keys"] = sorted(payload)
    cost = payload.get("cost") or {}
    out["cost.total_cost_usd"] = round(float(cost.get("total_cost_usd", 0)), 9)
    prompt_id = payload.get("prompt_id")
    out["prompt_id"] = "absent" if prompt_id is None else "same" if prompt_id == previous_id else "new"
    cache = payload.get("prompt_cache")
    if isinstance(cache, Mapping):
        for key, value in cache.items():
            if key == "expires_at":
                value = isinstance(value, int) and (moment_ns is None or 0 < value - moment_ns / 1e9 <= _TTL + 1)
            elif key == "hit_ratio":
                value = round(float(value), 12)
            elif key == "last_miss_at":
                value = value is not None
            out[f"prompt_cache.{key}"] = value
    return out


def compare_repl_payloads(recording: ReplRecording) -> list[Difference]:
    """Every field where the rendering of the recording's world differs from the payloads the REPL sent."""
    session = world_of_recording(recording)
    first = recording.payloads[0][1] if recording.payloads else {}
    cwd = str(first.get("cwd", ""))
    path = str(first.get("transcript_path", ""))
    kwargs: dict[str, Any] = {"transcript_path": path, "cli_version": recording.cli_version, "cwd": cwd}
    rendered = statusline_payloads(session, **kwargs)
    out: list[Difference] = []
    start = _project(startup_payload(session, **kwargs), None, None)
    for payload in recording.initial:
        theirs = _project(payload, None, None)
        out += [Difference("before the first prompt", k, theirs.get(k), start.get(k)) for k in sorted(set(theirs)
                | set(start)) if theirs.get(k) != start.get(k) and not k.startswith("cost")]
    last: dict[int, int] = {}
    seen = 0
    for number, script in enumerate(render(session)):
        seen += sum(1 for f in script.frames if f.observation is not None)
        last[number] = seen - 1
    sent_before: Any = None
    mine_before: Any = None
    for number in range(len(recording.steps)):
        sent = recording.after(number)
        where = f"step {number + 1} ({recording.steps[number]['prompt'][:30]!r})"
        if sent is None:
            out.append(Difference(where, "(payload)", None, "rendered", number + 1))
            continue
        moment = max(ns for ns, p in recording.payloads if p is sent)
        ours = rendered[last[number]] if last.get(number, -1) >= 0 else None
        if ours is None:
            out.append(Difference(where, "(payload)", "sent", None, number + 1))
            continue
        start_moment = None  # the rendering's clock is its own: its expiry is checked against itself
        theirs, mine = _project(sent, sent_before, moment), _project(ours, mine_before, start_moment)
        if isinstance(ours.get("prompt_cache"), Mapping):
            mine["prompt_cache.expires_at"] = True
        out += [Difference(where, k, theirs.get(k), mine.get(k), number + 1)
                for k in sorted(set(theirs) | set(mine)) if theirs.get(k) != mine.get(k)]
        sent_before, mine_before = sent.get("prompt_id"), ours.get("prompt_id")
    return out


def compare_repl_transcripts(recording: ReplRecording) -> list[Difference]:
    """The recorded transcript against the rendering of the recording's world in the REPL's shape, file by file and
    row by row (what trackers read of each row, ``compare_files``), then the line kinds
    the rendering writes and the REPL did not."""
    session = world_of_recording(recording)
    cwd = str(recording.payloads[0][1].get("cwd", "")) if recording.payloads else ""
    rendered = render_transcript(session, cli_version=recording.cli_version, cwd=cwd)
    ours = {path: list(f.rows) for path, f in rendered.files.items()}
    theirs = {path: list(rows) for path, rows in recording.transcripts.items()}
    out = compare_files("transcript", theirs, ours, cli_version=recording.cli_version)
    path = str(recording.payloads[0][1].get("transcript_path", "")) if recording.payloads else ""
    mine = statusline_payloads(session, transcript_path=path, cli_version=recording.cli_version, cwd=cwd)
    recorded, rendered_joins = _joins([p for _, p in recording.payloads], theirs), _joins(mine, ours)
    if not _subsequence(recorded, rendered_joins):  # the REPL may leave a payload out (it debounces), never add one
        out.append(Difference("the whole transcript", "prompt_id joins", recorded, rendered_joins))
    outlines = (_outline(theirs), _outline(ours))
    for label in sorted(set(outlines[0]) | set(outlines[1])):
        left, right = (o.get(label, {}) for o in outlines)
        out += [Difference(f"transcript {label}", k, left.get(k), right.get(k)) for k in sorted(set(left) | set(right))
                if left.get(k) != right.get(k)]
    written = {str(r.get("type")) for rows in theirs.values() for r in rows}
    for kind in sorted({str(r.get("type")) for rows in ours.values() for r in rows} - written):
        out.append(Difference("the whole transcript", "(line kind)", None, kind))
    return out


def _joins(payloads: Sequence[Mapping[str, Any]], files: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[int]:
    """For each ``prompt_id`` the payloads carried (in order), how many rows of the main transcripts carry it as
    ``promptId``: the join a tool makes from a payload to its prompt's rows. The rendering sends a payload at every
    point; the REPL may leave some out (it debounces its updates: a background subagent that ends quickly shows no
    payload before its notification), so the recorded joins are held to be the rendered ones with some left out."""
    ids = list(dict.fromkeys(p["prompt_id"] for p in payloads if p.get("prompt_id") is not None))
    rows = _main_rows(files)
    return [sum(1 for r in rows if r.get("promptId") == i) for i in ids]


def _subsequence(part: Sequence[int], whole: Sequence[int]) -> bool:
    """Whether ``part`` is ``whole`` with some items left out, in order."""
    items = iter(whole)
    return all(any(item == wanted for item in items) for wanted in part)


def _kept_kinds(boundary: Mapping[str, Any], files: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[str]:
    """The kinds of the rows a boundary's ``preservedMessages`` keeps, then of its ``logicalParentUuid``."""
    by_uuid = {r.get("uuid"): r for r in _main_rows(files) if r.get("uuid")}

    def kind(uid: Any) -> str:
        row = by_uuid.get(uid)
        return "nothing" if row is None else f"{row.get('type')}/{row.get('subtype') or ''}"

    kept = (boundary.get("compactMetadata") or {}).get("preservedMessages") or {}
    return [*(kind(u) for u in kept.get("uuids") or ()), f"parent {kind(boundary.get('logicalParentUuid'))}"]


def _main_rows(files: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[Mapping[str, Any]]:
    return [r for path, file in files.items() if "/" not in path for r in file]


def _outline(files: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """:func:`~ctxsim.wire.transcript_outline` of each main file, by its label (``main 1``...)."""
    return {label: transcript_outline(files[path]) for label, path in _ordered(files) if "/" not in path}


def compare_repl_boundaries(recording: ReplRecording) -> list[Difference]:
    """Each recorded ``compact_boundary`` against the rendered transcript's, in order: its ``compactMetadata`` keys,
    and those of ``preservedSegment`` and ``preservedMessages`` where there."""
    session = world_of_recording(recording)
    ours = {path: f.rows for path, f in render_transcript(session, cli_version=recording.cli_version).files.items()}
    rendered = [r for rows in ours.values() for r in rows if r.get("subtype") == "compact_boundary"]
    out: list[Difference] = []
    recorded = recording.boundaries()
    if len(rendered) != len(recorded):
        out.append(Difference("transcript", "compact_boundary rows", len(recorded), len(rendered)))
    for number, (theirs, mine) in enumerate(zip(recorded, rendered), 1):
        a, b = dict(theirs.get("compactMetadata") or {}), dict(mine.get("compactMetadata") or {})
        where = f"boundary {number}"
        if list(a) != list(b):
            out.append(Difference(where, "compactMetadata keys", list(a), list(b)))
        for key in ("preservedSegment", "preservedMessages"):
            if key in a and key in b and list(a[key]) != list(b[key]):
                out.append(Difference(where, f"{key} keys", list(a[key]), list(b[key])))
        for key in ("trigger", "preTokens", "postTokens", "cumulativeDroppedTokens"):
            if a.get(key) != b.get(key):
                out.append(Difference(where, f"compactMetadata.{key}", a.get(key), b.get(key)))
        kinds = (_kept_kinds(theirs, recording.transcripts), _kept_kinds(mine, ours))
        if kinds[0] != kinds[1]:
            out.append(Difference(where, "kept rows and logical parent", *kinds))
        if sorted(k for k in theirs if k != "slug") != sorted(k for k in mine if k != "slug"):
            out.append(Difference(where, "row keys", sorted(theirs), sorted(mine)))
    return out
