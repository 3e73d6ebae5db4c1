"""Running a statusline command as a bounded, tidy child: its output capped, its whole tree reaped.

:func:`run_command` starts ``/bin/sh -c COMMAND`` in a process group of its own (a plain command, words naming a
program found on ``PATH`` and its arguments with nothing the shell would read, is started without the shell: the
same program, arguments and environment, one process start fewer), feeds it its stdin and reads its
stdout and stderr, each up to :data:`OUTPUT_LIMIT` bytes; it returns once the shell itself has exited (not when its
pipes close: a background child that keeps stdout open does not hold the point), the deadline passed, the output
went over the limit, or ``stop()`` said so (the run was interrupted). Whatever the command left behind is then
killed and reaped (no zombie is left), every process found by ancestry rather than by what it says about itself
(:func:`kill_tree`): its process group and session, the shell's descendants and, on Linux, where this process is
made a *child subreaper* while commands run (:func:`subreaper`), the orphans re-parented to it, a ``setsid`` escape
that dropped the point's token (``CTXSIM_POINT``) included. The caller's own children are never touched.

Where there is no subreaper (not Linux), a ``setsid`` escape outlives the point: only the process group is killed.
"""

from __future__ import annotations

import contextlib
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from .._sync import Proc, processes as _processes

__all__ = [
    "OUTPUT_LIMIT",
    "TOKEN_ENV",
    "Outcome",
    "exited",
    "kill_tree",
    "not_started",
    "run_command",
    "starting",
    "subreaper",
    "under_way",
]

OUTPUT_LIMIT = 64 * 1024
"""Bytes of stdout, and of stderr, a command may print at one point; past it the command is killed."""
TOKEN_ENV = "CTXSIM_POINT"
"""The variable each command's environment carries, unique per point: how its escaped descendants are found."""
_POLL = 0.05
"""Seconds between looks at the command's state while it runs."""
_DRAIN = 0.2
"""Seconds the pipes are still read once the command exited (what it wrote just before exiting)."""


_SHELL_STATUS = {126: "the shell found the program but could not run it: it never started",
                 127: "the shell found no such program: it never started"}
"""What ``/bin/sh`` means by the statuses it exits with itself when the command cannot start."""


def exited(code: int) -> str:
    """``exited with status N``, with what the shell means by it when N says the command never started (126,
    127)."""
    said = _SHELL_STATUS.get(code)
    return f"exited with status {code}" + (f" ({said})" if said else "")


@dataclass
class Outcome:
    """How one command ended."""

    returncode: int | None
    """Its exit status (negative: the signal that ended it); None when it was killed by ctxsim."""
    stdout: bytes
    stderr: bytes
    timed_out: bool = False
    overflow: str = ""
    """``stdout`` or ``stderr`` when that one went over :data:`OUTPUT_LIMIT` (the command was killed)."""
    cancelled: bool = False
    """The run was interrupted (``stop()`` said so): the command was killed."""


# --- the subreaper --------------------------------------------------------------------------------------------

_PR_SET_CHILD_SUBREAPER = 36
_reaper_lock = threading.Lock()
_reaper_users = 0


def _prctl_subreaper(on: bool) -> bool:
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


@contextlib.contextmanager
def subreaper() -> Iterator[None]:
    """While inside, this process is a child subreaper (Linux): descendants orphaned meanwhile (a command's
    ``setsid`` child once the command exits) become its children instead of init's, so they can be found and
    reaped. Nested and concurrent uses share it; the last one out turns it off."""
    global _reaper_users
    with _reaper_lock:
        _reaper_users += 1
        if _reaper_users == 1:
            _prctl_subreaper(True)
    try:
        yield
    finally:
        with _reaper_lock:
            _reaper_users -= 1
            if _reaper_users == 0:
                _prctl_subreaper(False)


# --- finding and killing what a command left --------------------------------------------------------------------


