"""The CLI's side of hooks and permission prompts, for :class:`ctxsim.sdk.FakeTransport`.

An SDK client registers its hook callbacks in the ``initialize`` control request (``hooks``: per event, matchers
with ``hookCallbackIds``) and, with a ``can_use_tool`` callback, asks the CLI to route permission prompts to it.
Claude Code then sends ``control_request``\\ s of subtype ``hook_callback`` (``callback_id``, ``input``,
``tool_use_id``) and ``can_use_tool`` (``tool_name``, ``input``, ``tool_use_id``, ``permission_suggestions``) while
it plays a turn, and waits for the answers. :class:`HookPlayer` decides, frame by frame of a played script, which
requests Claude Code would send and when, and applies the answers where Claude Code does:

=================== ==========================================================================================
event               when (inputs beside ``session_id``, ``transcript_path``, ``cwd``, ``prompt_id`` and, but
                    for SubagentStart and PreCompact, ``permission_mode``)
=================== ==========================================================================================
UserPromptSubmit    when a user message arrives, before the turn (``prompt``); not for the local commands
                    (``/compact``, ``/clear``, ``/context``, ``/cost``)
PreToolUse          after the assistant message with a ``tool_use``, before its result (``tool_name``,
                    ``tool_input``, ``tool_use_id``); a ``permissionDecision: deny`` (or ``decision: block``)
                    denies the tool: its result becomes ``PreToolUse:<tool> hook error: <reason>`` (reason
                    ``Blocked by hook`` when none is given), ``is_error: true``, and PostToolUse is skipped;
                    ``allow`` skips the permission prompt; of one message's tool uses, those that only read
                    run together, and one that writes after the result of those before it (its PreToolUse
                    then comes after their PostToolUse)
can_use_tool        after PreToolUse, when the client has a ``can_use_tool`` callback, the permission mode is
                    not ``bypassPermissions`` and the tool is not one Claude Code runs unasked (``Agent``,
                    ``Read``, ``Glob``, ``Grep``, a read-only ``Bash`` command such as ``echo`` or ``ls``);
                    ``deny`` makes the result its message (``interrupt`` ends the turn)
PostToolUse         before the tool's result (``tool_name``, ``tool_input``, ``tool_response``, ``tool_use_id``,
                    ``duration_ms``)
SubagentStart       before the subagent's ``task_started`` (``agent_id``, ``agent_type``)
SubagentStop        before the subagent's hand-back result reaches the main chain (``stop_hook_active``,
                    ``agent_id``, ``agent_transcript_path``, ``agent_type``, ``last_assistant_message``: its
                    last text); also for the compaction's summary agent (``agent_type`` ``""``, its summary),
                    before the boundary
PreCompact          before a compaction (its ``status: compacting`` or ``compact_boundary``), with the
                    boundary's ``trigger`` (``manual``/``auto``) and ``custom_instructions`` None; for a
                    subagent's own compaction (no frame), after the ``PostToolUse`` of the subagent's tool
                    result before it, with its ``agent_id`` and ``agent_type`` (then its summary agent's
                    ``SubagentStop``)
Stop                before the result of a turn that got an answer from the model and ended without error
                    (``stop_hook_active`` false, ``last_assistant_message``)
=================== ==========================================================================================

A subagent's tool hooks carry its ``agent_id`` and ``agent_type``; the stop hooks carry ``background_tasks`` and
``session_crons`` (empty). Hooks that are not about a tool get a fresh id as their ``tool_use_id``, as Claude Code
gives them. All of this is what the CLI sends (``tests/live/test_live.py`` compares it with the installed CLI, hook by
hook, and ``tests/live/test_live_captures.py`` with every captured release).

A matcher of ``None``, ``""`` or ``"*"`` matches every event; otherwise it is matched (as a regex, in full) against
the tool name (tool hooks), the trigger (PreCompact) or the agent type (subagent hooks). Other answers (a Stop
hook's ``decision: block``, ``additionalContext``, ``updatedInput``) are recorded in :attr:`HookPlayer.answers`
but change nothing: the rest of the turn plays as scripted, and the truth stays the script's (a denied tool's
result tokens are still counted by the scripted calls that follow).
"""

from __future__ import annotations

