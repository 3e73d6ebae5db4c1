"""Fuzzing in several processes: the examples shared out, one spawned worker each, the first finding kept; what the
workers note (an example database lost) said once, and a worker's failure one ``ctxsim:`` line."""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from .._sync import wait_in_slices

if TYPE_CHECKING:
    from hypothesis.database import ExampleDatabase

__all__ = ["in_workers", "worker_database"]


class _Result(Protocol):
    examples: int
    seconds: float


R = TypeVar("R", bound=_Result)

_notes = io.StringIO()
"""In a worker process: the one-line notes its example database wrote, sent back to the parent."""


def worker_database(db: str | None) -> ExampleDatabase | None:
    """The example database ``db`` as a worker opens it: its notes kept for the parent to say once, and a Redis
    server lost since the parent reached it taken as lost mid-run (the examples kept locally, never an error)."""
    from ..strategies import example_database

    return example_database(db, notes=_notes, kept_if_unreachable=True) if db else None


def _noted(worker: Callable[..., R], args: tuple[Any, ...]) -> tuple[R | None, str, str | None]:
    """Run ``worker(*args)`` in a worker process: its result, its notes, and its failure as one line (or None)."""
    try:
        return worker(*args), _notes.getvalue(), None
    except Exception as exc:  # sent back as one line, not as a remote traceback
        return None, _notes.getvalue(), f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"


def in_workers(worker: Callable[..., R], make_job: Callable[[int, int], tuple[Any, ...]], *, workers: int,
               examples: int, found: Callable[[R], bool], timeout: float) -> R:
    """Run ``worker(*make_job(i, n))`` in ``workers`` spawned processes, worker ``i`` given its share ``n`` of
    ``examples`` (none is started with no share), and return the result of the first worker by number for which
    ``found`` holds, else the last; its ``examples`` is the sum over the workers and its ``seconds`` the whole run.
    Every worker is waited for, at most ``timeout`` seconds in all, then stopped (``TimeoutError`` says so). The
    first note a worker's database wrote (:func:`worker_database`) is printed on stderr, once for all; a worker that
    raised is a ``ChildProcessError`` whose message is one ``ctxsim:`` line."""
    import multiprocessing

    share = [examples // workers + (1 if i < examples % workers else 0) for i in range(workers)]
    jobs = [(worker, make_job(i, n)) for i, n in enumerate(share) if n > 0]
    context = multiprocessing.get_context("spawn")  # a clean interpreter: no state of the caller's threads
    started = time.monotonic()
    with context.Pool(len(jobs)) as pool:  # leaving it terminates every worker, also on error or interrupt
        pending = pool.starmap_async(_noted, jobs)

        def ready(seconds: float) -> bool:
            pending.wait(seconds)
            return pending.ready()

        if not wait_in_slices(ready, timeout):  # sliced: a signal delivered to the pool's threads is seen at once
            raise TimeoutError(f"ctxsim: fuzz: the {len(jobs)} workers were still running after {timeout:g} s; "
                               f"stopped")
        outcomes: Sequence[tuple[R | None, str, str | None]] = pending.get()
    notes = [line for _, said, _ in outcomes for line in said.splitlines() if line]
    if notes:
        print(notes[0], file=sys.stderr)
    failed = next(((i, why) for i, (_, _, why) in enumerate(outcomes) if why is not None), None)
    if failed is not None:
        raise ChildProcessError(f"ctxsim: fuzz: worker {failed[0]} of {len(jobs)} failed: {failed[1]}")
    results = [result for result, _, _ in outcomes if result is not None]
    first = next((r for r in results if found(r)), results[-1])
    first.examples = sum(r.examples for r in results)
    first.seconds = time.monotonic() - started
    return first
