"""A task scenario's fake agent served to any client of the real CLI: ``ctxsim serve TASK``.

:class:`TaskServer` is the :class:`~ctxsim.live.FakeMessagesAPI` answering as the task scenario's reactive fake
agent (:class:`ctxsim.agent.FakeAgent`) would, so that a restart loop written in any language, on the real CLI,
works through the task: each CLI session (the ``session_id`` the CLI puts in every request's metadata) is one
session of the agent; a request whose last message is a prompt (not a tool result) is a new turn, which the agent
plans from the prompt as it does in-process (the task prompt, a "go on", a checkpoint request, a continuation), and
each request of the turn is answered with its next call: the tool calls inert (``true``, a file that does not
exist), the usage exactly the world's. A prompt the agent cannot classify, a bound the loop went past, a request of
another kind (a side request, a subagent), a request with no session id or past the turn's
calls is answered 400 saying so.

:meth:`TaskServer.record` is what the agent recorded: every step performed (and so which were redone or skipped),
every session and turn with its kind, its steps and the true context it reached; it is printed when ``serve`` stops
and answered at ``GET /ctxsim/truth``. Usage the agent sends that cannot be read (``unreadable_usage``) is sent
as the API's garbage (``input_tokens`` ``"n/a"``), which the CLI passes on. A task whose agent compacts on its own
(``autocompact_at``) is played by the CLI's own autocompaction: the agent compacts before the request its prompt
would reach the point, the CLI (measured) before a request once the context it already has (the last call's usage)
passes its point, which serve moves with ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` (:func:`task_autocompact_window`) to
half a step's result under where a turn's first request reaches the agent's point; serve answers the CLI's summary
request. Both compact at the same turns' starts in a task shaped so (``seed004-autocompact-rearms-wind-down``).
A summary request while the CLI's context is under that point (or in a task whose agent never compacts on its own)
is the client's ``/compact``: the agent runs the loop's ``/compact`` as in-process (a turn of kind ``compact``, the
context then its baseline plus its summary), and serve answers with the context compacted as the request's usage
and the task's summary as its output.
"""

from __future__ import annotations

import json
import re
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import ClaudeAgentOptions

from ..agent import AgentBoundError, ConnectionRecord, FakeAgent, LoopPrompts, UnclassifiedPromptError
from ..live import AUTOCOMPACT_RESERVE, ApiRequest, Reply, inert_block as _inert, prompt_too_long
from ..sdk import FakeTransport
from ..world import Text, Thinking, ToolUse
from ._server import TRUTH_PATH, Refuser, Server, client_environment, session_serve_reason

if TYPE_CHECKING:
    from ..scenario import SessionScenario, TaskScenario
    from ..wire import Script

__all__ = ["PROMPT_KINDS", "TaskServer", "prompts_json", "read_loop_prompts", "serve_skip_reason"]


PROMPT_KINDS = ("checkpoint_request", "continuation", "continue_prompt", "inspect")
"""The loop's prompts the fake agent reads, by :class:`~ctxsim.agent.LoopPrompts`' field names."""


def prompts_json(prompts: LoopPrompts) -> dict[str, Any]:
    """``prompts`` in full, as JSON: per kind a list of patterns, each a template text (``{placeholder}`` stands for
    any text; it matches a prompt equal to it, surrounding whitespace aside) or ``{"regex": PATTERN}`` (found
    anywhere in the prompt); and ``done_marker``. A predicate cannot be written down: ``{"predicate": NAME}``."""
    out: dict[str, Any] = {}
    for kind in PROMPT_KINDS:
        matcher = getattr(prompts, kind)
        patterns = [matcher] if isinstance(matcher, (str, re.Pattern)) or callable(matcher) else list(matcher)
        out[kind] = [p if isinstance(p, str) else {"regex": p.pattern} if isinstance(p, re.Pattern)
                     else {"predicate": getattr(p, "__name__", type(p).__name__)} for p in patterns]
    out["done_marker"] = prompts.done_marker
    return out


