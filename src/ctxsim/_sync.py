"""Running async code to completion from synchronous code, wherever that code is called from; and ending a run on
SIGTERM as on Ctrl-C.

Outside an event loop the coroutine runs on this thread: on asyncio, on one event loop per thread that is kept and
reused (a fresh loop per run, as ``asyncio.run`` makes, costs about as much as playing a short scenario through the
SDK client), whatever the run leaves behind cancelled before it returns; on trio, in ``trio.run``. Inside one (a
synchronous helper such as :func:`ctxsim.check.assert_tracks` called from a test marked ``asyncio`` or ``anyio``), a
second loop cannot start on this thread, so the run goes to a worker thread with its own fresh event loop while this
one waits: the caller's loop is paused for that time, as it is for any blocking call. The work is bounded by its own
timeouts (the oracle's ``silence_timeout``); the worker is a daemon thread, so a run that never ends cannot keep the
interpreter alive.

:func:`terminate_as_interrupt` makes SIGTERM do what Ctrl-C does while a run that starts processes or temporary
directories is under way (the default action of SIGTERM ends the interpreter at once, leaving them behind): the
run unwinds through its ``finally`` blocks and context managers, which stop what it started; work on other threads
watches :func:`interrupts` and stops too. :func:`processes` reads the process table those runs search for what
they started.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

__all__ = ["LAST_GRACE", "SIGNAL_POLL", "Proc", "end_descendants", "end_now", "in_event_loop", "interrupts",
           "processes", "run_blocking", "signal_name", "step_once", "terminate_as_interrupt", "terminated",
           "wait_in_slices"]

SIGNAL_POLL = 0.05
"""The longest slice of a blocking wait on the main thread (seconds): see :func:`wait_in_slices`."""


def wait_in_slices(ready: Callable[[float], bool], timeout: float | None = None) -> bool:
    """Call ``ready(seconds)`` (which blocks at most that long, then says whether the wait is over) with slices of
    at most :data:`SIGNAL_POLL` seconds until it says so (True) or ``timeout`` seconds passed (False; None: no
    limit).

    Why slices: a signal's Python handler runs on the main thread only, once that thread runs Python again. The
    kernel may deliver the signal to any other thread (a worker's, a server's); then a main thread blocked in one
    long wait (a join, a future, an event) sees it only when that wait ends, which for a command that never ends is
    never. Sliced, the handler runs within :data:`SIGNAL_POLL` seconds wherever the signal landed."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = SIGNAL_POLL if deadline is None else min(SIGNAL_POLL, deadline - time.monotonic())
        if left <= 0:
            return False
        if ready(left):
            return True


def in_event_loop() -> bool:
    """True when this thread runs an asyncio or trio event loop (a synchronous call here cannot start another)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        return True
    trio = sys.modules.get("trio")
    return trio is not None and bool(trio.lowlevel.in_trio_run())


class _ThreadLoop(threading.local):
    loop: asyncio.AbstractEventLoop | None = None


_LOOP = _ThreadLoop()


async def _awaited(func: Callable[[], Awaitable[T]]) -> T:
    return await func()


def _run_on_reused_loop(func: Callable[[], Awaitable[T]]) -> T:
    """``func()`` awaited on this thread's reused asyncio loop (none may run here); whatever it left running is
    cancelled and awaited before this returns, so one run never sees another's tasks."""
    loop = _LOOP.loop
    if loop is None or loop.is_closed():
        loop = _LOOP.loop = asyncio.new_event_loop()
        atexit.register(loop.close)
    with _signals_wake(loop):
        try:
            return loop.run_until_complete(_awaited(func))
        finally:
            left = asyncio.all_tasks(loop)
            for task in left:
                task.cancel()
            if left:
                loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))


