"""Fidelity of the in-process fake to the real CLI: scripted sessions played live and in-process, compared.

A :class:`ScriptedSession` is a list of :class:`Ask` steps: a prompt (or a command: ``/compact``, ``/clear``) and
the replies the fake model gives to the main chain and to subagents while the CLI answers it. :func:`play_live`
plays it through the real bundled CLI against :class:`~ctxsim.live.FakeMessagesAPI` and records, per step,
the projection of every message and ``get_context_usage()`` after it (:mod:`ctxsim.lab`), every hook
call and permission prompt the client's callbacks got (:class:`HookSetup`: every hook event registered, a
``can_use_tool`` callback where the permission mode asks), the CLI's transcript files after each step (and,
asked to, at each request it sent, held there until they settled: ``RequestSnapshots``),
and the world :class:`~ctxsim.world.Session` that happened (the calls the API served, with the usage it reported,
in the order the CLI reported them). :func:`play_inprocess` plays that session through
:class:`~ctxsim.sdk.FakeTransport` and the real ``ClaudeSDKClient`` with the same projection and callbacks, and
``compare`` names every field where the two differ.

:data:`SESSIONS` are the scripted sessions of the fidelity suite: several queries with tools and thinking,
partial messages, parallel tool uses, a foreground and a background subagent, ``/compact``, an autocompaction the
CLI performs itself (between queries, mid-turn), ``/clear``, a ``PreToolUse`` hook that denies ``Bash``,
permission prompts allowed and refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionMode,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
)

from ..live import FakeMessagesAPI, FrameEdit, FrameTap, LiveClaude, LiveError, Reply, Served, cli_version
from ..sdk import FakeTransport, kept_by_client
from ..wire import FrameKeys, frame_keys, raw_fields, render
from ..world import DEFAULT_MODEL, Session, TaskNotification, Text, Thinking, ToolUse
from ._projection import (
    Projection,
    StepProjection,
    id_shapes,
    project_context_usage,
    project_hook,
    project_message,
    project_permission,
)
from ._recorded import session_of
from ._settle import SETTLE_TIMEOUT, RequestSnapshot, RequestSnapshots

__all__ = ["DENY_REASON", "HOOK_EVENTS", "REFUSAL", "SESSIONS", "Ask", "HookSetup", "Played", "ScriptedSession",
           "play_inprocess", "play_live"]

HOOK_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "PreCompact",
               "Stop")
"""The hook events the fidelity suite registers (each with one callback matching everything)."""
DENY_REASON = "ctxsim denies this tool"
"""The reason of :attr:`HookSetup.deny_tool`'s denial."""
REFUSAL = "ctxsim refuses this command"
"""The message of :attr:`HookSetup.refuse_command`'s refusal."""


