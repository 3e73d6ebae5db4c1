"""The :class:`FakeTransport`, :func:`patch_sdk` and the door to the SDK's private parts (the package's face
says what each guarantees)."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import aclosing, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, Message, Transport

from ..wire import Script, context_usage_response, prompt_text, render
from ..world import Call, Compaction, Session, SubagentCompaction, Text, ToolResult, Truth
from ._hooks import Conversation, HookAnswer, HookPlayer
from ._sdk_internals import TRANSPORT_ATTRIBUTE as _TRANSPORT, parse_message, transport_modules

__all__ = ["CLIENT_ONLY_TYPES", "FakeTransport", "Responder", "SdkPatch", "client_message", "kept_by_client",
           "parse_message", "patch_sdk", "subprocess_pid", "subprocess_transport"]

CLIENT_ONLY_TYPES = frozenset({"control_response", "control_request", "control_cancel_request", "transcript_mirror"})
"""Frame types the SDK client's reader (``Query._read_messages``) routes itself and never yields as messages."""


def kept_by_client(data: Mapping[str, Any]) -> bool:
    """True for a stream-json frame the SDK client keeps to itself: it reads it but never yields a message for it.

    Mirrors ``claude_agent_sdk._internal.query.Query._read_messages``: the control protocol
    (:data:`CLIENT_ONLY_TYPES`) and the ``system``/``session_state_changed`` frames marked ``sdk_host_only: true``
    that Claude Code writes (every captured release; state ``running``/``idle``; the client tracks them to end
    runs, then drops them). The one rule for every part of ctxsim that predicts what the client yields.
    """
    kind = data.get("type")
    if kind in CLIENT_ONLY_TYPES:
        return True
    return (kind == "system" and data.get("subtype") == "session_state_changed"
            and data.get("sdk_host_only") is True)


def client_message(data: dict[str, Any]) -> Message | None:
    """The message the SDK client yields for the frame ``data``, or None where it yields none (a frame it keeps
    to itself, or a type its parser skips). Raises where the SDK's parser raises."""
    if kept_by_client(data):
        return None
    return parse_message(data)

Responder = Callable[[dict[str, Any]], Script]
"""Decides one turn: the user message the SDK wrote (a stream-json dict) -> the script that answers it."""