def _carries(pid: int, marker: bytes) -> bool:
    """Whether the live process ``pid`` carries ``marker`` in its environment. A process in the middle of an
    ``exec`` shows none for a moment: it is read again (up to 0.2 s), and one that still shows none (but exists)
    counts as carrying it, so that what escapes while it execs is killed, not left."""
    deadline = time.monotonic() + 0.2
    while True:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except FileNotFoundError:
            return False  # gone
        except OSError:
            environ = b""
        if environ:
            return marker in environ.split(b"\0")
        if time.monotonic() > deadline:
            return os.path.exists(f"/proc/{pid}")
        time.sleep(0.005)


def _start_tick(pid: int) -> int:
    """When ``pid`` started, in clock ticks since boot (0 where ``/proc`` does not say)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return int(f.read().rpartition(b")")[2].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


_shells: dict[int, int] = {}
"""The command shells under way (:func:`run_command`'s and :class:`LineProcess`'s), each pid with when it started."""
_busy_since = [0]
"""When the first of the shells under way started: an orphan re-parented here since then, in a session of its own
and claimed by no shell, is a leftover of theirs (ended once the last of them ends)."""
_busy_before: list[frozenset[int]] = [frozenset()]
"""This process's children when the first of the shells under way started: never a leftover of theirs."""
_shells_lock = threading.Lock()


_starting = [0]
"""Shells about to start (between :func:`starting` and :func:`under_way`)."""


def starting() -> None:
    """Say a command's shell is about to start; then :func:`under_way` once it has (:func:`not_started` if it
    could not). The first of the shells under way notes this process's children first: never a leftover of theirs."""
    with _shells_lock:
        if not _shells and not _starting[0]:
            _busy_before[0] = frozenset(_my_children() or ())
            _busy_since[0] = -1
        _starting[0] += 1


def not_started() -> None:
    """The shell :func:`starting` announced could not be started."""
    with _shells_lock:
        _starting[0] -= 1


def under_way(process: subprocess.Popen[bytes]) -> None:
    """Count ``process``, a command's shell just started (after :func:`starting`), among the shells under way until
    :func:`kill_tree`."""
    tick = _start_tick(process.pid)
    with _shells_lock:
        _starting[0] -= 1
        _busy_since[0] = tick if _busy_since[0] < 0 else min(_busy_since[0], tick)
        _shells[process.pid] = tick


def _main_children() -> set[int] | None:
    """The children of this process's main thread, where the kernel re-parents the orphans a subreaper adopts."""
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", "rb") as f:
            return {int(pid) for pid in f.read().split()}
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class _Claim:
    """What says a process belongs to one command's point (see :func:`kill_tree`)."""

    shell: int
    marker: bytes
    born: int
    """When the shell started (clock ticks): nothing of its point is older."""
    strays_since: int | None
    """When the shells under way began, if this is the last of them to end: the orphans adopted since, claimed by
    no shell, are ended too."""
    me: int
    my_session: int
    others: frozenset[int]
    """The other shells under way (and their trees are theirs)."""
    before: frozenset[int]
    """This process's children from before the shells under way: not theirs."""

    def owns(self, p: Proc, adopted: set[int] | None) -> bool:
        """Whether ``p`` is the point's; ``adopted``: the orphans re-parented here (None: not known)."""
        if p.pid == self.shell or p.pid in self.others:
            return False
        if p.group == self.shell or p.session == self.shell:  # its group or its session: nothing else can join
            return True
        if p.ppid != self.me:
            return False
        if p.started >= self.born and not p.zombie and _carries(p.pid, self.marker):
            return True
        return (self.strays_since is not None and p.started >= self.strays_since and p.session != self.my_session
                and p.pid not in self.before and (adopted is None or p.pid in adopted))


