"""A fake Anthropic Messages API on 127.0.0.1, for the real Claude Code CLI to talk to.

:class:`FakeMessagesAPI` serves ``POST /v1/messages`` (server-sent events, or one JSON message when ``stream`` is
false) and ``POST /v1/messages/count_tokens`` (with or without ``?beta=true``, which ``/context`` and
``get_context_usage`` use), on a free port of 127.0.0.1 and nowhere else, with starlette under uvicorn (both come
with ``claude-agent-sdk``) in one thread. Any other path is answered 404 and recorded, so a stray call shows.
Every request must carry the server's own credential (:attr:`FakeMessagesAPI.key`, random per server, the one
ctxsim hands the CLI it starts) as ``x-api-key`` or a bearer token; anything else, another process on this machine
included, is answered 401 ``authentication_error`` and recorded in :attr:`FakeMessagesAPI.rejected`, and takes
nothing from the script.

Each ``/v1/messages`` request is classified (the main chain, a subagent's, the compaction summary request, a side
request) and answered by a *responder* (:class:`ScriptedModel` by default): the next call of its chain, as a
:class:`Reply`. The usage it reports carries ``cache_creation_input_tokens`` and ``cache_read_input_tokens``:
stated by the reply (a world :class:`~ctxsim.world.Call`'s exact usage), or modelled by a prompt cache from the
request's ``cache_control`` breakpoints and the prefixes earlier requests wrote. Whatever it reports is the truth
of that call, recorded in :attr:`FakeMessagesAPI.served`. A request whose prompt exceeds the window gets the real
API's error: HTTP 400 ``invalid_request_error``, ``prompt is too long: N tokens > M maximum``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import secrets
import socket
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..world import TITLE_INPUT_TOKENS, TITLE_OUTPUT_TOKENS, Text, Thinking, ToolUse
from ._http import (
    ACCEPT_BATCH,
    IDLE_TIMEOUT,
    MAX_CONNECTIONS,
    BoundedConnection,
    Gate,
    Listener,
    Refused,
    json_object,
    malformed_is_400,
    not_out_of_descriptors,
)
from ._requests import PromptCache, RequestKind, classify, estimate_tokens, last_user_text

__all__ = ["ApiRequest", "Block", "FakeMessagesAPI", "Hold", "Reply", "Responder", "ScriptedModel", "Served",
           "prompt_too_long"]

Block = Text | Thinking | ToolUse
"""A content block of a reply (the world's blocks; a :class:`~ctxsim.world.ToolUse` with an empty id gets one)."""

START_TIMEOUT = 10.0
"""Seconds :meth:`FakeMessagesAPI.start` waits for the server to listen."""
STOP_TIMEOUT = 5.0
"""Seconds :meth:`FakeMessagesAPI.stop` waits for the server thread, before and after forcing it."""


UNREADABLE = "n/a"
"""The prompt count a broken gateway sends in place of a number (:attr:`Reply.unreadable`)."""


@dataclass(frozen=True)
class Reply:
    """What the fake model answers to one request."""

    blocks: tuple[Block, ...] = (Text("ok"),)
    output_tokens: int = 50
    usage: tuple[int, int, int] | None = None
    """``(input, cache_creation, cache_read)`` exactly; None: modelled by the prompt cache."""
    prompt: int | None = None
    """With ``usage`` None: report a prompt of this many tokens, the cache model's split with the difference added
    to the cache read (a long conversation already cached)."""
    message_id: str | None = None
    """The ``message.id``; None: ``msg_ctxsim<n>``."""
    error: tuple[int, dict[str, Any]] | None = None
    """Answer with this HTTP status and JSON body instead."""
    delay: float = 0.0
    """Seconds to wait after ``message_start`` before the content (a slow or hanging model, for cancellation)."""
    unreadable: bool = False
    """Send ``input_tokens`` as :data:`UNREADABLE` (a broken gateway's garbage prompt count) in place of the
    number: the CLI passes it on in its assistant messages as it came (its result counts it 0)."""

    @property
    def stop_reason(self) -> str:
        """``tool_use`` when a block calls a tool, else ``end_turn``."""
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


def prompt_too_long(tokens: int, maximum: int) -> tuple[int, dict[str, Any]]:
    """The Messages API's answer to a prompt over the window: status and body."""
    return 400, {"type": "error", "error": {"type": "invalid_request_error",
                                            "message": f"prompt is too long: {tokens} tokens > {maximum} maximum"}}


@dataclass(frozen=True)
class ApiRequest:
    """One ``/v1/messages`` request, as a responder sees it."""

    number: int
    """1-based, over every request this server answered (``count_tokens`` included)."""
    kind: RequestKind
    body: dict[str, Any]
    agent: str | None
    """For a subagent's request: the id of the ``Agent`` tool use the main chain made last; else None."""

    @property
    def request_id(self) -> str:
        """The id the API sends in its ``request-id`` header (the CLI copies it into ``request_id``)."""
        return f"req_ctxsim{self.number:04d}"

    @property
    def prompt_text(self) -> str:
        """The current prompt: the last user text that is not a system reminder."""
        return last_user_text(self.body)

    @property
    def asks_title(self) -> bool:
        """A side request for the session's title (its output is held to a JSON schema with a ``title``)."""
        schema = ((self.body.get("output_config") or {}).get("format") or {}).get("schema") or {}
        return self.kind == "side" and isinstance(schema, dict) and "title" in (schema.get("properties") or {})

    @property
    def after_tool_result(self) -> bool:
        """The request's last message carries a tool result (the model's turn after a tool ran)."""
        messages = self.body.get("messages") or []
        content = messages[-1].get("content") if messages else None
        return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result"
                                                 for b in content)