@dataclass(frozen=True)
class HookSetup:
    """The callbacks a scripted session registers on the client, live and in-process alike: a callback for every
    event of :data:`HOOK_EVENTS` that records it and answers ``{}`` (or denies the tool ``deny_tool``), and, unless
    the permission mode is ``bypassPermissions`` (where the CLI never asks), a ``can_use_tool`` callback that
    allows every tool but a ``Bash`` command starting with ``refuse_command``."""

    permission_mode: PermissionMode = "bypassPermissions"
    deny_tool: str | None = None
    refuse_command: str | None = None

    def options(self, seen: list[Projection]) -> dict[str, Any]:
        """``ClaudeAgentOptions`` keywords that register the callbacks; each call is appended to ``seen``."""

        async def hook(hook_input: Any, tool_use_id: str | None, context: Any) -> dict[str, Any]:
            seen.append(project_hook(hook_input, tool_use_id))
            if hook_input.get("hook_event_name") == "PreToolUse" and hook_input.get("tool_name") == self.deny_tool:
                return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                               "permissionDecisionReason": DENY_REASON}}
            return {}

        async def permit(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
            seen.append(project_permission(tool_name, tool_input, getattr(context, "tool_use_id", None)))
            command = str(tool_input.get("command", ""))
            if tool_name == "Bash" and self.refuse_command and command.startswith(self.refuse_command):
                return PermissionResultDeny(message=REFUSAL)
            return PermissionResultAllow()

        out: dict[str, Any] = {"hooks": {e: [HookMatcher(hooks=[hook])]  # type: ignore[list-item]
                                         for e in HOOK_EVENTS},
                               "permission_mode": self.permission_mode}
        if self.permission_mode != "bypassPermissions":
            out["can_use_tool"] = permit
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-able form (``HookSetup(**data)`` reads it)."""
        return asdict(self)


@dataclass(frozen=True)
class Ask:
    """One step: send ``prompt``; the fake model answers the main chain with ``main`` and subagents with
    ``subagent``, in order (then ``ok``/``Done.``), and the compaction summary request with a summary."""

    prompt: str
    main: tuple[Reply, ...] = ()
    subagent: tuple[Reply, ...] = ()
    results: int = 1
    """The results the step ends with: 2 where a background subagent's notification starts a turn of its own."""
    summaries: tuple[Reply, ...] = ()
    """Replies to the step's compaction summary requests, before the default summary."""


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
    hooks: HookSetup = HookSetup()
    agents: Mapping[str, Mapping[str, Any]] | None = None
    """Agent definitions given the CLI as its ``--agents`` JSON (keys the SDK's ``AgentDefinition`` lacks, such as
    ``autoCompactWindow``, included); None: none."""


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
    frame_keys: FrameKeys = field(default_factory=dict)
    """Every key path the raw frames carried, by frame kind (the SDK's control frames left out)."""
    raw: dict[str, list[Any]] = field(default_factory=dict)
    """The raw-frame values trackers read that the SDK's messages drop (request ids), frame by frame."""
    transcripts: list[dict[str, list[dict[str, Any]]]] = field(default_factory=list)
    """Live: the CLI's transcript files after each step (:meth:`~ctxsim.live.LiveClaude.transcripts`)."""
    request_transcripts: list[list[RequestSnapshot]] = field(default_factory=list)
    """Live, held at requests: per step, the CLI's transcript files at each request it sent the fake API
    (``RequestSnapshots``); empty lists otherwise."""
    frames: list[list[dict[str, Any]]] = field(default_factory=list)
    """The raw frames the CLI (or the fake) wrote for each step, in order (control frames left out)."""


_MODEL_WINDOW = 200_000
"""The scripted sessions' model's context window (``modelUsage.contextWindow``)."""


def _projected(messages: list[Any]) -> list[Projection]:
    return [p for p in (project_message(m) for m in messages) if p is not None]


def _agents_option(scripted: ScriptedSession) -> dict[str, Any]:
    """``ClaudeAgentOptions`` keywords that hand the CLI ``scripted``'s agent definitions as ``--agents``."""
    return {"extra_args": {"agents": json.dumps(scripted.agents)}} if scripted.agents else {}


def _keys(frames: list[dict[str, Any]]) -> FrameKeys:
    return frame_keys(f for f in frames if not kept_by_client(f) and f.get("type") != "control_request")


async def play_live(scripted: ScriptedSession, *, timeout: float = 60.0, cli: str | None = None,
                    hold_at_requests: bool = False) -> Played:
    """Play ``scripted`` through the real CLI (``cli``, else the one bundled in the SDK) against a fake API; every
    wait bounded by ``timeout``. ``hold_at_requests`` holds the CLI at each request until its transcript has
    settled and keeps the files (:attr:`Played.request_transcripts`; a tenth of a second or so a request)."""
    started = anyio.current_time()
    version = cli_version(cli)
    api = FakeMessagesAPI(window=scripted.autocompact_window or 200_000)
    all_messages: list[list[Any]] = []
    transcripts: list[dict[str, list[dict[str, Any]]]] = []
    requests: list[list[RequestSnapshot]] = []
    served: list[list[Served]] = []
    frames: list[list[dict[str, Any]]] = []
    steps: list[StepProjection] = []
    hooks: list[Projection] = []
    with api:
        async with LiveClaude(api, model=scripted.model, include_partial_messages=scripted.include_partial_messages,
                              autocompact_window=scripted.autocompact_window, timeout=timeout, cli=cli,
                              **_agents_option(scripted), **scripted.hooks.options(hooks)) as live:
            initial_usage = await live.context_usage()
            snapshots = RequestSnapshots(live.projects_dir, timeout=min(timeout, SETTLE_TIMEOUT))
            api.hold = snapshots if hold_at_requests else None
            for number, ask in enumerate(scripted.steps, 1):
                before, taken, written = len(api.served), len(snapshots.taken), len(live.frames)
                api.model.main.extend(ask.main)
                api.model.subagent.extend(ask.subagent)
                api.model.summaries.extend(ask.summaries)
                messages = await live.ask(ask.prompt, results=ask.results)
                if api.model.main or api.model.subagent or api.model.summaries:
                    raise LiveError(f"ctxsim: scripted session {scripted.name!r} step {number} ({ask.prompt!r}): the "
                                    f"CLI made fewer calls than scripted ({len(api.model.main)} main and "
                                    f"{len(api.model.subagent)} subagent replies unused)")
                usage = await live.context_usage()  # answered after the step's last frames (idle)
                frames.append([f for f in live.frames[written:] if not str(f.get("type", "")).startswith("control_")])
                transcripts.append(live.transcripts())
                requests.append(snapshots.taken[taken:])
                all_messages.append(messages)
                served.append(api.served[before:])
                steps.append(StepProjection(ask.prompt, _projected(messages), project_context_usage(usage),
                                            hooks[:]))
                hooks.clear()
            keys, raw = _keys(live.frames), raw_fields(live.frames)
            api.hold = None
            if snapshots.problems:
                raise LiveError(snapshots.problems[0])
    totals = [step.context_usage.get("totalTokens") for step in steps]
    session = session_of(scripted.name, [a.prompt for a in scripted.steps], all_messages, served, totals,
                         model=scripted.model, window=_MODEL_WINDOW, baseline=int(initial_usage["totalTokens"]),
                         auto_compact_window=scripted.autocompact_window,
                         auto_compact_at=initial_usage.get("autoCompactThreshold"), cli=version)
    return Played(project_context_usage(initial_usage), id_shapes(steps), session, list(api.served), version,
                  anyio.current_time() - started, keys, raw, transcripts, requests, frames)


async def play_inprocess(session: Session, *, include_partial_messages: bool = False, hooks: HookSetup = HookSetup(),
                         timeout: float = 10.0, edit: FrameEdit | None = None,
                         cli_version: str | None = None) -> Played:
    """Play ``session`` through :class:`~ctxsim.sdk.FakeTransport` and the real ``ClaudeSDKClient`` with the
    callbacks of ``hooks``, projected as :func:`play_live` projects the CLI's messages and hook calls; bounded by
    ``timeout`` seconds in all. ``edit`` changes each frame the fake writes before the SDK reads it (a divergence
    planted on purpose); ``cli_version``: the Claude Code the rendering stands for (default: the installed one)."""
    started = anyio.current_time()
    steps: list[StepProjection] = []
    frames: list[list[dict[str, Any]]] = []
    seen: list[Projection] = []
    options = ClaudeAgentOptions(include_partial_messages=include_partial_messages, **hooks.options(seen))
    scripts = render(session, include_partial_messages=include_partial_messages, cli_version=cli_version)
    transport = FrameTap(FakeTransport(session, scripts=scripts, include_partial_messages=include_partial_messages,
                                       options=options), edit)
    with anyio.move_on_after(timeout) as waited:
        async with ClaudeSDKClient(options, transport=transport) as client:
            initial = project_context_usage(await client.get_context_usage())
            for query in session.queries:
                written = len(transport.frames)
                messages, results = [], 1 + sum(isinstance(s, TaskNotification) for s in query.steps)
                await client.query(query.prompt)
                async for message in client.receive_messages():  # a background subagent's turn has its own result
                    messages.append(message)
                    results -= isinstance(message, ResultMessage)
                    if not results:
                        break
                steps.append(StepProjection(query.prompt, _projected(messages),
                                            project_context_usage(await client.get_context_usage()), seen[:]))
                frames.append([f for f in transport.frames[written:]
                               if not str(f.get("type", "")).startswith("control_")])
                seen.clear()
    if waited.cancelled_caught:
        raise LiveError(f"ctxsim: the in-process play of session {session.name!r} did not finish within "
                        f"{timeout:g} s ({len(steps)} of {len(session.queries)} queries done)")
    return Played(initial, id_shapes(steps), session, seconds=anyio.current_time() - started,
                  frame_keys=_keys(transport.frames), raw=raw_fields(transport.frames), frames=frames)


# --- the scripted sessions of the fidelity suite ----------------------------------------------------------------


def _bash(command: str) -> ToolUse:
    return ToolUse("", "Bash", {"command": command, "description": "run a command"})


def _agent(prompt: str, background: bool = False) -> ToolUse:
    return ToolUse("", "Agent", {"description": "a subtask", "prompt": prompt, "subagent_type": "general-purpose",
                                 "run_in_background": background})


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
    ScriptedSession("parallel-tools", (
        Ask("run two commands", main=(Reply((Text("Running both."), _bash("touch one.txt"), _bash("touch two.txt")),
                                            output_tokens=40), Reply((Text("Both made."),)))),
        Ask("thanks"),
    ), "one call with two tool uses, then a call: each tool result is a turn (commands that write, which the CLI "
       "runs one after the other, so their results and hooks come in a fixed order)"),
    ScriptedSession("subagent", (
        Ask("delegate this", main=(Reply((Text("Delegating."), _agent("count to three"))),
                                   Reply((Text("The subagent is done."),))),
            subagent=(Reply((_bash("echo sub"),)), Reply((Text("Counted."),)))),
        Ask("thanks"),
    ), "a foreground subagent (Agent with run_in_background false) with a tool call of its own"),
    ScriptedSession("background-subagent", (
        Ask("delegate this", main=(Reply((Text("Delegating."), _agent("count to three", True))),
                                   Reply((Text("Started it in the background."),)),
                                   Reply((Text("The background task finished."),))),
            subagent=(Reply((_bash("echo sub"),), delay=1.0), Reply((Text("Counted."),))), results=2),
        Ask("thanks"),
    ), "a background subagent (run_in_background true): the launch result, the turn's result while it runs (its "
       "first reply held a second, so the order is the same every run), then its notification's own turn"),
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
    ScriptedSession("autocompact-refused-summary", (
        Ask("hello"),
        Ask("read everything", main=(Reply((Text("Read a lot."),), prompt=80_000),)),
        Ask("go on", summaries=(Reply((Text("Nothing to add."),), output_tokens=30),)),
    ), "an autocompaction whose first summary reply holds no <summary>: the CLI refuses it and asks again",
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
    ScriptedSession("hook-deny", (
        Ask("run a command", main=_TOOL_TURN),
        Ask("thanks"),
    ), "a PreToolUse hook denies the Bash call: its result is the hook's reason, an error",
        hooks=HookSetup(deny_tool="Bash")),
    ScriptedSession("permissions", (
        Ask("change things", main=(Reply((Text("Making a file."), _bash("touch made.txt"))),
                                   Reply((Text("Listing."), _bash("ls"))),
                                   Reply((Text("Removing it."), _bash("rm made.txt"))),
                                   Reply((Text("Could not remove it."),)))),
        Ask("delegate this", main=(Reply((Text("Delegating."), _agent("make a file"))),
                                   Reply((Text("The subagent is done."),))),
            subagent=(Reply((_bash("touch sub.txt"),)), Reply((Text("Made it."),)))),
    ), "permission mode default with a can_use_tool callback: touch asked and allowed, ls not asked, rm asked and "
       "refused; an Agent call not asked, its subagent's touch asked",
        hooks=HookSetup(permission_mode="default", refuse_command="rm")),
)}
"""The fidelity suite's scripted sessions, by name."""