class FakeTransport(Transport):
    """Plays ``session`` (or pre-rendered ``scripts`` of it) to the real SDK, one script per user message.

    ``include_partial_messages`` and ``forward_subagent_text`` choose the rendering, as the CLI options of the
    same names do. Pass ``scripts`` to play frames that were transformed after rendering (faults, replays);
    ``session`` still supplies the window and baseline for ``get_context_usage``. Pass ``responder`` to decide each
    turn when its user message arrives: it is called with the message dict the SDK wrote and returns the turn's
    script (an exception it raises surfaces from the SDK call that wrote the message).

    The hooks the SDK registers at ``initialize`` are called as Claude Code calls them, and a ``can_use_tool``
    callback in ``options`` (unless ``permission_mode`` is ``bypassPermissions``) is asked before each tool use;
    their answers are applied where Claude Code applies them (:mod:`ctxsim.sdk`). :attr:`hooks` records
    every request and answer.
    """

    def __init__(
        self,
        session: Session,
        *,
        scripts: Sequence[Script] | None = None,
        include_partial_messages: bool = False,
        forward_subagent_text: bool = False,
        responder: Responder | None = None,
        options: ClaudeAgentOptions | None = None,
    ) -> None:
        self.session = session
        self.responder = responder
        """Makes each turn's script from its user message; None plays ``scripts`` in order."""
        self.scripts: list[Script]
        if scripts is not None:
            self.scripts = list(scripts)
        elif responder is not None:
            self.scripts = []
        else:
            self.scripts = render(session, include_partial_messages=include_partial_messages,
                                  forward_subagent_text=forward_subagent_text)
        self.model = session.model
        self._model_set = False
        """Whether the client chose the model (``set_model``): then the session's own switches no longer apply."""
        """The model in force (``set_model`` changes it)."""
        self.truth: Truth | None = None
        """The true context as of the last frame handed to the SDK."""
        self.written: list[dict[str, Any]] = []
        """Every message the SDK wrote, control requests included, in order."""
        self.prompts: list[Any] = []
        """The content of every user message the SDK sent."""
        self.control_requests: list[str] = []
        """The subtypes of the control requests answered, in order."""
        self.session_state: str | None = None
        """The state of the last host-only ``session_state_changed`` frame played (None: none played)."""
        asks = options is not None and options.can_use_tool is not None
        mode = (options.permission_mode if options is not None else None) or "default"
        self.hooks = HookPlayer(permission_prompts=asks and mode != "bypassPermissions", permission_mode=mode)
        self.hooks.know(*_unseen_texts(session))
        """The CLI side of hooks and permission prompts: what was asked, what came back."""
        self._pending: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._turns: deque[Script] = deque()
        self._turn_prompts: deque[str] = deque()
        """The text of the user message of each turn in ``_turns`` (for ``UserPromptSubmit``)."""
        self._replies: deque[dict[str, Any]] = deque()
        self._wakeup = anyio.Event()
        self._connected = False
        self._input_ended = False
        self._closed = False
        self._interrupted = False
        self._next_script = 0
        self._calls = {c.message_id: c for c in session.main_calls}
        self._last_call: Call | None = None
        """The main-chain call the last point closed (a compaction or reset clears it): /context's thinking tail and
        ``apiUsage``."""
        self._answering = ""
        """The message id of the last assistant frame handed over (the call a stream event belongs to)."""

    # Transport ---------------------------------------------------------------------------------------------------

    async def connect(self) -> None:
        self._connected = True

    def is_ready(self) -> bool:
        return self._connected and not self._closed

    async def write(self, data: str) -> None:
        if self._closed:
            raise anyio.ClosedResourceError("ctxsim: FakeTransport.write() after close()")
        for line in data.splitlines():
            if line.strip():
                self._receive(json.loads(line))
        self._wakeup.set()

    async def end_input(self) -> None:
        self._input_ended = True
        self._wakeup.set()

    async def close(self) -> None:
        # Nothing here awaits: the close() contract (bounded, never blocking) holds trivially.
        self._closed = True
        self._wakeup.set()

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        replies, turns = self._replies, self._turns
        while not self._closed:
            if replies:
                yield replies.popleft()
                continue
            if turns:
                async with aclosing(self._play(turns.popleft())) as played:  # closed, not left to the collector
                    async for data in played:
                        yield data
                continue
            if self._input_ended:
                return
            await self._wakeup.wait()
            self._wakeup = anyio.Event()

    # playing -----------------------------------------------------------------------------------------------------

    async def _converse(self, conversation: Conversation) -> AsyncIterator[dict[str, Any]]:
        """Send the control requests of ``conversation`` one at a time, each answer awaited (bounded)."""
        answer: dict[str, Any] | None = None
        while not self._closed:
            try:
                request = conversation.send(answer)
            except StopIteration:
                return
            request_id = f"ctxsim_hook_{len(self.hooks.answers) + 1}"
            asks = request.body.get("subtype") == "can_use_tool"
            if asks:  # the session waits on the user's answer (recorded: tests/captures/*/stream-structure.json)
                yield self._state("requires_action")
            record = HookAnswer(request.body)
            self.hooks.answers.append(record)
            event, box = anyio.Event(), list[dict[str, Any]]()
            self._pending[request_id] = (event, box)
            yield {"type": "control_request", "request_id": request_id, "request": request.body}
            with anyio.move_on_after(request.timeout):
                await event.wait()
            self._pending.pop(request_id, None)
            response = box[0] if box else {"subtype": "error", "error": f"no answer within {request.timeout:g} s"}
            if response.get("subtype") == "success":
                body = response.get("response")
                record.response = answer = body if isinstance(body, dict) else {}
            else:
                record.error, answer = str(response.get("error")), None
            if asks:
                yield self._state("running")

    def _state(self, state: str) -> dict[str, Any]:
        """A host-only ``session_state_changed`` frame to ``state`` (the client keeps it to itself)."""
        self.session_state = state
        return {"type": "system", "subtype": "session_state_changed", "state": state, "sdk_host_only": True,
                "session_id": self.session.session_id}

    async def _play(self, script: Script) -> AsyncGenerator[dict[str, Any], None]:
        self._interrupted = False
        replies, hooks = self._replies, self.hooks
        frames = script.frames
        prompt = self._turn_prompts.popleft() if self._turn_prompts else ""
        if hooks.active:
            async for request in self._converse(hooks.turn_start(self.session.session_id, prompt)):
                yield request
        for index, frame in enumerate(frames):
            while replies:
                yield replies.popleft()
            if self._closed:
                return
            if self._interrupted and frame.data.get("type") != "result":
                continue
            data = frame.data
            if hooks.active and not self._interrupted:
                upcoming = (f.data for f in frames[index + 1:])
                async for request in self._converse(hooks.before(data, upcoming)):
                    yield request
                data = hooks.rewrite(data)
            if data.get("type") == "assistant":
                self._answering = str((data.get("message") or {}).get("id"))
            if data.get("subtype") == "init" and data.get("type") == "system" and not self._model_set:
                self.model = str(data.get("model") or self.model)  # /model between queries: the init says it
            if frame.observation is not None:
                self.truth = frame.observation.truth
                if frame.observation.kind == "call":  # its last frame: an assistant message, or a stream event
                    self._last_call = self._calls.get(str((data.get("message") or {}).get("id") or self._answering))
                elif frame.observation.kind in ("compaction", "reset"):
                    self._last_call = None
            if data.get("subtype") == "session_state_changed" and kept_by_client(data):
                self.session_state = str(data.get("state"))
            if self._interrupted:
                yield {**data, "terminal_reason": "aborted_streaming"}
            else:
                yield data
            if hooks.active and not self._interrupted:
                async for request in self._converse(hooks.after(data)):
                    yield request
                self._interrupted = hooks.interrupt
        if self.session_state == "running" and not self._closed:
            # The CLI reports "idle" at every turn's end, after its result, and a client with hooks or SDK MCP
            # servers waits for it (up to ten minutes) before it closes input: a rendered script (which ends with its
            # result) or a recorded turn cut short of its "idle" ends with one.
            yield self._state("idle")

    def _receive(self, message: dict[str, Any]) -> None:
        self.written.append(message)
        kind = message.get("type")
        if kind == "control_request":
            self._replies.append(self._answer(message.get("request_id", ""), message.get("request") or {}))
        elif kind == "control_response":
            response = message.get("response") or {}
            pending = self._pending.get(str(response.get("request_id")))
            if pending is not None:
                pending[1].append(response)
                pending[0].set()
        elif kind == "user":
            content = (message.get("message") or {}).get("content")
            self.prompts.append(content)
            prompt = prompt_text(content)
            if self.responder is not None:
                self._turns.append(self.responder(message))
                self._turn_prompts.append(prompt)
                return
            if self._next_script >= len(self.scripts):
                name = self.session.name or self.session.session_id
                raise RuntimeError(
                    f"ctxsim: FakeTransport got user message #{self._next_script + 1} but session {name!r} "
                    f"scripts only {len(self.scripts)} queries")
            self._turns.append(self.scripts[self._next_script])
            self._turn_prompts.append(prompt)
            self._next_script += 1

    def _answer(self, request_id: str, request: dict[str, Any]) -> dict[str, Any]:
        subtype = request.get("subtype")
        self.control_requests.append(str(subtype))
        body: dict[str, Any]
        if subtype == "initialize":
            self.hooks.register(request)
            body = {
                "commands": [{"name": n, "description": "", "argumentHint": ""}
                             for n in ("compact", "context", "clear", "cost")],
                "output_style": "default",
                "available_output_styles": ["default"],
                "models": [{"value": self.model, "displayName": self.model, "description": ""}],
                "account": {},
            }
        elif subtype == "get_context_usage":
            body = context_usage_response(self.session, self.truth, model=self.model, last_call=self._last_call)
        elif subtype == "interrupt":
            self._interrupted = True
            body = {}
        elif subtype == "set_model":
            self.model = request.get("model") or self.session.model
            self._model_set = True
            body = {}
        elif subtype in ("set_permission_mode", "end_session"):
            body = {}
        elif subtype == "mcp_status":
            body = {"mcpServers": []}
        else:
            return {"type": "control_response", "response": {
                "subtype": "error", "request_id": request_id,
                "error": f"ctxsim: FakeTransport does not answer control request {subtype!r}"}}
        return {"type": "control_response",
                "response": {"subtype": "success", "request_id": request_id, "response": body}}


