"""Record where the real Claude Code CLI places its stream-json frames: the structure of each scripted session.

What it records. Every scripted session of the fidelity suite (:data:`ctxsim.lab._fidelity.SESSIONS`: several
queries, partial messages, parallel tools, a foreground and a background subagent, ``/compact``, autocompactions,
``/clear``, a hook that denies, permission prompts) played through the Claude Code CLI bundled in
``claude-agent-sdk`` (:func:`ctxsim.lab._fidelity.play_live`: the real ``ClaudeSDKClient``, the fake Messages API on
127.0.0.1). For each step it keeps the raw stream-json frames the CLI wrote (control frames left out) reduced to
their structure (``tests/live/stream_structure.py``: each frame's type and subtype, a ``session_state_changed``'s
state, a ``status``'s status, a stream event's type, a message's content kinds, and which subagent of the step it
belongs to), never a value. Beside them, each session's world as it happened (the calls the API served, the
compactions and resets the CLI reported; the same form as ``src/ctxsim/wire/captures``), so a test can rebuild and
render it.

It writes ``tests/captures/claude-code-<CLI version>/stream-structure.json`` (the version
:func:`ctxsim.wire.installed_cli_version` reads); ``tests/live/test_stream_structure.py`` holds ctxsim's rendering
to it.

How to run it (no network: the fake API is on 127.0.0.1; it takes well under a minute)::

    pip install -e '.[test]'
    python tests/captures/remake_structure.py               # every scripted session
    python tests/captures/remake_structure.py --dir /tmp/captures subagent compact

A newer CLI gets a directory of its own; the test reads every ``stream-structure.json`` there is.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import claude_agent_sdk

from ctxsim.lab._fidelity import SESSIONS, play_live
from ctxsim.lab._record import session_to_json
from ctxsim.wire import installed_cli_version

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "live"))
from stream_structure import step_outlines  # noqa: E402  (a helper of the tests, beside the test that reads this)

FORMAT = 1
"""The format of ``stream-structure.json``; a change to it or to the outline of a frame bumps it."""
TIMEOUT = 60.0
"""Seconds any one wait of a session's run may take."""


async def structure(name: str) -> dict[str, Any]:
    """Play scripted session ``name`` live; its world and the outline of each step's frames."""
    scripted = SESSIONS[name]
    played = await play_live(scripted, timeout=TIMEOUT)
    assert played.session is not None
    return {"include_partial_messages": scripted.include_partial_messages, "hooks": scripted.hooks.to_json(),
            "session": session_to_json(played.session),
            "steps": [{"prompt": ask.prompt, "frames": step_outlines(frames)}
                      for ask, frames in zip(scripted.steps, played.frames, strict=True)]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, default=HERE, help="where claude-code-<version>/ goes (default: "
                                                              "tests/captures)")
    parser.add_argument("names", nargs="*", help=f"scripted sessions to record (default: all: {', '.join(SESSIONS)})")
    args = parser.parse_args(argv)
    version = installed_cli_version()
    if version is None:
        parser.error("no Claude Code CLI is bundled in the installed claude-agent-sdk")
    unknown = [n for n in args.names if n not in SESSIONS]
    if unknown:
        parser.error(f"no scripted session {', '.join(unknown)} (there are {', '.join(SESSIONS)})")
    out = args.dir / f"claude-code-{version}"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "stream-structure.json"
    sessions: dict[str, Any] = {}
    if args.names and path.exists():  # recording some sessions again keeps the others
        sessions = json.loads(path.read_text())["sessions"]
    print(f"recording with Claude Code {version} into {path}")
    for name in args.names or list(SESSIONS):
        sessions[name] = anyio.run(structure, name)
        print(f"  {name}: {sum(len(s['frames']) for s in sessions[name]['steps'])} frames")
    data = {"format": FORMAT, "cli_version": version, "sdk_version": claude_agent_sdk.__version__,
            "sessions": {n: sessions[n] for n in SESSIONS if n in sessions}}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    print(f"  {path.relative_to(path.parents[1])}: {path.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
