"""The catalogue: the reference and faithful reproductions of trackers with known bugs (:data:`CATALOGUE`, the
designs and the formulas surveyed in the wild), each named (:func:`make`) and declaring the contracts it breaks
(:class:`Breaks`); :class:`Gauge`, which shows a token tracker's count as a percentage or tokens left; and the
behavioural mutants of the reference (:mod:`ctxsim.trackers.catalogue.mutants`).

It stands on the tracker contract (:mod:`ctxsim.trackers`) and on the reference tracker, which never imports it.

>>> tracker = make("arbiter-msgid")   # a fresh tracker, ready for ctxsim.check.run_tracker
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._catalogue import (
        CATALOGUE as CATALOGUE,
        Breaks as Breaks,
        Entry as Entry,
        make as make,
        reference_for as reference_for,
    )
    from ._gauge import Gauge as Gauge

__getattr__, __dir__ = lazy_face(globals())
