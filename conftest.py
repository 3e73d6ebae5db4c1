"""Shared fixtures for ctxsim's own test suite."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parent.parent / "shared"
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
