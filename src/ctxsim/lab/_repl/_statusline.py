"""The statusline payload held to the real CLI: the interactive REPL driven under tmux, its payloads recorded.

The CLI runs ``statusLine.command`` only in its interactive REPL (never with ``-p`` or the SDK), so
:func:`record_statusline` starts the bundled CLI in a private tmux server against
:class:`~ctxsim.live.FakeMessagesAPI`, with a temporary ``HOME`` whose settings' ``statusLine.command`` saves
each payload to a file, types each prompt of a ``ScriptedSession`` (replies scripted
as for the fidelity suite, usage stated exactly), and keeps the last payload after each step and those sent
before the first. The world that happened (the calls the API served, the compaction the transcript records) comes
with it, so :func:`compare_payloads` can hold :func:`ctxsim.wire.statusline_payloads` to the payloads field by
field. Every wait is bounded and ends in a :class:`~ctxsim.live.LiveError`; the tmux server, the CLI and the
directory are removed on the way out, also on an error. :func:`tmux_skip_reason` says why it cannot run (no
tmux).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claude_agent_sdk

from ...live import FakeMessagesAPI, LiveError, Reply, Served, bundled_cli_version, read_transcripts
from ...wire import context_window, render, statusline_payloads
from ...world import Call, Compaction, ConversationReset, Query, Session, Step, Text, ToolResult, ToolUse
from .._fidelity import Ask, ScriptedSession
from .._projection import Difference, Projection, field_at
from ._tmux import payload_files, read_payload, running_repl, settled, tmux_skip_reason, wait_for, written_since

__all__ = ["PAYLOAD_FIELDS", "STATUSLINE_SESSIONS", "StatuslineRecording", "compare_payloads", "load_recordings",
           "project_payload", "record_statusline", "record_statusline_command", "recording_dir",
           "tmux_skip_reason", "world_of"]

PAYLOAD_FIELDS = ("session_id", "transcript_path", "cwd", "model.id", "model.display_name",
                  "workspace.current_dir", "workspace.project_dir", "workspace.added_dirs", "version",
                  "output_style.name", "cost.total_cost_usd", "exceeds_200k_tokens",
                  "context_window.total_input_tokens", "context_window.total_output_tokens",
                  "context_window.context_window_size", "context_window.current_usage",
                  "context_window.used_percentage", "context_window.remaining_percentage", "keys")
"""What :func:`project_payload` keeps of a payload: what statusline tools read (``keys``: the top-level keys, of
which the rendering's must all be the CLI's). Durations, ``prompt_id`` values and ``prompt_cache`` are the CLI's
own and not compared."""

_BASH = ToolUse("", "Bash", {"command": "echo one", "description": "run a command"})

STATUSLINE_SESSIONS: Mapping[str, ScriptedSession] = {s.name: s for s in (
    ScriptedSession("statusline-compact", (
        Ask("hello", main=(Reply((Text("Hi."),), 120, (3, 2_000, 148_000)),)),
        Ask("/compact"),
        Ask("again", main=(Reply((Text("Again."),), 50, (4, 1_000, 20_000)),)),
    ), "a call, /compact, a call: the research page's session (75%, then what the CLI says after /compact, 11%)"),
    ScriptedSession("statusline-tools", (
        Ask("run a command", main=(Reply((Text("Running it."), _BASH), 40, (3, 500, 14_000)),
                                   Reply((Text("It printed one."),), 50, (3, 100, 14_540)))),
        Ask("a long one", main=(Reply((Text("Long."),), 60, (3, 400, 179_000)),)),
        Ask("/clear"),
        Ask("a fresh start", main=(Reply((Text("Fresh."),), 30, (3, 12_000, 0)),)),
    ), "a tool turn, a call near the window (90%), /clear (a new session and transcript), a call"),
)}
"""The scripted REPL sessions whose payloads are recorded, by name."""


@dataclass
class StatuslineRecording:
    """What the REPL sent to ``statusLine.command`` in one scripted session, and the world that happened."""

    name: str
    cli_version: str
    initial: list[dict[str, Any]]
    """The payloads sent before the first prompt."""
    steps: list[dict[str, Any]]
    """The last payload sent after each step."""
    session: Session
    """The world: the calls the fake API served (usage exact), the compactions the transcript records."""
    cwd: str
    transcripts: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """The CLI's transcript files at the end."""

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (the session as ``session_to_json`` writes it)."""
        from .._record import session_to_json

        return {"format": 1, "name": self.name, "cli_version": self.cli_version,
                "sdk_version": claude_agent_sdk.__version__, "cwd": self.cwd, "initial": self.initial,
                "steps": self.steps, "session": session_to_json(self.session)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StatuslineRecording:
        """The inverse of :meth:`to_json` (the transcripts are not kept)."""
        from .._record import session_from_json

        return cls(str(data["name"]), str(data["cli_version"]), list(data["initial"]), list(data["steps"]),
                   session_from_json(data["session"]), str(data["cwd"]))


def record_statusline(scripted: ScriptedSession, *, timeout: float = 60.0) -> StatuslineRecording:
    """Play ``scripted`` in the CLI's interactive REPL under tmux against a fake API and record the statusline
    payloads (see the module's docstring). ``timeout`` bounds each wait, in seconds."""
    api = FakeMessagesAPI()
    with running_repl("the statusline", api, scripted.model, timeout) as run:
        repl, home, project, out = run.repl, run.home, run.project, run.payloads
        initial = [read_payload(p) for p in payload_files(out)]
        served_per_step: list[list[Served]] = []
        steps: list[dict[str, Any]] = []
        for ask in scripted.steps:
            before = len(api.served)
            api.model.main.extend(ask.main)
            api.model.subagent.extend(ask.subagent)
            repl.type(ask.prompt)
            wanted = len(ask.main) or (0 if ask.prompt == "/clear" else 1)

            def answered(before: int = before, wanted: int = wanted,
                         command: bool = ask.prompt == "/compact") -> bool:
                kinds = [s.request.kind for s in api.served[before:]]
                calls = kinds.count("compact") if command else kinds.count("main")
                return calls >= wanted and not api.model.main

            asked = time.time_ns()
            wait_for(f"answer {ask.prompt!r}", answered, timeout, repl.screen)
            wait_for(f"send a payload after answering {ask.prompt!r}", written_since(out, max(asked, time.time_ns())
                                                                             if wanted else asked), timeout,
                  repl.screen)
            wait_for(f"settle after {ask.prompt!r}", settled(out), timeout, repl.screen)
            steps.append(read_payload(payload_files(out)[-1]))
            served_per_step.append(list(api.served[before:]))
        transcripts = read_transcripts(home / ".claude" / "projects")
    world = world_of(scripted, served_per_step, transcripts, [str(p["session_id"]) for p in steps])
    return StatuslineRecording(scripted.name, bundled_cli_version(), initial, steps, world, str(project),
                               transcripts)


def world_of(scripted: ScriptedSession, served: Sequence[Sequence[Served]],
             transcripts: Mapping[str, Sequence[Mapping[str, Any]]], session_ids: Sequence[str]) -> Session:
    """The world of a REPL run: per step, the main-chain calls the API served (usage exact, each tool use followed
    by its result); for ``/compact``, the compaction the transcript's ``compact_boundary`` rows record (its summary
    request's usage counts in the cost); for ``/clear``, a reset to the session id the payload after it names
    (``session_ids``: the payload's after each step)."""
    boundaries = iter([r.get("compactMetadata") or {} for rows in transcripts.values() for r in rows
                       if r.get("subtype") == "compact_boundary"])
    queries = []
    for ask, answered, session_id in zip(scripted.steps, served, session_ids):
        steps: list[Step] = []
        if ask.prompt == "/clear":
            steps.append(ConversationReset(session_id))
        for s in answered:
            call = Call(s.usage[0], s.usage[1], s.usage[2], s.reply.output_tokens, s.blocks, s.message_id,
                        scripted.model)
            if s.request.kind == "compact":
                meta = next(boundaries, {})
                steps.append(Compaction(int(meta.get("preTokens", 0)), int(meta.get("postTokens", 0)),
                                        meta.get("trigger", "manual"), summary=call))
            elif s.request.kind == "main" and s.reply.error is None:
                steps.append(call)
                steps += [ToolResult(b.id, "", 0) for b in s.blocks if isinstance(b, ToolUse)]
        queries.append(Query(ask.prompt, tuple(steps)))
    first = session_ids[0] if session_ids else ""
    return Session(first, tuple(queries), model=scripted.model, name=scripted.name)


# --- projection and comparison ----------------------------------------------------------------------------------


def project_payload(payload: Mapping[str, Any]) -> Projection:
    """What statusline tools read of ``payload`` (:data:`PAYLOAD_FIELDS`), flat; the cost rounded to 1e-9."""
    out: Projection = {name: field_at(payload, name) for name in PAYLOAD_FIELDS if name != "keys"}
    cost = out["cost.total_cost_usd"]
    if isinstance(cost, float):
        out["cost.total_cost_usd"] = round(cost, 9)
    out["keys"] = sorted(payload)
    return out


def compare_payloads(recording: StatuslineRecording, *, transcript_path: str | None = None,
                     renderer: Callable[..., list[dict[str, Any]]] = statusline_payloads) -> list[Difference]:
    """Every field where the rendering of the recording's world (:func:`ctxsim.wire.statusline_payloads`, at the
    last point of each step) differs from what the REPL sent after that step; before the first step, the
    ``context_window`` of the payloads sent at start against the rendering's for no call yet. ``keys`` differs
    only where the rendering has a key the CLI did not send. ``renderer`` is the rendering held to them (the
    self-checks wrap it to plant a divergence)."""
    session = dataclasses.replace(recording.session, entrypoint="repl")  # recorded in the REPL
    path = transcript_path or (str(recording.steps[0]["transcript_path"]) if recording.steps else None)
    rendered = renderer(session, transcript_path=path, cli_version=recording.cli_version,
                                   cwd=recording.cwd)
    last: dict[int, dict[str, Any]] = {}
    seen = 0
    for number, script in enumerate(render(session)):
        seen += sum(1 for f in script.frames if f.observation is not None)
        if seen:
            last[number] = rendered[seen - 1]
    out: list[Difference] = []
    for payload in recording.initial:
        expected = context_window(None, session.window)
        if payload.get("context_window") != expected:
            out.append(Difference("before the first prompt", "context_window", payload.get("context_window"),
                                  expected))
    for number, sent in enumerate(recording.steps):
        where = f"step {number + 1} ({session.queries[number].prompt[:30]!r})"
        ours = last.get(number)
        if ours is None:
            out.append(Difference(where, "(payload)", "sent", None, number + 1))
            continue
        theirs, mine = project_payload(sent), project_payload(ours)
        extra = sorted(set(mine["keys"]) - set(theirs["keys"]))
        if extra:
            out.append(Difference(where, "keys", None, extra, number + 1))
        out += [Difference(where, key, theirs[key], mine[key], number + 1) for key in PAYLOAD_FIELDS
                if key != "keys" and theirs[key] != mine[key]]
    return out



# --- captures ---------------------------------------------------------------------------------------------------


def recording_dir(directory: Path, cli_version: str) -> Path:
    """Where the statusline recordings of ``cli_version`` live under ``directory`` (beside the fidelity
    captures of that version, in ``statusline/``)."""
    return directory / f"claude-code-{cli_version}" / "statusline"


def load_recordings(directory: Path) -> list[StatuslineRecording]:
    """Every statusline recording under ``directory`` (all CLI versions), by version then name."""
    return [StatuslineRecording.from_json(json.loads(p.read_text()))
            for p in sorted(directory.glob("claude-code-*/statusline/*.json"))]


def record_statusline_command(names: Sequence[str], directory: Path, *, timeout: float = 60.0) -> int:
    """``ctxsim record --statusline``: record the REPL sessions ``names`` (all of :data:`STATUSLINE_SESSIONS` when
    empty) and write each under :func:`recording_dir`; prints what it wrote and how the rendering compares."""
    reason = tmux_skip_reason()
    if reason is not None:
        raise LiveError(f"ctxsim: cannot record the statusline: {reason}")
    unknown = [n for n in names if n not in STATUSLINE_SESSIONS]
    if unknown:
        raise LiveError(f"ctxsim: no statusline session {', '.join(map(repr, unknown))} (known: "
                        f"{', '.join(STATUSLINE_SESSIONS)})")
    for name in names or list(STATUSLINE_SESSIONS):
        recording = record_statusline(STATUSLINE_SESSIONS[name], timeout=timeout)
        target = recording_dir(directory, recording.cli_version)
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"{name}.json"
        path.write_text(json.dumps(recording.to_json(), indent=1) + "\n")
        differences = compare_payloads(recording)
        print(f"wrote {path}: {len(recording.initial)} payloads at start, {len(recording.steps)} after the steps; "
              + ("the rendering matches every one" if not differences else
                 f"{len(differences)} field(s) differ from the rendering:"))
        for difference in differences:
            print(f"  {difference}")
    return 0
