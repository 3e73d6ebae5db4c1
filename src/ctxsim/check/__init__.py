"""The oracle: run a tracker over a session through the real SDK and compare it with the truth.

A tracker is anything with ``observe(message)`` and ``context_tokens() -> int | None`` (None: unknown). The
session is rendered by :mod:`ctxsim.wire`, played by :class:`~ctxsim.sdk.FakeTransport` and read with the real
``ClaudeSDKClient``; every message the SDK yields goes to the tracker, and at every observation point (after
each main-chain call, subagent call, compaction, reset and result) its estimate is compared with the truth.

The truth at a point is a band, ``prompt .. prompt + output``: a tracker may report what ``/context`` shows or
what the next request will carry. The error is how far the estimate falls outside the band; it passes within
``tolerance`` tokens. Where the truth is not knowable from the stream, an unknown (None) estimate passes.
A tracker (or adapter) with a ``judged_at`` set of observation kinds (``call``, ``subagent``, ``compaction``,
``reset``, ``result``) is compared at those points only.

Trackers of other shapes run through the adapters of :mod:`ctxsim.trackers` (:class:`RawDicts`,
:class:`ResultsOnly`, :class:`FromRatio`), re-exported here. A tracker's ``observe`` and ``context_tokens`` may be
``async def`` (:class:`AsyncTracker`): what they return is awaited.

A :class:`~ctxsim.trackers.PointTracker` (a statusline command, ``cmd:``) is not fed messages: it is asked for
its estimates at the same points, the world rendered as Claude Code shows it there, and judged the same way; an
estimate that is a band (a percentage shown to a precision) is off by how far the band lies from the truth's. One
that cannot be read (a command that fails, hangs or prints nonsense) leaves its ``ctxsim:`` line in the report's
``error``: no verdict.

From async code, ``await`` :func:`arun_tracker` or :func:`assert_tracks_async`. The synchronous :func:`run_tracker`
and :func:`assert_tracks` work from anywhere: called where an event loop already runs (an ``asyncio`` or ``anyio``
test), they play the session on a worker thread with its own loop while the caller waits.

A failing run's likely cause (:func:`likely_causes`, :func:`explain`) says what the tracker's numbers are: every
reading of the stream's usage fields (:class:`Readings`, :func:`ctxsim.trackers.every_reading`) is fitted against
its estimates (:func:`diagnose`), and the one that gives them is named in the user's words (a :class:`Diagnosis`).

When a tracker raises, the report's ``crash`` names the message it raised on and its ``traceback`` shows the frames
of the tracker's own code (ctxsim's and the SDK's left out); a failing run whose estimates are ratios (a float in
[0, 1] where the truth is tokens) gets a hint to :class:`FromRatio`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._causes import (
        FEATURES as FEATURES,
        explain as explain,
        features as features,
        likely_causes as likely_causes,
        not_knowable as not_knowable,
        payload_wrong as payload_wrong,
    )
    from ._fit import Diagnosis as Diagnosis, Readings as Readings, agrees as agrees, diagnose as diagnose
    from ._quantity import judged_quantity as judged_quantity, loop_fitness as loop_fitness
    from ._report import Point as Point, Report as Report, TrackingError as TrackingError
    from ._run import (
        AsyncTracker as AsyncTracker,
        FromRatio as FromRatio,
        RawDicts as RawDicts,
        ResultsOnly as ResultsOnly,
        RunOptions as RunOptions,
        Tracker as Tracker,
        arun_tracker as arun_tracker,
        assert_tracks as assert_tracks,
        assert_tracks_async as assert_tracks_async,
        run_tracker as run_tracker,
        run_tracker_parsed as run_tracker_parsed,
        tracker_name as tracker_name,
    )
    from ._thresholds import Firing as Firing, Match as Match, crossings as crossings, match_firings as match_firings

__getattr__, __dir__ = lazy_face(globals())
