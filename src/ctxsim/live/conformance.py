"""Conformance of the in-process fake to the real CLI: scripted sessions played live and in-process, compared.

A :class:`ScriptedSession` is a list of :class:`Ask` steps: a prompt (or a command: ``/compact``, ``/clear``) and
the replies the fake model gives to the main chain and to subagents while the CLI answers it. :func:`play_live`
plays it through the real bundled CLI against :class:`~ctxsim.live.api.FakeMessagesAPI` and records, per step,
the projection of every message and ``get_context_usage()`` after it (:mod:`ctxsim.live.projection`), and the
world :class:`~ctxsim.world.Session` that happened (the calls the API served, with the usage it reported, in the
order the CLI reported them). :func:`play_inprocess` plays that session through
:class:`~ctxsim.sdk.FakeTransport` and the real ``ClaudeSDKClient`` with the same projection, and
:func:`~ctxsim.live.projection.compare` names every field where the two differ.

:data:`SESSIONS` are the scripted sessions of the conformance suite: several queries with tools and thinking,
partial messages, a foreground subagent, ``/compact``, an autocompaction the CLI performs itself (between queries
and in the middle of a turn), ``/clear``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage

from ..sdk import FakeTransport
from ..world import DEFAULT_MODEL, Session, Text, Thinking, ToolUse
from ._recorded import session_of
from .api import FakeMessagesAPI, Reply, Served
from .claude import LiveClaude, LiveError, bundled_cli_version
from .projection import Projection, StepProjection, project_context_usage, project_message

__all__ = ["SESSIONS", "Ask", "Played", "ScriptedSession", "play_inprocess", "play_live"]


@dataclass(frozen=True)
class Ask:
    """One step: send ``prompt``; the fake model answers the main chain with ``main`` and subagents with
    ``subagent``, in order (then ``ok``/``Done.``), and the compaction summary request with a summary."""

    prompt: str
    main: tuple[Reply, ...] = ()
    subagent: tuple[Reply, ...] = ()


@dataclass(frozen=True)
class ScriptedSession:
    """A session to play live and in-process."""

    name: str
    steps: tuple[Ask, ...]
    description: str = ""
    include_partial_messages: bool = False
    autocompact_window: int | None = None
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` for the CLI (and the window of the world); None: the CLI's default."""
    model: str = DEFAULT_MODEL


@dataclass
class Played:
    """A scripted session played one way: the projection of each step, and of the context usage before the first."""

    initial: Projection
    steps: list[StepProjection]
    session: Session | None = None
    """Live: the world that happened (what :func:`play_inprocess` plays)."""
    served: list[Served] = field(default_factory=list)
    """Live: every request the fake API answered."""
    cli_version: str = ""
    seconds: float = 0.0
    """Live: the wall time of the run, connecting and disconnecting included."""


_MODEL_WINDOW = 200_000
"""The scripted sessions' model's context window (``modelUsage.contextWindow``)."""


def _projected(messages: list[Any]) -> list[Projection]:
    return [p for p in (project_message(m) for m in messages) if p is not None]


async def play_live(scripted: ScriptedSession, *, timeout: float = 60.0) -> Played:
    """Play ``scripted`` through the real bundled CLI against a fake API; every wait bounded by ``timeout``."""
    started = anyio.current_time()
    api = FakeMessagesAPI(window=scripted.autocompact_window or 200_000)
    all_messages: list[list[Any]] = []
    served: list[list[Served]] = []
    steps: list[StepProjection] = []
    with api:
        async with LiveClaude(api, model=scripted.model, include_partial_messages=scripted.include_partial_messages,
                              autocompact_window=scripted.autocompact_window, timeout=timeout) as live:
            initial_usage = await live.context_usage()
            for number, ask in enumerate(scripted.steps, 1):
                before = len(api.served)
                api.model.main.extend(ask.main)
                api.model.subagent.extend(ask.subagent)
                messages = await live.ask(ask.prompt)
                if api.model.main or api.model.subagent:
                    raise LiveError(f"ctxsim: scripted session {scripted.name!r} step {number} ({ask.prompt!r}): the "
                                    f"CLI made fewer calls than scripted ({len(api.model.main)} main and "
                                    f"{len(api.model.subagent)} subagent replies unused)")
                usage = await live.context_usage()
                all_messages.append(messages)
                served.append(api.served[before:])
                steps.append(StepProjection(ask.prompt, _projected(messages), project_context_usage(usage)))
    totals = [step.context_usage.get("totalTokens") for step in steps]
    session = session_of(scripted.name, [a.prompt for a in scripted.steps], all_messages, served, totals,
                         model=scripted.model, window=_MODEL_WINDOW, baseline=int(initial_usage["totalTokens"]),
                         auto_compact_window=scripted.autocompact_window)
    return Played(project_context_usage(initial_usage), steps, session, list(api.served), bundled_cli_version(),
                  anyio.current_time() - started)


