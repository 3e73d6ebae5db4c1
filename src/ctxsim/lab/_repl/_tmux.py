"""The bundled CLI's interactive REPL driven under tmux, in a private home: the machinery both REPL recorders share.

:func:`running_repl` starts the REPL against a :class:`~ctxsim.live.FakeMessagesAPI` in a temporary directory with a
home whose statusline command keeps every payload as a file, waits until it settled, and removes the tmux server, the
CLI, the API and the directory on the way out, also on an error. :func:`wait_for` bounds every wait and ends it in a
:class:`~ctxsim.live.LiveError` that quotes the screen. :func:`tmux_skip_reason` says why it cannot run (no tmux).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...live import FakeMessagesAPI, LiveError, bundled_cli_path, cli_env

__all__ = ["Repl", "ReplRun", "payload_files", "read_payload", "repl_env", "repl_home", "running_repl", "settled",
           "tmux_skip_reason", "wait_for", "written_since"]


def tmux_skip_reason() -> str | None:
    """Why the statusline cannot be recorded here (None when it can): tmux is needed to drive the REPL."""
    if shutil.which("tmux") is None:
        return "tmux is not installed (the statusline runs only in the interactive REPL, driven under tmux)"
    return None




class Repl:
    """The bundled CLI's REPL in a private tmux server (its socket in ``workdir``)."""

    def __init__(self, workdir: Path, env: Mapping[str, str], model: str, timeout: float) -> None:
        self.socket = workdir / "tmux.sock"
        self.timeout = timeout
        cli = bundled_cli_path()
        launcher = workdir / "repl.sh"
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in env.items())
        launcher.write_text(f"{exports}cd {shlex.quote(str(workdir / 'project'))}\n"
                            f"exec {shlex.quote(str(cli))} --model {shlex.quote(model)}\n")
        self.pids: list[int] = []
        self.tmux("new-session", "-d", "-s", "ctxsim", "-x", "200", "-y", "50", f"sh {shlex.quote(str(launcher))}")
        shown = self.tmux("display-message", "-p", "-t", "ctxsim", "#{pane_pid} #{pid}").split()
        self.pids = [int(pid) for pid in shown]
        """The CLI (the pane's process) and the tmux server."""

    def tmux(self, *args: str) -> str:
        try:
            done = subprocess.run(["tmux", "-S", str(self.socket), *args], capture_output=True, text=True,
                                  timeout=10)
        except subprocess.TimeoutExpired:
            raise LiveError(f"ctxsim: tmux {args[0]} did not return within 10 s") from None
        if done.returncode != 0:
            raise LiveError(f"ctxsim: tmux {' '.join(args[:2])} failed: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "ctxsim")

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", "ctxsim", "-l", text)
        time.sleep(0.3)
        self.tmux("send-keys", "-t", "ctxsim", "Enter")

    def close(self) -> None:
        subprocess.run(["tmux", "-S", str(self.socket), "kill-server"], capture_output=True, timeout=10)
        deadline = time.monotonic() + 5.0
        for pid in self.pids:
            while alive(pid):
                if time.monotonic() > deadline:
                    os.kill(pid, signal.SIGKILL)
                    break
                time.sleep(0.05)


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def wait_for(what: str, done: Callable[[], bool], timeout: float, screen: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            tail = " | ".join(line.strip() for line in screen().splitlines() if line.strip())[-300:]
            raise LiveError(f"ctxsim: the REPL did not {what} within {timeout:g} s (screen: {tail})")
        time.sleep(0.1)


def payload_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.suffix == ".json")


def written_since(directory: Path, since_ns: int) -> Callable[[], bool]:
    """Done once a payload was written after ``since_ns`` (its name is the time its command started)."""
    return lambda: any(int(p.stem) > since_ns for p in payload_files(directory))


def settled(directory: Path, quiet: float = 1.5) -> Callable[[], bool]:
    """Done once no payload was written for ``quiet`` seconds."""
    def done() -> bool:
        files = payload_files(directory)
        return not files or time.time() - files[-1].stat().st_mtime > quiet
    return done


def read_payload(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text())
    if not isinstance(data, dict):
        raise LiveError(f"ctxsim: the statusline payload {path.name} is not a JSON object")
    return data


def repl_home(workdir: Path, api: FakeMessagesAPI) -> tuple[Path, Path, Path]:
    """A REPL's private home under ``workdir``: onboarding done, ``api``'s own key approved, its project trusted,
    and a statusline command that keeps every payload as a file of ``out``; ``(home, project, out)``."""
    home, project, out = workdir / "home", workdir / "project", workdir / "payloads"
    for directory in (home / ".claude", project, out, workdir / "tmp"):
        directory.mkdir(parents=True)
    config = json.dumps({"hasCompletedOnboarding": True, "theme": "dark",
                         "customApiKeyResponses": {"approved": [api.key[-20:]], "rejected": []},
                         "projects": {str(project): {"hasTrustDialogAccepted": True, "allowedTools": []}}})
    for where in (home / ".claude.json", home / ".claude" / ".claude.json"):
        where.write_text(config)
    command = f"cat > {shlex.quote(str(out))}/$(date +%s%N).json; echo ctxsim"
    (home / ".claude" / "settings.json").write_text(json.dumps({"statusLine": {"type": "command",
                                                                               "command": command}}))
    return home, project, out


def repl_env(api: FakeMessagesAPI, home: Path, **cli: Any) -> dict[str, str]:
    """The environment a REPL runs in: a terminal, and the CLI pointed at ``api`` with its key
    (:func:`cli_env`'s other keywords as given)."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "xterm-256color",
            **cli_env(api.base_url, home, api_key=api.key, **cli)}


@dataclass(frozen=True)
class ReplRun:
    """A running REPL (:func:`running_repl`) and where it lives: its directory, home, project and payloads."""

    repl: Repl
    workdir: Path
    home: Path
    project: Path
    payloads: Path


@contextmanager
def running_repl(what: str, api: FakeMessagesAPI, model: str, timeout: float,
                  env: Mapping[str, str] | None = None) -> Iterator[ReplRun]:
    """The bundled CLI's REPL under tmux, in a private home (:func:`repl_home`) and temporary directory, against
    ``api`` (started here), with ``env`` added to its environment; started and settled after its first statusline
    payload. ``what`` names the recording in the error when tmux or the CLI is
    missing. The tmux server, the CLI, ``api`` and the directory are gone on exit, also on an error."""
    reason = tmux_skip_reason()
    if reason is not None:
        raise LiveError(f"ctxsim: cannot record {what}: {reason}")
    workdir = Path(tempfile.mkdtemp(prefix=f"ctxsim-repl-{os.getpid()}-"))
    repl: Repl | None = None
    try:
        home, project, out = repl_home(workdir, api)
        api.start()
        repl = Repl(workdir, repl_env(api, home, tmp=workdir / "tmp", extra=env), model, timeout)
        wait_for("start and send its first statusline payload", lambda: bool(payload_files(out)), timeout, repl.screen)
        wait_for("settle after starting", settled(out), timeout, repl.screen)
        yield ReplRun(repl, workdir, home, project, out)
    finally:
        if repl is not None:
            repl.close()
        api.stop()
        shutil.rmtree(workdir, ignore_errors=True)
