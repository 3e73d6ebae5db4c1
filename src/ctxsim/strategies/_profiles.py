"""The Hypothesis settings profiles of ctxsim's strategies, registered on request, never on import."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

__all__ = ["register_profiles"]


def register_profiles(*, database: str | None = None) -> None:
    """Register the Hypothesis settings profiles ``ctx-fast``, ``ctx-ci`` and ``ctx-fuzz``; load none.

    ``ctx-fast``: 20 examples, for the edit-test loop. ``ctx-ci``: 200 derandomized examples, no example
    database, blobs printed to reproduce (HypoFuzz skips derandomized tests: use it in CI only). ``ctx-fuzz``:
    10,000 examples, and the campaign's shared example database when ``database`` or ``$CTXSIM_FUZZ_DATABASE``
    names one (:func:`ctxsim.strategies.example_database`: a directory, or ``redis://...``). None has a deadline (a
    stream through the real SDK takes tens of milliseconds). Load one with ``settings.load_profile("ctx-ci")`` or
    ``pytest --hypothesis-profile=ctx-ci``.
    """
    from ._database import example_database

    shared = example_database(database)
    slow = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ctx-fast", max_examples=20, deadline=None, suppress_health_check=slow)
    settings.register_profile("ctx-ci", max_examples=200, derandomize=True, database=None, print_blob=True,
                              deadline=None, suppress_health_check=slow)
    fuzz = settings(max_examples=10_000, deadline=None, suppress_health_check=slow)
    settings.register_profile("ctx-fuzz", fuzz if shared is None else settings(fuzz, database=shared))
