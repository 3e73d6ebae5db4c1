"""Trackers: what a tracker is (:class:`Tracker`, :class:`PointTracker`, the adapters :class:`RawDicts`,
:class:`ResultsOnly`, :class:`FromRatio`), statusline commands as trackers (:class:`CommandTracker`, read through
:class:`Readout` and its :data:`PRESETS`; the shipped tools at pinned versions are :mod:`ctxsim.tools`), trackers in any
language fed the stream (:class:`StreamTracker`, one process per session speaking a line protocol), and naming one on
a command line (:func:`resolve`). The catalogue of the reference and of trackers with known bugs stands on this
contract: :mod:`ctxsim.trackers.catalogue`. Names load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ..processes import passed_environment as passed_environment
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
    from ._command import CommandTracker as CommandTracker
    from ._diagnosis import (
        is_token_count as is_token_count,
        looks_like_ratio as looks_like_ratio,
        ratio_hint as ratio_hint,
        user_traceback as user_traceback,
    )
    from ._feeding import (
        ESTIMATES as ESTIMATES,
        Fed as Fed,
        Feeding as Feeding,
        NotATracker as NotATracker,
        feeding as feeding,
    )
    from ._readings import (
        AUTOCOMPACT_SHARE as AUTOCOMPACT_SHARE,
        KEYS as KEYS,
        Reading as Reading,
        every_reading as every_reading,
    )
    from ._readout import PRESETS as PRESETS, Readout as Readout
    from ._resolve import (
        SpecError as SpecError,
        TrackerSpec as TrackerSpec,
        TrackerSpecError as TrackerSpecError,
        anchored_spec as anchored_spec,
        load_named as load_named,
        load_spec as load_spec,
        not_catalogued as not_catalogued,
        resolve as resolve,
    )
    from ._stream import StreamTracker as StreamTracker, parse_stream_spec as parse_stream_spec

__getattr__, __dir__ = lazy_face(globals(), stable=(
    "Tracker", "AsyncTracker", "PointTracker", "Estimate", "TrackerWorld", "TrackerFactory", "make_tracker", "RawDicts",
    "ResultsOnly", "FromRatio", "CommandTracker", "Readout", "PRESETS", "StreamTracker", "resolve", "TrackerSpec",
    "TrackerSpecError"
))
