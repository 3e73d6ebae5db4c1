"""A tracker in any language: a statusline command run as Claude Code runs it, at every observation point.

:class:`CommandTracker` is a :class:`~ctxsim.trackers.PointTracker`. At each point it judges, ctxsim writes the
session's transcript as the CLI had written it by then (:func:`ctxsim.wire.render_transcript`) under a private ``HOME``
and ``CLAUDE_CONFIG_DIR``, runs the command through ``/bin/sh -c`` from the directory ctxsim was started from (so
relative paths, ``./script``, ``npx`` and shell lines work) with the statusline payload of that point on stdin
(:func:`ctxsim.wire.statusline_payloads`, its ``transcript_path`` pointing at the file just written; both are the run's
:class:`ctxsim.surfaces.Rendition`'s, rendered once a run) and reads its stdout (:mod:`ctxsim.trackers`): a bare integer
on the last line, a preset's format, or the user's regex; blank, ``TBD`` and the usual renderings of "unknown" (``--``,
``?``, ``N/A``...) are no estimate. The command is told the world as a Python factory is
(:class:`~ctxsim.trackers.TrackerWorld`), in environment variables (:data:`WORLD_VARIABLES`): ``CTXSIM_WINDOW``,
``CTXSIM_USAGE`` (``additive`` or ``inclusive``), ``CTXSIM_AUTOCOMPACT_TOKENS``, ``CTXSIM_MODEL`` and
``CTXSIM_CLI_VERSION``.

Points are independent (each has its own ``HOME``), so they run in parallel on ``workers`` threads. A command that
exits non-zero, runs past ``timeout`` seconds, prints more than 64 KiB on stdout or stderr, or prints nonsense
raises one :class:`~ctxsim.trackers.PointTrackerError` naming the command, the session, the point and the tail of
its stderr; the first failing point (in the session's order) is the one reported. A point ends when the command
itself exits; whatever it left running is killed then, a ``setsid`` escape included (:mod:`ctxsim.processes`).
Ctrl-C, or SIGTERM, stops every command at once and removes the private homes.

On a command line (``pytest --ctx-tracker``, ``ctxsim run/fuzz/score --tracker``)::

    cmd:COMMAND                                   # the last line of stdout is the number of tokens
    cmd[preset=ccusage]:npx ccusage statusline --offline --no-cache
    cmd[regex='ctx (?P<percent>[0-9.]+)%' timeout=5 workers=2 config=~/my-claude-home]:my-statusline

Options (inside ``[...]``, space-separated, shell quoting): ``preset`` (:data:`~ctxsim.trackers.PRESETS`),
``regex``, ``timeout`` (seconds a point, default 10), ``workers`` (default: 4, at most the CPUs), ``config`` (a
directory copied into each point's private ``HOME``), ``no_context_window`` (the payload without
``context_window``, as Claude Code sent it before 2.0.65), ``cli_version`` (the Claude Code version rendered;
default: the bundled CLI's), ``after_compaction`` (``zero`` or ``null``: the payload right after a compaction),
``cwd`` (where it runs; ``home``: the point's private ``HOME``), ``unknown`` (a regex: output it matches is no
estimate), ``name`` (what reports call it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .._sync import interrupts, terminate_as_interrupt, wait_in_slices
from ..processes import (
    OUTPUT_LIMIT,
    Outcome,
    exited,
    printable,
    program as _program,
    run_command,
    split_spec,
    subreaper,
    tail as _tail,
)
from ._base import Estimate, PointTrackerError, TrackerWorld
from ._readout import PRESETS, Readout, UnreadableOutput, read_output

if TYPE_CHECKING:
    from ..faults import FaultPlan
    from ..wire import Observation
    from ..world import Session

__all__ = ["DEFAULT_TIMEOUT", "SPEC_OPTIONS", "WORLD_VARIABLES", "CommandTracker", "parse_command_spec",
           "world_environment"]

DEFAULT_TIMEOUT = 10.0
"""Seconds a command may run at one point before it is killed (the slowest shipped tool takes under one)."""
SERIAL_BELOW = 0.01
"""Seconds: a command whose first point took less runs its points one after another (measured with a compiled
statusline, whose points take about 2 ms: two worker threads made the judgement slower, not faster)."""


def _default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


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
    """Forces what the payload's ``context_window`` says right after every compaction: ``null`` or ``zero`` (an
    all-zero ``current_usage`` and 0%); default: what the world says (:func:`ctxsim.wire.after_compaction`: zeros
    when the compaction kept a trailing segment, null when not, as the recorded REPL of every bundled CLI)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment variables for the command (it gets ``PATH``, ``LANG``, ``HOME``, ``CLAUDE_CONFIG_DIR``,
    ``TERM=dumb``, the world's :data:`WORLD_VARIABLES` and these)."""
    cwd: str | Path | None = None
    """The directory the command runs in: default, the one ctxsim was started from (``pytest``, ``ctxsim run``), so
    ``node statusline.js`` and ``./my-statusline.sh`` find their files; ``"home"``: each point's private ``HOME``."""
    unknown: str | None = None
    """A regex: output whose last line it matches says "no estimate" (default
    ``UNKNOWN``: ``--``, ``-``, ``?``, ``N/A``, ``…``...; empty: only blank output
    and ``TBD`` do)."""
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
        if self.unknown:
            try:
                re.compile(self.unknown)
            except re.error as exc:
                raise ValueError(f"ctxsim: CommandTracker: the unknown regex {self.unknown!r} does not compile: "
                                 f"{exc}") from None
        if self.cwd is None:
            self.cwd = os.getcwd()
        elif self.cwd != "home" and not Path(self.cwd).expanduser().is_dir():
            raise ValueError(f"ctxsim: CommandTracker: cwd {str(self.cwd)!r} is not a directory")

    # --- the PointTracker protocol ---------------------------------------------------------------------------

    def estimate_points(self, session: Session, observations: Sequence[Observation],
                        faults: FaultPlan | None = None) -> list[Estimate]:
        """Run the command at each of ``observations`` (in parallel) and read its estimates, in order. ``faults``:
        the plan the stream was played with; its transcript form is applied to the transcript, and what that makes
        Claude Code show to the payloads (:func:`ctxsim.surfaces.apply_statusline`)."""
        from ..surfaces import Rendition

        wanted = {o.label for o in observations}  # by label: a fault may reorder (and renumber) the stream's points
        rendition = Rendition.of(session, faults)
        transcript = rendition.transcript(self.cli_version)
        payloads = rendition.payloads(self.cli_version, with_context_window=self.context_window,
                                      compaction=self.after_compaction)
        told: dict[int, dict[str, str]] = {}  # the world's variables, by the window in force
        runs = [_PointRun(i, point.observation, payloads[i], told.setdefault(
                    point.observation.window, world_environment(session, point.observation.window, self.cli_version)))
                for i, point in enumerate(transcript.points) if point.observation.label in wanted]
        lines = {path: [json.dumps(row, separators=(",", ":")) + "\n" for row in file.rows]
                 for path, file in transcript.files.items()}  # each row serialized once, not once per point
        cancel = threading.Event()
        since = interrupts()

        def stop() -> bool:  # Ctrl-C or SIGTERM, also where this runs on a worker thread
            return cancel.is_set() or interrupts() != since
        with terminate_as_interrupt(), subreaper(), tempfile.TemporaryDirectory(prefix="ctxsim-cmd-",
                                                                                   dir=_scratch()) as root:
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
                    return self._run(run, session, payload, home, config_dir, stop)
                finally:
                    shutil.rmtree(home, ignore_errors=True)  # a long session's transcripts add up: one at a time

            estimates = self._in_parallel(one, runs, cancel, stop)
        by_label = {run.observation.label: e for run, e in zip(runs, estimates)}
        return [by_label.get(o.label) for o in observations]

    def payload_figures(self, session: Session, faults: FaultPlan | None = None) -> dict[str, int | None]:
        """What Claude Code's own payload says the context is at each point of ``session`` (``faults``: the plan
        the stream was played with, :func:`ctxsim.surfaces.apply_statusline`), by label: its ``current_usage``
        prompt (input + cache creation + cache read), None where it is null; empty without ``context_window``. The
        oracle uses it to tell a command's bug from Claude Code's (:func:`ctxsim.check.payload_wrong`)."""
        from ..surfaces import Rendition

        if not self.context_window:
            return {}
        rendition = Rendition.of(session, faults)
        payloads = rendition.payloads(self.cli_version, compaction=self.after_compaction)
        labels = [p.observation.label for p in rendition.transcript(self.cli_version).points]
        out: dict[str, int | None] = {}
        for label, payload in zip(labels, payloads):
            usage = payload.get("context_window", {}).get("current_usage")
            out[label] = None if usage is None else (usage["input_tokens"] + usage["cache_creation_input_tokens"]
                                                     + usage["cache_read_input_tokens"])
        return out

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

    def environment(self, home: Path, config_dir: Path, world: Mapping[str, str] | None = None) -> dict[str, str]:
        """The command's environment at a point whose private ``HOME`` is ``home`` (``world``: the point's
        :func:`world_environment`)."""
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8"),
               "HOME": str(home), "CLAUDE_CONFIG_DIR": str(config_dir), "TERM": "dumb", "COLUMNS": "200",
               "TMPDIR": str(home), **_user_caches(), **(world or {})}
        env.update(self.env)
        return env

    def working_directory(self, home: Path) -> Path:
        """Where the command runs at a point whose private ``HOME`` is ``home`` (:attr:`cwd`)."""
        return home if self.cwd == "home" else Path(str(self.cwd)).expanduser()

    def _run(self, run: _PointRun, session: Session, payload: dict[str, Any], home: Path,
             config_dir: Path, stop: Callable[[], bool] | None = None) -> Estimate:
        try:
            outcome = run_command(self.command, stdin=json.dumps(payload).encode(), cwd=self.working_directory(home),
                                  env=self.environment(home, config_dir, run.world), timeout=self.timeout, stop=stop)
        except OSError as exc:
            raise self._error(session, run, f"could not be started: {exc}", "") from None
        stderr = outcome.stderr.decode(errors="replace")
        failure = _failure(outcome, self.timeout)
        if failure is not None:
            raise self._error(session, run, failure, stderr)
        stdout = outcome.stdout.decode(errors="replace")
        world = TrackerWorld.of(session)
        window = dataclasses.replace(world, cli_version=world.cli_version or self.cli_version).percent_window_of(
            _window(payload, run.observation.window))
        try:
            return read_output(stdout, self.readout, window, self.unknown)
        except UnreadableOutput as exc:
            raise self._error(session, run, f"printed nonsense: {exc}; stdout ends {_tail(stdout, 200)!r}",
                              stderr) from None

    def _error(self, session: Session, run: _PointRun, what: str, stderr: str) -> PointTrackerError:
        name = session.name or session.session_id
        tail = printable(" | ".join(line for line in _tail(stderr).splitlines() if line.strip()))  # one line
        return PointTrackerError(
            f"ctxsim: command tracker {self.name} ({self.command!r}) on session {name!r} at point "
            f"#{run.observation.index} ({run.observation.label}) {what}"
            + (f"; stderr ends: {tail}" if tail else "; stderr was empty"))

    # --- the pool --------------------------------------------------------------------------------------------

    def _in_parallel(self, one: Callable[[_PointRun], Estimate], runs: list[_PointRun], cancel: threading.Event,
                     stop: Callable[[], bool]) -> list[Estimate]:
        """``one(run)`` for every run on :attr:`workers` threads (one after another where the first point took less
        than :data:`SERIAL_BELOW`: a native program's point is over before a thread would help); on the first error
        the points not yet started are dropped and the error of the earliest failing point is raised (every point
        before it has started, so which one that is does not depend on timing). An interrupt here (Ctrl-C) sets
        ``cancel``: every running command is killed at once (``stop()`` tells them), and the interrupt goes on."""
        if self.workers == 1 or len(runs) <= 1:
            return [one(run) for run in runs]
        failed = threading.Event()

        def guarded(run: _PointRun) -> Estimate:
            if stop():
                raise KeyboardInterrupt
            if failed.is_set():
                raise _Skipped
            try:
                return one(run)
            except BaseException:
                failed.set()
                raise

        pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="ctxsim-cmd")
        futures: list[Future[Estimate]] = []

        def over(seconds: float) -> bool:
            done, not_done = wait(futures, seconds, return_when=FIRST_EXCEPTION)
            return not not_done or any(not f.cancelled() and f.exception() is not None for f in done)

        rest: list[Estimate] = []
        try:
            started = time.monotonic()
            futures.append(pool.submit(guarded, runs[0]))
            wait_in_slices(over)  # sliced: a Ctrl-C delivered to a worker's thread still reaches this one at once
            first = futures[0]
            if first.exception() is None and time.monotonic() - started < SERIAL_BELOW:
                rest = [one(run) for run in runs[1:]]  # as fast as a process start: threads would cost more
            else:
                futures += [pool.submit(guarded, run) for run in runs[1:]]
                wait_in_slices(over)
        except BaseException:
            cancel.set()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        out: list[Estimate] = []
        for future in futures:
            error = None if not future.done() or future.cancelled() else future.exception()
            if error is not None and not isinstance(error, _Skipped):
                raise error
            out.append(future.result() if future.done() and not future.cancelled() and error is None else None)
        return out + rest


