"""Trackers: what a tracker is (:mod:`.base`), statusline commands as trackers (:mod:`.command`, read by
:mod:`.readout`; the shipped tools at pinned versions in :mod:`.shipped`), trackers in any language fed the stream
(:mod:`.stream`, one process per session speaking a line protocol), naming one on a command line
(:mod:`.resolve`), and the catalogue of
the reference and faithful reproductions of trackers with known bugs (:mod:`.catalogue`; formulas in :mod:`.seeds`
and :mod:`.survey`). Names load on first use: the reference implements :mod:`.base` without loading the catalogue.

>>> tracker = make("arbiter-msgid")   # a fresh tracker, ready for ctxsim.check.run_tracker
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._base import (
        AnyTracker as AnyTracker,
        AnyTrackerFactory as AnyTrackerFactory,
        AsyncTracker as AsyncTracker,
        Estimate as Estimate,
        FromRatio as FromRatio,
        PointTracker as PointTracker,
        PointTrackerError as PointTrackerError,
        RawDicts as RawDicts,
        ResultsOnly as ResultsOnly,
        Tracker as Tracker,
        TrackerFactory as TrackerFactory,
        TrackerWorld as TrackerWorld,
        make_tracker as make_tracker,
        tracker_name as tracker_name,
    )
    from ._catalogue import (
        CATALOGUE as CATALOGUE,
        Breaks as Breaks,
        Entry as Entry,
        make as make,
        reference_for as reference_for,
    )
    from ._command import CommandTracker as CommandTracker
    from ._diagnosis import (
        is_token_count as is_token_count,
        looks_like_ratio as looks_like_ratio,
        ratio_hint as ratio_hint,
        user_traceback as user_traceback,
    )
    from ._readout import PRESETS as PRESETS, Readout as Readout
    from ._resolve import (
        SpecError as SpecError,
        TrackerSpec as TrackerSpec,
        TrackerSpecError as TrackerSpecError,
        load_spec as load_spec,
        not_catalogued as not_catalogued,
        resolve as resolve,
    )
    from ._shipped import (
        RESEARCHED_CLI as RESEARCHED_CLI,
        TOOLS as TOOLS,
        InstallError as InstallError,
        Tool as Tool,
        install as install,
        installed as installed,
        tracker as tracker,
    )
    from ._stream import StreamTracker as StreamTracker, parse_stream_spec as parse_stream_spec

__getattr__, __dir__ = lazy_face(globals())