Responder = Callable[[ApiRequest], Reply]
"""Decides the reply to each ``/v1/messages`` request."""


@dataclass(frozen=True)
class Served:
    """One ``/v1/messages`` request and what the fake API answered: the truth of that call."""

    request: ApiRequest
    reply: Reply
    message_id: str
    usage: tuple[int, int, int]
    """``(input, cache_creation, cache_read)`` as reported (for an error: what the prompt measured)."""
    blocks: tuple[Block, ...]
    """The blocks sent, tool use ids filled in."""

    @property
    def prompt(self) -> int:
        """The reported prompt: input + cache creation + cache read."""
        return sum(self.usage)


Hold = Callable[[Served], Awaitable[None]]
"""Awaited before a ``/v1/messages`` request is answered (the CLI waits meanwhile): :attr:`FakeMessagesAPI.hold`."""


@dataclass
class ScriptedModel:
    """The default responder: queued replies per chain, a summary for compaction, a plain answer otherwise.

    ``main`` serves the main chain's requests in order and ``subagent`` every subagent's; the compaction summary
    request never takes from them. With a queue empty, a request after a tool result is answered ``Done.`` and any
    other ``ok``. Side requests (no tools: titles, probes) are answered ``ok``; a session-title request reports the
    usage the world gives it (:func:`ctxsim.world.title_call`), and its ``ok`` holds no title, so the CLI asks again
    as the world says it does.
    """

    main: deque[Reply] = field(default_factory=deque)
    subagent: deque[Reply] = field(default_factory=deque)
    summary: str = "The user asked for small tasks; all of them are done."
    summary_output_tokens: int = 60
    summaries: deque[Reply] = field(default_factory=deque)
    """Replies to the next compaction summary requests, before the default summary (one without ``<summary>``:
    the CLI refuses it and asks again)."""

    def __call__(self, request: ApiRequest) -> Reply:
        if request.kind == "compact" and self.summaries:
            return self.summaries.popleft()
        if request.kind == "compact":
            text = f"<analysis>Nothing open.</analysis>\n<summary>{self.summary}</summary>"
            return Reply((Text(text),), output_tokens=self.summary_output_tokens)
        queue = self.main if request.kind == "main" else self.subagent if request.kind == "subagent" else None
        if queue:
            return queue.popleft()
        if request.asks_title:  # no title in it (the CLI asks again, once), with the world's usage stated
            return Reply((Text("ok"),), TITLE_OUTPUT_TOKENS, (TITLE_INPUT_TOKENS, 0, 0))
        return Reply((Text("Done." if request.after_tool_result else "ok"),))


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _block_json(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.text, "signature": block.signature}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": dict(block.input)}


