"""``--ctx-block-real``: fail any test that would reach a real model or the network.

Like pydantic-ai's ``ALLOW_MODEL_REQUESTS = False`` and pytest-socket, opt-in (the flag, or ``ctx_block_real =
true`` in the ini). While a test runs (setup, call and teardown), what covers what is in
``docs/how-to/block-real-calls.md``; in short:

- in this process, network use beyond this machine is refused at the interpreter's audit events (so code calling
  ``_socket`` directly is covered too): a connection (TCP or UDP) or a datagram (``sendto``, ``sendmsg``) to
  anything but a loopback address or a Unix socket, and every name lookup (``getaddrinfo``, ``gethostbyname``,
  ``gethostbyaddr``, ``getnameinfo``) of anything but ``localhost`` or a loopback address, which would itself
  send a packet to a resolver;
- every process start (``subprocess`` and what uses it: asyncio, trio, the SDK's transport; ``os.system``,
  ``os.posix_spawn``, ``os.exec*``, ``os.spawn*``, ``pty.spawn``) is looked at: Claude Code (a program named
  ``claude``, ``claude-code`` or ``cli.js``, or the ``@anthropic-ai/claude-code`` package) started directly with an
  environment that does not keep it on this machine (:func:`points_locally`), or started through a shell line or
  another program (``sh -c "claude ..."``, ``env X=1 claude``, ``npx``), whose environment ctxsim cannot see, is
  refused before it starts; so is an ``os.posix_spawn``/``os.exec*``/``os.system`` whose environment routes
  requests beyond this machine;
- every child gets an environment that cannot reach a model: ``ANTHROPIC_BASE_URL`` (unless it points at this
  machine), the Bedrock, Vertex and Foundry base URLs and ``HTTP(S)_PROXY``/``ALL_PROXY`` point at a local
  *refuser* (a socket of this process that answers every request 403 and fails the test naming what came), the
  Bedrock, Vertex and Foundry switches are removed, and ``NO_PROXY`` keeps 127.0.0.1 direct.

Claude Code's settings layers (``--settings``, the user's, the project's, the managed ones) are applied to its
environment before it is judged, URLs are read as its WHATWG parser reads
them, and every child inherits the guard: a Python start-up hook and a Node preload refuse its
own connections and report to the test. From the first guarded test on, what outlives its test is refused by the
session's guard, and after the session by :func:`refuse_until_exit`.

Not covered: a child that does not inherit the guard (an emptied environment, an isolated Python, a program
neither Python nor Node), and sockets a C extension opens without Python's socket module. For those, run the tests
in a network namespace without a route out as well (``unshare -rn pytest ...`` on Linux).

Each refusal raises :class:`RealCallBlocked` (a ``ctxsim:`` line naming the test and what tried) where it
happened, and fails the test even when the code under test caught it.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from ._claude_settings import effective_env
from ._claude_start import (
    LOCAL_HOSTS,
    ROUTES,
    SWITCHES,
    argv_of,
    claude_started,
    local,
    local_url,
    points_locally,
    reaching,
)
from ._inherit import inherited, parse_setting

__all__ = ["LOCAL_HOSTS", "Guard", "RealCallBlocked", "install_in_child", "points_locally", "refuse_until_exit"]


_NO_PROXY = "127.0.0.1,localhost,::1"
_PRESENT = {"opened": "open", "looked": "look", "sent": "send", "started": "start"}
"""A refusal's verb as a child's refusal says it (``had a child process ... open a connection``)."""
class RealCallBlocked(ConnectionRefusedError):
    """``--ctx-block-real`` refused a real call; the message names the test and what tried."""


# --- the local refuser -----------------------------------------------------------------------------------------


_REFUSERS: set[str] = set()
"""The URLs of this process's refusers (a session's and a test's): none is the user's own base URL."""


class _Refuser:
    """A socket on 127.0.0.1 that answers every connection ``403`` and reports its first line: where a child's
    base URLs and proxies point while a test runs. A forked child that is refused reports through it too."""

    REPORT = b"CTXSIM-REFUSED "

    def __init__(self, report: Callable[..., None]) -> None:
        self._report = report
        """Called with what came (``raw=True``: a refusal's own message, from a forked child)."""
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(16)
        self._server.setblocking(False)
        self.address = self._server.getsockname()
        self.url = f"http://127.0.0.1:{self.address[1]}"
        _REFUSERS.add(self.url)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="ctxsim-block-real-refuser", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._server, selectors.EVENT_READ)
            while True:
                ready = selector.select(0.05)
                if not ready and self._stop.is_set():
                    return  # stopped, and nothing is waiting
                if ready:
                    self._answer()

    def _answer(self) -> None:
        try:
            conn, _ = self._server.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(1.0)
            first = b""
            with contextlib.suppress(OSError):
                first = conn.recv(4096)
            if first.startswith(self.REPORT):
                self._report(first[len(self.REPORT):].decode(errors="replace").strip(), raw=True)
                return
            line = first.split(b"\r\n", 1)[0][:200].decode("latin-1", errors="replace")
            self._report(f"had a child process send {line or 'a connection'!r} to ctxsim's refuser (where its base "
                         f"URLs and proxies point): it would have reached a model or the network")
            body = b"ctxsim: --ctx-block-real refused this request\n"
            with contextlib.suppress(OSError):
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def close(self) -> None:
        _REFUSERS.discard(self.url)
        self._stop.set()
        self._thread.join(2.0)
        self._server.close()


