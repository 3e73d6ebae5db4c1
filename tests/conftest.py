"""The suite's shared fixtures and settings (the one conftest of the suite).

Hypothesis: no deadline (a shared 2-core CI machine has pauses that say nothing of the code), no example database
(a run depends on the checkout only), and no health check failing a slow generator.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ctxsim-suite", deadline=None, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile("ctxsim-suite")

SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
"""The project's shared material (captures, real recordings), checked out beside the repository."""


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """``../shared``; tests that need it skip, saying why, where it is absent."""
    if not SHARED.is_dir():
        pytest.skip(f"ctxsim: the shared material is not at {SHARED}")
    return SHARED


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend_name(request: pytest.FixtureRequest) -> str:
    """Both async backends the SDK supports; the fake transport must work under each."""
    return request.param
