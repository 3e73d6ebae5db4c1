"""Claude Code's REPL recorded whole: every statusline payload, the transcript, the calls served, per CLI version.

:func:`record_repl` plays a :class:`ReplSession` in the bundled CLI's interactive REPL under tmux against
:class:`~ctxsim.live.FakeMessagesAPI` (the machinery of :mod:`ctxsim.lab`: a private ``HOME``
whose ``statusLine.command`` saves every payload it is sent, prompts typed into the pane), with the model, the
window and the environment the session names (``CLAUDE_CODE_AUTO_COMPACT_WINDOW``,
``CLAUDE_CODE_DISABLE_1M_CONTEXT``), and keeps **every** payload with the moment its command started, the calls the
fake API served at each step (usage stated exactly), the transcript's row count per file after each step and the
transcript files at the end. Long strings of the transcript (system prompts, attachments) are cut to keep the
recordings small; what trackers read (usage, ids, types, ``compactMetadata``) is whole.

:data:`REPL_SESSIONS` are the sessions recorded for every bundled CLI (``ctxsim record --repl``): one, two and
three prompts before ``/compact``, a tool round before it, an autocompaction, ``/clear``, a subagent, a cache
miss, a 1M session (and one past its autocompact point), a ``[1m]`` model under ``CLAUDE_CODE_DISABLE_1M_CONTEXT``.
The recordings ship under ``captures/claude-code-<version>/repl/``; :mod:`ctxsim.lab` holds the
rendering to them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import claude_agent_sdk

from ...live import FakeMessagesAPI, LiveError, Reply, Served, bundled_cli_version, read_transcripts
from ...world import DEFAULT_MODEL, Text, ToolUse
from .._fidelity import Ask
from ._tmux import Repl, payload_files, read_payload, running_repl, settled, wait_for, written_since

__all__ = ["REPL_SESSIONS", "ReplSession", "record_repl", "record_repl_command", "trimmed", "trimmed_files"]

KEPT_CHARS = 80
"""Strings of the transcript longer than this are cut to their first 60 characters and their length."""
KEPT_PROMPT = 600
"""A ``user`` row's text is kept whole up to this many characters."""


@dataclass(frozen=True)
class ReplSession:
    """A session typed into the REPL: its steps (prompts or commands, and the replies the fake model gives), the
    model, the largest prompt the fake API accepts (``window``) and extra environment for the CLI."""

    name: str
    steps: tuple[Ask, ...]
    description: str
    model: str = DEFAULT_MODEL
    window: int = 200_000
    env: Mapping[str, str] = field(default_factory=dict)


def _bash(command: str) -> ToolUse:
    return ToolUse("", "Bash", {"command": command, "description": "run a command"})


def _agent(prompt: str) -> ToolUse:
    return ToolUse("", "Agent", {"description": "a subtask", "prompt": prompt, "subagent_type": "general-purpose",
                                 "run_in_background": False})


def _says(text: str, output: int, usage: tuple[int, int, int], *more: Text | ToolUse) -> Reply:
    return Reply((Text(text), *more), output, usage)


_AGAIN = Ask("again", main=(_says("Again.", 50, (4, 1_000, 20_000)),))
_TOOL_ROUND = (_says("Running it.", 40, (3, 500, 14_000), _bash("echo one")),
               _says("It printed one.", 50, (3, 100, 14_540)))
_ONE_MILLION = "claude-sonnet-4-5[1m]"

