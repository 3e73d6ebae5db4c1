"""ctxsim: check context-window pressure tracking against a simulated ground truth, through the real SDK.

The public names below load on first use, so that ``import ctxsim`` (which pytest does for the plugin in
every run where the package is installed) costs nothing until a name is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

_EXPORTS = {
    "__version__": "_version",
    "Session": "world",
    "SessionBuilder": "world",
    "Truth": "world",
    "render": "wire",
    "FakeTransport": "sdk",
    "patch_sdk": "sdk",
    "ContextTracker": "reference",
    "PressurePolicy": "reference",
    "build_continuation_prompt": "reference",
    "extract_checkpoint": "reference",
    "run_with_restarts": "reference",
    "FakeAgent": "agent",
    "Task": "agent",
    "check_restart_loop": "loops",
    "run_loop": "loops",
    "Report": "check",
    "TrackingError": "check",
    "arun_tracker": "check",
    "assert_tracks": "check",
    "assert_tracks_async": "check",
    "run_tracker": "check",
}

__all__ = [
    "ContextTracker",
    "FakeAgent",
    "FakeTransport",
    "PressurePolicy",
    "Report",
    "Session",
    "SessionBuilder",
    "Task",
    "TrackingError",
    "Truth",
    "__version__",
    "arun_tracker",
    "assert_tracks",
    "assert_tracks_async",
    "build_continuation_prompt",
    "check_restart_loop",
    "extract_checkpoint",
    "patch_sdk",
    "render",
    "run_loop",
    "run_tracker",
    "run_with_restarts",
]

if TYPE_CHECKING:
    from .agent import FakeAgent, Task
    from .check import Report, TrackingError, arun_tracker, assert_tracks, assert_tracks_async, run_tracker
    from .loops import check_restart_loop, run_loop
    from .reference import (
        ContextTracker,
        PressurePolicy,
        build_continuation_prompt,
        extract_checkpoint,
        run_with_restarts,
    )
    from .sdk import FakeTransport, patch_sdk
    from .wire import render
    from .world import Session, SessionBuilder, Truth


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