@contextlib.contextmanager
def _signals_wake(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """While inside, on the main thread, any signal wakes ``loop`` from its wait for I/O, so its Python handler runs
    at once: the kernel may deliver a signal to another thread (a worker's), and the handler runs on the main thread
    only once that thread runs Python again, which a loop waiting on nothing due soon may not do for long. Done with
    the interpreter's wakeup fd (``signal.set_wakeup_fd``), unless someone else set it."""
    import socket

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read, write = socket.socketpair()
    read.setblocking(False)
    write.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
    except ValueError:  # not the main interpreter
        previous = -2
    if previous != -1:  # someone else's (an outer loop's, trio's): theirs stays
        if previous != -2:
            signal.set_wakeup_fd(previous)
        read.close()
        write.close()
        yield
        return

    def drain() -> None:
        with contextlib.suppress(OSError):
            while read.recv(4096):
                pass

    loop.add_reader(read.fileno(), drain)
    try:
        yield
    finally:
        current = signal.set_wakeup_fd(-1)
        if current != write.fileno():  # set since by someone else: theirs stays
            signal.set_wakeup_fd(current)
        loop.remove_reader(read.fileno())
        read.close()
        write.close()


def run_blocking(func: Callable[[], Awaitable[T]], *, backend: str = "asyncio") -> T:
    """``func()`` awaited to completion on ``backend``: on this thread (asyncio on the thread's reused loop), or on
    a worker thread with a fresh loop when an event loop already runs here. Its result is returned and its
    exception raised here, with its traceback."""
    if not in_event_loop():
        return _run_on_reused_loop(func) if backend == "asyncio" else anyio.run(func, backend=backend)
    results: list[T] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(anyio.run(func, backend=backend))
        except BaseException as exc:  # handed to the caller's thread
            errors.append(exc)

    worker = threading.Thread(target=work, name="ctxsim-run", daemon=True)
    worker.start()

    def joined(seconds: float) -> bool:
        worker.join(seconds)
        return not worker.is_alive()

    wait_in_slices(joined)
    if errors:
        raise errors[0]
    return results[0]


def step_once(awaitable: Any) -> tuple[bool, Any]:
    """Step ``awaitable`` once, without an event loop: ``(True, its value)`` when that finished it, else
    ``(False, None)``: it waits on a loop, and is closed."""
    steps = awaitable.__await__()
    try:
        steps.send(None)
    except StopIteration as done:
        return True, done.value
    close = getattr(steps, "close", None)
    if close is not None:
        close()
    return False, None



_terminated = [False]
"""Whether a SIGTERM or SIGHUP arrived: a plain flag, as everything a signal handler touches (an ``Event`` takes a lock
the interrupted thread may hold)."""
_interrupts = [0]
_signals: list[int] = []
"""Every signal that arrived under :func:`terminate_as_interrupt`, in order."""
_made: set[str] = set()
"""The temporary directories this process made (``tempfile.mkdtemp``): what :func:`_end_now` removes."""
_watching = [False]
LAST_GRACE = 5.0
"""Seconds a run may still take to clean up after a second signal, before it is ended: its processes killed, its
temporary directories removed, the interpreter ended (within 10 s of the second signal in all)."""


def terminated() -> bool:
    """Whether a SIGTERM or SIGHUP arrived under :func:`terminate_as_interrupt` (the ``KeyboardInterrupt`` it
    became)."""
    return _terminated[0]


def signal_name() -> str:
    """The name of the first signal that arrived under :func:`terminate_as_interrupt` (``SIGINT`` when none)."""
    return signal.Signals(_signals[0]).name if _signals else "SIGINT"


def interrupts() -> int:
    """How many SIGINT, SIGTERM or SIGHUP arrived under :func:`terminate_as_interrupt` so far: work on another
    thread (a command tracker's points) compares it with the count it started at, and stops when it grew."""
    return _interrupts[0]


def _note_made(event: str, args: tuple[Any, ...]) -> None:
    if event == "tempfile.mkdtemp" and args:
        _made.add(os.fsdecode(args[0]))


def _descendants() -> list[int]:
    """This process's descendants (its children's children included), read from ``/proc``."""
    out: list[int] = []
    stack = [os.getpid()]
    while stack:
        pid = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                    children = [int(c) for c in f.read().split()]
            except (OSError, ValueError):
                continue
            out.extend(children)
            stack.extend(children)
    return out


def end_descendants(limit: float = 2.0) -> None:
    """Stop then kill every descendant of this process, found by ancestry, until none is left (at most ``limit``
    seconds): what a ``ctxsim`` command does as it exits, whatever its children did (a child subreaper, it adopted
    their orphans)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        left = _descendants()
        if not left:
            return
        for sig in (signal.SIGSTOP, signal.SIGKILL):  # frozen first: a forking descendant cannot outrun the kill
            for pid in left if sig == signal.SIGSTOP else _descendants():
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
        while True:  # reaped: a killed child of this process counts no more
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break
        time.sleep(0.005)


def end_now(say: bool = False) -> None:
    """End this process at once, leaving nothing: every descendant stopped then killed, every temporary directory
    it made removed, one line said (``say``: the run has not said its own); the exit status is the first signal's
    (128 + its number). What a run interrupted twice does once its main thread has unwound (work on other threads,
    still stopping what it started, is not waited for)."""
    import shutil

    end_descendants(1.0)
    for directory in sorted(_made, key=len, reverse=True):
        shutil.rmtree(directory, ignore_errors=True)
    with contextlib.suppress(OSError):
        if say:
            os.write(2, f"ctxsim: interrupted again ({signal_name()} twice): ended at once, with every process and "
                        f"temporary directory it started\n".encode())
    os._exit(128 + (_signals[0] if _signals else signal.SIGINT))


def _watch(grace: float, *, say: bool = True) -> None:
    """From a second signal on: the run has ``grace`` seconds to finish unwinding, then it is ended."""
    if _watching[0]:
        return
    _watching[0] = True

    def watch() -> None:
        time.sleep(grace)
        end_now(say)

    threading.Thread(target=watch, name="ctxsim-second-signal", daemon=True).start()


def _on_late_signal(signum: int, frame: FrameType | None) -> None:
    """A signal after the run ended unwinding (the interpreter shutting down, threads being joined)."""
    _signals.append(signum)
    _watch(0.0, say=False)  # the run unwound and said so


def _on_signal(signum: int, frame: FrameType | None) -> None:
    _interrupts[0] += 1
    _signals.append(signum)
    if signum in (signal.SIGTERM, signal.SIGHUP):
        _terminated[0] = True
    if _interrupts[0] > 1:  # already unwinding: let it finish (an interrupt now would cut its cleanup short)
        _watch(LAST_GRACE)
        return
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        raise KeyboardInterrupt from None
    # Inside an event loop the interrupt is raised between its callbacks, outside every task: the loop stops, its
    # tasks are cancelled (each unwinding its context managers), not failed with it half-way.
    loop.call_soon_threadsafe(_interrupt)


def _interrupt() -> None:
    raise KeyboardInterrupt


_hooked = [False]


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, on the main thread, SIGTERM and SIGHUP are handled as Ctrl-C (``KeyboardInterrupt``), and all
    three are counted (:func:`interrupts`), so the run unwinds and removes what it started, work on other threads
    included. A second signal does not cut that unwinding short: it gives it :data:`LAST_GRACE` seconds, then ends
    the process at once, killing its descendants and removing the temporary directories it made; after the run,
    any further signal does that at once. A signal with a handler of its own (the host's) keeps it; off the main
    thread, nothing changes. Nested uses keep the outermost handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    if not _hooked[0]:
        sys.addaudithook(_note_made)  # cannot be removed: it only notes directories, cheaply
        _hooked[0] = True
    previous: dict[signal.Signals, Any] = {}
    for signum, free in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler),
                         (signal.SIGHUP, signal.SIG_DFL)):
        if signal.getsignal(signum) in (free, None):
            previous[signum] = signal.signal(signum, _on_signal)
    try:
        yield
    finally:
        for number, handler in previous.items():
            # once interrupted, a later signal (threads being joined at exit) ends the process at once
            signal.signal(number, _on_late_signal if _interrupts[0] else handler)


@dataclass(frozen=True)
class Proc:
    """A process as ``/proc`` shows it: what the runs that start processes need to find and reap them."""

    pid: int
    ppid: int
    group: int
    zombie: bool
    session: int = 0
    started: int = 0
    """When it started, in clock ticks since boot."""


def processes() -> list[Proc]:
    """Every process, from ``/proc`` (empty where there is none)."""
    out: list[Proc] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
            out.append(Proc(int(entry), int(fields[1]), int(fields[2]), fields[0] == b"Z", int(fields[3]),
                            int(fields[19])))
        except (OSError, IndexError, ValueError):
            continue
    return out
