"""Captures of the live fidelity runs, shipped in the package.

:func:`record` plays scripted sessions live (:mod:`ctxsim.lab`) and writes one JSON file per session
under ``<directory>/claude-code-<CLI version>/``: the CLI and SDK versions, the world session that happened
(:func:`session_to_json`, with the figures the CLI measures of its own prompt: its baseline and autocompact point),
the callbacks registered (``HookSetup``), the projection of every step (its messages,
context usage and hook calls) and of the context usage before the first, and the key paths of every raw frame kind.
The captures ship in the package (:data:`CAPTURES`), so the tests, ``ctxsim fidelity`` and the pytest header
read the versions ctxsim's wire is checked against without the CLI. ``ctxsim record`` and ``ctxsim fidelity
--record`` write them.

:func:`capture_for` picks the captures that stand for a CLI version: its own, else the newest version below it
(the drift of a live run from them: :mod:`ctxsim.lab.release`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claude_agent_sdk

from .._sync import run_blocking
from ..wire import CAPTURES, captured_versions, version_key
from ..world import (
    Call,
    Compaction,
    ConversationReset,
    Query,
    Session,
    Step,
    SubagentStart,
    TaskNotification,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)
from ._fidelity import SESSIONS, HookSetup, Played
from ._projection import Projection, StepProjection

__all__ = ["CAPTURES", "Capture", "capture_dir", "capture_for", "captured_versions", "load_capture", "load_captures",
           "record", "record_command", "session_from_json", "session_to_json", "version_key", "write_capture"]

FORMAT = 3
"""2: the hook calls of each step, and the callbacks registered (``hooks``); 3: every field a tracker can read
(ids by shape), the raw frames' key paths (``frame_keys``), the CLI's autocompact point, the provider's
``message_delta`` usage."""


def _block_json(block: Text | Thinking | ToolUse) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"text": block.text}
    if isinstance(block, Thinking):
        return {"thinking": block.text, "signature": block.signature}
    return {"tool_use": block.id, "name": block.name, "input": block.input}


def _block(data: Mapping[str, Any]) -> Text | Thinking | ToolUse:
    if "text" in data:
        return Text(data["text"])
    if "thinking" in data:
        return Thinking(data["thinking"], data["signature"])
    return ToolUse(data["tool_use"], data["name"], dict(data["input"]))


def _call_json(call: Call) -> dict[str, Any]:
    return {"usage": [call.input_tokens, call.cache_creation_input_tokens, call.cache_read_input_tokens],
            "output": call.output_tokens, "message_id": call.message_id, "model": call.model,
            "request_id": call.request_id, "parent": call.parent_tool_use_id,
            "blocks": [_block_json(b) for b in call.blocks]}


def _call(body: Mapping[str, Any]) -> Call:
    input_tokens, cache_creation, cache_read = body["usage"]
    return Call(input_tokens, cache_creation, cache_read, body["output"], tuple(_block(b) for b in body["blocks"]),
                body["message_id"], body["model"], body["request_id"], body["parent"])


def _step_json(step: Step) -> dict[str, Any]:
    if isinstance(step, Call):
        return {"call": _call_json(step)}
    if isinstance(step, ToolResult):
        return {"tool_result": {"id": step.tool_use_id, "content": step.content, "tokens": step.tokens,
                                "is_error": step.is_error, "parent": step.parent_tool_use_id}}
    if isinstance(step, SubagentStart):
        return {"subagent_start": {"id": step.tool_use_id, "task_id": step.task_id, "description": step.description,
                                   "prompt": step.prompt, "background": step.background}}
    if isinstance(step, TaskNotification):
        return {"task_notification": {"id": step.tool_use_id, "task_id": step.task_id, "summary": step.summary,
                                      "tokens": step.tokens, "status": step.status}}
    if isinstance(step, Compaction):
        return {"compaction": {"pre": step.pre_tokens, "post": step.post_tokens, "trigger": step.trigger,
                               "context": step.context_tokens,
                               "summary": _call_json(step.summary) if step.summary is not None else None,
                               **({"rejected": [_call_json(c) for c in step.rejected]} if step.rejected else {})}}
    assert isinstance(step, ConversationReset), f"a capture holds no {type(step).__name__}"  # no live run makes one
    return {"reset": {"new_session_id": step.new_session_id, "context": step.context_tokens}}


def _step(data: Mapping[str, Any]) -> Step:
    ((kind, body),) = data.items()
    if kind == "call":
        return _call(body)
    if kind == "tool_result":
        return ToolResult(body["id"], body["content"], body["tokens"], body["is_error"], body["parent"])
    if kind == "subagent_start":
        return SubagentStart(body["id"], body["task_id"], body["description"], body["prompt"],
                             body.get("background", False))
    if kind == "task_notification":
        return TaskNotification(body["id"], body["task_id"], body["summary"], body["tokens"], body["status"])
    if kind == "compaction":
        summary = body.get("summary")
        return Compaction(body["pre"], body["post"], body["trigger"], body["context"],
                          _call(summary) if summary is not None else None,
                          rejected=tuple(_call(c) for c in body.get("rejected") or ()))
    return ConversationReset(body["new_session_id"], body.get("context"))


def session_to_json(session: Session) -> dict[str, Any]:
    """``session`` as JSON-able data (see :func:`session_from_json`)."""
    return {"session_id": session.session_id, "name": session.name, "model": session.model,
            "window": session.window, "baseline": session.baseline, "max_output_tokens": session.max_output_tokens,
            "auto_compact_window": session.auto_compact_window, "auto_compact_at": session.auto_compact_at,
            "delta_usage": session.delta_usage, **({"cli": session.cli} if session.cli is not None else {}),
            "queries": [{"prompt": q.prompt, "steps": [_step_json(s) for s in q.steps]} for q in session.queries]}


def session_from_json(data: Mapping[str, Any]) -> Session:
    """The inverse of :func:`session_to_json`."""
    queries = tuple(Query(q["prompt"], tuple(_step(s) for s in q["steps"])) for q in data["queries"])
    return Session(session_id=data["session_id"], queries=queries, model=data["model"], window=data["window"],
                   baseline=data["baseline"], max_output_tokens=data["max_output_tokens"], name=data["name"],
                   auto_compact_window=data.get("auto_compact_window"), auto_compact_at=data.get("auto_compact_at"),
                   delta_usage=data.get("delta_usage", "cumulative"), cli=data.get("cli"))


@dataclass(frozen=True)
class Capture:
    """One recorded live run of a scripted session."""

    name: str
    cli_version: str
    sdk_version: str
    include_partial_messages: bool
    session: Session
    initial: Projection
    steps: list[StepProjection]
    path: Path | None = None
    hooks: HookSetup = field(default_factory=HookSetup)
    """The callbacks the run registered (play the session in-process with the same)."""
    frame_keys: dict[str, list[str]] = field(default_factory=dict)
    """Every key path the CLI's raw frames carried, by frame kind."""
    raw: dict[str, list[Any]] = field(default_factory=dict)
    """The raw-frame values trackers read that the SDK's messages drop (request ids), frame by frame."""