def _unseen_texts(session: Session) -> tuple[list[tuple[str, ...]], dict[str, str], dict[str, list[str]]]:
    """What the hooks tell that no frame shows: each compaction's summary texts (the refused ones, then the
    summary), in order, each subagent's last text, by its ``Agent`` tool use id, and each subagent's own
    compactions' summary texts, by the tool use whose result came last before them."""
    summaries: list[tuple[str, ...]] = []
    agents: dict[str, str] = {}
    own: dict[str, list[str]] = {}
    for query in session.queries:
        last_result: dict[str, str] = {}  # per subagent, its last tool result's tool use id
        for step in query.steps:
            if isinstance(step, Compaction):
                summaries.append(tuple("\n".join(b.text for b in c.blocks if isinstance(b, Text))
                                       for c in step.summary_requests) or ("",))
            elif isinstance(step, Call) and step.parent_tool_use_id is not None:
                texts = [b.text for b in step.blocks if isinstance(b, Text)]
                if texts:
                    agents[step.parent_tool_use_id] = texts[-1]
            elif isinstance(step, ToolResult) and step.parent_tool_use_id is not None:
                last_result[step.parent_tool_use_id] = step.tool_use_id
            elif isinstance(step, SubagentCompaction) and step.tool_use_id in last_result:
                own.setdefault(last_result[step.tool_use_id], []).append("\n".join(
                    b.text for b in (step.summary.blocks if step.summary else ()) if isinstance(b, Text)))
    return summaries, agents, own


