"""A long-lived child process spoken to one line at a time: a line written to its stdin, one line read back.

:class:`LineProcess` starts ``/bin/sh -c COMMAND`` in a session (and process group) of its own and keeps it for as
long as its user needs it. :meth:`LineProcess.exchange` writes one line and reads one line back, waiting at most
``timeout`` seconds, reading at most :data:`LINE_LIMIT` bytes of stdout and of stderr while it waits (a line
past it, or that much of stderr, stops the exchange); it never blocks on a pipe (a child that does not read its
stdin, or that fills its stderr, cannot hang it). :meth:`LineProcess.close` closes its stdin, gives it a moment to
exit, then kills its whole process group. Every failure is a :class:`LineError` saying what happened, with the
tail of what the child wrote on stderr.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

from ._run import TOKEN_ENV, exited, kill_tree, not_started, starting, subreaper, under_way

__all__ = ["LINE_LIMIT", "LineError", "LineProcess"]

LINE_LIMIT = 64 * 1024
"""Bytes of stdout (one answer) and of stderr a child may write in one exchange."""
_STDERR_KEPT = 4096
"""Bytes of the child's stderr kept for error messages (the last ones)."""
_EXIT_GRACE = 1.0
"""Seconds :meth:`LineProcess.close` waits for the child to exit once its stdin is closed (and a child that closed
its stdout is given to exit)."""


class LineError(Exception):
    """An exchange failed: the message says how (``exited with status 1``, ``ran past its timeout of 10 s``...)."""

    def __init__(self, what: str, stderr: str) -> None:
        super().__init__(what)
        self.what = what
        self.stderr = stderr
        """The tail of what the child wrote on stderr."""


class LineProcess:
    """``/bin/sh -c command`` with ``env`` in ``cwd``, spoken to line by line (see the module's docstring)."""

    def __init__(self, command: str, *, env: Mapping[str, str], cwd: str | Path) -> None:
        self._token = uuid.uuid4().hex
        self._reaper = subreaper()  # while it lives: a child it lets escape its group stays ours to find and kill
        self._reaper.__enter__()
        starting()
        try:
            self.process = subprocess.Popen(["/bin/sh", "-c", command], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                            env={**env, TOKEN_ENV: self._token}, start_new_session=True)
        except BaseException as exc:
            not_started()
            self._reaper.__exit__(None, None, None)
            if isinstance(exc, OSError):
                raise LineError(f"could not be started: {exc}", "") from None
            raise
        under_way(self.process)
        assert self.process.stdin and self.process.stdout and self.process.stderr
        self._stdin = self.process.stdin.fileno()
        self._stdout = self.process.stdout.fileno()
        self._stderr = self.process.stderr.fileno()
        for fd in (self._stdin, self._stdout, self._stderr):
            os.set_blocking(fd, False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)
        self._selector.register(self._stderr, selectors.EVENT_READ)
        self._pending = bytearray()
        """What the child wrote on stdout beyond the last line read."""
        self._stderr_tail = bytearray()
        self._closed = False

    @property
    def stderr(self) -> str:
        """The last bytes the child wrote on stderr, decoded."""
        return self._stderr_tail.decode(errors="replace")

    def exchange(self, line: bytes, timeout: float) -> bytes:
        """Write ``line`` (a newline is added) and return the next line the child writes (without its newline).
        Raises :class:`LineError` when the child exits first, does not answer within ``timeout`` seconds, writes
        more than :data:`LINE_LIMIT` bytes without a newline or on stderr, or answers with more than one line."""
        if self._closed:
            raise LineError("was already stopped", self.stderr)
        out = memoryview(line + b"\n")
        deadline = time.monotonic() + timeout
        stderr_bytes = 0
        writing = True
        self._selector.register(self._stdin, selectors.EVENT_WRITE)
        try:
            while b"\n" not in self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LineError(f"gave no answer within its timeout of {timeout:g} s", self.stderr)
                for key, _ in self._selector.select(min(left, 1.0)):
                    if key.fd == self._stdin:
                        try:
                            written = os.write(self._stdin, out[:65536])
                        except BlockingIOError:
                            continue
                        except (BrokenPipeError, ConnectionResetError):
                            written = len(out)  # it closed its stdin: what it answers (or its exit) tells
                        out = out[written:]
                        if not out:
                            self._selector.unregister(self._stdin)
                            writing = False
                        continue
                    chunk = self._read(key.fd)
                    if chunk is None:
                        continue
                    if key.fd == self._stderr:
                        stderr_bytes += len(chunk)
                        self._stderr_tail = (self._stderr_tail + chunk)[-_STDERR_KEPT:]
                        if stderr_bytes > LINE_LIMIT:
                            raise LineError(f"wrote more than {LINE_LIMIT // 1024} KiB on stderr for one line",
                                            self.stderr)
                    else:
                        self._pending += chunk
                        if b"\n" not in self._pending and len(self._pending) > LINE_LIMIT:
                            raise LineError(f"wrote more than {LINE_LIMIT // 1024} KiB without a newline",
                                            self.stderr)
                if self._stdout not in self._selector.get_map() and b"\n" not in self._pending:
                    raise LineError(self._ended(), self.stderr)
        finally:
            if writing:
                self._selector.unregister(self._stdin)
        answer, _, self._pending = self._pending.partition(b"\n")
        if len(answer) > LINE_LIMIT:
            raise LineError(f"wrote a line of more than {LINE_LIMIT // 1024} KiB", self.stderr)
        if b"\n" in self._pending:
            raise LineError(f"answered with more than one line ({bytes(answer)[:80]!r}, then "
                            f"{bytes(self._pending).splitlines()[0][:80]!r})", self.stderr)
        return bytes(answer)

    def _read(self, fd: int) -> bytes | None:
        """What ``fd`` has (None: nothing yet); at the end of the file, ``fd`` is no longer watched."""
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return None
        if not chunk:
            self._selector.unregister(fd)
            return None
        return chunk

    def _ended(self) -> str:
        """How the child ended, once its stdout closed (it is given a moment to exit)."""
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(_EXIT_GRACE)
        code = self.process.returncode
        if code is None:
            return "closed its stdout without answering"
        if code < 0:
            return f"was killed by signal {-code}"
        return f"{exited(code)} without answering"

    def close(self, *, grace: float = _EXIT_GRACE) -> None:
        """Close the child's stdin, wait (at most ``grace`` seconds) for it to exit, then kill its process group and
        every process that escaped it (:func:`kill_tree`).
        Idempotent."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(grace)
        try:
            kill_tree(self.process, self._token)  # its group, and whatever escaped it
        finally:
            self._reaper.__exit__(None, None, None)
        self._selector.close()
        for pipe in (self.process.stdout, self.process.stderr):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()
