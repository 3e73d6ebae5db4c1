"""A subagent past its own autocompact window, recorded through the SDK: what the real CLI does, per CLI version
(test data: the recordings are in ``tests/captures/subagent/claude-code-<version>/``, read by
``test_subagent_compaction.py``, which records them again with ``-m live``).

:data:`SUBAGENT_SESSIONS` give the CLI an agent definition by ``--agents`` (``autoCompactWindow``, which the Python
SDK's ``AgentDefinition`` does not carry) and run it as a foreground subagent whose first two calls report a prompt
past, or under, that window's autocompact point (100,000 - 20,000 - 13,000 = 67,000), or past it with no window of
its own; its third call is measured by the fake API. :func:`record_subagent_compaction` plays them live (as the
fidelity suite plays its sessions) and writes one JSON file per session under ``claude-code-<version>/``:
every request the fake API served (its kind, usage, and whether it carried the subagent's system prompt), the
projection of every SDK message, hook call and context usage, the raw frames' key paths by kind, and the transcript
files at the end (long strings cut as the REPL recordings cut them).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import claude_agent_sdk

from ctxsim.lab._fidelity import Ask, ScriptedSession, play_live
from ctxsim.lab._repl._recorder import _served, trimmed_files
from ctxsim.live import LiveError, Reply, Served
from ctxsim.world import Text, ToolUse

__all__ = ["SUBAGENT_SESSIONS", "record_subagent_compaction"]

FORMAT = 1


def _session(name: str, description: str, prompts: tuple[int, int], window: int | None) -> ScriptedSession:
    agent = ToolUse("", "Agent", {"description": "a subtask", "prompt": "count to three", "subagent_type": "counter",
                                  "run_in_background": False})
    first, second = ((ToolUse("", "Bash", {"command": f"echo {n}", "description": "run a command"}),)
                     for n in ("one", "two"))
    definition: dict[str, Any] = {"description": "counts things", "prompt": "You count things."}
    if window is not None:
        definition["autoCompactWindow"] = window
    return ScriptedSession(name, (
        Ask("delegate this", main=(Reply((Text("Delegating."), agent)), Reply((Text("The subagent is done."),))),
            subagent=(Reply(first, prompt=prompts[0]), Reply(second, prompt=prompts[1]), Reply((Text("Counted."),)))),
        Ask("thanks"),
    ), description, agents={"counter": definition})


SUBAGENT_SESSIONS: Mapping[str, ScriptedSession] = {s.name: s for s in (
    _session("subagent-autocompact", "an agent with autoCompactWindow 100,000 whose first two calls report 80,000 "
             "and 81,000 (past its point, 67,000), then a call the fake API measures", (80_000, 81_000), 100_000),
    _session("subagent-past-on-second-call", "the same agent, its first call at 20,000, its second at 80,000",
             (20_000, 80_000), 100_000),
    _session("subagent-under-point", "the same agent, its calls at 60,000 and 66,900 (under its point)",
             (60_000, 66_900), 100_000),
    _session("subagent-inherited-window", "an agent without autoCompactWindow, its calls at 80,000 and 81,000 (under "
             "the session's point, 167,000)", (80_000, 81_000), None),
)}
"""The subagent-compaction sessions, by name."""


def _request(served: Served) -> dict[str, Any]:
    system = json.dumps(served.request.body.get("system"))
    return {**_served(served), "subagent_system": "cc_is_subagent=true" in system,
            "messages": len(served.request.body.get("messages") or ())}


def record_subagent_compaction(directory: Path, names: Sequence[str] = (), *, timeout: float = 90.0) -> list[Path]:
    """Play the sessions ``names`` (all of :data:`SUBAGENT_SESSIONS` when empty) live and write each as
    ``claude-code-<version>/<name>.json`` under ``directory``; returns the files written."""
    unknown = [n for n in names if n not in SUBAGENT_SESSIONS]
    if unknown:
        raise LiveError(f"ctxsim: no subagent session {unknown[0]!r} (known: {', '.join(SUBAGENT_SESSIONS)})")
    written = []
    for name in names or list(SUBAGENT_SESSIONS):
        scripted = SUBAGENT_SESSIONS[name]
        played = anyio.run(partial(play_live, scripted, timeout=timeout))
        data = {"format": FORMAT, "name": name, "description": scripted.description,
                "cli_version": played.cli_version, "sdk_version": claude_agent_sdk.__version__,
                "agents": scripted.agents, "served": [_request(s) for s in played.served],
                "initial": played.initial, "steps": [s.to_json() for s in played.steps],
                "frame_keys": played.frame_keys, "transcripts": trimmed_files(played.transcripts[-1])}
        target = directory / f"claude-code-{played.cli_version}"
        target.mkdir(parents=True, exist_ok=True)
        path = target / f"{name}.json"
        path.write_text(json.dumps(data, separators=(",", ":")) + "\n")
        written.append(path)
    return written
