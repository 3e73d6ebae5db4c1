"""Trackers: what a tracker is (:mod:`.base`), naming one on a command line (:mod:`.resolve`), and the catalogue of
the reference and faithful reproductions of trackers with known bugs (:mod:`.catalogue`; formulas in :mod:`.seeds`
and :mod:`.survey`).

>>> tracker = make("arbiter-msgid")   # a fresh tracker, ready for ctxsim.check.run_tracker
"""

from __future__ import annotations

from .base import (
    FromRatio,
    RawDicts,
    ResultsOnly,
    Tracker,
    TrackerFactory,
    tracker_name,
)
from .catalogue import CATALOGUE, Breaks, Entry, make
from .resolve import TrackerSpec, TrackerSpecError, resolve

__all__ = [
    "CATALOGUE",
    "Breaks",
    "Entry",
    "FromRatio",
    "RawDicts",
    "ResultsOnly",
    "Tracker",
    "TrackerFactory",
    "TrackerSpec",
    "TrackerSpecError",
    "make",
    "resolve",
    "tracker_name",
]
