"""ctxsim: check context-window pressure tracking against a simulated ground truth, through the real SDK.

The public names below load on first use, so that ``import ctxsim`` (which pytest does for the plugin in
every run where the package is installed) costs nothing until a name is needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Session": "world",
    "SessionBuilder": "world",
    "Truth": "world",
    "render": "wire",
    "FakeTransport": "sdk",
    "patch_sdk": "sdk",
    "ContextTracker": "reference",
    "Report": "check",
    "TrackingError": "check",
    "assert_tracks": "check",
    "run_tracker": "check",
}

__all__ = [
    "ContextTracker",
    "FakeTransport",
    "Report",
    "Session",
    "SessionBuilder",
    "TrackingError",
    "Truth",
    "__version__",
    "assert_tracks",
    "patch_sdk",
    "render",
    "run_tracker",
]

if TYPE_CHECKING:
    from .check import Report, TrackingError, assert_tracks, run_tracker
    from .reference import ContextTracker
    from .sdk import FakeTransport, patch_sdk
    from .wire import render
    from .world import Session, SessionBuilder, Truth


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxsim' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
