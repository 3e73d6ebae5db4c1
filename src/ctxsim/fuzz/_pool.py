"""Fuzzing in several processes: the examples shared out, one spawned worker each, the first finding kept."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol, TypeVar

__all__ = ["in_workers"]


class _Result(Protocol):
    examples: int
    seconds: float


R = TypeVar("R", bound=_Result)


def in_workers(worker: Callable[..., R], make_job: Callable[[int, int], tuple[Any, ...]], *, workers: int,
               examples: int, found: Callable[[R], bool], timeout: float) -> R:
    """Run ``worker(*make_job(i, n))`` in ``workers`` spawned processes, worker ``i`` given its share ``n`` of
    ``examples`` (none is started with no share), and return the result of the first worker by number for which
    ``found`` holds, else the last; its ``examples`` is the sum over the workers and its ``seconds`` the whole run.
    Every worker is waited for, at most ``timeout`` seconds in all, then stopped (``TimeoutError`` says so)."""
    import multiprocessing

    share = [examples // workers + (1 if i < examples % workers else 0) for i in range(workers)]
    jobs = [make_job(i, n) for i, n in enumerate(share) if n > 0]
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no state of the caller's threads
    started = time.monotonic()
    with context.Pool(len(jobs)) as pool:  # leaving it terminates every worker, also on error or interrupt
        pending = pool.starmap_async(worker, jobs)
        try:
            results: Sequence[R] = pending.get(timeout)
        except multiprocessing.TimeoutError:
            raise TimeoutError(f"ctxsim: fuzz: the {len(jobs)} workers were still running after {timeout:g} s; "
                               f"stopped") from None
    first = next((r for r in results if found(r)), results[-1])
    first.examples = sum(r.examples for r in results)
    first.seconds = time.monotonic() - started
    return first
