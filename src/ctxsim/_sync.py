"""Running async code to completion from synchronous code, wherever that code is called from.

Outside an event loop the coroutine runs on this thread (``anyio.run``). Inside one (a synchronous helper such as
:func:`ctxsim.check.assert_tracks` called from a test marked ``asyncio`` or ``anyio``), a second loop cannot start on
this thread, so the run goes to a worker thread with its own event loop while this one waits: the caller's loop is
paused for that time, as it is for any blocking call. The work is bounded by its own timeouts (the oracle's
``silence_timeout``); the worker is a daemon thread, so a run that never ends cannot keep the interpreter alive.
"""

from __future__ import annotations

import asyncio
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


def run_blocking(func: Callable[[], Awaitable[T]], *, backend: str = "asyncio") -> T:
    """``func()`` awaited to completion on ``backend``: on this thread, or on a worker thread when an event loop
    already runs here. Its result is returned and its exception raised here, with its traceback."""
    if not in_event_loop():
        return anyio.run(func, backend=backend)
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