def read_loop_prompts(path: Path) -> LoopPrompts:
    """The loop prompts declared in ``path``: a JSON object with any of :data:`PROMPT_KINDS` (each a template text,
    ``{"regex": PATTERN}``, or a list of them) and ``done_marker``; a kind not given keeps its default. Raises
    ``ValueError`` with one ``ctxsim:`` line naming the file and the key of what is wrong."""
    where = f"ctxsim: serve --prompts: {path}"
    try:
        declared = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{where}: cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    if not isinstance(declared, dict):
        raise ValueError(f"{where}: expected a JSON object with keys {', '.join(PROMPT_KINDS)}, done_marker")
    fields: dict[str, Any] = {}
    for key, value in declared.items():
        if key == "done_marker":
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"{where}: key 'done_marker': expected a text that is not empty")
            fields[key] = value
            continue
        if key not in PROMPT_KINDS:
            raise ValueError(f"{where}: key {key!r} is not a loop prompt (known: {', '.join(PROMPT_KINDS)}, "
                             f"done_marker)")
        patterns = value if isinstance(value, list) else [value]
        compiled: list[str | re.Pattern[str]] = []
        for pattern in patterns:
            if isinstance(pattern, str) and pattern.strip():
                compiled.append(pattern)
            elif isinstance(pattern, dict) and set(pattern) == {"regex"} and isinstance(pattern["regex"], str):
                try:
                    compiled.append(re.compile(pattern["regex"]))
                except re.error as exc:
                    raise ValueError(f"{where}: key {key!r}: regex {pattern['regex']!r}: {exc}") from None
            else:
                raise ValueError(f"{where}: key {key!r}: {json.dumps(pattern)[:80]} is neither a template text nor "
                                 f"{{\"regex\": PATTERN}}")
        if not compiled:
            raise ValueError(f"{where}: key {key!r}: no pattern given")
        fields[key] = tuple(compiled)
    return LoopPrompts(**fields)


def task_skip_reason(scenario: TaskScenario) -> str | None:
    """Why ``scenario``'s fake agent cannot be played to a live CLI, or None when it can."""
    window = task_autocompact_window(scenario)
    if window is not None and window - AUTOCOMPACT_RESERVE <= scenario.task.task.baseline:
        return (f"its agent compacts on its own (autocompact_at) so near its baseline that no autocompact point of "
                f"the live CLI lies under it (the CLI's point is its window less {AUTOCOMPACT_RESERVE:,})")
    return None


def task_autocompact_window(scenario: TaskScenario) -> int | None:
    """The ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` under which the live CLI compacts on its own at the start of the
    turn whose first request reaches the agent's ``autocompact_at``: its point half a step's result under the
    context such a turn starts from (None: the agent never compacts on its own). The CLI measures the context it
    has; the agent the request it is about to send, a prompt more at a turn's start and a step's result more
    mid-turn: the point lies between the two, so that a turn's start compacts and a step's result does not."""
    task = scenario.task.task
    if task.autocompact_at is None:
        return None
    step = min(s.tokens for s in task.steps)  # the smallest result a mid-turn request adds
    point = task.autocompact_at - (task.prompt_tokens or 0) - task.output_tokens - step // 2
    return point + AUTOCOMPACT_RESERVE


def _replies(script: Script) -> list[Reply]:
    """The API's answers that make the CLI write ``script``: one per call, its blocks (tool inputs inert), its usage
    (``message_start``) and its final output (``message_delta``), from a rendering with partial messages on."""
    calls: dict[str, dict[str, Any]] = {}
    for frame in script.frames:
        data = frame.data
        if data.get("type") == "stream_event" and data.get("parent_tool_use_id") is None:
            event = data.get("event") or {}
            if event.get("type") == "message_start":
                message = event["message"]
                usage = message["usage"]
                read = usage["input_tokens"]  # a garbage count (unreadable usage): sent as the API's garbage
                calls[message["id"]] = {"usage": (read if type(read) is int else 0,
                                                  usage["cache_creation_input_tokens"],
                                                  usage["cache_read_input_tokens"]), "blocks": [], "output": 1,
                                        "unreadable": type(read) is not int}
                last = message["id"]
            elif event.get("type") == "message_delta":
                calls[last]["output"] = event["usage"]["output_tokens"]
        elif data.get("type") == "assistant":
            call = calls.get(data["message"]["id"])  # a synthetic message (an API error's) has no call
            if call is not None:
                call["blocks"] += [_block(b) for b in data["message"]["content"]]
    return [Reply(tuple(_inert(b) for b in call["blocks"]), call["output"], call["usage"], message_id=mid,
                  unreadable=call["unreadable"]) for mid, call in calls.items()]


