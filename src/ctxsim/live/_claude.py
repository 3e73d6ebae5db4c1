"""Running the Claude Code CLI bundled in ``claude-agent-sdk`` against :class:`~ctxsim.live.FakeMessagesAPI`.

:func:`cli_options` makes the ``ClaudeAgentOptions`` that point the real CLI at the fake API: a temporary ``HOME``
and config directory, telemetry, auto-update and non-essential traffic off, a dummy API key (which the CLI accepts
and the fake ignores), credentials and proxies of the host blanked, ``bypassPermissions`` with ``IS_SANDBOX=1`` (as
root the CLI refuses to skip permissions otherwise; as a user the variable changes nothing), no setting sources.

:class:`LiveClaude` is the async context manager that starts all of it (the fake API unless one is given, the
temporary directory, the CLI through the real ``ClaudeSDKClient``) and stops all of it on the way out, also on an
error, a cancellation or Ctrl-C: the client is disconnected (bounded, shielded from the cancellation), the CLI
process is killed if it outlived that, the fake API's thread and socket are closed, the directory removed. Every
wait is bounded and ends in a :class:`LiveError` saying what it waited for.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, Message, PermissionMode, ResultMessage

from .._sync import interrupts, processes
from ..sdk import subprocess_pid, subprocess_transport
from ..wire import installed_cli_version, project_slug, sdk_bundled_file
from ..world import DEFAULT_MODEL
from ._api import FakeMessagesAPI
from ._tap import FrameTap

__all__ = ["LiveClaude", "LiveError", "bundled_cli_path", "bundled_cli_version", "child_processes", "cli_env",
           "cli_options", "cli_version", "read_transcripts"]

DUMMY_API_KEY = "sk-ant-ctxsim-fake-0000"
"""The key :func:`cli_env` gives the CLI when told none; a :class:`~ctxsim.live.FakeMessagesAPI` accepts only its own
(:attr:`~ctxsim.live.FakeMessagesAPI.key`), which :class:`LiveClaude` hands the CLI."""

_BLANKED = ("ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL",
            "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY", "HTTP_PROXY",
            "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy", "OTEL_EXPORTER_OTLP_ENDPOINT",
            "CLAUDE_CODE_AUTO_COMPACT_WINDOW", "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE")
"""Host variables the CLI inherits (the SDK passes the whole environment) that would send it elsewhere or change
what it does: set empty."""


class LiveError(RuntimeError):
    """The live CLI or the fake API did not do what was waited for; the message says what, starting ``ctxsim:``."""

    __module__ = "ctxsim.live"  # its public name, as tracebacks and reprs show it


def bundled_cli_path() -> Path:
    """Where the installed ``claude-agent-sdk`` keeps its bundled Claude Code CLI (the file may be absent)."""
    path = sdk_bundled_file("claude")
    if path is None:  # not reached: this module imports claude_agent_sdk
        raise LiveError("ctxsim: claude-agent-sdk is not installed, so no Claude Code CLI is bundled")
    return path


VERSION_TIMEOUT = 20.0
"""Seconds :func:`cli_version` waits for ``CLI --version``."""


def cli_version(cli: str | Path | None = None, *, timeout: float = VERSION_TIMEOUT) -> str:
    """The version of the Claude Code CLI at ``cli`` (``--version``'s first word), or of the bundled one when None
    (read from the wheel, without starting it). A CLI that cannot be started, hangs (``timeout`` seconds) or prints
    no version is a :class:`LiveError` naming the path and why."""
    if cli is None:
        return bundled_cli_version()
    path = shutil.which(str(cli)) or str(cli)
    try:  # a session of its own, so what it started goes with it (a wrapper script's CLI, a hung child)
        process = subprocess.Popen([path, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   stdin=subprocess.DEVNULL, env={**os.environ, "DISABLE_AUTOUPDATER": "1"},
                                   start_new_session=True)
    except OSError as exc:
        raise LiveError(f"ctxsim: the CLI {cli} cannot be started: {exc.strerror or exc}") from None
    answer: tuple[str, str] | None = None
    try:
        answer = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)
        process.kill()
        process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    if answer is None:
        raise LiveError(f"ctxsim: the CLI {cli} did not answer --version within {timeout:g} s")
    stdout, stderr = answer
    words = stdout.split()
    if process.returncode != 0 or not words or not words[0][:1].isdigit():
        tail = (stderr.strip().splitlines() or ["no output"])[-1]
        raise LiveError(f"ctxsim: the CLI {cli} gave no version (--version exited {process.returncode}: "
                        f"{tail[:200]})")
    return words[0]


def bundled_cli_version() -> str:
    """The version of the Claude Code CLI bundled in the installed ``claude-agent-sdk``."""
    version = installed_cli_version()
    if version is None:
        raise LiveError(f"ctxsim: no CLI version is bundled in this claude-agent-sdk ({bundled_cli_path()}.version "
                        f"is missing or empty)")
    return version


def cli_env(base_url: str, home: Path, *, autocompact_window: int | None = None,
            extra: Mapping[str, str] | None = None, tmp: Path | None = None,
            api_key: str = DUMMY_API_KEY) -> dict[str, str]:
    """The environment that points the CLI at the fake API at ``base_url``, with ``home`` as its ``HOME``, and
    ``tmp`` as its temporary directory (``CLAUDE_CODE_TMPDIR`` and ``TMPDIR``: else the CLI leaves a
    ``claude-<uid>/-tmp-...-project`` directory and ``fswatch-probe-*`` directories in the system's, per run).

    ``autocompact_window`` sets ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``: without it the CLI (as captured) never
    compacts on its own on reported usage; with it, it compacts once the last prompt passes its threshold.
    """
    env = dict.fromkeys(_BLANKED, "")
    env.update({
        "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"), "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": api_key, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1",
        "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
    })
    if tmp is not None:
        env.update({"CLAUDE_CODE_TMPDIR": str(tmp), "TMPDIR": str(tmp)})
    if autocompact_window is not None:
        env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(autocompact_window)
    env.update(extra or {})
    return env


def cli_options(base_url: str, workdir: Path, *, model: str = DEFAULT_MODEL, include_partial_messages: bool = False,
                autocompact_window: int | None = None, stderr: Callable[[str], None] | None = None,
                env: Mapping[str, str] | None = None, permission_mode: PermissionMode = "bypassPermissions",
                api_key: str = DUMMY_API_KEY, **overrides: Any) -> ClaudeAgentOptions:
    """Options that run the bundled CLI against the fake API at ``base_url`` (with its credential ``api_key``), in
    ``workdir`` (``home/`` and ``project/`` are made there, and ``tmp/``, the CLI's temporary directory, so removing
    ``workdir`` removes all the run made). ``overrides`` go to ``ClaudeAgentOptions`` as they are."""
    home, project, tmp = workdir / "home", workdir / "project", workdir / "tmp"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    tmp.mkdir(mode=0o700, parents=True, exist_ok=True)  # the CLI wants a private one
    return ClaudeAgentOptions(
        model=model, permission_mode=permission_mode, cwd=str(project), setting_sources=[],
        env=cli_env(base_url, home, autocompact_window=autocompact_window, extra=env, tmp=tmp, api_key=api_key),
        include_partial_messages=include_partial_messages, stderr=stderr, **overrides)


def read_transcripts(projects: Path) -> dict[str, list[dict[str, Any]]]:
    """Every transcript file the CLI wrote under ``projects`` (its ``$CLAUDE_CONFIG_DIR/projects``), by path relative
    to its project directory (``<session>.jsonl``, ``<session>/subagents/agent-<id>.jsonl``): the rows whole, in
    order (a last line still being written is left out)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(projects.glob("*/**/*.jsonl")):
        rows = []
        for line in path.read_text().splitlines(keepends=True):
            if not line.endswith("\n"):
                break
            try:
                rows.append(json.loads(line))
            except ValueError:
                break
        out[str(Path(*path.relative_to(projects).parts[1:]))] = rows
    return out


def child_processes() -> set[int]:
    """The live (not zombie) child processes of this process, from ``/proc`` (empty where there is none)."""
    me = os.getpid()
    return {p.pid for p in processes() if p.ppid == me and not p.zombie}


def _started_in(workdir: Path, pids: set[int]) -> set[int]:
    """Those of ``pids`` whose ``HOME`` is ``workdir``'s (the CLI a :class:`LiveClaude` started there)."""
    home = f"HOME={workdir / 'home'}".encode()
    out = set()
    for pid in pids:
        try:
            if home in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                out.add(pid)
        except OSError:
            continue
    return out


class LiveClaude:
    """``async with LiveClaude(...) as live:``: the bundled CLI, connected through ``ClaudeSDKClient``, against a
    fake Messages API. ``live.client`` is the connected client; :meth:`ask` and :meth:`context_usage` are bounded.

    ``api`` is a fake API already started (left running on exit); None starts one (stopped on exit). ``cli`` is
    the CLI to run (any executable that speaks its stream-json protocol, a wrapper script included; None: the one
    bundled in the SDK). The other keywords are :func:`cli_options`'s. ``timeout`` bounds connecting, each query
    and each control request, in seconds; ``disconnect_timeout`` bounds the way out (the SDK itself waits up to
    5 s for a CLI it has to stop). :attr:`frames` keeps every raw frame the CLI wrote, control frames included.
    """

    def __init__(self, api: FakeMessagesAPI | None = None, *, model: str = DEFAULT_MODEL,
                 include_partial_messages: bool = False, autocompact_window: int | None = None,
                 timeout: float = 60.0, disconnect_timeout: float = 15.0, cli: str | Path | None = None,
                 **options: Any) -> None:
        self.api = api if api is not None else FakeMessagesAPI()
        self.cli = cli
        self._owns_api = api is None
        self.model = model
        self.include_partial_messages = include_partial_messages
        self.autocompact_window = autocompact_window
        self.timeout = timeout
        self.disconnect_timeout = disconnect_timeout
        self._options = options
        self.stderr: deque[str] = deque(maxlen=200)
        """The CLI's last lines on stderr."""
        self.pids: set[int] = set()
        """The CLI's process, as its transport started it (where the transport does not say: the children this
        process gained while connecting)."""
        self.workdir: Path | None = None
        self._client: ClaudeSDKClient | None = None
        self._tap: FrameTap | None = None
        self.connect_seconds = 0.0

    @property
    def frames(self) -> list[dict[str, Any]]:
        """Every raw stream-json frame the CLI wrote so far, in order."""
        return self._tap.frames if self._tap is not None else []

    @property
    def projects_dir(self) -> Path:
        """Where the CLI writes its transcripts: ``$CLAUDE_CONFIG_DIR/projects`` (one directory per working
        directory, :func:`ctxsim.wire.project_slug`); gone once the context is left."""
        if self.workdir is None:
            raise LiveError("ctxsim: LiveClaude is not connected (use it as `async with LiveClaude() as live`)")
        return self.workdir / "home" / ".claude" / "projects"

    def transcript_path(self, session_id: str) -> Path:
        """Where the CLI writes the transcript of session ``session_id`` (the statusline payload's
        ``transcript_path``)."""
        projects = self.projects_dir  # raises unless connected
        return projects / project_slug(str(projects.parents[2] / "project")) / f"{session_id}.jsonl"

    def transcripts(self) -> dict[str, list[dict[str, Any]]]:
        """The transcript files the CLI has written so far (:func:`read_transcripts`)."""
        return read_transcripts(self.projects_dir)

    @property
    def client(self) -> ClaudeSDKClient:
        """The connected SDK client."""
        if self._client is None:
            raise LiveError("ctxsim: LiveClaude is not connected (use it as `async with LiveClaude() as live`)")
        return self._client

    def _fail(self, what: str) -> LiveError:
        tail = " | ".join(list(self.stderr)[-5:])
        return LiveError(f"ctxsim: {what} (fake API at {self.api.base_url} answered {len(self.api.served)} message "
                         f"requests" + (f"; CLI stderr: {tail}" if tail else "") + ")")

    async def __aenter__(self) -> LiveClaude:
        before = child_processes()
        try:
            if self._owns_api:
                self.api.start()
            self.workdir = Path(tempfile.mkdtemp(prefix="ctxsim-live-"))
            options = cli_options(self.api.base_url, self.workdir, model=self.model, api_key=self.api.key,
                                  include_partial_messages=self.include_partial_messages,
                                  autocompact_window=self.autocompact_window, stderr=self.stderr.append,
                                  cli_path=str(self.cli) if self.cli is not None else None, **self._options)
            started = time.monotonic()
            self._tap = FrameTap(subprocess_transport(options))
            self._client = ClaudeSDKClient(options, transport=self._tap)
            with anyio.move_on_after(self.timeout) as waited:
                await self._client.connect()
            pid = subprocess_pid(self._tap.inner)
            # The transport's own process; other children (another LiveClaude's CLI) are not this one's to stop.
            self.pids = {pid} if pid is not None else child_processes() - before
            if waited.cancelled_caught:
                raise self._fail(f"the CLI {self.cli or 'bundled in claude-agent-sdk'} did not connect within "
                                 f"{self.timeout:g} s")
            self.connect_seconds = time.monotonic() - started
        except BaseException:
            if not self.pids and self.workdir is not None:  # interrupted while starting: its CLI may be running
                self.pids = _started_in(self.workdir, child_processes() - before)
            await self._close()
            raise
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self._close()

    async def _close(self) -> None:
        """Stop everything this started, whatever state it is in; bounded, and shielded from cancellation. Once the
        run was interrupted (SIGINT, SIGTERM or SIGHUP), the CLI is sent SIGTERM first: the SDK's own
        disconnect gives it seconds to flush its session files, which an interrupted run does not keep."""
        problems: list[str] = []
        with anyio.CancelScope(shield=True):
            if interrupts():
                for pid in sorted(self.pids & child_processes()):
                    os.kill(pid, signal.SIGTERM)
            if self._client is not None:
                with anyio.move_on_after(self.disconnect_timeout) as waited:
                    try:
                        await self._client.disconnect()
                    except Exception as exc:  # the process may be gone already; the kill below makes sure
                        problems.append(f"disconnect raised {type(exc).__name__}: {exc}")
                if waited.cancelled_caught:
                    problems.append(f"the SDK client did not disconnect within {self.disconnect_timeout:g} s")
                self._client = None
            for pid in sorted(self.pids & child_processes()):
                os.kill(pid, signal.SIGKILL)
                problems.append(f"the CLI (pid {pid}) outlived the disconnect and was killed")
            deadline = time.monotonic() + 5.0
            while self.pids & child_processes() and time.monotonic() < deadline:
                await anyio.sleep(0.02)
        if self._owns_api:
            self.api.stop()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None
        left = self.pids & child_processes()
        if left:
            raise LiveError(f"ctxsim: the CLI process {sorted(left)} is still running after it was killed")
        del problems  # the kill above is the remedy; a clean run has none

    # bounded conversation -----------------------------------------------------------------------------------------

    async def ask(self, prompt: str, *, timeout: float | None = None, results: int = 1) -> list[Message]:
        """Send ``prompt`` and collect every message up to and including its ``ResultMessage`` (bounded); up to its
        ``results``-th where more turns follow it unasked (a background subagent's notification starts one)."""
        limit = timeout or self.timeout
        messages: list[Message] = []
        with anyio.move_on_after(limit) as waited:
            await self.client.query(prompt)
            async for message in self.client.receive_messages():
                messages.append(message)
                results -= isinstance(message, ResultMessage)
                if not results:
                    return messages
            raise self._fail(f"the CLI's message stream ended before the result of {prompt[:60]!r} "
                             f"({len(messages)} messages)")
        last = type(messages[-1]).__name__ if messages else "none"
        assert waited.cancelled_caught
        raise self._fail(f"no result for the query {prompt[:60]!r} within {limit:g} s ({len(messages)} messages, "
                         f"the last a {last})")

    async def context_usage(self, *, timeout: float | None = None) -> dict[str, Any]:
        """``get_context_usage()``, bounded."""
        limit = timeout or self.timeout
        with anyio.move_on_after(limit):
            return dict(await self.client.get_context_usage())
        raise self._fail(f"get_context_usage() got no answer within {limit:g} s")