REPL_SESSIONS: Mapping[str, ReplSession] = {s.name: s for s in (
    ReplSession("compact-one-call", (Ask("hello", main=(_says("Hi.", 120, (3, 2_000, 148_000)),)), Ask("/compact"),
                                     _AGAIN), "one call, /compact, one call"),
    ReplSession("compact-two-calls", (Ask("hello", main=(_says("Hi.", 120, (3, 2_000, 100_000)),)),
                                      Ask("more", main=(_says("More.", 80, (3, 1_500, 102_120)),)), Ask("/compact"),
                                      _AGAIN), "two prompts (one call each), /compact, one call"),
    ReplSession("compact-three-calls", (Ask("hello", main=(_says("Hi.", 120, (3, 2_000, 60_000)),)),
                                        Ask("more", main=(_says("More.", 80, (3, 1_500, 62_120)),)),
                                        Ask("still more", main=(_says("Still more.", 70, (3, 1_200, 63_700)),)),
                                        Ask("/compact"), _AGAIN), "three prompts (one call each), /compact, one call"),
    ReplSession("compact-tool-round", (Ask("run a command", main=_TOOL_ROUND), Ask("/compact"), _AGAIN),
                "one prompt with a tool round (two calls), /compact, one call"),
    ReplSession("autocompact", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 30_000)),)),
                                Ask("read everything", main=(_says("Read a lot.", 90, (3, 1_000, 79_000)),)),
                                Ask("go on", main=(_says("Going on.", 40, (4, 900, 14_000)),))),
                "two calls, the second at 80,003 of a 100,000 autocompact window (CLAUDE_CODE_AUTO_COMPACT_WINDOW): "
                "the CLI compacts by itself before the third", env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}),
    ReplSession("tool-round-later", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 30_000)),)),
                                     Ask("run a command", main=(_says("Running it.", 40, (3, 500, 32_060),
                                                                      _bash("echo one")),
                                                                _says("It printed one.", 50, (3, 100, 32_600))))),
                "a call, then a prompt with a tool round (the rows before a later request of a turn that is not "
                "a conversation's first)"),
    ReplSession("autocompact-midturn", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 30_000)),)),
                                        Ask("a big tool turn", main=(_says("Running it.", 40, (3, 1_000, 89_000),
                                                                           _bash("echo mid")),
                                                                     _says("Finished.", 50, (4, 900, 14_000))))),
                "a call, then a tool round at 90,043 of a 100,000 autocompact window: the CLI compacts by itself "
                "between the tool result and the next call", env={"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}),
    ReplSession("clear", (Ask("run a command", main=_TOOL_ROUND), Ask("/clear"),
                          Ask("a fresh start", main=(_says("Fresh.", 30, (3, 12_000, 0)),))),
                "a tool round, /clear (a new session and transcript), a call"),
    ReplSession("subagent", (Ask("delegate this", main=(_says("Delegating.", 30, (3, 1_000, 20_000),
                                                              _agent("count to three")),
                                                        _says("The subagent is done.", 40, (3, 300, 21_100))),
                                 subagent=(Reply((_bash("echo sub"),), 20, (3, 5_000, 0)),
                                           Reply((Text("Counted."),), 10, (3, 120, 5_000)))),
                             Ask("thanks", main=(_says("You are welcome.", 20, (3, 200, 21_500)),))),
                "a foreground subagent with a tool call of its own, then a call"),
    ReplSession("cache-miss", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 30_000)),)),
                               Ask("more", main=(_says("More.", 60, (3, 32_100, 0)),)),
                               Ask("again", main=(_says("Again.", 60, (3, 200, 32_100)),))),
                "a call, a call that reads nothing from the cache (a miss: 32,100 written again), a call that "
                "reads it"),
    ReplSession("one-million", (Ask("hello", main=(_says("Hi.", 120, (3, 2_000, 400_000)),)),
                                Ask("more", main=(_says("More.", 80, (3, 1_500, 968_000)),)),
                                Ask("go on", main=(_says("Going on.", 40, (4, 900, 14_000)),))),
                "a [1m] model: 402,003 then 969,503 of 1,000,000, then a call", model=_ONE_MILLION,
                window=1_000_000),
    ReplSession("one-million-autocompact", (Ask("hello", main=(_says("Hi.", 120, (3, 2_000, 400_000)),)),
                                            Ask("more", main=(_says("More.", 80, (3, 1_500, 993_000)),)),
                                            Ask("go on", main=(_says("Going on.", 40, (4, 900, 14_000)),))),
                "a [1m] model: 402,003 then 994,503 of 1,000,000, then a call", model=_ONE_MILLION,
                window=1_000_000),
    ReplSession("one-million-disabled", (Ask("hello", main=(_says("Hi.", 120, (3, 2_000, 148_000)),)),),
                "a [1m] model with CLAUDE_CODE_DISABLE_1M_CONTEXT=1: one call of 150,003", model=_ONE_MILLION,
                env={"CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"}),
    ReplSession("max-context-tokens", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 30_000)),)),
                                       Ask("read everything", main=(_says("Read a lot.", 90, (3, 1_000, 79_000)),)),
                                       Ask("go on", main=(_says("Going on.", 40, (4, 900, 14_000)),))),
                "CLAUDE_CODE_MAX_CONTEXT_TOKENS=100000: 32,003 then 80,003 (past the autocompact point of a "
                "100,000 window, 67,000), then a call",
                env={"CLAUDE_CODE_MAX_CONTEXT_TOKENS": "100000"}),
    ReplSession("autocompact-pct-override", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 60_000)),)),
                                             Ask("more", main=(_says("More.", 60, (3, 1_000, 102_000)),)),
                                             Ask("go on", main=(_says("Going on.", 40, (4, 900, 14_000)),))),
                "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50: 62,003 then 103,003 (past half the window), then a call",
                env={"CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}),
    ReplSession("autocompact-disabled", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 60_000)),)),
                                         Ask("more", main=(_says("More.", 60, (3, 1_000, 170_000)),)),
                                         Ask("go on", main=(_says("Going on.", 40, (4, 900, 171_060)),))),
                "DISABLE_AUTO_COMPACT=1: 62,003 then 171,003 (past the autocompact point, 167,000), then a call",
                env={"DISABLE_AUTO_COMPACT": "1"}),
    ReplSession("autocompact-window-disabled", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 30_000)),)),
                                                Ask("read everything",
                                                    main=(_says("Read a lot.", 90, (3, 1_000, 79_000)),)),
                                                Ask("go on", main=(_says("Going on.", 40, (4, 900, 80_093)),))),
                "DISABLE_AUTO_COMPACT=1 beside a 100,000 autocompact window (CLAUDE_CODE_AUTO_COMPACT_WINDOW): "
                "32,003 then 80,003 (past that window's point, 67,000), then a call",
                env={"DISABLE_AUTO_COMPACT": "1", "CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}),
    ReplSession("model-switch", (Ask("hello", main=(_says("Hi.", 60, (3, 2_000, 60_000)),)),
                                 Ask(f"/model {_ONE_MILLION}"),
                                 Ask("more", main=(_says("More.", 60, (3, 1_000, 62_060)),)),
                                 Ask(f"/model {DEFAULT_MODEL}"),
                                 Ask("again", main=(_says("Again.", 50, (3, 500, 63_120)),))),
                "a call, /model to the [1m] model, a call, /model back, a call: the window and the statusline's "
                "denominator follow the model"),
)}
"""The REPL sessions recorded for every bundled CLI, by name."""