def _block_events(index: int, block: Block) -> list[bytes]:
    if isinstance(block, Text):
        start: dict[str, Any] = {"type": "text", "text": ""}
        deltas = [{"type": "text_delta", "text": block.text}]
    elif isinstance(block, Thinking):
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [{"type": "thinking_delta", "thinking": block.text},
                  {"type": "signature_delta", "signature": block.signature}]
    else:
        start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block.input)}]
    out = [_sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start})]
    out += [_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out


class FakeMessagesAPI:
    """The fake Messages API server. Use it as a context manager (or :meth:`start` / :meth:`stop`).

    ``responder`` answers each ``/v1/messages`` request (default: a fresh :class:`ScriptedModel`, also at
    :attr:`model`); ``window`` is the largest prompt it accepts; :attr:`hold`, when set, is awaited with each
    request's :class:`Served` before it is answered (the CLI waiting on the answer meanwhile). The server runs in
    one daemon thread on a socket bound to 127.0.0.1 before it starts, so :attr:`base_url` is known at once;
    :meth:`stop` leaves no thread and no listening socket behind, or raises saying which remains.
    """

    def __init__(self, responder: Responder | None = None, *, window: int = 200_000, host: str = "127.0.0.1",
                 key: str | None = None, port: int = 0, routes: Sequence[Route] = ()) -> None:
        if host != "127.0.0.1":
            raise ValueError(f"ctxsim: the fake Messages API listens on 127.0.0.1 only, not {host!r}")
        self.key = key or f"sk-ant-ctxsim-{secrets.token_hex(16)}"
        """The credential every request must carry (``x-api-key``, or ``Authorization: Bearer``): the one given, else
        one made for this server."""
        self.rejected: list[str] = []
        """``METHOD path`` of every request refused for want of :attr:`key`."""
        self.model = responder if isinstance(responder, ScriptedModel) else ScriptedModel()
        self.responder: Responder = responder or self.model
        self.window = window
        self.cache = PromptCache()
        self.served: list[Served] = []
        """Every ``/v1/messages`` request answered, in order."""
        self.count_tokens_calls = 0
        self.unhandled: list[str] = []
        """``METHOD path`` of every request to a path this API does not serve."""
        self.requests = 0
        self.hold: Hold | None = None
        """Awaited (in the server's thread) with each ``/v1/messages`` request, once served, before the answer is
        sent: the CLI is held at that request until it returns (``RequestSnapshots``
        reads its transcript there). It must not raise."""
        self._last_agent: str | None = None
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self.port = port
        """The port on 127.0.0.1 (0 until :meth:`start`: a free one)."""
        self.app = Starlette(exception_handlers={Refused: self._refused_answer}, routes=[
            *routes,  # the caller's own (``ctxsim serve``'s truth), before the catch-all
            Route("/v1/messages", self._messages, methods=["POST"]),
            Route("/v1/messages/count_tokens", self._count_tokens, methods=["POST"]),
            Route("/{path:path}", self._other, methods=["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]),
        ])

    # lifecycle -------------------------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>``: the CLI's ``ANTHROPIC_BASE_URL``."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def thread(self) -> threading.Thread | None:
        """The server's thread while it runs."""
        return self._thread

    def start(self) -> FakeMessagesAPI:
        """Bind a free port of 127.0.0.1 and serve from a thread; waits (bounded) until it listens."""
        if self._thread is not None:
            raise RuntimeError("ctxsim: FakeMessagesAPI.start() called twice")
        sock = Listener(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port left in TIME_WAIT is reused at once
        try:
            sock.bind(("127.0.0.1", self.port))
        except OSError as exc:
            sock.close()
            raise RuntimeError(f"ctxsim: the fake Messages API cannot listen on 127.0.0.1:{self.port}: "
                               f"{exc.strerror or exc}") from None
        self._socket, self.port = sock, sock.getsockname()[1]
        asyncio_log = logging.getLogger("asyncio")
        if not_out_of_descriptors not in asyncio_log.filters:
            asyncio_log.addFilter(not_out_of_descriptors)
        gate = Gate(self.app, self.authorized, self._reject)
        config = uvicorn.Config(gate, log_level="warning", lifespan="off", access_log=False,
                                timeout_graceful_shutdown=1, limit_concurrency=MAX_CONNECTIONS + 1,
                                http=BoundedConnection, backlog=ACCEPT_BATCH,
                                timeout_keep_alive=int(IDLE_TIMEOUT), h11_max_incomplete_event_size=64 * 1024)
        server = self._server = uvicorn.Server(config)
        setattr(server, "install_signal_handlers", lambda: None)  # noqa: B010  # Ctrl-C belongs to the host, not uvicorn
        self._thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                                        name=f"ctxsim-fake-api-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"ctxsim: the fake Messages API did not start listening on {self.base_url} "
                                   f"within {START_TIMEOUT:g} s")
            time.sleep(0.005)
        return self

    def stop(self) -> None:
        """Stop serving and join the thread (bounded: asks, then forces); close the socket. Idempotent."""
        server, thread = self._server, self._thread
        if server is not None:
            server.should_exit = True
        if thread is not None:
            thread.join(STOP_TIMEOUT)
            if thread.is_alive() and server is not None:
                server.force_exit = True
                thread.join(STOP_TIMEOUT)
        if self._socket is not None:
            self._socket.close()
            self._socket = None
        self._thread = self._server = None
        if thread is not None and thread.is_alive():
            raise RuntimeError(f"ctxsim: the fake Messages API's thread {thread.name} did not stop within "
                               f"{2 * STOP_TIMEOUT:g} s")

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # routes ----------------------------------------------------------------------------------------------------

    def _reject(self, what: str) -> None:
        with self._lock:
            self.rejected.append(what)

    def authorized(self, headers: dict[bytes, bytes]) -> bool:
        """Whether raw request ``headers`` carry exactly this server's credential (``x-api-key``, or a bearer
        token), compared in constant time."""
        given = headers.get(b"x-api-key")
        if given is None:
            authorization = headers.get(b"authorization", b"")
            given = authorization[7:] if authorization[:7].lower() == b"bearer " else b""
        return secrets.compare_digest(given, self.key.encode())

    @staticmethod
    async def _refused_answer(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, Refused)
        return exc.response

    async def _other(self, request: Request) -> Response:
        await request.body()
        with self._lock:
            self.requests += 1
            self.unhandled.append(f"{request.method} {request.url.path}")
        return JSONResponse({"type": "error", "error": {"type": "not_found_error", "message": "ctxsim: not served"}},
                            status_code=404)

    @malformed_is_400
    async def _count_tokens(self, request: Request) -> Response:
        body = json_object(await request.body())
        with self._lock:
            self.requests += 1
            self.count_tokens_calls += 1
        counted = {k: body[k] for k in ("system", "tools", "messages") if k in body}
        return JSONResponse({"input_tokens": estimate_tokens(counted)})

    @malformed_is_400
    async def _messages(self, request: Request) -> Response:
        body = json_object(await request.body())
        with self._lock:
            self.requests += 1
            kind = classify(body)
            api_request = ApiRequest(self.requests, kind, body, self._last_agent if kind == "subagent" else None)
            reply = self.responder(api_request)
            served = self._serve(api_request, reply)
            self.served.append(served)
        if self.hold is not None:
            await self.hold(served)
        headers = {"request-id": api_request.request_id}
        if served.reply.error is not None:
            status, error = served.reply.error
            return JSONResponse(error, status_code=status, headers=headers)
        if not body.get("stream"):
            return JSONResponse({
                "id": served.message_id, "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [_block_json(b) for b in served.blocks], "stop_reason": reply.stop_reason,
                "stop_sequence": None, "usage": {**self._usage(served), "output_tokens": reply.output_tokens},
            }, headers=headers)
        return StreamingResponse(self._stream(served, str(body.get("model"))), headers=headers,
                                 media_type="text/event-stream")

    def _serve(self, request: ApiRequest, reply: Reply) -> Served:
        """Fill in ids and usage; turn a prompt over the window into the API's error. Called under the lock."""
        measured = self.cache.usage(request.body)
        if reply.usage is not None:
            usage = reply.usage
        elif reply.prompt is not None:
            usage = (measured[0], measured[1], measured[2] + max(0, reply.prompt - sum(measured)))
        else:
            usage = measured
        if reply.error is None and sum(usage) > self.window:
            reply = dataclasses.replace(reply, error=prompt_too_long(sum(usage), self.window))
        message_id = reply.message_id or f"msg_ctxsim{request.number:04d}"
        blocks = tuple(ToolUse(b.id or f"toolu_ctxsim{request.number:04d}_{i}", b.name, b.input)
                       if isinstance(b, ToolUse) else b for i, b in enumerate(reply.blocks))
        if request.kind == "main":
            agent = next((b.id for b in blocks if isinstance(b, ToolUse) and b.name in ("Agent", "Task")), None)
            self._last_agent = agent or self._last_agent
        return Served(request, reply, message_id, usage, blocks)

    @staticmethod
    def _usage(served: Served) -> dict[str, int | str]:
        usage = served.usage
        return {"input_tokens": UNREADABLE if served.reply.unreadable else usage[0],
                "cache_creation_input_tokens": usage[1], "cache_read_input_tokens": usage[2]}

    async def _stream(self, served: Served, model: str) -> AsyncIterator[bytes]:
        reply = served.reply
        yield _sse("message_start", {"type": "message_start", "message": {
            "id": served.message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {**self._usage(served), "output_tokens": 1}}})
        yield _sse("ping", {"type": "ping"})
        if reply.delay:
            await asyncio.sleep(reply.delay)
        for index, block in enumerate(served.blocks):
            for event in _block_events(index, block):
                yield event
            await asyncio.sleep(0)
        # As the real API: message_delta's usage is cumulative, the input and cache fields included.
        yield _sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                                     "usage": {**self._usage(served), "output_tokens": reply.output_tokens}})
        yield _sse("message_stop", {"type": "message_stop"})

    # reading ---------------------------------------------------------------------------------------------------

    def served_of(self, *kinds: RequestKind) -> list[Served]:
        """The requests served of these kinds (all when none given), in order."""
        with self._lock:
            return [s for s in self.served if not kinds or s.request.kind in kinds]

