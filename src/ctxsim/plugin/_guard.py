"""``--ctx-block-real``: fail any test that would reach a real model or the network.

Like pydantic-ai's ``ALLOW_MODEL_REQUESTS = False`` and pytest-socket, opt-in (the flag, or ``ctx_block_real =
true`` in the ini). While a test runs (setup, call and teardown):

- starting Claude Code (a program named ``claude``, or the Node entry point ``cli.js``; the SDK's transport starts
  the bundled one through :class:`subprocess.Popen` too, under asyncio and trio alike) whose environment does not
  point ``ANTHROPIC_BASE_URL`` at 127.0.0.1 (ctxsim's fake API, :mod:`ctxsim.live`) is refused before the process
  starts;
- a connection (``socket.connect``, ``connect_ex``) to anything but 127.0.0.1, ``::1`` or a Unix socket, and a
  name lookup of anything but ``localhost`` (which would itself reach a resolver), are refused.

Each refusal raises :class:`RealCallBlocked` (a ``ctxsim:`` line naming the test and what tried) where it
happened, and fails the test even when the code under test caught it.
"""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "Guard", "RealCallBlocked", "points_locally"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "::1", "localhost", "ip6-localhost"})
"""Where a test may connect, and the names it may look up, under the guard."""


class RealCallBlocked(ConnectionRefusedError):
    """``--ctx-block-real`` refused a real call; the message names the test and what tried."""


class Guard:
    """The patches of one test: :meth:`install` before it runs, :meth:`remove` after; :attr:`refused` lists every
    refusal's message, so the report can fail the test even when its code swallowed the exception."""

    def __init__(self, test: str) -> None:
        self.test = test
        self.refused: list[str] = []
        self._undo: list[Callable[[], None]] = []

    def install(self) -> None:
        self._patch(subprocess.Popen, "__init__", self._popen)
        self._patch(socket.socket, "connect", self._connect)
        self._patch(socket.socket, "connect_ex", self._connect)
        self._patch(socket, "getaddrinfo", self._getaddrinfo)

    def remove(self) -> None:
        while self._undo:
            self._undo.pop()()

    def _patch(self, owner: Any, name: str, wrapper: Callable[..., Callable[..., Any]]) -> None:
        original = getattr(owner, name)
        setattr(owner, name, wrapper(original))
        self._undo.append(lambda: setattr(owner, name, original))

    def _refuse(self, what: str) -> RealCallBlocked:
        message = f"ctxsim: --ctx-block-real: {self.test} {what}"
        self.refused.append(message)
        return RealCallBlocked(message)

    def _popen(self, original: Callable[..., None]) -> Callable[..., None]:
        guard = self

        def __init__(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            program = _claude_program(args)
            if program is not None:
                env = kwargs.get("env")
                env = env if env is not None else os.environ
                if not points_locally(env):
                    url = env.get("ANTHROPIC_BASE_URL", "")
                    shown = f"ANTHROPIC_BASE_URL={url}" if url else "ANTHROPIC_BASE_URL unset"
                    raise guard._refuse(f"started Claude Code ({program}) with {shown}: it would call a real model; "
                                        f"point it at ctxsim's fake API on 127.0.0.1 (ctxsim.live) or use the "
                                        f"fake_claude fixture")
            original(popen, args, *rest, **kwargs)

        return __init__

    def _connect(self, original: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        def connect(sock: socket.socket, address: Any, *rest: Any) -> Any:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
                host = str(address[0])
                if host not in LOCAL_HOSTS:
                    raise guard._refuse(f"opened a connection to {_where(host, address[1])}: only 127.0.0.1 is "
                                        f"allowed")
            return original(sock, address, *rest)

        return connect

    def _getaddrinfo(self, original: Callable[..., Any]) -> Callable[..., Any]:
        guard = self

        def getaddrinfo(host: Any, port: Any, *rest: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else host
            if name is not None and str(name) not in LOCAL_HOSTS:
                raise guard._refuse(f"looked up {_where(str(name), port)} (a connection beyond 127.0.0.1): only "
                                    f"127.0.0.1 is allowed")
            return original(host, port, *rest, **kwargs)

        return getaddrinfo


def _where(host: str, port: Any) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _claude_program(args: Any) -> str | None:
    """The program of ``args`` (a ``Popen`` argument) when it is Claude Code, else None."""
    if isinstance(args, (str, bytes, os.PathLike)):
        argv: Sequence[Any] = [args]
    elif isinstance(args, Sequence):
        argv = args
    else:
        return None
    words = [os.fsdecode(a) for a in argv[:2] if isinstance(a, (str, bytes, os.PathLike))]
    if not words:
        return None
    program = PurePath(words[0].split()[0] if isinstance(args, (str, bytes)) else words[0])
    if program.name in ("claude", "claude.exe"):
        return str(program)
    if program.name in ("node", "node.exe") and len(words) > 1 and PurePath(words[1]).name == "cli.js":
        return f"{program} {words[1]}"
    return None


def points_locally(env: Mapping[str, str]) -> bool:
    """Whether ``env`` points Claude Code at an API on this machine."""
    return urlsplit(env.get("ANTHROPIC_BASE_URL", "")).hostname in LOCAL_HOSTS
