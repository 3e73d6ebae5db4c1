"""A tracker in any language: a statusline command run as Claude Code runs it, at every observation point.

:class:`CommandTracker` is a :class:`~ctxsim.trackers.PointTracker`. At each point it judges, ctxsim writes the
session's transcript as the CLI had written it by then (:func:`ctxsim.wire.render_transcript`) under a
private ``HOME`` and ``CLAUDE_CONFIG_DIR``, runs the command through ``/bin/sh -c`` with the statusline payload of
that point on stdin (:func:`ctxsim.wire.statusline_payloads`, its ``transcript_path`` pointing at the file
just written) and reads its stdout (:mod:`ctxsim.trackers._readout`): a bare integer on the last line, a preset's
format, or the user's regex; blank or ``TBD`` is no estimate.

Points are independent (each has its own ``HOME``), so they run in parallel on ``workers`` threads. A command that
exits non-zero, runs past ``timeout`` seconds (its whole process group is killed) or prints nonsense raises one
:class:`~ctxsim.trackers.PointTrackerError` naming the command, the session, the point and the tail of its
stderr; the first failing point (in the session's order) is the one reported.

On a command line (``pytest --ctx-tracker``, ``ctxsim run/fuzz/score --tracker``)::

    cmd:COMMAND                                   # the last line of stdout is the number of tokens
    cmd[preset=ccusage]:npx ccusage statusline --offline --no-cache
    cmd[regex='ctx (?P<percent>[0-9.]+)%' timeout=5 workers=2 config=~/my-claude-home]:my-statusline

Options (inside ``[...]``, space-separated, shell quoting): ``preset`` (:data:`~ctxsim.trackers.PRESETS`),
``regex``, ``timeout`` (seconds a point, default 10), ``workers`` (default: 4, at most the CPUs), ``config`` (a
directory copied into each point's private ``HOME``), ``no_context_window`` (the payload without
``context_window``, as Claude Code sent it before 2.0.65), ``cli_version`` (the Claude Code version rendered;
default: the bundled CLI's), ``after_compaction`` (``zero`` or ``null``: the payload right after a compaction),
``name`` (what reports call it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ._base import Estimate, PointTrackerError
from ._readout import PRESETS, Readout, UnreadableOutput, read_output

if TYPE_CHECKING:
    from ..faults import FaultPlan
    from ..wire import Observation
    from ..world import Session

__all__ = ["DEFAULT_TIMEOUT", "CommandTracker", "parse_command_spec"]

DEFAULT_TIMEOUT = 10.0
"""Seconds a command may run at one point before it is killed (the slowest shipped tool takes under one)."""
_STDERR_TAIL = 400
_INTERPRETERS = frozenset({"node", "nodejs", "python", "python3", "bash", "sh", "npx", "uv", "uvx", "env", "bun",
                           "deno", "ruby", "perl"})


def _default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def _tail(text: str, limit: int = _STDERR_TAIL) -> str:
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


@dataclass
class CommandTracker:
    """A statusline command judged as a tracker: see the module's docstring.

    >>> CommandTracker("npx ccusage@17.2.1 statusline --offline --no-cache", preset="ccusage")
    """

    command: str
    """A shell command line (run by ``/bin/sh -c``), as in Claude Code's ``statusLine.command``."""
    preset: str | None = None
    """How to read its output: a name of :data:`~ctxsim.trackers.PRESETS` (it may also put the tool's
    settings in the private ``HOME``)."""
    regex: str | None = None
    """How to read its output otherwise: a regex with a named group ``tokens``, ``percent`` or ``remaining``."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds the command may run at one point."""
    workers: int = field(default_factory=_default_workers)
    """Points run at once."""
    config: str | Path | None = None
    """A directory copied into each point's private ``HOME`` (the user's tool settings, ``.claude`` included)."""
    context_window: bool = True
    """False: the payload without ``context_window`` (older Claude Code; every tool's transcript fallback)."""
    cli_version: str | None = None
    """The Claude Code version whose transcript and payload are rendered; default: the CLI bundled in the installed
    ``claude-agent-sdk``."""
    after_compaction: Literal["zero", "null"] | None = None
    """What the payload's ``context_window`` says right after a compaction: ``null`` (as ctxsim recorded the REPL),
    ``zero`` (an all-zero ``current_usage`` and 0%, as the research measured it: docs/explanation/shipped-trackers.md);
    default: what :func:`ctxsim.wire._statusline.after_compaction` says of :attr:`cli_version`."""
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment variables for the command (it gets ``PATH``, ``LANG``, ``HOME``, ``CLAUDE_CONFIG_DIR``,
    ``TERM=dumb`` and these)."""
    name: str = ""
    """What reports call it (default: ``cmd:`` and the program it runs)."""
    readout: Readout | None = field(init=False, default=None)
    """How its output is read (None: a bare integer on the last line)."""

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("ctxsim: CommandTracker: the command is empty")
        if self.preset is not None and self.regex is not None:
            raise ValueError("ctxsim: CommandTracker: give a preset or a regex, not both")
        if self.preset is not None:
            if self.preset not in PRESETS:
                raise ValueError(f"ctxsim: CommandTracker: no preset {self.preset!r} (known: "
                                 f"{', '.join(sorted(PRESETS))})")
            self.readout = PRESETS[self.preset]
        elif self.regex is not None:
            self.readout = Readout(self.regex)
        if self.after_compaction not in (None, "zero", "null"):
            raise ValueError(f"ctxsim: CommandTracker: after_compaction is zero or null, not {self.after_compaction!r}")
        if not self.timeout > 0:
            raise ValueError(f"ctxsim: CommandTracker: timeout must be positive seconds, not {self.timeout!r}")
        if self.workers < 1:
            raise ValueError(f"ctxsim: CommandTracker: workers must be at least 1, not {self.workers!r}")
        if self.config is not None and not Path(self.config).expanduser().is_dir():
            raise ValueError(f"ctxsim: CommandTracker: config {str(self.config)!r} is not a directory")
        if not self.name:
            self.name = f"cmd:{self.preset or _program(self.command)}"

    # --- the PointTracker protocol ---------------------------------------------------------------------------

    def estimate_points(self, session: Session, observations: Sequence[Observation],
                        faults: FaultPlan | None = None) -> list[Estimate]:
        """Run the command at each of ``observations`` (in parallel) and read its estimates, in order. ``faults``:
        the plan the stream was played with; its transcript form is applied to the transcript."""
        from ..faults import apply_transcript
        from ..wire import render_transcript, statusline_payloads

        wanted = {o.label for o in observations}  # by label: a fault may reorder (and renumber) the stream's points
        transcript = render_transcript(session, cli_version=self.cli_version)
        if faults is not None and faults.faults:
            transcript = apply_transcript(faults, transcript)
        payloads = statusline_payloads(session, with_context_window=self.context_window, cli_version=self.cli_version,
                                       compaction=self.after_compaction)
        runs = [_PointRun(i, point.observation, payloads[i]) for i, point in enumerate(transcript.points)
                if point.observation.label in wanted]
        lines = {path: [json.dumps(row, separators=(",", ":")) + "\n" for row in file.rows]
                 for path, file in transcript.files.items()}  # each row serialized once, not once per point
        with tempfile.TemporaryDirectory(prefix="ctxsim-cmd-", dir=_scratch()) as root:
            def one(run: _PointRun) -> Estimate:
                home = Path(root) / f"point-{run.observation.index}"
                config_dir = home / ".claude"
                try:
                    self._prepare_home(home)
                    project = config_dir / "projects" / transcript.slug
                    point = transcript.points[run.position]
                    for relative, written in lines.items():
                        if relative in point.rows or relative in point.partial:
                            target = project / relative
                            target.parent.mkdir(parents=True, exist_ok=True)
                            text = "".join(written[:point.rows.get(relative, 0)]) + point.partial.get(relative, "")
                            target.write_text(text, encoding="utf-8")
                    payload = dict(run.payload, transcript_path=str(project / point.transcript))
                    return self._run(run, session, payload, home, config_dir)
                finally:
                    shutil.rmtree(home, ignore_errors=True)  # a long session's transcripts add up: one at a time

            estimates = self._in_parallel(one, runs)
        by_label = {run.observation.label: e for run, e in zip(runs, estimates)}
        return [by_label.get(o.label) for o in observations]

    # --- one point -------------------------------------------------------------------------------------------

    def _prepare_home(self, home: Path) -> None:
        home.mkdir(parents=True)
        (home / ".claude").mkdir()
        if self.readout is not None:
            for relative, text in self.readout.home_files.items():
                target = home / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        if self.config is not None:
            shutil.copytree(Path(self.config).expanduser(), home, dirs_exist_ok=True, symlinks=True)

    def environment(self, home: Path, config_dir: Path) -> dict[str, str]:
        """The command's environment at a point whose private ``HOME`` is ``home``."""
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8"),
               "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config_dir), "TERM": "dumb", "COLUMNS": "200",
               "TMPDIR": str(home)}
        env.update(self.env)
        return env

    def _run(self, run: _PointRun, session: Session, payload: dict[str, Any], home: Path,
             config_dir: Path) -> Estimate:
        stdin = json.dumps(payload).encode()
        try:
            process = subprocess.Popen(["/bin/sh", "-c", self.command], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=home,
                                       env=self.environment(home, config_dir), start_new_session=True)
        except OSError as exc:
            raise self._error(session, run, f"could not be started: {exc}", "") from None
        try:
            out, err = process.communicate(stdin, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(process)
            try:
                out, err = process.communicate(timeout=2)
            except subprocess.TimeoutExpired:  # a child left its group and holds the pipes: leave them
                out, err = b"", b""
            raise self._error(session, run, f"ran past its timeout of {self.timeout:g} s and was killed",
                              err.decode(errors="replace")) from None
        finally:
            _kill_group(process)  # whatever it left running in its group (a daemon, a backgrounded child)
        stderr = err.decode(errors="replace")
        if process.returncode != 0:
            raise self._error(session, run, f"exited with status {process.returncode}", stderr)
        stdout = out.decode(errors="replace")
        window = _window(payload, run.observation.window)
        try:
            return read_output(stdout, self.readout, window)
        except UnreadableOutput as exc:
            raise self._error(session, run, f"printed nonsense: {exc}; stdout ends {_tail(stdout, 200)!r}",
                              stderr) from None

    def _error(self, session: Session, run: _PointRun, what: str, stderr: str) -> PointTrackerError:
        name = session.name or session.session_id
        tail = _tail(stderr)
        return PointTrackerError(
            f"ctxsim: command tracker {self.name} ({self.command!r}) on session {name!r} at point "
            f"#{run.observation.index} ({run.observation.label}) {what}"
            + (f"; stderr ends: {tail}" if tail else "; stderr was empty"))

    # --- the pool --------------------------------------------------------------------------------------------

    def _in_parallel(self, one: Callable[[_PointRun], Estimate], runs: list[_PointRun]) -> list[Estimate]:
        """``one(run)`` for every run on :attr:`workers` threads; on the first error the points not yet started are
        dropped and the error of the earliest failing point is raised (every point before it has started, so which
        one that is does not depend on timing)."""
        if self.workers == 1 or len(runs) <= 1:
            return [one(run) for run in runs]
        failed = threading.Event()

        def guarded(run: _PointRun) -> Estimate:
            if failed.is_set():
                raise _Skipped
            try:
                return one(run)
            except BaseException:
                failed.set()
                raise

        with ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ctxsim-cmd") as pool:
            futures: list[Future[Estimate]] = [pool.submit(guarded, run) for run in runs]
        out: list[Estimate] = []
        for future in futures:
            error = future.exception()
            if error is not None and not isinstance(error, _Skipped):
                raise error
            out.append(None if error is not None else future.result())
        return out


class _Skipped(Exception):
    """A point not run because an earlier one failed."""


@dataclass(frozen=True)
class _PointRun:
    position: int
    """The point's position in the rendering (0-based)."""
    observation: Observation
    payload: dict[str, Any]


def _scratch() -> str | None:
    """Where the points' private homes go: a memory file system when there is one (directories are made and
    removed for every point), else the temporary directory."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def _window(payload: Mapping[str, Any], default: int) -> int:
    """The window a percentage is of: the payload's ``context_window_size``, else the session's."""
    context = payload.get("context_window")
    size = context.get("context_window_size") if isinstance(context, Mapping) else None
    return size if isinstance(size, int) and size > 0 else default


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _program(command: str) -> str:
    """The program a command line runs, for its name: ``node dist/ccstatusline.js`` -> ``ccstatusline.js``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    names = [Path(w).name for w in words if not w.startswith("-") and "=" not in w]
    return next((n for n in names if n not in _INTERPRETERS), names[0] if names else command.strip())


_OPTIONS = {"preset": str, "regex": str, "timeout": float, "workers": int, "config": str, "name": str,
            "no_context_window": bool, "cli_version": str, "after_compaction": str}


def parse_command_spec(spec: str) -> CommandTracker:
    """The :class:`CommandTracker` that ``cmd:COMMAND`` or ``cmd[OPTIONS]:COMMAND`` names (see the module's
    docstring). Raises ``ValueError`` saying what is wrong."""
    if not spec.startswith("cmd"):
        raise ValueError(f"{spec!r} is not a cmd: spec")
    rest = spec[3:]
    options: dict[str, Any] = {}
    if rest.startswith("["):
        end = _closing_bracket(rest)
        if end < 0:
            raise ValueError(f"{spec!r}: the options' '[' is never closed (quote a ']' inside them)")
        options = _options(rest[1:end], spec)
        rest = rest[end + 1:]
    if not rest.startswith(":") or not rest[1:].strip():
        raise ValueError(f"{spec!r} is not cmd:COMMAND or cmd[OPTIONS]:COMMAND (e.g. cmd:./my-statusline.sh)")
    if options.pop("no_context_window", False):
        options["context_window"] = False
    return CommandTracker(rest[1:].strip(), **options)


def _closing_bracket(text: str) -> int:
    """Where the ``]`` closing ``text``'s leading ``[`` is, outside quotes; -1 when it is not closed."""
    quote = ""
    escaped = False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "]":
            return i
    return -1


def _options(text: str, spec: str) -> dict[str, Any]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"{spec!r}: its options do not parse: {exc}") from None
    out: dict[str, Any] = {}
    for word in words:
        key, has_value, value = word.partition("=")
        kind = _OPTIONS.get(key)
        if kind is None:
            raise ValueError(f"{spec!r}: no option {key!r} (known: {', '.join(sorted(_OPTIONS))})")
        if kind is bool:
            out[key] = value.lower() not in ("0", "false", "no") if has_value else True
            continue
        if not has_value:
            raise ValueError(f"{spec!r}: option {key!r} needs a value ({key}=...)")
        try:
            out[key] = kind(value)
        except ValueError:
            raise ValueError(f"{spec!r}: option {key}={value!r} is not a {kind.__name__}") from None
    return out
