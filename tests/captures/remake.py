"""Remake the captures the tests read: the real Claude Code CLI, against ctxsim's fake Messages API.

What it records. Four scripted sessions, each played through the Claude Code CLI bundled in ``claude-agent-sdk``
(driven by the real ``ClaudeSDKClient``, :class:`ctxsim.live.LiveClaude`) against :class:`ctxsim.live.FakeMessagesAPI`
on 127.0.0.1, model ``claude-sonnet-4-5`` (a 200,000-token window). Every file goes to
``tests/captures/claude-code-<CLI version>/`` (the version :func:`ctxsim.wire.installed_cli_version` reads):

``sdk-messages-three-queries.jsonl``
    Three queries on one client: a plain answer; a "huge" turn whose reported prompt is 92% of the window; a turn
    with thinking, two ``Bash`` calls whose results come back, an ``Agent`` call whose foreground subagent runs a
    ``Bash`` command of its own, and a last answer. Every SDK message as ``{"query", "class", "data"}``
    (``data``: ``dataclasses.asdict``), and after each query ``{"query", "context_usage"}``
    (``get_context_usage()``). The replies state their usage exactly, so every number is the script's.
``transcript-main.jsonl``, ``transcript-subagent-agent-<id>.jsonl``
    The CLI's own transcript files of that session (``~/.claude/projects/<cwd>/<session>.jsonl`` and
    ``<session>/subagents/agent-<id>.jsonl``), row for row.
``sdk-messages-partial.jsonl``
    One query with ``include_partial_messages=True`` (``StreamEvent`` messages), in the same shape.
``stream-json-compact.jsonl``
    The raw stream-json the CLI wrote (control frames left out) for a query of four calls (three ``Bash`` rounds),
    ``/compact`` and a query after it: each frame as ``{"raw": frame}``, and after each query
    ``{"context_usage", "after_query"}``. Here the fake API measures each prompt (about a token per four
    characters of the request, split by a prompt-cache model), so the sizes after the compaction are the CLI's.
``transcript-autocompact.jsonl`` (and the CLI's other files of that session, ``transcript-autocompact-*.jsonl``)
    The transcript of a session where the CLI compacts by itself: two queries (the first with a ``Bash`` round),
    the second reporting 80,003 tokens against an autocompact window of 100,000
    (``CLAUDE_CODE_AUTO_COMPACT_WINDOW``), then a third query.
``served.jsonl``
    Every ``/v1/messages`` request the fake API answered, per session: its number, kind (``main``,
    ``subagent``, ``compact``, ``side``), the query it answered, ``message_id``, the usage it reported
    (input, cache creation, cache read) and the output count. This is the truth of each call.

The CLI's temporary working directory is rewritten to ``/home/dev`` (and its project directory name to
``-home-dev-project``) in every file. To keep the captures small, strings longer than 200 characters (tool schemas,
skill listings, the system prompt in the rows that record each request) are cut, saying how much, and
``get_context_usage()``'s ``gridRows`` (the picture ``/context`` draws) is left out; nothing else is changed.

How to run it (it needs no network: the fake API is on 127.0.0.1; it takes seconds)::

    pip install -e '.[test]'
    python tests/captures/remake.py            # writes tests/captures/claude-code-<version>/
    python tests/captures/remake.py --dir /tmp/captures

A newer CLI gets a directory of its own; the tests read the captures named by the version they were written for.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import re
import shutil
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio

from ctxsim.live import FakeMessagesAPI, LiveClaude, Reply, ScriptedModel
from ctxsim.wire import installed_cli_version, project_slug
from ctxsim.world import Text, Thinking, ToolUse

HERE = Path(__file__).resolve().parent
MODEL = "claude-sonnet-4-5"
HOME = "/home/dev"
LONGEST = 200
"""Characters a string keeps in a capture: the CLI's long texts (tool schemas, skill listings, its system prompt
in the rows that record each request's shape) are cut, so the captures stay small."""
TIMEOUT = 120.0
"""Seconds any one query, control request or connection may take before the run fails."""


def bash(tool_use_id: str, command: str) -> ToolUse:
    return ToolUse(tool_use_id, "Bash", {"command": command, "description": f"run {command}"})