def _block(block: dict[str, Any]) -> Text | Thinking | ToolUse:
    if block["type"] == "text":
        return Text(block["text"])
    if block["type"] == "thinking":
        return Thinking(block["thinking"], block.get("signature", ""))
    return ToolUse(block["id"], block["name"], dict(block["input"]))


def _session_id(body: dict[str, Any]) -> str | None:
    """The CLI session a request belongs to: ``metadata.user_id``'s ``session_id`` (a JSON object in a string)."""
    user = (body.get("metadata") or {}).get("user_id")
    try:
        session = json.loads(user).get("session_id") if isinstance(user, str) else None
    except (ValueError, AttributeError):
        return None
    return session if isinstance(session, str) and session else None


def serve_skip_reason(scenario: SessionScenario | TaskScenario) -> str | None:
    """Why ``ctxsim serve`` cannot play ``scenario`` to a live CLI (a session scenario's script, or its live twin;
    a task scenario's fake agent), or None when it can: what ``ctxsim serve --list`` prints."""
    from ..scenario import SessionScenario

    if isinstance(scenario, SessionScenario):
        return session_serve_reason(scenario)
    return task_skip_reason(scenario)


_SUMMARY = Reply((Text("<analysis>The work so far.</analysis>\n<summary>The task's steps so far, served by "
                         "ctxsim.</summary>"),), output_tokens=60)
"""The answer to the CLI's compaction summary request (its ``<summary>`` block is what the CLI keeps)."""


class _AgentModel(Refuser):
    """The responder: the fake agent's turns, one queue of replies per CLI session."""

    def __init__(self, agent: FakeAgent, scenario: str, autocompact_window: int | None) -> None:
        super().__init__(f"task scenario {scenario!r}")
        self.agent = agent
        self.sessions: dict[str, tuple[FakeTransport, ConnectionRecord]] = {}
        self.queues: dict[str, deque[Reply]] = {}
        self.context: dict[str, int] = {}
        """Per CLI session, the context the CLI has: the last call served (its prompt and output)."""
        self.autocompact_window = autocompact_window

    def __call__(self, request: ApiRequest) -> Reply:
        session = _session_id(request.body)
        if request.kind == "compact" and self._compacts_on_its_own(session):
            return _SUMMARY  # the CLI compacts on its own where the agent does: the truth after it is the agent's
        if request.kind not in ("main", "compact"):
            return self.refuse(request, f"a {request.kind} request does not belong to the fake agent's work")
        if session is None:
            return self.refuse(request, "it names no CLI session (metadata.user_id has no session_id)")
        if request.kind == "compact":
            return self._manual_compaction(request, session)
        if not request.after_tool_result:
            if session not in self.sessions:
                try:
                    made = self.agent.transport(ClaudeAgentOptions(include_partial_messages=True))
                except AgentBoundError as exc:
                    return self.refuse(request, str(exc).removeprefix("ctxsim: "))
                self.sessions[session] = (made, self.agent.connections[-1])
            transport, record = self.sessions[session]
            assert transport.responder is not None
            try:
                script = transport.responder({"type": "user", "session_id": session,
                                              "message": {"role": "user", "content": request.prompt_text}})
            except (UnclassifiedPromptError, AgentBoundError) as exc:
                return self.refuse(request, str(exc).removeprefix("ctxsim: "))
            turn = record.turns[-1]
            if turn.rejected:
                return Reply(error=prompt_too_long(turn.peak_prompt, self.agent.task.window))
            self.queues[session] = deque(_replies(script))
        queue = self.queues.get(session)
        if not queue:
            return self.refuse(request, "the fake agent's turn has no call left")
        reply = queue.popleft()
        self.context[session] = sum(reply.usage or (0,)) + reply.output_tokens
        return reply

    def _compacts_on_its_own(self, session: str | None) -> bool:
        """A summary request is the CLI's own autocompaction: the agent compacts on its own and the context the CLI
        has in ``session`` (the last call served) is past the CLI's autocompact point; else the client's
        ``/compact``."""
        window = self.autocompact_window
        return window is not None and self.context.get(session or "", 0) >= window - AUTOCOMPACT_RESERVE

    def _manual_compaction(self, request: ApiRequest, session: str) -> Reply:
        """The summary request of a client's ``/compact``: the agent runs the loop's ``/compact`` as in-process
        (a turn of kind ``compact``, the context then its baseline plus its summary) and the summary is answered
        with the usage of the context compacted and the world's summary as its output."""
        if session not in self.sessions:
            return self.refuse(request, "a /compact summary request in a CLI session the fake agent has no turn in")
        transport, record = self.sessions[session]
        assert transport.responder is not None
        pre = self.context.get(session, 0)
        transport.responder({"type": "user", "session_id": session,
                             "message": {"role": "user", "content": "/compact"}})
        self.queues[session] = deque()
        self.context[session] = record.turns[-1].peak_prompt
        return Reply(_SUMMARY.blocks, output_tokens=self.agent.task.summary_tokens, prompt=pre)