def trimmed(value: Any) -> Any:
    """``value`` with every string longer than :data:`KEPT_CHARS` cut to its first 60 characters and its length."""
    if isinstance(value, str):
        return value if len(value) <= KEPT_CHARS else f"{value[:60]}...[{len(value)} chars]"
    if isinstance(value, list):
        return [trimmed(v) for v in value]
    if isinstance(value, dict):
        return {k: trimmed(v) for k, v in value.items()}
    return value


def trimmed_files(files: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, list[Any]]:
    """Transcript files with their long strings cut (:func:`trimmed`), but the text of a ``user`` row up to
    :data:`KEPT_PROMPT` characters (a prompt, a command's tags: what a tracker reads of it)."""
    out: dict[str, list[Any]] = {}
    for path, rows in files.items():
        kept = []
        for row in rows:
            message = row.get("message")
            content = message.get("content") if isinstance(message, Mapping) else None
            row = trimmed(row)
            if row.get("type") == "user" and isinstance(content, str) and len(content) <= KEPT_PROMPT:
                row["message"]["content"] = content
            kept.append(row)
        out[path] = kept
    return out


def _served(served: Served) -> dict[str, Any]:
    return {"number": served.request.number, "kind": served.request.kind, "agent": served.request.agent,
            "request_id": served.request.request_id, "message_id": served.message_id, "usage": list(served.usage),
            "output_tokens": served.reply.output_tokens, "error": served.reply.error,
            "blocks": [f"Text:{b.text}" if isinstance(b, Text) else f"ToolUse:{b.name}" if isinstance(b, ToolUse)
                       else "Thinking:" for b in served.blocks],
            "tool_use_ids": [b.id for b in served.blocks if isinstance(b, ToolUse)],
            "model": served.request.body.get("model")}