THREE_QUERIES = {
    "q1": ["hello"],
    "q2": ["read the big file"],
    "q3": ["run two commands, then delegate a count"],
}
THREE_MAIN = (
    Reply((Text("Hello."),), 50, (3, 2_000, 12_000), message_id="msg_cap0001"),
    Reply((Text("Big turn answered."),), 50, (3, 1_000, 183_000), message_id="msg_cap0002"),
    Reply((Thinking("I should run two commands.", "sig-cap"), Text("Running two commands."),
           bash("toolu_cap_a", "seq 1 5"), bash("toolu_cap_b", "seq 1 7")), 80, (3, 400, 14_000),
          message_id="msg_cap0003"),
    Reply((ToolUse("toolu_cap_agent", "Agent", {"description": "a subtask", "prompt": "count to three",
                                                "subagent_type": "general-purpose", "run_in_background": False}),),
          40, (3, 300, 14_500), message_id="msg_cap0004"),
    Reply((Text("All done."),), 30, (3, 250, 14_900), message_id="msg_cap0005"),
)
THREE_SUBAGENT = (
    Reply((bash("toolu_cap_sub", "seq 1 3"),), 20, (3, 5_000, 0), message_id="msg_cap0006"),
    Reply((Text("Counted to three."),), 10, (3, 120, 5_000), message_id="msg_cap0007"),
)
PARTIAL_MAIN = (Reply((Text("Hello, in parts."),), 50, (3, 2_000, 12_000), message_id="msg_cap0008"),)
COMPACT_QUERIES = ("run three steps", "/compact", "continue please")
COMPACT_MAIN = (
    Reply((Text("Step one."), bash("toolu_cmp_1", "seq 1 100")), 40),
    Reply((Text("Step two."), bash("toolu_cmp_2", "seq 1 200")), 40),
    Reply((Text("Step three."), bash("toolu_cmp_3", "seq 1 300")), 40),
    Reply((Text("All three steps are done."),), 30),
    Reply((Text("Continuing."),), 30),
)
AUTOCOMPACT_QUERIES = ("hello", "read everything", "go on")
AUTOCOMPACT_MAIN = (
    Reply((Text("Looking."), bash("toolu_auto_1", "seq 1 3")), 40, (3, 2_000, 30_000)),
    Reply((Text("Hi."),), 60, (3, 300, 32_000)),
    Reply((Text("Read a lot."),), 90, (3, 1_000, 79_000)),
    Reply((Text("Going on."),), 40, (4, 900, 14_000)),
)


class Scrubber:
    """Rewrites the CLI's temporary directory (and its project directory's name) to a fixed home."""

    def __init__(self, workdir: Path) -> None:
        self.pairs = [(str(workdir), HOME), (project_slug(str(workdir)), project_slug(HOME))]

    def text(self, text: str) -> str:
        for old, new in self.pairs:
            text = text.replace(old, new)
        return text

    def line(self, data: Any) -> str:
        return self.text(json.dumps(cut(data), ensure_ascii=False)) + "\n"


def cut(data: Any) -> Any:
    """``data`` with every string longer than :data:`LONGEST` cut to that length, saying how much was cut."""
    if isinstance(data, str) and len(data) > LONGEST:
        return f"{data[:LONGEST]}[{len(data) - LONGEST} characters cut]"
    if isinstance(data, dict):
        return {key: cut(value) for key, value in data.items()}
    if isinstance(data, list):
        return [cut(value) for value in data]
    return data


def write(path: Path, lines: Iterable[str]) -> None:
    path.write_text("".join(lines), encoding="utf-8")
    print(f"  {path.relative_to(path.parents[1])}: {path.stat().st_size:,} bytes")


def model(main: Sequence[Reply], subagent: Sequence[Reply] = ()) -> ScriptedModel:
    return ScriptedModel(main=deque(main), subagent=deque(subagent))


def served_rows(session: str, api: FakeMessagesAPI, queries: list[tuple[str, int]]) -> list[dict[str, Any]]:
    """What the API served, each request named by the query it answered (``queries``: a query's label and the
    number of requests served before it began)."""
    rows = []
    for served in api.served:
        query = [label for label, before in queries if before < served.request.number][-1:]
        rows.append({"session": session, "number": served.request.number, "kind": served.request.kind,
                     "query": query[0] if query else None, "agent": served.request.agent,
                     "message_id": served.message_id, "usage": list(served.usage),
                     "output_tokens": served.reply.output_tokens})
    return rows


def context_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """``get_context_usage()``'s answer without ``gridRows``, the picture ``/context`` draws of it."""
    return {key: value for key, value in usage.items() if key != "gridRows"}


def message_row(query: str, message: object) -> dict[str, Any]:
    assert dataclasses.is_dataclass(message) and not isinstance(message, type)
    return {"query": query, "class": type(message).__name__, "data": dataclasses.asdict(message)}