class TaskServer(Server):
    """The fake Messages API playing ``scenario``'s fake agent on 127.0.0.1:``port`` (0: a free one); a context
    manager. Raises ``ValueError`` naming why a task cannot be served."""

    def __init__(self, scenario: TaskScenario, *, port: int = 0, prompts: LoopPrompts | None = None) -> None:
        reason = task_skip_reason(scenario)
        if reason is not None:
            raise ValueError(f"ctxsim: serve: task scenario {scenario.name!r} cannot be played to a live CLI: "
                             f"{reason}")
        self.scenario = scenario
        spec = scenario.task
        self.agent = FakeAgent(spec.task, checkpoints=spec.checkpoints,
                               max_connections=2 * (spec.max_restarts + 1) + 2, prompts=prompts)
        model = _AgentModel(self.agent, scenario.name, task_autocompact_window(scenario))
        super().__init__(model, port=port, window=spec.task.window)

    def settings(self) -> dict[str, Any]:
        """What a client needs: ``env``, ``model``, the task prompt to start with (``prompts``: each later prompt is
        the loop's own), what the agent understands as the loop's other prompts (``loop_prompts``, in full
        (:func:`prompts_json`): those declared with ``prompts``, else seed 003's, as
        :class:`~ctxsim.agent.LoopPrompts` declares them by default), the window and where the record is."""
        task = self.scenario.task.task
        declared = prompts_json(self.agent.prompts)
        env = client_environment(self.api.base_url, self.key)
        window = task_autocompact_window(self.scenario)
        if window is not None:  # where the CLI compacts on its own, as the agent does
            env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(window)
        return {"scenario": self.scenario.name, "env": env,
                "model": task.model, "prompts": [self.agent.task_prompt], "window": task.window,
                "loop_prompts": {kind: declared[kind] for kind in PROMPT_KINDS},
                "done_marker": declared["done_marker"], "include_partial_messages": self.scenario.task.partial,
                "permission_mode": "bypassPermissions", "truth_url": self.api.base_url + TRUTH_PATH}

    def record(self) -> dict[str, Any]:
        """What the agent did: every step's count (``redone``, ``skipped``), whether it said the task is done, and
        every CLI session's turns with their kind, steps and the true context each reached."""
        agent = self.agent
        return {"scenario": self.scenario.name, "steps": dict(agent.counts()), "redone": agent.redone,
                "skipped": agent.skipped, "finished": agent.finished, "refused": self.refused,
                "sessions": [{"session": c.index, "turns": [
                    {"turn": t.index, "kind": t.kind, "steps": list(t.steps), "prompt": t.peak_prompt,
                     "next_request": t.peak_next, "rejected": t.rejected} for t in c.turns]}
                    for c in agent.connections]}

    def truth(self) -> dict[str, Any]:
        """:meth:`record`."""
        return self.record()
