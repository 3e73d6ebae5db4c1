"""The one sync-over-async bridge (``ctxsim._sync.run_blocking``): the reused asyncio loop, its clean-up, trio, and
the worker thread inside a running loop."""

from __future__ import annotations

import asyncio
import threading

import anyio

from ctxsim._sync import run_blocking


async def _loop_and_thread() -> tuple[asyncio.AbstractEventLoop, threading.Thread]:
    return asyncio.get_running_loop(), threading.current_thread()


def test_asyncio_runs_on_one_reused_loop_on_this_thread() -> None:
    first, thread = run_blocking(_loop_and_thread)
    second, _ = run_blocking(_loop_and_thread)
    assert first is second and not first.is_closed()
    assert thread is threading.current_thread()


def test_what_a_run_leaves_running_is_cancelled_before_it_returns() -> None:
    cancelled = threading.Event()

    async def leave_a_task() -> asyncio.Task[None]:
        async def forever() -> None:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                cancelled.set()
                raise

        return asyncio.get_running_loop().create_task(forever())

    task = run_blocking(leave_a_task)
    assert cancelled.is_set() and task.cancelled()

    async def pending() -> int:
        return len(asyncio.all_tasks()) - 1  # all but this one

    assert run_blocking(pending) == 0


def test_its_exception_is_raised_here() -> None:
    async def fail() -> None:
        raise KeyError("from the coroutine")

    try:
        run_blocking(fail)
    except KeyError as exc:
        assert exc.args == ("from the coroutine",)
    else:
        raise AssertionError("run_blocking swallowed the coroutine's exception")


def test_trio_runs_in_trio() -> None:
    import sniffio

    async def library() -> str:
        return sniffio.current_async_library()

    assert run_blocking(library, backend="trio") == "trio"
    assert run_blocking(library) == "asyncio"


def test_inside_a_running_loop_it_runs_on_a_worker_thread_with_a_fresh_loop() -> None:
    async def inside() -> tuple[asyncio.AbstractEventLoop, asyncio.AbstractEventLoop, bool]:
        outer = asyncio.get_running_loop()
        loop, thread = run_blocking(_loop_and_thread)
        return outer, loop, thread is threading.current_thread()

    outer, loop, same_thread = anyio.run(inside)
    assert loop is not outer and not same_thread