async def sdk_messages(out: Path, name: str, prompts: dict[str, list[str]], main: Sequence[Reply],
                       subagent: Sequence[Reply] = (), *, partial: bool = False,
                       transcripts: bool = False) -> list[dict[str, Any]]:
    """Play ``prompts`` on one client; write the SDK messages (and, asked to, the transcripts)."""
    api = FakeMessagesAPI(model(main, subagent))
    rows: list[dict[str, Any]] = []
    starts: list[tuple[str, int]] = []
    with api:
        async with LiveClaude(api, model=MODEL, include_partial_messages=partial, timeout=TIMEOUT) as live:
            assert live.workdir is not None
            scrub = Scrubber(live.workdir)
            for query, (prompt,) in prompts.items():
                starts.append((query, api.requests))
                rows += [message_row(query, m) for m in await live.ask(prompt)]
                rows.append({"query": query, "context_usage": context_usage(await live.context_usage())})
            files = live.transcripts()
    write(out / f"sdk-messages-{name}.jsonl", (scrub.line(r) for r in rows))
    if transcripts:
        for path, lines in files.items():
            agent = re.fullmatch(r".*/subagents/(agent-\w+)\.jsonl", path)
            target = f"transcript-subagent-{agent.group(1)}.jsonl" if agent else "transcript-main.jsonl"
            write(out / target, (scrub.line(r) for r in lines))
    return served_rows(name, api, starts)


async def stream_json_compact(out: Path) -> list[dict[str, Any]]:
    """``/compact`` between two queries: the raw frames and ``get_context_usage()`` after each query."""
    api = FakeMessagesAPI(model(COMPACT_MAIN))
    lines: list[str] = []
    starts: list[tuple[str, int]] = []
    with api:
        async with LiveClaude(api, model=MODEL, timeout=TIMEOUT) as live:
            assert live.workdir is not None
            scrub = Scrubber(live.workdir)
            seen = 0
            for i, prompt in enumerate(COMPACT_QUERIES, 1):
                starts.append((f"q{i}", api.requests))
                await live.ask(prompt)
                usage = context_usage(await live.context_usage())
                frames = live.frames
                lines += [scrub.line({"raw": f}) for f in frames[seen:]
                          if not str(f.get("type", "")).startswith("control_")]
                seen = len(frames)
                lines.append(scrub.line({"context_usage": usage, "after_query": prompt}))
    write(out / "stream-json-compact.jsonl", lines)
    return served_rows("compact", api, starts)


async def autocompact(out: Path) -> list[dict[str, Any]]:
    """The CLI compacting by itself before the third query: its transcript files."""
    api = FakeMessagesAPI(model(AUTOCOMPACT_MAIN), window=100_000)
    starts: list[tuple[str, int]] = []
    with api:
        async with LiveClaude(api, model=MODEL, autocompact_window=100_000, timeout=TIMEOUT) as live:
            assert live.workdir is not None
            scrub = Scrubber(live.workdir)
            for i, prompt in enumerate(AUTOCOMPACT_QUERIES, 1):
                starts.append((f"q{i}", api.requests))
                await live.ask(prompt)
            files = live.transcripts()
    for path, rows in files.items():
        agent = re.fullmatch(r".*/subagents/(agent-[\w-]+)\.jsonl", path)
        target = f"transcript-autocompact-{agent.group(1)}.jsonl" if agent else "transcript-autocompact.jsonl"
        write(out / target, (scrub.line(r) for r in rows))
    return served_rows("autocompact", api, starts)


async def remake(out: Path) -> None:
    served = await sdk_messages(out, "three-queries", THREE_QUERIES, THREE_MAIN, THREE_SUBAGENT,
                                transcripts=True)
    served += await sdk_messages(out, "partial", {"q1": ["hello"]}, PARTIAL_MAIN, partial=True)
    served += await stream_json_compact(out)
    served += await autocompact(out)
    write(out / "served.jsonl", (json.dumps(r) + "\n" for r in served))




def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--dir", type=Path, default=HERE, help="where claude-code-<version>/ goes (default: "
                                                              "tests/captures)")
    args = parser.parse_args(argv)
    version = installed_cli_version()
    if version is None:
        parser.error("no Claude Code CLI is bundled in the installed claude-agent-sdk")
    out = args.dir / f"claude-code-{version}"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    print(f"recording with Claude Code {version} into {out}")
    anyio.run(remake, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