# --- patching code that builds its own client -------------------------------------------------------------------

TransportFactory = Callable[[ClaudeAgentOptions], FakeTransport]


@dataclass
class SdkPatch:
    """What :func:`patch_sdk` hands back: every transport it made, in order."""

    transports: list[FakeTransport] = field(default_factory=list)

    @property
    def last(self) -> FakeTransport:
        """The most recently made transport."""
        if not self.transports:
            raise LookupError("ctxsim: no ClaudeSDKClient or query() has connected under patch_sdk() yet")
        return self.transports[-1]


def _factory_for(target: Session | Sequence[Session] | TransportFactory) -> TransportFactory:
    if callable(target) and not isinstance(target, Session):
        return target
    sessions = [target] if isinstance(target, Session) else list(target)
    if not sessions:
        raise ValueError("ctxsim: patch_sdk() needs at least one session")
    count = 0

    def make(options: ClaudeAgentOptions) -> FakeTransport:
        nonlocal count
        if count >= len(sessions) and len(sessions) > 1:
            raise RuntimeError(f"ctxsim: connection #{count + 1} under patch_sdk() but only {len(sessions)} "
                               f"sessions were given")
        session = sessions[min(count, len(sessions) - 1)]
        if count and len(sessions) == 1:
            session = replace(session)  # the same session replayed: a new client starts it again
        count += 1
        return FakeTransport(session, include_partial_messages=options.include_partial_messages,
                             forward_subagent_text=options.forward_subagent_text, options=options)

    return make


@contextmanager
def patch_sdk(target: Session | Sequence[Session] | TransportFactory) -> Iterator[SdkPatch]:
    """Within the block, every SDK client that would start the CLI gets a :class:`FakeTransport` instead.

    ``target`` is the session every connection plays, a list of sessions played by successive connections
    (a restart loop's sessions), or a factory ``options -> FakeTransport``. The partial-messages and
    subagent-text options of each client choose its rendering.
    """
    make = _factory_for(target)
    made = SdkPatch()

    def fake_subprocess_transport(prompt: Any = None, options: ClaudeAgentOptions | None = None,
                                  **_: Any) -> FakeTransport:
        transport = make(options or ClaudeAgentOptions())
        made.transports.append(transport)
        return transport

    # The SDK looks the transport class up in both modules; both are private, hence setattr.
    saved = [(module, getattr(module, _TRANSPORT)) for module in transport_modules()]
    for module, _ in saved:
        setattr(module, _TRANSPORT, fake_subprocess_transport)
    try:
        yield made
    finally:
        for module, original in saved:
            setattr(module, _TRANSPORT, original)


def subprocess_transport(options: ClaudeAgentOptions) -> Transport:
    """The SDK's own transport to the Claude Code CLI, built as ``ClaudeSDKClient.connect()`` builds it for
    ``options`` (a ``can_use_tool`` callback asks the CLI to send permission prompts over stdio), to be handed to
    ``ClaudeSDKClient(options, transport=...)`` inside a wrapper that watches what the CLI writes."""
    subprocess_cli = transport_modules()[1]
    if options.can_use_tool is not None and options.permission_prompt_tool_name is None:
        options = replace(options, permission_prompt_tool_name="stdio")

    async def no_prompt() -> AsyncIterator[dict[str, Any]]:  # the client writes every prompt itself
        return
        yield {}  # pragma: no cover - makes this an async generator

    transport: Transport = getattr(subprocess_cli, _TRANSPORT)(prompt=no_prompt(), options=options)
    return transport


def subprocess_pid(transport: Transport) -> int | None:
    """The pid of the CLI process a connected :func:`subprocess_transport` started (None before it started, or for
    another transport)."""
    process = getattr(transport, "_process", None)
    pid = getattr(process, "pid", None)
    return pid if isinstance(pid, int) else None
