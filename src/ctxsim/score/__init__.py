"""``ctxsim score``: how accurate each tracker is, over the scenario corpus and generated streams, as one table.

:func:`score` runs every tracker over every session scenario (through the real client, as ``pytest
--ctx-scenarios`` does) and, with ``fuzz``, over generated faulted streams (:func:`ctxsim.strategies.message_streams`,
seeded: the same run every time), and scores each on what users compare by eye:

- **max / mean error**: how far the estimate lies outside the truth band, in % of the window, over the points
  where the truth is knowable (an unknown estimate there counts as off but has no size);
- **threshold timing**: at every threshold a scenario states and at Claude Code's autocompact point, how many
  points early or late the tracker fires where the truth crosses (mean), and how many crossings it misses or
  invents;
- **points judged / off**, **faults survived** (faulted scenarios and streams tracked within tolerance), and the
  **first failing scenario** (corpus order).

Trackers are ranked by runs failed, then points off, then max and mean error; a tracker that is right everywhere
(the reference) ranks first. :attr:`TrackerScore.worst` keeps the run with the largest error for a plot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._board import Scoreboard as Scoreboard, TrackerScore as TrackerScore, score as score
    from ._plot import (
        FORMATS as FORMATS,
        PlotUnavailable as PlotUnavailable,
        plot_runs as plot_runs,
        require_pyplot as require_pyplot,
        write_scoreboard_html as write_scoreboard_html,
    )

__getattr__, __dir__ = lazy_face(globals(), stable=("score", "Scoreboard", "plot_runs", "PlotUnavailable"))
