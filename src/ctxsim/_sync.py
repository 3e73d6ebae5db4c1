"""Running async code to completion from synchronous code, wherever that code is called from.

Outside an event loop the coroutine runs on this thread: on asyncio, on one event loop per thread that is kept and
reused (a fresh loop per run, as ``asyncio.run`` makes, costs about as much as playing a short scenario through the
SDK client), whatever the run leaves behind cancelled before it returns; on trio, in ``trio.run``. Inside one (a
synchronous helper such as :func:`ctxsim.check.assert_tracks` called from a test marked ``asyncio`` or ``anyio``), a
second loop cannot start on this thread, so the run goes to a worker thread with its own fresh event loop while this
one waits: the caller's loop is paused for that time, as it is for any blocking call. The work is bounded by its own
timeouts (the oracle's ``silence_timeout``); the worker is a daemon thread, so a run that never ends cannot keep the
interpreter alive.
"""

from __future__ import annotations

import asyncio
import atexit
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")

__all__ = ["in_event_loop", "run_blocking", "step_once"]


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
    try:
        return loop.run_until_complete(_awaited(func))
    finally:
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))


def run_blocking(func: Callable[[], Awaitable[T]], *, backend: str = "asyncio") -> T:
    """``func()`` awaited to completion on ``backend``: on this thread (asyncio on the thread's reused loop), or on
    a worker thread with a fresh loop when an event loop already runs here. Its result is returned and its
    exception raised here, with its traceback."""
    if not in_event_loop():
        return _run_on_reused_loop(func) if backend == "asyncio" else anyio.run(func, backend=backend)
    outcome: list[tuple[bool, object]] = []

    def work() -> None:
        try:
            outcome.append((True, anyio.run(func, backend=backend)))
        except BaseException as exc:  # handed to the caller's thread
            outcome.append((False, exc))

    worker = threading.Thread(target=work, name="ctxsim-run", daemon=True)
    worker.start()
    worker.join()
    done, value = outcome[0]
    if not done:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


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
