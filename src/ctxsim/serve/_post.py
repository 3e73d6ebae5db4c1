"""One JSON ``POST`` to ``ctxsim serve`` on 127.0.0.1, with the socket module alone: what the hook and the CLI wrapper
serve hands the CLI use to ask it, so that each of them starts as fast as a Python can (no ``urllib``, whose imports
cost more than the request; serve runs them with ``python -S``, straight from their files).
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

LIMIT = 256 * 1024 * 1024
"""Bytes of an answer read at most."""


class PostError(OSError):
    """Serve did not answer with JSON: unreachable, a status other than 200 (the message holds its body's start), or a
    body that is not JSON."""


def post(url: str, key: str, data: Any, timeout: float) -> Any:
    """``data`` sent as JSON to ``url`` (``http://127.0.0.1:PORT/PATH``) with the credential ``key``; the JSON answered.
    Raises :class:`PostError` (an ``OSError``) when there is none, within ``timeout`` seconds per socket operation."""
    parts = urlsplit(url)
    body = json.dumps(data).encode()
    head = (f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\nContent-Type: application/json\r\n"
            f"x-api-key: {key}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    chunks: list[bytes] = []
    with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=timeout) as sock:
        sock.sendall(head + body)
        size = 0
        while chunk := sock.recv(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > LIMIT:
                raise PostError(f"an answer over {LIMIT} bytes")
    answer = b"".join(chunks)
    headers, _, content = answer.partition(b"\r\n\r\n")
    status = headers.split(b"\r\n", 1)[0].split()
    if len(status) < 2 or status[1] != b"200":
        raise PostError(f"HTTP {b' '.join(status[1:]).decode(errors='replace')}: "
                        f"{content[:200].decode(errors='replace')}")
    if b"transfer-encoding: chunked" in headers.lower():
        raise PostError("a chunked answer")
    try:
        return json.loads(content)
    except ValueError:
        raise PostError(f"not JSON: {content[:80]!r}") from None