def record_repl(session: ReplSession, *, timeout: float = 90.0) -> dict[str, Any]:
    """Play ``session`` in the bundled CLI's REPL under tmux against a fake API; the recording as JSON-able data
    (see the module's docstring). ``timeout`` bounds each wait, in seconds; the tmux server, the CLI, the fake API
    and the directory are gone on return, also on an error."""
    api = FakeMessagesAPI(window=session.window)
    with running_repl("the REPL", api, session.model, timeout, session.env) as run:
        steps = [_step(ask, api, run.repl, run.payloads, run.home, timeout) for ask in session.steps]
        payloads = [{"ns": int(p.stem), "payload": read_payload(p)} for p in payload_files(run.payloads)]
        transcripts = read_transcripts(run.home / ".claude" / "projects")
    return {"format": 1, "name": session.name, "description": session.description,
            "cli_version": bundled_cli_version(), "sdk_version": claude_agent_sdk.__version__,
            "model": session.model, "window": session.window, "env": dict(session.env), "workdir": str(run.workdir),
            "payloads": payloads, "steps": steps, "transcripts": trimmed_files(transcripts), "unhandled": api.unhandled,
            "count_tokens_calls": api.count_tokens_calls}


_LOCAL_COMMANDS = ("/clear", "/model")
"""Commands the REPL answers without a request to the API."""


def _step(ask: Ask, api: FakeMessagesAPI, repl: Repl, out: Path, home: Path, timeout: float) -> dict[str, Any]:
    """Type one step and wait (bounded) until it is answered and its payloads have settled."""
    before = len(api.served)
    api.model.main.extend(ask.main)
    api.model.subagent.extend(ask.subagent)
    typed = time.time_ns()
    repl.type(ask.prompt)
    wanted = len(ask.main) or (0 if ask.prompt.split()[0] in _LOCAL_COMMANDS else 1)
    compact = ask.prompt == "/compact"

    def answered() -> bool:
        kinds = [s.request.kind for s in api.served[before:]]
        calls = kinds.count("compact") if compact else kinds.count("main")
        return calls >= wanted and not api.model.main and not api.model.subagent

    wait_for(f"answer {ask.prompt!r}", answered, timeout, repl.screen)
    wait_for(f"send a payload after {ask.prompt!r}", written_since(out, typed), timeout, repl.screen)
    time.sleep(1.0)  # a payload may follow the answer by up to a second (the compaction's does)
    wait_for(f"settle after {ask.prompt!r}", settled(out, 2.0), timeout, repl.screen)
    rows = {path: len(r) for path, r in read_transcripts(home / ".claude" / "projects").items()}
    return {"prompt": ask.prompt, "typed_ns": typed, "served": [_served(s) for s in api.served[before:]],
            "rows": rows}


def record_repl_command(names: Sequence[str], directory: Path, *, timeout: float = 90.0) -> int:
    """``ctxsim record --repl``: record the sessions ``names`` (all of :data:`REPL_SESSIONS` when empty) and write
    each as ``claude-code-<version>/repl/<name>.json`` under ``directory``."""
    unknown = [n for n in names if n not in REPL_SESSIONS]
    if unknown:
        raise LiveError(f"ctxsim: no REPL session {', '.join(map(repr, unknown))} (known: "
                        f"{', '.join(REPL_SESSIONS)})")
    for name in names or list(REPL_SESSIONS):
        recording = record_repl(REPL_SESSIONS[name], timeout=timeout)
        target = directory / f"claude-code-{recording['cli_version']}" / "repl"
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"{name}.json"
        path.write_text(json.dumps(recording, separators=(",", ":")) + "\n")
        print(f"wrote {path}: {len(recording['payloads'])} payloads, {len(recording['steps'])} steps")
    return 0