import re
import uuid
from collections import deque
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["HOOK_EVENTS", "HookAnswer", "HookPlayer", "HookRequest"]

HOOK_EVENTS = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "PreCompact",
               "Stop")
"""The hook events :class:`HookPlayer` sends."""

DEFAULT_TIMEOUT = 60.0
"""Seconds to wait for an answer when the matcher sets no ``timeout`` (Claude Code's default for hooks)."""

LOCAL_COMMANDS = frozenset({"compact", "clear", "context", "cost"})
"""Slash commands Claude Code runs itself, without a ``UserPromptSubmit`` hook."""

UNASKED_TOOLS = frozenset({"Agent", "Task", "Read", "Glob", "Grep"})
"""Tools Claude Code runs without a permission prompt in the modes that ask."""

READ_ONLY_COMMANDS = frozenset({"echo", "ls", "pwd", "cat", "head", "tail", "wc", "grep", "which", "whoami", "date",
                                "true"})
"""``Bash`` commands Claude Code runs unasked (one simple command of these, no redirection or chaining)."""

CWD = "/home/dev/project"
"""The working directory the rendered sessions report (``system/init``), and hook inputs with them."""


@dataclass(frozen=True)
class HookRequest:
    """One control request the CLI sends: its body (``subtype`` and fields) and how long to wait for the answer."""

    body: dict[str, Any]
    timeout: float


@dataclass
class HookAnswer:
    """One request sent and what came back: the answer's body, or the error (an SDK error response, a timeout)."""

    request: dict[str, Any]
    response: dict[str, Any] | None = None
    error: str | None = None


Conversation = Generator[HookRequest, "dict[str, Any] | None", None]
"""Requests to send, one at a time; each ``send`` gives the answer's body (None: an error or no answer)."""


@dataclass
class _Matcher:
    pattern: str | None
    callback_ids: list[str]
    timeout: float

    def matches(self, value: str | None) -> bool:
        if self.pattern in (None, "", "*"):
            return True
        if value is None:
            return False
        try:
            return re.fullmatch(self.pattern, value) is not None
        except re.error:
            return self.pattern == value


