"""The installed distribution's version: ``pyproject.toml`` is its one source."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("pytest-ctxsim")
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"
