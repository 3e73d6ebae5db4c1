"""Trackers: what a tracker is (:mod:`.base`), statusline commands as trackers (:mod:`.command`, read by
:mod:`.readout`; the shipped tools at pinned versions in :mod:`.shipped`), naming one on a command line
(:mod:`.resolve`), and the catalogue of
the reference and faithful reproductions of trackers with known bugs (:mod:`.catalogue`; formulas in :mod:`.seeds`
and :mod:`.survey`). Names load on first use: the reference implements :mod:`.base` without loading the catalogue.

>>> tracker = make("arbiter-msgid")   # a fresh tracker, ready for ctxsim.check.run_tracker
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "AsyncTracker": "base",
    "FromRatio": "base",
    "RawDicts": "base",
    "ResultsOnly": "base",
    "Tracker": "base",
    "TrackerFactory": "base",
    "tracker_name": "base",
    "Estimate": "base",
    "PointTracker": "base",
    "PointTrackerError": "base",
    "CommandTracker": "command",
    "PRESETS": "readout",
    "Readout": "readout",
    "CATALOGUE": "catalogue",
    "Breaks": "catalogue",
    "Entry": "catalogue",
    "make": "catalogue",
    "reference_for": "catalogue",
    "TrackerSpec": "resolve",
    "TrackerSpecError": "resolve",
    "resolve": "resolve",
}

__all__ = [
    "CATALOGUE",
    "PRESETS",
    "AsyncTracker",
    "Breaks",
    "CommandTracker",
    "Entry",
    "Estimate",
    "FromRatio",
    "PointTracker",
    "PointTrackerError",
    "RawDicts",
    "Readout",
    "ResultsOnly",
    "Tracker",
    "TrackerFactory",
    "TrackerSpec",
    "TrackerSpecError",
    "make",
    "reference_for",
    "resolve",
    "tracker_name",
]

if TYPE_CHECKING:
    from .base import (
        AsyncTracker,
        Estimate,
        FromRatio,
        PointTracker,
        PointTrackerError,
        RawDicts,
        ResultsOnly,
        Tracker,
        TrackerFactory,
        tracker_name,
    )
    from .catalogue import CATALOGUE, Breaks, Entry, make, reference_for
    from .command import CommandTracker
    from .readout import PRESETS, Readout
    from .resolve import TrackerSpec, TrackerSpecError, resolve

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