def _left(claim: _Claim) -> list[Proc]:
    """The live processes of the point: those it claims (:meth:`_Claim.owns`), and every descendant of theirs and
    of the shell, found by ancestry."""
    procs = [p for p in _processes() if not p.zombie]
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    adopted = _main_children()  # read again each time: a killed process's children are adopted as it dies
    stack = [p for p in procs if claim.owns(p, adopted)] + children.get(claim.shell, [])
    out: dict[int, Proc] = {}
    while stack:
        p = stack.pop()
        if p.pid not in out:
            out[p.pid] = p
            stack.extend(children.get(p.pid, ()))
    return list(out.values())


def _signal(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _my_children() -> set[int] | None:
    """This process's children (every thread's), cheaply; None where the kernel does not list them."""
    me = os.getpid()
    out: set[int] = set()
    try:
        for task in os.listdir(f"/proc/{me}/task"):
            with open(f"/proc/{me}/task/{task}/children", "rb") as f:
                out.update(int(pid) for pid in f.read().split())
    except (OSError, ValueError):
        return None
    return out


def kill_tree(process: subprocess.Popen[bytes], token: str) -> None:
    """Kill every process of the command's point and reap those that became this process's children.

    A point's processes are found by ancestry, not by what they say: the command's process group and session, the
    shell's descendants (while it lives), and, where this process is a child subreaper (:func:`subreaper`), the
    orphans re-parented to it since the shell started that carry the point's token, each with all its descendants.
    An orphan that left the session and dropped the token (``setsid env -u CTXSIM_POINT ...``) cannot be told
    from another point's: it is ended with the last of the shells under way (:func:`under_way`), as is every orphan
    re-parented here since the first of them started, in a session of its own. This process's other children (what
    other code started, in this process's session or before the shells) are never touched.

    Most commands leave nothing: then this process's children (a few, read from ``/proc/self/task/*/children``)
    say so, and ``/proc`` is not scanned."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(2.0)  # once the shell is gone, what it left is orphaned: this process's (the subreaper's)
    with _shells_lock:
        if process.pid not in _shells and _starting[0]:  # interrupted before it was counted (see run_command)
            _starting[0] -= 1
        born = _shells.pop(process.pid, 0)
        others = frozenset(_shells)
        since = None if others or _starting[0] else _busy_since[0]
        before = _busy_before[0]
    children = _my_children()
    if children is not None and not children - {process.pid} - others - before:
        return
    claim = _Claim(process.pid, f"{TOKEN_ENV}={token}".encode(), born, since, os.getpid(), os.getsid(0), others,
                   before)
    killed: set[int] = set()
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        left = _left(claim)
        if not left:
            break
        _signal([p.pid for p in left], signal.SIGSTOP)  # frozen first: a forking stray cannot outrun the kill
        left = _left(claim)
        _signal([p.pid for p in left], signal.SIGKILL)
        killed.update(p.pid for p in left)
    _reap(killed, deadline)
    me = os.getpid()
    adopted = _main_children()
    _reap({p.pid for p in _processes() if p.zombie and p.ppid == me and claim.owns(p, adopted)}, deadline)


def _reap(pids: set[int], deadline: float) -> None:
    """Collect the exit status of each of ``pids`` that is, or becomes, this process's child (an adopted orphan);
    bounded by ``deadline``."""
    waiting = set(pids)
    while waiting and time.monotonic() < deadline + 1.0:
        for pid in list(waiting):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not (or no longer) ours: its own parent reaps it, or it is gone
                if not os.path.exists(f"/proc/{pid}"):
                    waiting.discard(pid)
                continue
            if done:
                waiting.discard(pid)
        if waiting:
            time.sleep(0.005)


# --- running one command ----------------------------------------------------------------------------------------


_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+(?: +[A-Za-z0-9_@%+=:,./-]+)*")
"""A command the shell would only split into words: no quoting, expansion, redirection or operator."""


def argv_of(command: str, env: Mapping[str, str], cwd: str | Path) -> list[str]:
    """What to start for ``command``: its words when it is plain (:data:`_PLAIN`) and its program is found (on the
    environment's ``PATH``, or as a path from ``cwd``) and starts on its own (a binary, or a script with ``#!``; the
    shell runs a script without one itself), else ``/bin/sh -c COMMAND``."""
    words = command.strip().split(" ") if _PLAIN.fullmatch(command.strip()) else []
    if words and "=" not in words[0]:
        program = words[0]
        found = (os.path.join(cwd, program) if "/" in program else
                 shutil.which(program, path=env.get("PATH", os.defpath)))
        if found and os.path.isfile(found) and os.access(found, os.X_OK) and _starts_alone(found):
            return [found if "/" not in program else program, *words[1:]]
    return ["/bin/sh", "-c", command]


def _starts_alone(path: str) -> bool:
    """True for a file the kernel runs itself: an ELF binary or a ``#!`` script."""
    try:
        with open(path, "rb") as file:
            head = file.read(4)
    except OSError:
        return False
    return head.startswith((b"#!", b"\x7fELF"))


def run_command(command: str, *, stdin: bytes, env: Mapping[str, str], cwd: str | Path, timeout: float,
                stop: Callable[[], bool] | None = None, limit: int = OUTPUT_LIMIT) -> Outcome:
    """Run ``command`` through ``/bin/sh -c`` as the module's docstring says; raises ``OSError`` when it cannot
    be started."""
    token = uuid.uuid4().hex
    starting()
    try:
        process = subprocess.Popen(argv_of(command, env, cwd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, cwd=cwd, env={**env, TOKEN_ENV: token},
                                   start_new_session=True)
    except BaseException:
        not_started()
        raise
    try:  # from here on, an interrupt (even while it is being counted) still ends the shell and its tree
        under_way(process)
        return _communicate(process, stdin, timeout, stop, limit)
    finally:
        kill_tree(process, token)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(2.0)


def _communicate(process: subprocess.Popen[bytes], stdin: bytes, timeout: float, stop: Callable[[], bool] | None,
                 limit: int) -> Outcome:
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    stdout, stderr, stdin_fd = process.stdout.fileno(), process.stderr.fileno(), process.stdin.fileno()
    out = {stdout: bytearray(), stderr: bytearray()}
    selector = selectors.DefaultSelector()
    pending = memoryview(stdin)
    if pending:
        os.set_blocking(stdin_fd, False)
        selector.register(stdin_fd, selectors.EVENT_WRITE)
    else:
        process.stdin.close()
    for fd in out:
        selector.register(fd, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout

    def outcome(code: int | None, *, timed_out: bool = False, overflow: str = "", cancelled: bool = False) -> Outcome:
        return Outcome(code, bytes(out[stdout][:limit]), bytes(out[stderr][-limit:]), timed_out=timed_out,
                       overflow=overflow, cancelled=cancelled)

    exited_at: float | None = None
    try:
        while True:
            now = time.monotonic()
            if exited_at is None and process.poll() is not None:
                exited_at = now
            if exited_at is not None and (not selector.get_map() or now - exited_at > _DRAIN):
                return outcome(process.returncode)  # what still holds its pipes is a stray, killed after
            if now > deadline:
                return outcome(None, timed_out=True)
            if stop is not None and stop():
                return outcome(None, cancelled=True)
            if not selector.get_map():  # its pipes are closed: wait for its exit itself
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(min(_POLL, max(0.0, deadline - now)))
                continue
            for key, _ in selector.select(_POLL):
                fd = key.fd
                if fd == stdin_fd:
                    try:
                        written = os.write(fd, pending[:65536])
                    except BlockingIOError:
                        continue
                    except OSError:  # it closed its stdin (a broken pipe): it reads no more
                        written = len(pending)
                    pending = pending[written:]
                    if not pending:
                        selector.unregister(fd)
                        process.stdin.close()
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    selector.unregister(fd)
                    continue
                out[fd] += chunk
                if len(out[fd]) > limit:
                    return outcome(None, overflow="stdout" if fd == stdout else "stderr")
    finally:
        selector.close()