def capture_dir(directory: Path, cli_version: str) -> Path:
    """Where the captures of ``cli_version`` live under ``directory``."""
    return directory / f"claude-code-{cli_version}"


def write_capture(directory: Path, name: str, played: Played, *, include_partial_messages: bool,
                  hooks: HookSetup | None = None) -> Path:
    """Write the live run ``played`` of scripted session ``name``; returns the file written."""
    if played.session is None:
        raise ValueError("ctxsim: only a live run (with its world session) can be written as a capture")
    target = capture_dir(directory, played.cli_version)
    target.mkdir(parents=True, exist_ok=True)
    path = target / f"{name}.json"
    data = {"format": FORMAT, "name": name, "cli_version": played.cli_version,
            "sdk_version": claude_agent_sdk.__version__, "include_partial_messages": include_partial_messages,
            "hooks": (hooks or HookSetup()).to_json(), "session": session_to_json(played.session),
            "initial": played.initial,
            "steps": [s.to_json() for s in played.steps], "frame_keys": played.frame_keys, "raw": played.raw}
    path.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n")
    return path


def load_capture(path: Path) -> Capture:
    """Read a capture written by :func:`write_capture`."""
    data = json.loads(path.read_text())
    if data.get("format") != FORMAT:
        raise ValueError(f"ctxsim: {path}: capture format {data.get('format')!r}, expected {FORMAT}")
    session = session_from_json(data["session"])
    if session.cli is None:  # the release that played it (captures written before sessions named it)
        session = dataclasses.replace(session, cli=data["cli_version"])
    return Capture(data["name"], data["cli_version"], data["sdk_version"], data["include_partial_messages"],
                   session, data["initial"],
                   [StepProjection.from_json(s) for s in data["steps"]], path, HookSetup(**data["hooks"]),
                   dict(data["frame_keys"]), dict(data["raw"]))


def load_captures(directory: Path = CAPTURES) -> list[Capture]:
    """Every capture under ``directory`` (all CLI versions), by version then name."""
    return [load_capture(p) for version in captured_versions(directory)
            for p in sorted(capture_dir(directory, version).glob("*.json"))]


def capture_for(version: str, directory: Path = CAPTURES) -> tuple[str, dict[str, Capture]] | None:
    """The captures that stand for CLI ``version``: its own, else those of the newest captured version below it
    (else the oldest captured); as ``(captured version, {session name: capture})``. None when there is none."""
    versions = captured_versions(directory)
    if not versions:
        return None
    below = [v for v in versions if version_key(v) <= version_key(version)]
    chosen = below[-1] if below else versions[0]
    return chosen, {c.name: c for c in map(load_capture, sorted(capture_dir(directory, chosen).glob("*.json")))}


async def record(directory: Path, names: Iterable[str] | None = None, *, timeout: float = 60.0) -> list[Path]:
    """Play the scripted sessions ``names`` (default: all of ``SESSIONS``) live on
    the bundled CLI and write their captures under ``directory``."""
    from ._fidelity import play_live

    written = []
    for name in names or SESSIONS:
        if name not in SESSIONS:
            raise KeyError(f"ctxsim: no scripted session {name!r} (known: {', '.join(SESSIONS)})")
        scripted = SESSIONS[name]
        played = await play_live(scripted, timeout=timeout)
        written.append(write_capture(directory, name, played,
                                     include_partial_messages=scripted.include_partial_messages,
                                     hooks=scripted.hooks))
    return written


def record_command(names: Sequence[str], directory: Path, *, list_only: bool = False) -> int:
    """``ctxsim record``: list the scripted sessions, or record ``names`` (all when empty) under ``directory``.
    Returns the exit status (2, with a ``ctxsim:`` line on stderr, for an unknown name)."""
    import sys


    if list_only:
        for name, scripted in SESSIONS.items():
            print(f"{name:22} {scripted.description}")
        return 0
    unknown = [n for n in names if n not in SESSIONS]
    if unknown:
        print(f"ctxsim: record: no scripted session {unknown[0]!r} (known: {', '.join(SESSIONS)})", file=sys.stderr)
        return 2
    for path in run_blocking(lambda: record(directory, list(names) or None)):
        print(f"wrote {path}")
    return 0