class _Skipped(Exception):
    """A point not run because an earlier one failed."""


@dataclass(frozen=True)
class _PointRun:
    position: int
    """The point's position in the rendering (0-based)."""
    observation: Observation
    payload: dict[str, Any]
    world: dict[str, str]
    """The point's :func:`world_environment`."""


WORLD_VARIABLES: Mapping[str, str] = {
    "CTXSIM_WINDOW": "the context window in force at the point, in tokens",
    "CTXSIM_USAGE": "how the provider reports usage: additive (input, cache creation and cache read add up) or "
                    "inclusive (a gateway whose input_tokens already holds the cache reads)",
    "CTXSIM_AUTOCOMPACT_TOKENS": "where Claude Code compacts on its own, in tokens",
    "CTXSIM_MODEL": "the model the session runs",
    "CTXSIM_CLI_VERSION": "the Claude Code version whose transcript and payload the command is shown",
}
"""What a command is told of the world, as environment variables: what a Python factory learns from
:class:`~ctxsim.trackers.TrackerWorld`."""


def world_environment(session: Session, window: int, cli_version: str | None = None) -> dict[str, str]:
    """The :data:`WORLD_VARIABLES` at a point of ``session`` whose window is ``window``
    (:meth:`TrackerWorld.environment`, the one place they are written)."""
    return dataclasses.replace(TrackerWorld.of(session), window=window).environment(cli_version)


