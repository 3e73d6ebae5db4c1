"""The fake Messages API's HTTP layer: what stands between any client and the API's routes.

:class:`Gate` checks the credential first, on every route (before a byte of the body is read), and bounds the
body (:data:`MAX_BODY`); :func:`json_object` and :func:`malformed_is_400` answer a malformed body with a 4xx naming
why, never a 5xx; :class:`BoundedConnection` and :class:`Listener` bound connections (:data:`MAX_CONNECTIONS`,
:data:`IDLE_TIMEOUT`, :data:`ACCEPT_BATCH`, :data:`QUEUE`) so a flood of idle connections neither exhausts the
server's descriptors nor keeps a client out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import Any, cast

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["ACCEPT_BATCH", "IDLE_TIMEOUT", "MAX_BODY", "MAX_CONNECTIONS", "QUEUE", "BoundedConnection", "Gate",
           "Listener", "Refused", "json_object", "malformed_is_400", "not_out_of_descriptors"]


MAX_BODY = 32 * 1024 * 1024
"""Bytes a request's body may hold (a prompt over the largest window is far smaller); past it: 413."""


MAX_CONNECTIONS = 64
"""Connections served at once; past it a connection is answered 503 and closed."""


IDLE_TIMEOUT = 5.0
"""Seconds a kept-alive connection may wait for its next request."""


def _error(status: int, kind: str, message: str) -> Response:
    """The API's error answer: ``status``, one ``ctxsim:`` line as its message."""
    return JSONResponse({"type": "error", "error": {"type": kind, "message": f"ctxsim: {message}"}},
                        status_code=status)


class Refused(Exception):
    """A request refused before its route ran (its body too large, or not a JSON object): the answer to send."""

    def __init__(self, response: Response) -> None:
        super().__init__(response)
        self.response = response


def json_object(raw: bytes) -> dict[str, Any]:
    """``raw`` as the JSON object a request's body must be; raises :class:`_Refused` (a 400 naming why)."""
    try:
        body = json.loads(raw.decode("utf-8")) if raw else {}
    except UnicodeDecodeError as exc:
        raise Refused(_error(400, "invalid_request_error", f"the body is not UTF-8 (byte {exc.start})")) from None
    except RecursionError:
        raise Refused(_error(400, "invalid_request_error", "the body's JSON is nested too deeply")) from None
    except ValueError as exc:
        raise Refused(_error(400, "invalid_request_error", f"the body is not JSON ({str(exc)[:120]})")) from None
    if not isinstance(body, dict):
        raise Refused(_error(400, "invalid_request_error", f"the body is JSON {type(body).__name__}, not an "
                                                            f"object"))
    for key, kinds in _FIELDS.items():
        if key in body and not isinstance(body[key], kinds):
            raise Refused(_error(400, "invalid_request_error", f"key {key!r}: a {type(body[key]).__name__}, not "
                                                                f"{' or '.join(k.__name__ for k in kinds)}"))
    return body


_FIELDS: dict[str, tuple[type, ...]] = {"messages": (list,), "system": (str, list), "tools": (list,),
                                        "model": (str,), "stream": (bool,)}
"""The top-level fields a request's body is read for, and the JSON types each may be."""


Handler = Callable[[Any, Request], Awaitable[Response]]


def malformed_is_400(route: Handler) -> Handler:
    """``route``, answering a body whose fields are not what the API takes (a list where an object goes) with a
    400 naming the error, never a 500."""

    async def answered(self: Any, request: Request) -> Response:
        try:
            return await route(self, request)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError) as exc:
            return _error(400, "invalid_request_error", f"the request's fields cannot be read "
                                                        f"({type(exc).__name__}: {str(exc)[:120]})")

    return answered


def not_out_of_descriptors(record: logging.LogRecord) -> bool:
    """A filter of asyncio's log: a listening socket out of descriptors is not logged (asyncio pauses accepting for
    a second and resumes by itself; a flood would otherwise print a traceback per connection, and a full stderr
    pipe would stop the server)."""
    return not record.getMessage().startswith("socket.accept() out of system resource")


ACCEPT_BATCH = 64
"""Connections accepted in one go (asyncio accepts as many as the backlog it is given): few, so a flood never runs
the server out of descriptors while it accepts."""


QUEUE = 4096
"""Connections the kernel holds for the server to accept (a flood waits there, costing no descriptor)."""


class Listener(socket.socket):
    """The listening socket: its queue is :data:`QUEUE` whatever backlog asyncio asks for (the backlog it is given
    is also how many connections it accepts in one go: :data:`ACCEPT_BATCH`)."""

    def listen(self, backlog: int = QUEUE) -> None:
        super().listen(QUEUE)


class BoundedConnection(H11Protocol):
    """uvicorn's HTTP/1.1 connection, bounded: past :data:`MAX_CONNECTIONS` open at once a new one is closed as
    soon as it is accepted (its descriptor freed at once, so a flood of idle connections cannot exhaust the
    server's), and a connection that sends nothing for :data:`IDLE_TIMEOUT` seconds is closed, as an idle
    kept-alive one is."""

    refused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        stream = cast(asyncio.Transport, transport)  # an accepted connection's: a stream transport, as uvicorn says
        if len(self.connections) >= MAX_CONNECTIONS:
            self.refused = True
            stream.abort()
            return
        super().connection_made(stream)
        self.timeout_keep_alive_task = self.loop.call_later(IDLE_TIMEOUT, self.timeout_keep_alive_handler)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.refused:
            super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self.refused:
            super().data_received(data)


class Gate:
    """The ASGI layer in front of every route, the caller's included: the credential checked first (before a byte
    of the body is read), the body's size bounded, and a refusal answered as the API answers one."""

    def __init__(self, app: Any, authorized: Callable[[dict[bytes, bytes]], bool],
                 rejected: Callable[[str], None]) -> None:
        self.app = app
        self.authorized = authorized
        """Whether a request's raw headers carry the credential."""
        self.rejected = rejected
        """Told ``METHOD path`` of each request refused for want of it."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        if not self.authorized(headers):
            self.rejected(f"{scope.get('method')} {scope.get('path')}")
            await _error(401, "authentication_error", "invalid x-api-key: this fake API answers the client it was "
                                                      "started for, with the key it was given")(scope, receive, send)
            return
        length = headers.get(b"content-length", b"0")
        if not length.isdigit() or int(length) > MAX_BODY:
            await _error(413, "request_too_large", f"the body is over {MAX_BODY} bytes")(scope, receive, send)
            return
        read = [0]

        async def bounded() -> Any:
            message = await receive()
            read[0] += len(message.get("body", b""))
            if read[0] > MAX_BODY:
                raise Refused(_error(413, "request_too_large", f"the body is over {MAX_BODY} bytes"))
            return message

        try:
            await self.app(scope, bounded, send)
        except Refused as refused:
            await refused.response(scope, receive, send)
