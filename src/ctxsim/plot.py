"""A picture of a scenario: the true context, each tracker's estimates and the thresholds, over the session.

:func:`plot_runs` draws the truth band (prompt .. prompt + output at every observation point), one line of
estimates per tracker (at the points it is judged at), the scenario's thresholds and Claude Code's autocompact
point, and writes a PNG or SVG. It needs matplotlib, an optional extra: ``pip install 'pytest-ctxsim[plot]'``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .scenario_run import ScenarioRun, percent

__all__ = ["FORMATS", "PlotUnavailable", "plot_runs", "require_pyplot"]

FORMATS = (".png", ".svg")
"""The file types :func:`plot_runs` writes, by suffix."""

_MAX_TICKS = 24


class PlotUnavailable(RuntimeError):
    """The plot cannot be drawn here (matplotlib is not installed); the message says what to install."""


def require_pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise PlotUnavailable("ctxsim: plotting needs matplotlib, an optional extra: "
                              "pip install 'pytest-ctxsim[plot]'") from None
    matplotlib.use("Agg", force=True)  # files only: never a window
    import matplotlib.pyplot as plt

    return plt


def plot_runs(runs: Sequence[ScenarioRun], path: str | os.PathLike[str], *, title: str | None = None) -> Path:
    """Draw ``runs`` (trackers over one scenario) into ``path`` (``.png`` or ``.svg``); returns the path.

    Raises :class:`PlotUnavailable` without matplotlib, ``ValueError`` for another suffix or no runs.
    """
    out = Path(path)
    if out.suffix.lower() not in FORMATS:
        raise ValueError(f"ctxsim: cannot write a plot as {out.suffix or 'a file without a suffix'!r}; use "
                         f"{' or '.join(FORMATS)}")
    if not runs:
        raise ValueError("ctxsim: nothing to plot (no runs)")
    plt = require_pyplot()
    scenario = runs[0].scenario
    window = scenario.session.window
    observations = scenario.observations()
    x = [o.index for o in observations]
    low = [o.truth.prompt for o in observations]
    high = [o.truth.next_request for o in observations]

    fig, ax = plt.subplots(figsize=(13, 5.5), dpi=110)
    # Every value holds from its point until the next one: steps, not slopes.
    ax.fill_between(x, low, high, step="post", color="0.80", label="truth band (prompt .. prompt + output)")
    ax.step(x, low, where="post", color="black", linewidth=1.6, label="truth: prompt (what /context shows)")
    markers = "os^vDP*X"
    for i, run in enumerate(runs):
        points = [(p.observation.index, p.estimate) for p in run.report.points if p.estimate is not None]
        if not points:
            continue
        xs, ys = zip(*points)
        off = len(run.report.failures)
        verdict = "tracks" if run.report.ok else f"off at {off} point{'s' if off != 1 else ''}"
        ax.plot(xs, ys, drawstyle="steps-post", marker=markers[i % len(markers)], markersize=4, linewidth=1.2,
                alpha=0.85, label=f"{run.tracker} ({verdict})")
    for spec in scenario.thresholds:
        ax.axhline(spec.at * window, color="tab:red", linestyle="--", linewidth=1,
                   label=f"threshold {percent(spec.at)}")
    compact = scenario.session.auto_compact_threshold
    ax.axhline(compact, color="tab:purple", linestyle=":", linewidth=1,
               label=f"Claude Code autocompact ({compact:,})")
    ax.axhline(window, color="0.3", linewidth=0.8, label=f"window ({window:,})")

    step = max(1, len(x) // _MAX_TICKS)
    ax.set_xticks(x[::step], [o.label for o in observations][::step], rotation=60, ha="right", fontsize=7)
    ax.set_xlabel("observation point")
    ax.set_ylabel("tokens in the main context")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")
    top = max([window, *high, *(p.estimate or 0 for r in runs for p in r.report.points)])
    if top > 3 * window:  # a tracker far off the scale (719%): keep the truth readable
        ax.set_yscale("symlog", linthresh=window / 10)
        ax.set_ylabel("tokens in the main context (log scale above 10% of the window)")
    else:
        ax.secondary_yaxis("right", functions=(lambda v: 100 * v / window, lambda p: p * window / 100)).set_ylabel(
            "% of the window")
    ax.set_ylim(0, top * 1.05)
    ax.set_title(title or f"scenario {scenario.name}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.07, 1.0), borderaxespad=0)
    ax.grid(True, axis="y", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out
