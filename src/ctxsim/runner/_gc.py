"""Opt-in tuning of the cyclic garbage collector for long runs: freeze what the run has imported.

Nothing here runs unless asked: ``pytest --ctx-freeze-gc`` (ini ``ctx_freeze_gc``), ``ctxsim fuzz`` and the
benchmarks call :func:`freeze_imports` where a long run has done its imports, and :func:`thaw_imports` at its end.
Only timing changes: what a run computes does not.
"""

from __future__ import annotations

__all__ = ["YOUNG_THRESHOLD", "freeze_imports", "thaw_imports"]

_frozen_at = 0
"""``len(sys.modules)`` at the last :func:`freeze_imports` that froze."""

_threshold: tuple[int, int, int] | None = None
"""The collector's thresholds before the first :func:`freeze_imports` that froze, for :func:`thaw_imports`."""

YOUNG_THRESHOLD = 10_000
"""Allocations between two young-generation collections while frozen (CPython's default is 700)."""


def freeze_imports(*, new_modules: int = 20) -> bool:
    """Move every object alive now into the cyclic collector's permanent generation (``gc.freeze()``) when at
    least ``new_modules`` modules were imported since the last call that froze; True when it froze.

    The imports a run needs (the SDK, ``mcp``, pydantic, Hypothesis: ~110k objects) stay alive for the whole
    process, yet every full collection walks them again: 10-45% of a long loop's time (docs/benchmarks.md). Frozen,
    they are never walked; objects made later are collected as usual, the young ones every
    :data:`YOUNG_THRESHOLD` allocations instead of 700 (a rendered stream allocates thousands of dicts that live
    until it is checked; refcounting still frees them at once, only cycles wait). Call it where a long run has
    done its imports (the pytest plugin once scenarios are collected and again after the first item loaded the
    SDK, ``ctxsim fuzz`` before its loop, the benchmarks). Only timing changes: what a run computes does not.

    Hypothesis is imported first (a pytest run imports it anyway, at the latest for its terminal summary): on
    import it registers other libraries' random generators (Trio's), checking who holds each with
    ``gc.get_referrers``, which does not see frozen objects; done before the freeze, that check sees everything and
    walks a smaller heap.
    """
    import gc
    import sys

    import hypothesis  # noqa: F401  (before the freeze: the docstring's last paragraph)

    global _frozen_at, _threshold
    if len(sys.modules) - _frozen_at < new_modules:
        return False
    gc.freeze()
    if _threshold is None:
        _threshold = gc.get_threshold()
        gc.set_threshold(max(_threshold[0], YOUNG_THRESHOLD), *_threshold[1:])
    _frozen_at = len(sys.modules)
    return True


def thaw_imports() -> None:
    """Undo :func:`freeze_imports` (``gc.unfreeze()``, and the collector's thresholds as they were), at the end of
    the run that froze: a process that goes on (pytest run in-process, as ``pytester`` does) gets its collector
    back as it was."""
    import gc

    global _frozen_at, _threshold
    if _frozen_at:  # only what freeze_imports froze: a process that froze its own objects keeps them frozen
        gc.unfreeze()
    if _threshold is not None:
        gc.set_threshold(*_threshold)
    _frozen_at, _threshold = 0, None
