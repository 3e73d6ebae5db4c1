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

Not covered: a child process's own direct connections to an address (its sockets are not this interpreter's; it
only gets the environment above), and sockets a C extension opens without Python's socket module. For those, run
the tests in a network namespace without a route out as well (``unshare -rn pytest ...`` on Linux).

Each refusal raises :class:`RealCallBlocked` (a ``ctxsim:`` line naming the test and what tried) where it
happened, and fails the test even when the code under test caught it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import selectors
import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "Guard", "RealCallBlocked", "points_locally"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "::1", "localhost", "ip6-localhost"})
"""Names a test may look up under the guard; it may connect to these and to every loopback address."""

_CLAUDE_NAMES = frozenset({"claude", "claude.exe", "claude-code"})
_CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
_LAUNCHERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "env", "nohup", "setsid",
                        "timeout", "xargs", "sudo", "doas", "npx", "bunx", "pnpx", "pnpm", "yarn", "npm", "node",
                        "bun", "deno", "script", "stdbuf", "nice", "ionice", "time", "exec", "command", "unbuffer"})
"""Programs that start the program named in their arguments or shell line."""
_SWITCHES = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
"""Variables that send Claude Code to a cloud provider, whatever ``ANTHROPIC_BASE_URL`` says."""
_ROUTES = ("ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL", "ANTHROPIC_FOUNDRY_BASE_URL", "HTTP_PROXY",
           "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
"""Variables that route a child's requests (the providers' base URLs, the proxies): pointed at the refuser."""
_NO_PROXY = "127.0.0.1,localhost,::1"
_SHELL_PUNCTUATION = re.compile(r"[\s;|&()`'\"$<>{}=]+")
"""What separates the words of a shell line, crudely (an assignment's value is a word of its own)."""


class RealCallBlocked(ConnectionRefusedError):
    """``--ctx-block-real`` refused a real call; the message names the test and what tried."""


def _local(host: Any) -> bool:
    """Whether ``host`` (a name or an address) is this machine."""
    if host is None:
        return True
    name = host.decode(errors="replace") if isinstance(host, bytes) else str(host)
    if name in LOCAL_HOSTS or name == "":
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


def _local_url(url: str, *, empty: bool = True) -> bool:
    if not url:
        return empty
    try:
        host = urlsplit(url if "://" in url else f"http://{url}").hostname
    except ValueError:
        return False
    return host is not None and _local(host)


def _switched_on(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def _reaching(env: Mapping[str, str]) -> list[str]:
    """The variables of ``env`` that would send a request beyond this machine (a switch on, a route elsewhere)."""
    return [k for k in _SWITCHES if _switched_on(env.get(k))] + [
        k for k in _ROUTES if not _local_url(env.get(k, ""))]


def points_locally(env: Mapping[str, str]) -> bool:
    """Whether ``env`` keeps Claude Code on this machine: ``ANTHROPIC_BASE_URL`` at a loopback address, no
    Bedrock, Vertex or Foundry switch on, and no base URL or proxy beyond this machine."""
    return _local_url(env.get("ANTHROPIC_BASE_URL", ""), empty=False) and not _reaching(env)


# --- the local refuser -----------------------------------------------------------------------------------------


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
    refusal's message, so the report can fail the test even when its code swallowed the exception."""

    def __init__(self, test: str) -> None:
        self.test = test
        self.refused: list[str] = []
        self._undo: list[Callable[[], None]] = []
        self._pid = os.getpid()
        self._refuser: _Refuser | None = None
        self._base_url: str | None = None
        """``ANTHROPIC_BASE_URL`` as it was before the guard (for messages)."""

    # installing --------------------------------------------------------------------------------------------

    def install(self) -> None:
        global _active, _hooked
        with _hook_lock:
            if not _hooked:
                sys.addaudithook(_audit)  # cannot be removed: inert without a guard
                _hooked = True
        self._refuser = _Refuser(self._note)
        self._set_environment()
        self._patch(subprocess.Popen, "__init__", self._popen)
        _active = self

    def remove(self) -> None:
        global _active
        if _active is self:
            _active = None
        while self._undo:
            self._undo.pop()()
        if self._refuser is not None:
            self._refuser.close()
            self._refuser = None

    def _patch(self, owner: Any, name: str, wrapper: Callable[..., Callable[..., Any]]) -> None:
        original = getattr(owner, name)
        setattr(owner, name, wrapper(original))
        self._undo.append(lambda: setattr(owner, name, original))

    def corrected(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` made unable to reach a model: see the module's docstring."""
        assert self._refuser is not None
        url = self._refuser.url
        out = {k: v for k, v in env.items() if k not in _SWITCHES}
        out.update(dict.fromkeys(_ROUTES, url))
        out["NO_PROXY"] = out["no_proxy"] = _NO_PROXY
        if not _local_url(out.get("ANTHROPIC_BASE_URL", ""), empty=False):
            out["ANTHROPIC_BASE_URL"] = url
        return out

    def _set_environment(self) -> None:
        keys = (*_SWITCHES, *_ROUTES, "NO_PROXY", "no_proxy", "ANTHROPIC_BASE_URL")
        saved = {k: os.environ.get(k) for k in keys}
        self._base_url = saved["ANTHROPIC_BASE_URL"]
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
        message = f"ctxsim: --ctx-block-real: {self.test} {what}"
        if os.getpid() != self._pid:  # a forked child about to exec: report through the refuser, and end here
            try:
                with socket.create_connection(self._refuser.address if self._refuser else ("", 0), timeout=2) as s:
                    s.sendall(_Refuser.REPORT + message.encode())
            except OSError:  # no refuser to tell: say it where the child's output goes
                with contextlib.suppress(OSError):
                    os.write(2, (message + "\n").encode())
            os._exit(126)
        self.refused.append(message)
        return RealCallBlocked(message)

    def _popen(self, original: Callable[..., None]) -> Callable[..., None]:
        guard = self

        def __init__(popen: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            env = kwargs.get("env")
            env = env if env is not None else os.environ
            guard.check_start(_argv(args, shell=bool(kwargs.get("shell"))), env)
            kwargs["env"] = guard.corrected(env)  # inherited too: the test may have changed os.environ
            original(popen, args, *rest, **kwargs)

        return __init__

    def check_start(self, argv: list[str], env: Mapping[str, str]) -> None:
        """Refuse starting ``argv`` with ``env`` when it is Claude Code not kept on this machine, or Claude Code
        started through a shell line or another program."""
        found = _claude(argv)
        if found is None:
            return
        program, direct = found
        if not direct:
            raise self._refuse(f"started Claude Code through another program ({' '.join(argv)[:200]!r}): ctxsim "
                               f"cannot see the environment it gets; start {program} directly, pointed at ctxsim's "
                               f"fake API on 127.0.0.1 (ctxsim.live), or use the fake_claude fixture")
        url = env.get("ANTHROPIC_BASE_URL", "")
        if self._refuser is not None and url == self._refuser.url:
            url = self._base_url or ""  # the refuser stands in for what the user had
        reaching = _reaching({k: v for k, v in env.items() if k not in _ROUTES or v != getattr(
            self._refuser, "url", None)})
        if _local_url(url, empty=False) and not reaching:
            return
        shown = (f"{', '.join(reaching)} set" if reaching and _local_url(url, empty=False) else
                 f"ANTHROPIC_BASE_URL={url}" if url else "ANTHROPIC_BASE_URL unset")
        raise self._refuse(f"started Claude Code ({program}) with {shown}: it would call a real model; point it at "
                           f"ctxsim's fake API on 127.0.0.1 (ctxsim.live) or use the fake_claude fixture")

    def check_environment(self, env: Mapping[Any, Any], how: str) -> None:
        """Refuse a start through ``how`` whose environment ``env`` routes requests beyond this machine."""
        decoded = {os.fsdecode(k): os.fsdecode(v) for k, v in env.items()}
        reaching = _reaching(decoded)
        if reaching:
            raise self._refuse(f"started a process ({how}) with {', '.join(reaching)} set beyond this machine: it "
                               f"could reach a model; keep the environment local")


# --- audit events ----------------------------------------------------------------------------------------------


def _beyond(args: tuple[Any, ...]) -> str | None:
    """Where a socket event's ``(socket, address)`` goes when that is an internet address beyond this machine."""
    sock, address = args[0], args[1]
    inet = getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple)
    return _where(address[0], address[1]) if inet and not _local(address[0]) else None


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
    if not _local(host):
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


def _argv(args: Any, *, shell: bool) -> list[str]:
    """A ``Popen`` argument as words (with ``shell=True``: the shell's line)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        return ["/bin/sh", "-c", text] if shell else [text]
    if isinstance(args, Sequence):
        words = [os.fsdecode(a) for a in args if isinstance(a, (str, bytes, os.PathLike))]
        return ["/bin/sh", "-c", " ".join(words)] if shell else words
    return []


def _claude(argv: list[str]) -> tuple[str, bool] | None:
    """``(program, direct)`` when ``argv`` starts Claude Code, directly (its first word) or through a shell line or
    another program; else None."""
    if not argv:
        return None
    first = PurePath(argv[0]).name
    if first in _CLAUDE_NAMES:
        return argv[0], True
    if first in ("node", "node.exe") and len(argv) > 1 and PurePath(argv[1]).name == "cli.js":
        return f"{argv[0]} {argv[1]}", True
    if first not in _LAUNCHERS and not first.endswith("sh"):
        return None
    for word in argv[1:]:
        for part in _SHELL_PUNCTUATION.split(word):
            name = PurePath(part).name if part else ""
            if name in _CLAUDE_NAMES or name == "cli.js" or _CLAUDE_PACKAGE in part:
                return part, False
    return None