async def play_inprocess(session: Session, *, include_partial_messages: bool = False,
                         timeout: float = 10.0) -> Played:
    """Play ``session`` through :class:`~ctxsim.sdk.FakeTransport` and the real ``ClaudeSDKClient``, projected as
    :func:`play_live` projects the CLI's messages; bounded by ``timeout`` seconds in all."""
    started = anyio.current_time()
    steps: list[StepProjection] = []
    transport = FakeTransport(session, include_partial_messages=include_partial_messages)
    options = ClaudeAgentOptions(include_partial_messages=include_partial_messages)
    with anyio.move_on_after(timeout) as waited:
        async with ClaudeSDKClient(options, transport=transport) as client:
            initial = project_context_usage(await client.get_context_usage())
            for query in session.queries:
                messages = []
                await client.query(query.prompt)
                async for message in client.receive_response():
                    messages.append(message)
                    if isinstance(message, ResultMessage):
                        break
                steps.append(StepProjection(query.prompt, _projected(messages),
                                            project_context_usage(await client.get_context_usage())))
    if waited.cancelled_caught:
        raise LiveError(f"ctxsim: the in-process play of session {session.name!r} did not finish within "
                        f"{timeout:g} s ({len(steps)} of {len(session.queries)} queries done)")
    return Played(initial, steps, session, seconds=anyio.current_time() - started)


# --- the scripted sessions of the conformance suite -------------------------------------------------------------


def _bash(command: str) -> ToolUse:
    return ToolUse("", "Bash", {"command": command, "description": "run a command"})


def _agent(prompt: str) -> ToolUse:
    return ToolUse("", "Agent", {"description": "a subtask", "prompt": prompt, "subagent_type": "general-purpose",
                                 "run_in_background": False})


_TOOL_TURN = (Reply((Text("Running it."), _bash("echo one")), output_tokens=40), Reply((Text("It printed one."),)))

SESSIONS: Mapping[str, ScriptedSession] = {s.name: s for s in (
    ScriptedSession("several-queries", (
        Ask("hello"),
        Ask("run a command", main=_TOOL_TURN),
        Ask("think first", main=(Reply((Thinking("Let me think.", "sig-ctxsim"), Text("Thought it over.")),
                                       output_tokens=70),)),
    ), "three queries on one client: a plain answer, a tool turn, thinking"),
    ScriptedSession("partial-messages", (
        Ask("hello"),
        Ask("run a command", main=_TOOL_TURN),
    ), "partial messages on: stream events around every main-chain call", include_partial_messages=True),
    ScriptedSession("subagent", (
        Ask("delegate this", main=(Reply((Text("Delegating."), _agent("count to three"))),
                                   Reply((Text("The subagent is done."),))),
            subagent=(Reply((_bash("echo sub"),)), Reply((Text("Counted."),)))),
        Ask("thanks"),
    ), "a foreground subagent (Agent with run_in_background false) with a tool call of its own"),
    ScriptedSession("compact", (
        Ask("hello"),
        Ask("run a command", main=_TOOL_TURN),
        Ask("/compact"),
        Ask("after the compaction"),
    ), "/compact between queries, then a query"),
    ScriptedSession("autocompact", (
        Ask("hello"),
        Ask("read everything", main=(Reply((Text("Read a lot."),), prompt=80_000),)),
        Ask("go on"),
    ), "the CLI compacts by itself before the next query (80,000 > threshold 67,000 of a 100,000 window)",
        autocompact_window=100_000),
    ScriptedSession("autocompact-midturn", (
        Ask("hello"),
        Ask("a big tool turn", main=(Reply((_bash("echo mid"),), prompt=90_000), Reply((Text("Finished."),)))),
    ), "the CLI compacts by itself in the middle of a turn, between a tool result and the next call",
        autocompact_window=100_000),
    ScriptedSession("clear", (
        Ask("run a command", main=_TOOL_TURN),
        Ask("/clear"),
        Ask("after the clear"),
    ), "/clear, then a query in the new conversation"),
)}
"""The conformance suite's scripted sessions, by name."""