@dataclass
class HookPlayer:
    """What Claude Code's hook runner does around one connection's played frames (module docstring)."""

    permission_prompts: bool = False
    """The client registered a ``can_use_tool`` callback and the permission mode asks."""
    permission_mode: str = "default"
    matchers: dict[str, list[_Matcher]] = field(default_factory=dict)
    answers: list[HookAnswer] = field(default_factory=list)
    """Every request sent, in order, with what came back."""
    denied: dict[str, str] = field(default_factory=dict)
    """Tool use id -> the denial that replaces its result."""
    interrupt: bool = False
    """A permission answer asked to end the turn."""
    _tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    _agents: dict[str, tuple[str, str]] = field(default_factory=dict)
    _compacting: bool = False
    _last_text: str | None = None
    _answered: bool = False
    _prompt_id: str = ""
    _ids: int = 0
    _summaries: deque[tuple[str, ...]] = field(default_factory=deque)
    _agent_texts: dict[str, str] = field(default_factory=dict)
    _own_compactions: dict[str, list[str]] = field(default_factory=dict)
    """A subagent's own compactions' summary texts, by the tool use whose result came last before them."""
    _running: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """Tool uses started and without a result yet: their id -> the message that asked for them, and whether they
    only read."""
    _waiting: deque[tuple[str, Mapping[str, Any], Mapping[str, Any]]] = field(default_factory=deque)
    """Tool uses whose ``PreToolUse`` waits for the tool uses before them: session id, frame, block."""

    def know(self, summaries: list[tuple[str, ...]], agent_texts: Mapping[str, str],
             own_compactions: Mapping[str, list[str]] | None = None) -> None:
        """What the frames do not show: each compaction's summary texts in order (a refused one, then the summary:
        each ends its own summary agent), each subagent's last text (by the tool use id of its ``Agent`` call),
        for the ``SubagentStop`` hooks' ``last_assistant_message``, and each subagent's own compactions'
        summaries, by the tool use whose result came last before them (a subagent compacts with no frame)."""
        self._summaries.extend(summaries)
        self._agent_texts.update(agent_texts)
        for tool_use_id, texts in (own_compactions or {}).items():
            self._own_compactions.setdefault(tool_use_id, []).extend(texts)

    def register(self, initialize: Mapping[str, Any]) -> None:
        """Read the hooks of the SDK's ``initialize`` request."""
        for event, matchers in (initialize.get("hooks") or {}).items():
            for m in matchers or ():
                self.matchers.setdefault(event, []).append(_Matcher(
                    m.get("matcher"), list(m.get("hookCallbackIds") or ()), float(m.get("timeout") or DEFAULT_TIMEOUT)))

    @property
    def active(self) -> bool:
        """Anything to send at all."""
        return bool(self.matchers) or self.permission_prompts

    # what is sent ------------------------------------------------------------------------------------------------

    def _id(self) -> str:
        self._ids += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ctxsim:hook:{self._ids}"))

    def _base(self, session_id: str, event: str) -> dict[str, Any]:
        out = {"session_id": session_id, "transcript_path": f"/home/dev/.claude/projects/-home-dev-project/"
               f"{session_id}.jsonl", "cwd": CWD, "prompt_id": self._prompt_id, "hook_event_name": event}
        if event not in ("SubagentStart", "PreCompact"):
            out["permission_mode"] = self.permission_mode
        return out

    def _hooks(self, event: str, value: str | None, hook_input: dict[str, Any],
               tool_use_id: str | None = None) -> Iterator[HookRequest]:
        for matcher in self.matchers.get(event, ()):
            if matcher.matches(value):
                for callback_id in matcher.callback_ids:
                    yield HookRequest({"subtype": "hook_callback", "callback_id": callback_id, "input": hook_input,
                                       "tool_use_id": tool_use_id or self._id()}, matcher.timeout)

    def turn_start(self, session_id: str, prompt: str) -> Conversation:
        """A user message arrived: ``UserPromptSubmit`` (not for a local command)."""
        self._last_text, self._answered, self.interrupt = None, False, False
        self._prompt_id = self._id()
        if prompt.startswith("/") and prompt[1:].split(" ", 1)[0] in LOCAL_COMMANDS:
            return
        hook_input = {**self._base(session_id, "UserPromptSubmit"), "prompt": prompt}
        yield from self._hooks("UserPromptSubmit", None, hook_input)

    def before(self, data: Mapping[str, Any], upcoming: Iterator[Mapping[str, Any]]) -> Conversation:
        """The requests due before the frame ``data`` (``upcoming``: the frames after it, for a compaction's
        trigger)."""
        session_id = str(data.get("session_id") or "")
        kind, subtype = data.get("type"), data.get("subtype")
        if kind == "system" and (subtype == "compact_boundary" or (subtype == "status"
                                                                   and data.get("status") == "compacting")):
            if not self._compacting:
                boundary = data if subtype == "compact_boundary" else next(
                    (f for f in upcoming if f.get("subtype") == "compact_boundary"), {})
                trigger = str((boundary.get("compact_metadata") or {}).get("trigger") or "manual")
                hook_input = {**self._base(session_id, "PreCompact"), "trigger": trigger, "custom_instructions": None}
                yield from self._hooks("PreCompact", trigger, hook_input)
            if subtype == "compact_boundary":  # the summary agents are done (a refused summary's, then the summary's)
                for summary in self._summaries.popleft() if self._summaries else ("",):
                    yield from self._subagent_stop(session_id, "a" + self._id().replace("-", "")[:16], "", summary)
            self._compacting = subtype == "status"
        elif kind == "system" and subtype == "task_started":
            agent_id, agent_type = str(data.get("task_id")), str(data.get("subagent_type") or "general-purpose")
            key = str(data.get("tool_use_id")) + ("/background" if data.get("is_backgrounded") else "")
            self._agents[key] = (agent_id, agent_type)  # in the background: stopped at its notification, not result
            hook_input = {**self._base(session_id, "SubagentStart"), "agent_id": agent_id, "agent_type": agent_type}
            yield from self._hooks("SubagentStart", agent_type, hook_input)
        elif subtype == "task_notification" and (stopped := self._agents.pop(f"{data.get('tool_use_id')}/background",
                                                                            None)) is not None:
            agent_id, agent_type = stopped
            yield from self._subagent_stop(session_id, agent_id, agent_type, str(data.get("summary") or ""))
            yield from self.turn_start(session_id, (  # its notification is the prompt of a turn of its own
                f"<task-notification>\n<task-id>{agent_id}</task-id>\n<tool-use-id>{data.get('tool_use_id')}"
                f"</tool-use-id>\n<status>{data.get('status')}</status>\n</task-notification>"))
        elif kind == "user":
            for block in _blocks(data, "tool_result"):
                tool_use_id = str(block.get("tool_use_id"))
                if data.get("parent_tool_use_id") is None and tool_use_id in self._agents:
                    agent_id, agent_type = self._agents.pop(tool_use_id)
                    yield from self._subagent_stop(session_id, agent_id, agent_type,
                                                   self._agent_texts.get(tool_use_id, ""))
                tool = self._tools.pop(tool_use_id, None)
                if tool is not None and tool_use_id not in self.denied:
                    hook_input = {**self._base(session_id, "PostToolUse"), **tool,
                                  "tool_response": block.get("content"), "tool_use_id": tool_use_id,
                                  "duration_ms": 0}
                    yield from self._hooks("PostToolUse", tool["tool_name"], hook_input, tool_use_id)
                if data.get("parent_tool_use_id") is not None:  # the subagent compacts on its own after it
                    yield from self._own_compaction(session_id, str(data["parent_tool_use_id"]), tool_use_id)
                done = self._running.pop(tool_use_id, None)
                if done is not None and self._waiting and not self._started_by(done[0]):
                    waiting_session, frame, waiting = self._waiting.popleft()  # the uses before it are done
                    self._running[str(waiting.get("id"))] = (done[0], False)
                    yield from self._pre_tool(waiting_session, frame, waiting)
        elif kind == "result" and self._answered and not data.get("is_error") and not self.interrupt:
            hook_input = {**self._base(session_id, "Stop"), "stop_hook_active": False}
            if self._last_text is not None:
                hook_input["last_assistant_message"] = self._last_text
            yield from self._hooks("Stop", None, {**hook_input, "background_tasks": [], "session_crons": []})

    def _own_compaction(self, session_id: str, parent: str, after: str) -> Iterator[HookRequest]:
        """A subagent's own compactions after the result of tool use ``after``: ``PreCompact`` naming the agent,
        then its summary agent's ``SubagentStop`` (recorded, Claude Code 2.1.332)."""
        agent_id, agent_type = self._agents.get(parent, ("", ""))
        for summary in self._own_compactions.pop(after, ()):
            hook_input = {**self._base(session_id, "PreCompact"), "agent_id": agent_id, "agent_type": agent_type,
                          "trigger": "auto", "custom_instructions": None}
            yield from self._hooks("PreCompact", "auto", hook_input)
            yield from self._subagent_stop(session_id, "a" + self._id().replace("-", "")[:16], "", summary)

    def _subagent_stop(self, session_id: str, agent_id: str, agent_type: str, text: str) -> Iterator[HookRequest]:
        hook_input = {**self._base(session_id, "SubagentStop"), "stop_hook_active": False, "agent_id": agent_id,
                      "agent_transcript_path": f"/home/dev/.claude/projects/-home-dev-project/{session_id}/"
                      f"subagents/agent-{agent_id}.jsonl", "agent_type": agent_type,
                      "last_assistant_message": text, "background_tasks": [], "session_crons": []}
        yield from self._hooks("SubagentStop", agent_type, hook_input)

    def after(self, data: Mapping[str, Any]) -> Conversation:
        """The requests due after the frame ``data``: a tool use's ``PreToolUse`` and permission prompt."""
        if data.get("type") != "assistant":
            return
        main = data.get("parent_tool_use_id") is None
        self._answered = self._answered or main
        for block in _blocks(data, "text"):
            if main:
                self._last_text = str(block.get("text", ""))
        message_id = str((data.get("message") or {}).get("id"))
        for block in _blocks(data, "tool_use"):
            reads = _unasked(str(block.get("name")), block.get("input") or {})
            if any(str((f.get("message") or {}).get("id")) == message_id for _, f, _ in self._waiting) or any(
                    m == message_id and not (r and reads) for m, r in self._running.values()):
                # Claude Code runs a tool use that writes alone, after the uses of the message before it (and
                # those after it wait for it); tool uses that only read run together.
                self._waiting.append((str(data.get("session_id") or ""), data, block))
            else:
                self._running[str(block.get("id"))] = (message_id, reads)
                yield from self._pre_tool(str(data.get("session_id") or ""), data, block)

    def _started_by(self, message_id: str) -> bool:
        """Whether a tool use of message ``message_id`` still runs."""
        return any(m == message_id for m, _ in self._running.values())

    def _pre_tool(self, session_id: str, data: Mapping[str, Any], block: Mapping[str, Any]) -> Conversation:
        """A tool use's ``PreToolUse`` and permission prompt (``data``: the assistant frame that holds it)."""
        tool_use_id, name = str(block.get("id")), str(block.get("name"))
        tool = {"tool_name": name, "tool_input": block.get("input") or {}}
        if data.get("parent_tool_use_id") is not None:
            parent = str(data["parent_tool_use_id"])
            tool["agent_id"], tool["agent_type"] = self._agents.get(parent, self._agents.get(f"{parent}/background",
                                                                                              ("", "")))
        self._tools[tool_use_id] = tool
        hook_input = {**self._base(session_id, "PreToolUse"), **tool, "tool_use_id": tool_use_id}
        decision: str | None = None
        for request in self._hooks("PreToolUse", name, hook_input, tool_use_id):
            answer = yield request
            decision = _pre_tool_decision(answer) or decision
            if decision and decision.startswith("deny:"):
                self.denied[tool_use_id] = f"PreToolUse:{name} hook error: {decision[5:] or 'Blocked by hook'}"
                break
        if decision is None and self.permission_prompts and not _unasked(name, block.get("input") or {}):
            answer = yield HookRequest({"subtype": "can_use_tool", "tool_name": name,
                                        "input": tool["tool_input"], "permission_suggestions": [],
                                        "tool_use_id": tool_use_id, "blocked_path": None}, DEFAULT_TIMEOUT)
            if answer is None or answer.get("behavior") != "allow":
                message = (answer or {}).get("message") or f"Permission to use {name} has been denied."
                self.denied[tool_use_id] = str(message)
                self.interrupt = bool((answer or {}).get("interrupt"))

    # what is changed ---------------------------------------------------------------------------------------------

    def rewrite(self, data: dict[str, Any]) -> dict[str, Any]:
        """``data`` as Claude Code writes it after the answers: a denied tool's result is the denial."""
        if data.get("type") != "user" or not self.denied:
            return data
        content = (data.get("message") or {}).get("content")
        if not isinstance(content, list) or not any(
                isinstance(b, dict) and b.get("tool_use_id") in self.denied for b in content):
            return data
        blocks = [{**b, "content": self.denied[b["tool_use_id"]], "is_error": True}
                  if isinstance(b, dict) and b.get("tool_use_id") in self.denied else b for b in content]
        out = {**data, "message": {**data["message"], "content": blocks}}
        if "tool_use_result" in out:
            out["tool_use_result"] = f"Error: {blocks[0].get('content')}"
        return out


def _blocks(data: Mapping[str, Any], kind: str) -> list[dict[str, Any]]:
    content = (data.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, dict) and b.get("type") == kind] if isinstance(content, list) else []


def _unasked(name: str, tool_input: Mapping[str, Any]) -> bool:
    """Claude Code runs this tool use without a permission prompt (:data:`UNASKED_TOOLS`, a read-only command)."""
    if name in UNASKED_TOOLS:
        return True
    command = str(tool_input.get("command") or "") if name == "Bash" else ""
    if not command or any(c in command for c in ";&|<>`$\n"):
        return False
    return command.split()[0] in READ_ONLY_COMMANDS


def _pre_tool_decision(answer: dict[str, Any] | None) -> str | None:
    """``deny:<reason>``, ``allow`` or None (no decision) from a PreToolUse hook's answer."""
    if not answer:
        return None
    specific = answer.get("hookSpecificOutput") or {}
    decision = specific.get("permissionDecision")
    if decision == "deny" or answer.get("decision") == "block":
        return "deny:" + str(specific.get("permissionDecisionReason") or answer.get("reason") or "")
    return "allow" if decision == "allow" else None
