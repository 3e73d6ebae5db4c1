"""Every generated task drawn afresh: a Hypothesis backend for the restart-loop search.

Hypothesis' engine spends most of a run's test cases *mutating* earlier ones: after each new test case it tries up
to five copies in which one span of choices is replaced by another span with the same label. That finds bugs that
need a value repeated, but a generated task is dozens of numbers of a few labels, so the copies are mostly near
duplicates of a task already run. Measured over 1,000 drawn tasks (seeds 0 to 4): the default engine drew about
790 different tasks of about 280 different shapes (number of steps, checkpoint plan, policy, compaction, garbled
turns); drawn afresh, 1,000 tasks of about 998 shapes (``benchmarks/bench_loop_fuzz.py --compare`` prints both, and
the time each engine takes to find every mutant). This backend draws exactly as Hypothesis' own (its provider, its
seeded random, its distributions), but every test case from scratch: Hypothesis runs a backend other than its own
without the mutator and without its tree of seen prefixes. Reusing a database and shrinking a failure are
unchanged: Hypothesis runs both with its own provider whatever the backend.

One more difference, for determinism: Hypothesis' provider now and then draws a constant it found in the source
of the modules loaded from outside site-packages, so the same seed drew other tasks in a process that had loaded
other modules (a run of the command, of a benchmark, of a test). This backend draws no such constant: the same
seed draws the same tasks in any process.

The backend is registered through Hypothesis' documented extension point for backends (``settings(backend=...)``
and its table of providers, ``AVAILABLE_PROVIDERS``), on first use, never at import. A Hypothesis without that
table gets its default engine instead: the search is slower there, its verdicts the same.
"""

from __future__ import annotations

from typing import Any

from ._hypothesis import AVAILABLE_PROVIDERS, HypothesisProvider

__all__ = ["BACKEND", "IndependentDraws", "independent_backend"]

BACKEND = "ctxsim-independent"
"""The backend's name in ``settings(backend=...)``."""


class IndependentDraws(HypothesisProvider):
    """Hypothesis' own provider under another backend name: every test case drawn from scratch, and never one of
    the constants Hypothesis collects from the modules loaded (see the module docstring)."""

    def _maybe_draw_constant(self, *args: Any, **kwargs: Any) -> None:
        return None


def independent_backend() -> str:
    """The name of this backend, registered with Hypothesis on first use (``"hypothesis"``, its default engine,
    where the installed Hypothesis has no table of backends)."""
    if AVAILABLE_PROVIDERS is None:  # pragma: no cover
        return "hypothesis"
    AVAILABLE_PROVIDERS.setdefault(BACKEND, f"{IndependentDraws.__module__}.{IndependentDraws.__qualname__}")
    return BACKEND