def _user_caches() -> dict[str, str]:
    """The user's package caches, kept across the private ``HOME`` (``npx tool`` finds what it fetched before
    instead of fetching it again for every point)."""
    if "npm_config_cache" in os.environ or "NPM_CONFIG_CACHE" in os.environ:
        return {}
    cache = Path.home() / ".npm"
    return {"npm_config_cache": str(cache)} if cache.is_dir() else {}


def _scratch() -> str | None:
    """Where the points' private homes go: a memory file system when there is one (directories are made and
    removed for every point), else the temporary directory."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK) else None


def _window(payload: Mapping[str, Any], default: int) -> int:
    """The raw window a percentage is of: the payload's ``context_window_size``, else the session's (where Claude
    Code's ``used_percentage`` counts against the autocompact window, the percentage is read as that:
    :meth:`ctxsim.world.ClaudeSettings.percent_window`)."""
    context = payload.get("context_window")
    size = context.get("context_window_size") if isinstance(context, Mapping) else None
    return size if isinstance(size, int) and size > 0 else default


def _failure(outcome: Outcome, timeout: float) -> str | None:
    """What went wrong with a command that ran, in a few words (None: it exited 0 and printed within bounds)."""
    if outcome.cancelled:
        raise KeyboardInterrupt  # the run was interrupted: the command was killed, the interrupt goes on
    if outcome.timed_out:
        return f"ran past its timeout of {timeout:g} s and was killed"
    if outcome.overflow:
        return f"printed more than {OUTPUT_LIMIT // 1024} KiB on {outcome.overflow} and was killed"
    if outcome.returncode is not None and outcome.returncode != 0:
        return exited(outcome.returncode)
    return None if outcome.returncode == 0 else "exited with no status"


SPEC_OPTIONS = {"preset": str, "regex": str, "timeout": float, "workers": int, "config": str, "name": str,
            "no_context_window": bool, "cli_version": str, "after_compaction": str, "cwd": str,
            "unknown": str}
"""The options a ``cmd[...]`` spec takes, and their types."""


def parse_command_spec(spec: str) -> CommandTracker:
    """The :class:`CommandTracker` that ``cmd:COMMAND`` or ``cmd[OPTIONS]:COMMAND`` names (see the module's
    docstring). Raises ``ValueError`` saying what is wrong."""
    command, options = split_spec(spec, "cmd", SPEC_OPTIONS, example="cmd:./my-statusline.sh")
    if options.pop("no_context_window", False):
        options["context_window"] = False
    return CommandTracker(command, **options)