# --- the guard --------------------------------------------------------------------------------------------------

_active: Guard | None = None
_hooked = False
_hook_lock = threading.Lock()


def _audit(event: str, args: tuple[Any, ...]) -> None:
    """The process-wide audit hook: installed once, inert while no guard is active."""
    guard = _active
    if guard is not None:
        handler = _HANDLERS.get(event)
        if handler is not None:
            handler(guard, args)


class Guard:
    """The guard of one test: :meth:`install` before it runs, :meth:`remove` after; :attr:`refused` lists every
    refusal's message, so the report can fail the test even when its code swallowed the exception.

    In a guarded test's child process (its Python start-up hook, :func:`install_in_child`), the guard has no
    refuser of its own: ``refuser`` is the test process's, where its refusals are reported."""

    def __init__(self, test: str, *, refuser: tuple[str, int] | None = None) -> None:
        self.test = test
        self.refused: list[str] = []
        self._undo: list[Callable[[], None]] = []
        self._pid = os.getpid()
        self._refuser: _Refuser | None = None
        self._report_to = refuser
        """The refuser refusals are reported to (a child's guard: its test's)."""
        self._base_url: str | None = None
        """``ANTHROPIC_BASE_URL`` as it was before the guard (for messages)."""
        self._previous: Guard | None = None

    # installing --------------------------------------------------------------------------------------------

    def install(self) -> None:
        global _active, _hooked
        with _hook_lock:
            if not _hooked:
                sys.addaudithook(_audit)  # cannot be removed: inert without a guard
                _hooked = True
        if self._report_to is None:
            self._refuser = _Refuser(self._note)
            self._report_to = self._refuser.address
            self._set_environment()
        self._patch(subprocess.Popen, "__init__", self._popen)
        self._previous, _active = _active, self

    def remove(self) -> None:
        """Undo :meth:`install`; the guard that was active before (the session's, between tests) is again."""
        global _active
        if _active is self:
            _active = self._previous
        while self._undo:
            self._undo.pop()()
        if self._refuser is not None:
            self._refuser.close()
            self._refuser = None

    def _patch(self, owner: Any, name: str, wrapper: Callable[..., Callable[..., Any]]) -> None:
        original = getattr(owner, name)
        setattr(owner, name, wrapper(original))
        self._undo.append(lambda: setattr(owner, name, original))

    @property
    def refuser_url(self) -> str:
        """Where a child's base URLs and proxies point."""
        host, port = self._report_to or ("127.0.0.1", 9)
        return f"http://{host}:{port}"

    def corrected(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` made unable to reach a model (see the module's docstring), and carrying the guard to the
        child's own Python and Node children (:func:`child_hooks`)."""
        url = self.refuser_url
        out = {k: v for k, v in env.items() if k not in SWITCHES}
        out.update(dict.fromkeys(ROUTES, url))
        out["NO_PROXY"] = out["no_proxy"] = _NO_PROXY
        base = out.get("ANTHROPIC_BASE_URL", "")
        if not local_url(base, empty=False) or base in _REFUSERS:
            out["ANTHROPIC_BASE_URL"] = url
        if self._report_to is not None:
            out.update(inherited(out, self.test, self._report_to))
        return out

    def _set_environment(self) -> None:
        keys = (*SWITCHES, *ROUTES, "NO_PROXY", "no_proxy", "ANTHROPIC_BASE_URL")
        saved = {k: os.environ.get(k) for k in keys}
        self._base_url = saved["ANTHROPIC_BASE_URL"]
        if self._base_url in _REFUSERS and _active is not None:  # the session's guard stands in for the user's
            self._base_url = _active._base_url
        fixed = self.corrected(os.environ)

        def restore() -> None:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

        for key in keys:
            if key in fixed:
                os.environ[key] = fixed[key]
            else:
                os.environ.pop(key, None)
        self._undo.append(restore)

    # refusing ----------------------------------------------------------------------------------------------

    def _note(self, what: str, *, raw: bool = False) -> None:
        self.refused.append(what if raw else f"ctxsim: --ctx-block-real: {self.test} {what}")

    def _refuse(self, what: str) -> RealCallBlocked:
        forked = os.getpid() != self._pid
        if self._refuser is None and self._report_to is not None:  # a child's guard
            verb, _, rest = what.partition(" ")
            what = (f"had a child process ({PurePath(sys.executable).name}, pid {os.getpid()}) "
                    f"{_PRESENT.get(verb, verb)} {rest}")
        message = f"ctxsim: --ctx-block-real: {self.test} {what}"
        if forked or self._refuser is None:  # report through the test's refuser
            try:
                with socket.create_connection(self._report_to or ("", 0), timeout=2) as s:
                    s.sendall(_Refuser.REPORT + message.encode())
                    s.shutdown(socket.SHUT_WR)
                    s.recv(1)  # the refuser closes once it noted the refusal: noted before this process ends
            except OSError:  # no refuser to tell: say it where the child's output goes
                with contextlib.suppress(OSError):
                    os.write(2, (message + "\n").encode())
        if forked:  # a forked child about to exec: end here
            os._exit(126)
        self.refused.append(message)
        return RealCallBlocked(message)

    def _popen(self, original: Callable[..., None]) -> Callable[..., None]:
        guard = self

        def __init__(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            if _active is not guard:  # another guard's wrapper (the test's, inside the session's) decides
                original(popen, args, *rest, **kwargs)
                return
            env = kwargs.get("env")
            env = env if env is not None else os.environ
            guard.check_start(argv_of(args, shell=bool(kwargs.get("shell"))), env, kwargs.get("cwd"))
            kwargs["env"] = guard.corrected(env)  # inherited too: the test may have changed os.environ
            original(popen, args, *rest, **kwargs)

        return __init__

    def check_start(self, argv: list[str], env: Mapping[str, str], cwd: Any = None) -> None:
        """Refuse starting ``argv`` with ``env`` (in ``cwd``) when it is Claude Code not kept on this machine, its
        settings included, or Claude Code started through a shell line, a script or another program."""
        found = claude_started(argv)
        if found is None:
            return
        program, direct = found
        if not direct:
            raise self._refuse(f"started Claude Code through another program ({' '.join(argv)[:200]!r}): ctxsim "
                               f"cannot see the environment it gets; start {program} directly, pointed at ctxsim's "
                               f"fake API on 127.0.0.1 (ctxsim.live), or use the fake_claude fixture")
        refusers = {self.refuser_url, *_REFUSERS}
        given = {k: v for k, v in env.items() if k not in ROUTES or v not in refusers}
        if given.get("ANTHROPIC_BASE_URL") in refusers:
            given["ANTHROPIC_BASE_URL"] = self._base_url or ""  # the refuser stands in for what the user had
        effective, origin = effective_env(argv, given, os.fsdecode(cwd) if cwd is not None else None)
        url = effective.get("ANTHROPIC_BASE_URL", "")
        beyond = reaching(effective)
        if local_url(url, empty=False) and not beyond:
            return
        named = beyond if beyond and local_url(url, empty=False) else ["ANTHROPIC_BASE_URL"]
        layers = sorted({origin[k] for k in named if k in origin})
        shown = (f"{', '.join(beyond)} set" if beyond and local_url(url, empty=False) else
                 f"ANTHROPIC_BASE_URL={url[:200]}" if url else "ANTHROPIC_BASE_URL unset")
        if layers:
            shown += f" by its settings ({', '.join(layers)})"
        raise self._refuse(f"started Claude Code ({program}) with {shown}: it would call a real model; point it at "
                           f"ctxsim's fake API on 127.0.0.1 (ctxsim.live) or use the fake_claude fixture")

    def check_environment(self, env: Mapping[Any, Any], how: str) -> None:
        """Refuse a start through ``how`` whose environment ``env`` routes requests beyond this machine."""
        decoded = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
        beyond = reaching(decoded)
        if beyond:
            raise self._refuse(f"started a process ({how}) with {', '.join(beyond)} set beyond this machine: it "
                               f"could reach a model; keep the environment local")


# --- audit events ----------------------------------------------------------------------------------------------


def _beyond(args: tuple[Any, ...]) -> str | None:
    """Where a socket event's ``(socket, address)`` goes when that is an internet address beyond this machine."""
    sock, address = args[0], args[1]
    inet = getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple)
    return _where(address[0], address[1]) if inet and not local(address[0]) else None


def _on_connect(guard: Guard, args: tuple[Any, ...]) -> None:
    where = _beyond(args)
    if where is not None:
        raise guard._refuse(f"opened a connection to {where}: only 127.0.0.1 is allowed")


def _on_send(guard: Guard, args: tuple[Any, ...]) -> None:
    where = _beyond(args)
    if where is not None:
        raise guard._refuse(f"sent a datagram to {where}: only 127.0.0.1 is allowed")


def _on_lookup(guard: Guard, args: tuple[Any, ...]) -> None:
    host, port = args[0], args[1] if len(args) > 1 else None
    if isinstance(host, tuple):  # getnameinfo's address
        host, port = (host[0], host[1]) if len(host) > 1 else (None, None)
    if not local(host):
        shown = _where(host, port) if port is not None else str(host)
        raise guard._refuse(f"looked up {shown} (a connection beyond 127.0.0.1): only 127.0.0.1 is allowed")


def _on_popen(guard: Guard, args: tuple[Any, ...]) -> None:
    env = args[3]  # corrected by the patched Popen; a start around it is checked here
    if isinstance(env, Mapping):
        guard.check_environment(env, "subprocess")


def _on_system(guard: Guard, args: tuple[Any, ...]) -> None:
    guard.check_start(["/bin/sh", "-c", os.fsdecode(args[0])], os.environ)
    guard.check_environment(os.environ, "os.system")


def _on_spawn(how: str) -> Callable[[Guard, tuple[Any, ...]], None]:
    def check(guard: Guard, args: tuple[Any, ...]) -> None:
        path, argv = args[0], args[1]
        env = args[2] if len(args) > 2 and isinstance(args[2], Mapping) else os.environ
        words = [os.fsdecode(a) for a in (argv or ())] or [os.fsdecode(path)]
        words[0] = os.fsdecode(path)
        guard.check_start(words, {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()})
        guard.check_environment(env, how)

    return check


_HANDLERS: dict[str, Callable[[Guard, tuple[Any, ...]], None]] = {
    "socket.connect": _on_connect,
    "socket.sendto": _on_send,
    "socket.sendmsg": _on_send,
    "socket.getaddrinfo": _on_lookup,
    "socket.gethostbyname": _on_lookup,
    "socket.gethostbyaddr": _on_lookup,
    "socket.getnameinfo": _on_lookup,
    "subprocess.Popen": _on_popen,
    "os.system": _on_system,
    "os.posix_spawn": _on_spawn("os.posix_spawn"),
    "os.exec": _on_spawn("os.exec"),
    "os.spawn": _on_spawn("os.spawn"),
}


def _where(host: Any, port: Any) -> str:
    name = host.decode(errors="replace") if isinstance(host, bytes) else str(host)
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


# --- children and the time after a test -------------------------------------------------------------------------


def install_in_child(setting: str) -> None:
    """Guard this child process of a guarded test, as its Python start-up hook asks with ``setting`` (the
    ``CTXSIM_BLOCK_REAL`` variable: the test and its refuser): its connections, lookups and process starts are
    judged as the test's own are, each refusal raised here and reported to the test."""
    parsed = parse_setting(setting)
    if parsed is not None and _active is None:
        test, refuser = parsed
        Guard(test, refuser=refuser).install()


def refuse_until_exit(test: str) -> None:
    """From now until this interpreter ends, refuse what a guard refuses, naming ``test`` (what outlived the
    session: an ``atexit`` handler, a daemon thread)."""
    global _active, _hooked
    with _hook_lock:
        if not _hooked:
            sys.addaudithook(_audit)
            _hooked = True
    guard = Guard(test, refuser=("127.0.0.1", 9))
    guard._report_to = None
    _active = guard
