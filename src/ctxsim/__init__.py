"""ctxsim: check context-window pressure tracking against a simulated ground truth, through the real SDK.

The names here are the whole of what a first test needs: build a session (:class:`SessionBuilder`), check a
tracker against it (:func:`assert_tracks`, :func:`run_tracker`), play it to code that builds its own client
(:func:`patch_sdk`), compare with the reference (:class:`ContextTracker`), load and run a scenario file
(:func:`load_scenario`, :func:`find_scenario`, :func:`run_scenario`) and run a restart loop on the fake agent
(:func:`check_restart_loop`). Each is stable here, and here only: the other stable faces (``ctxsim.trackers``,
``ctxsim.sdk``, ``ctxsim.testing``, ``ctxsim.scenario``, ``ctxsim.strategies``, ``ctxsim.loops``, ``ctxsim.fuzz``,
``ctxsim.score``, ``ctxsim.live``) hold the rest of what users import, and every other package is internal.

The names load on first use, so that ``import ctxsim`` (which pytest does for the plugin in every run where the
package is installed) costs nothing until a name is needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_face

if TYPE_CHECKING:
    from ._version import __version__ as __version__
    from .agent import Task as Task
    from .check import (
        Report as Report,
        TrackingError as TrackingError,
        arun_tracker as arun_tracker,
        assert_tracks as assert_tracks,
        assert_tracks_async as assert_tracks_async,
        run_tracker as run_tracker,
        run_tracker_parsed as run_tracker_parsed,
    )
    from .corpus import find_scenario as find_scenario
    from .loops import check_restart_loop as check_restart_loop, run_loop as run_loop
    from .reference import (
        ContextTracker as ContextTracker,
        PressurePolicy as PressurePolicy,
        run_with_restarts as run_with_restarts,
    )
    from .runner import run_scenario as run_scenario
    from .scenario import load_scenario as load_scenario
    from .sdk import FakeTransport as FakeTransport, patch_sdk as patch_sdk
    from .world import Session as Session, SessionBuilder as SessionBuilder

__getattr__, __dir__ = lazy_face(globals())
