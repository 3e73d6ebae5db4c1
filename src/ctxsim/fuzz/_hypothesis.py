"""The one place ctxsim reaches into Hypothesis' private parts, and the versions it was checked on.

Two hooks have no public form: the key of a test's entries in the example database (the attribute
``_hypothesis_internal_add_digest`` on the test function, which Hypothesis adds to the digest of its source; ctxsim
keys a search by the tracker, loop and tolerance it runs with: :func:`key_database_entries`), and the table of
backends with Hypothesis' own provider (``hypothesis.internal.conjecture.providers``), the documented extension
point for ``settings(backend=...)``: :data:`AVAILABLE_PROVIDERS` (None where the installed Hypothesis predates it)
and :class:`HypothesisProvider` (``object`` there). ``tests/architecture/test_adapters.py`` checks, for the
installed Hypothesis, that each still exists and that its version is one :data:`SUPPORTED` admits.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

__all__ = ["AVAILABLE_PROVIDERS", "SUPPORTED", "HypothesisProvider", "key_database_entries"]

SUPPORTED = ">=6.100"
"""The Hypothesis versions these hooks are known to hold for: the bound ``pyproject.toml`` declares."""

AVAILABLE_PROVIDERS: MutableMapping[str, Any] | None
if TYPE_CHECKING:
    from hypothesis.internal.conjecture.providers import HypothesisProvider
else:
    try:
        from hypothesis.internal.conjecture.providers import HypothesisProvider
    except ImportError:  # pragma: no cover - a Hypothesis older than its backend table
        HypothesisProvider = object
try:
    from hypothesis.internal.conjecture.providers import AVAILABLE_PROVIDERS
except ImportError:  # pragma: no cover
    AVAILABLE_PROVIDERS = None


def key_database_entries(test: Callable[..., Any], key: str) -> None:
    """Key ``test``'s entries in the example database by ``key`` as well as by its source: two searches of one
    function with different trackers (or tolerances) keep their counterexamples apart."""
    setattr(test, "_hypothesis_internal_add_digest", key.encode())  # noqa: B010 - a private attribute, by design
