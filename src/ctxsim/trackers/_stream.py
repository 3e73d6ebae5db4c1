"""A tracker in any language, fed the stream: one long-lived process per session, one JSON line per message.

:class:`StreamTracker` runs a command (``/bin/sh -c``, from the directory ctxsim was started in) once per session
and speaks the *stream tracker protocol* with it:

- ctxsim writes to its stdin one line per message the Agent SDK yields, the message exactly as the TypeScript
  ``@anthropic-ai/claude-agent-sdk`` yields it: the CLI's stream-json object (``system``/``init``, ``assistant`` with
  ``message.usage`` and ``parent_tool_use_id``, ``user``, ``stream_event`` when partial messages are on, ``result``,
  ``system``/``compact_boundary``, ...) as one line of JSON; the control protocol is never sent (both SDKs keep it
  to themselves);
- the command answers each line with exactly one line: its estimate of the main context in tokens (a non-negative
  integer), or ``null`` (it does not know);
- the estimate it gives after the message that closes an observation point is the one judged there.

The command learns the world of the session from environment variables (:meth:`TrackerWorld.environment
<ctxsim.trackers.TrackerWorld.environment>`: ``CTXSIM_WINDOW``, ``CTXSIM_USAGE``, ``CTXSIM_AUTOCOMPACT_TOKENS``,
``CTXSIM_MODEL``, ``CTXSIM_CLI_VERSION``), and runs where ctxsim was started, with the user's ``HOME``. It is
started at the session's first message and stopped after its last (stdin closed, then its process group killed):
every session gets a fresh process, so there is no reset line. A command that cannot be started, exits, runs past
``timeout`` seconds on a message, writes more than 64 KiB for one message or answers anything but a count or
``null`` is one :class:`~ctxsim.trackers.PointTrackerError`: a ``ctxsim:`` line naming the command and the
message, and the run gives no verdict.

On a command line (``pytest --ctx-tracker``, ``ctxsim run/score/fuzz --tracker``, ``ctxsim judge``)::

    stream:node my-tracker.mjs
    stream[timeout=5 name=my-gauge]:./target/release/gauge --stream
    stream[cwd=/home/me/gauge]:node bin/gauge.mjs     # run from that directory, wherever ctxsim is started

Options: ``timeout`` (seconds a message), ``name`` (what reports call it), ``cwd`` (where it runs; default the
directory ctxsim was started in).
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..processes import LineError, LineProcess, printable, program as _program, split_spec, tail as _tail
from ._base import PointTrackerError, TrackerWorld

__all__ = ["DEFAULT_TIMEOUT", "SPEC_OPTIONS", "StreamTracker", "parse_stream_spec"]

DEFAULT_TIMEOUT = 10.0
"""Seconds the command may take to answer one message (the first one includes its start)."""
_MAX_DIGITS = 15
"""An answer of more digits is not a token count."""


@dataclass
class StreamTracker:
    """A command speaking the stream tracker protocol, judged as a tracker: see the module's docstring.

    >>> StreamTracker("node my-tracker.mjs")
    """

    command: str
    """A shell command line (run by ``/bin/sh -c``)."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds it may take to answer one message."""
    world: TrackerWorld = field(default_factory=TrackerWorld)
    """The world it is told (:meth:`~ctxsim.trackers.base.TrackerWorld.environment`)."""
    env: Mapping[str, str] = field(default_factory=dict)
    """More environment variables for the command (it gets ``PATH``, ``LANG``, ``HOME``, ``TERM=dumb``, the world's
    and these)."""
    cwd: str = field(default_factory=os.getcwd)
    """Where it runs: default, the directory ctxsim was started in."""
    name: str = ""
    """What reports call it (default: ``stream:`` and the program it runs)."""

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError("ctxsim: StreamTracker: the command is empty")
        if not self.timeout > 0:
            raise ValueError(f"ctxsim: StreamTracker: timeout must be positive seconds, not {self.timeout!r}")
        if not self.name:
            self.name = f"stream:{_program(self.command)}"
        self.cwd = str(Path(self.cwd).expanduser())
        if not Path(self.cwd).is_dir():
            raise ValueError(f"ctxsim: StreamTracker: cwd {self.cwd!r} is not a directory")
        self._process: LineProcess | None = None
        self._stop: weakref.finalize[..., Any] | None = None
        self._messages = 0
        self._estimate: int | None = None

    # --- the tracker protocol (fed the raw line with each message) --------------------------------------------

    def observe_frame(self, message: Any, raw: dict[str, Any]) -> None:
        """Send ``raw`` (the stream-json object ``message`` was parsed from) and read the command's answer."""
        self._messages += 1
        process = self._process or self._start()
        line = json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            answer = process.exchange(line, self.timeout)
        except LineError as exc:
            error = self._error(exc.what, raw, exc.stderr)
            self._abandon(process)
            raise error from None
        self._estimate = self._read(answer, raw, process)

    def observe(self, message: Any) -> None:
        raise TypeError("ctxsim: a stream tracker is fed the raw stream-json line of each message; run it through "
                        "ctxsim.check (run_tracker, run_scenario)")

    def context_tokens(self) -> int | None:
        """The command's answer to the last message."""
        return self._estimate

    def session_ended(self) -> None:
        """Stop the command (the oracle calls it once the session is played); the next message starts a fresh one.
        Idempotent."""
        stop, self._stop, self._process = self._stop, None, None
        if stop is not None:
            stop()  # the process's close(), once
        self._estimate = None
        self._messages = 0

    # --- internals ---------------------------------------------------------------------------------------------

    def _abandon(self, process: LineProcess) -> None:
        """A process that broke the protocol: killed at once (no grace to exit), the session over."""
        process.close(grace=0)
        self.session_ended()

    def environment(self) -> dict[str, str]:
        """The command's environment."""
        env = {"PATH": os.environ.get("PATH", os.defpath), "LANG": os.environ.get("LANG", "C.UTF-8"),
               "TERM": "dumb"}
        for inherited in ("HOME", "TMPDIR"):
            if inherited in os.environ:
                env[inherited] = os.environ[inherited]
        env.update(self.world.environment())
        env.update(self.env)
        return env

    def _start(self) -> LineProcess:
        try:
            process = LineProcess(self.command, env=self.environment(), cwd=self.cwd)
        except LineError as exc:
            raise self._error(exc.what, None, exc.stderr) from None
        self._process = process
        self._stop = weakref.finalize(self, process.close)  # a tracker dropped mid-session leaves nothing running
        return process

    def _read(self, answer: bytes, raw: dict[str, Any], process: LineProcess) -> int | None:
        text = answer.decode(errors="replace").strip()
        if text == "null":
            return None
        if text.isascii() and text.isdigit() and len(text) <= _MAX_DIGITS:
            return int(text)
        shown = text if len(text) <= 80 else text[:77] + "..."
        error = self._error(f"answered {shown!r}, which is neither a token count (a non-negative integer) nor null",
                            raw, process.stderr)
        self._abandon(process)
        raise error

    def _error(self, what: str, raw: dict[str, Any] | None, stderr: str) -> PointTrackerError:
        where = "" if raw is None else f" on message #{self._messages} ({_describe(raw)})"
        tail = printable(" | ".join(line.strip() for line in _tail(stderr).splitlines() if line.strip()))  # one line
        return PointTrackerError(f"ctxsim: stream tracker {self.name} ({self.command!r}){where} {what}"
                                 + (f"; stderr ends: {tail}" if tail else "; stderr was empty"))


def _describe(raw: dict[str, Any]) -> str:
    """A message in a few words: ``assistant msg_01...``, ``system/compact_boundary``, ``result/success``."""
    kind = str(raw.get("type"))
    subtype = raw.get("subtype")
    message = raw.get("message")
    ident = message.get("id") if isinstance(message, dict) else None
    return kind + (f"/{subtype}" if isinstance(subtype, str) else "") + (f" {ident}" if isinstance(ident, str) else "")


SPEC_OPTIONS = {"timeout": float, "name": str, "cwd": str}
"""The options a ``stream[...]`` spec takes, and their types."""


def parse_stream_spec(spec: str, world: TrackerWorld | None = None) -> StreamTracker:
    """The :class:`StreamTracker` that ``stream:COMMAND`` or ``stream[OPTIONS]:COMMAND`` names (options: ``timeout``,
    ``name``, ``cwd``), told ``world``. Raises ``ValueError`` saying what is wrong."""
    command, options = split_spec(spec, "stream", SPEC_OPTIONS, example="stream:node my-tracker.mjs")
    return StreamTracker(command, world=world or TrackerWorld(), **options)
