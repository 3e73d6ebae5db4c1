"""A picture of a scenario: the true context, each tracker's estimates and the thresholds, over the session.

:func:`plot_runs` draws the truth band (prompt .. prompt + output at every observation point), one line of
estimates per tracker (at the points it is judged at), the scenario's thresholds and Claude Code's autocompact
point, and writes a PNG or SVG. It needs matplotlib, an optional extra: ``pip install 'pytest-ctxsim[plot]'``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..runner import ScenarioRun, percent

if TYPE_CHECKING:
    from ._board import Scoreboard
from ..check import crossings

__all__ = ["FORMATS", "PlotUnavailable", "plot_runs", "require_pyplot", "write_scoreboard_html"]

FORMATS = (".png", ".svg")
"""The file types :func:`plot_runs` writes, by suffix."""

_MAX_TICKS = 24
_COLORS = ("tab:blue", "tab:orange", "tab:cyan", "tab:pink", "tab:olive", "tab:gray", "#1a3d8f", "#c25e00",
           "#7b4fa8", "#00897b")
"""Trackers' colours: none of the truth's green, the thresholds' red and purple, or the events' brown."""


class PlotUnavailable(RuntimeError):
    """The plot cannot be drawn here (matplotlib is not installed); the message says what to install."""

    __module__ = "ctxsim.score"  # its public name, as tracebacks and reprs show it


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

    The truth is drawn last, over everything: a broad translucent stroke along the prompt with the band
    (prompt .. prompt + output) filled in. Markers show where each threshold (the scenario's, and Claude Code's
    autocompact point) is crossed by the truth (black stars) and fired by each tracker (triangles in its colour);
    compactions and ``/clear`` are vertical lines. The y axis is linear and stops a little above the window (or the
    truth, or estimates up to 1.5 windows): values beyond it are drawn on the top edge with an arrow naming the
    largest, so one wild outlier cannot squeeze the threshold, window and autocompact lines together.

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
    nan = float("nan")
    low = [o.truth.prompt if o.truth.knowable else nan for o in observations]
    high = [o.truth.next_request if o.truth.knowable else nan for o in observations]
    known_high = [h for h in high if h == h]
    estimates = [e for r in runs for p in r.report.points if (e := p.estimate) is not None]
    top = max([window, *known_high, *(e for e in estimates if e <= 1.5 * window)]) * 1.08

    fig, ax = plt.subplots(figsize=(13, 5.8), dpi=110)
    limits = [(f"threshold {percent(spec.at)}", spec.at * window, "tab:red", "--") for spec in scenario.thresholds]
    compact = scenario.session.auto_compact_threshold
    limits.append((f"Claude Code autocompact ({compact:,})", float(compact), "tab:purple", ":"))
    for text, limit, color, style in limits:
        ax.axhline(limit, color=color, linestyle=style, linewidth=1.2, zorder=2, label=text)
    ax.axhline(window, color="0.25", linewidth=1.5, zorder=2, label=f"window ({window:,})")
    for o in observations:
        if o.kind in ("compaction", "reset"):
            name = "compaction" if o.kind == "compaction" else "/clear"
            ax.axvline(o.index, color="tab:brown", linestyle="-." if o.kind == "compaction" else "-",
                       linewidth=1.0, alpha=0.7, zorder=1)
            ax.annotate(name, (o.index, top), xytext=(3, -12), textcoords="offset points", fontsize=8,
                        color="tab:brown", rotation=90, va="top")

    markers = "os^vDP*X"
    colors = _COLORS
    ringed = False
    unknowable = [o for o in observations if not o.truth.knowable]
    for k, o in enumerate(unknowable):  # not knowable: a grey bar over the band a tracker may answer (or None)
        band = o.truth.unseen or (0, 0)
        ax.axvspan(o.index - 0.3, o.index + 0.3, color="0.6", alpha=0.25, zorder=1,
                   label=None if k else "not knowable (return None)")
        if band != (0, 0):
            ax.plot([o.index, o.index], band, color="0.35", linewidth=3, zorder=5)
    for i, run in enumerate(runs):
        color = colors[i % len(colors)]
        points = [(p.observation.index, p.estimate) for p in run.report.points if p.estimate is not None]
        if not points:
            continue
        xs, ys = zip(*points)
        shown = [min(y, top) for y in ys]
        off = len(run.report.failures)
        verdict = "tracks" if run.report.ok else f"off at {off} point{'s' if off != 1 else ''}"
        reference = run.tracker == "reference"
        ax.plot(xs, shown, drawstyle="steps-post", marker=markers[i % len(markers)], markersize=3.5,
                linewidth=1.2, linestyle="--" if reference else "-", color=color, alpha=0.9, zorder=3,
                label=f"{run.tracker} ({verdict})")
        _clipped(ax, xs, ys, top, color, run.tracker, window)
        failing = [(p.observation.index, min(p.estimate, top)) for p in run.report.failures if p.estimate is not None]
        if failing:  # a failing point: a red ring round the estimate
            fx, fy = zip(*failing)
            ax.plot(fx, fy, marker="o", markersize=11, markerfacecolor="none", markeredgecolor="red",
                    markeredgewidth=1.6, linestyle="none", zorder=11, label=None if ringed else "failing point")
            ringed = True
        for _, limit, _, _ in limits:
            for k in crossings(list(ys), limit):  # just above the point, pointing at it
                ax.plot(xs[k], min(ys[k], top) + 0.035 * top, marker="v", markersize=9, color=color,
                        markeredgecolor="black", markeredgewidth=0.6, zorder=10, linestyle="none", clip_on=False)

    # The truth over everything, translucent so estimates on it show through: a broad stroke along the prompt
    # (what /context shows), and the band up to prompt + output.
    ax.step(x, low, where="post", color="tab:green", linewidth=8, alpha=0.4, zorder=6, solid_capstyle="butt",
            label="truth: prompt (/context), broad stroke")
    ax.fill_between(x, low, high, step="post", color="tab:green", alpha=0.45, zorder=6, linewidth=0,
                    label="truth band (prompt .. prompt + output)")
    truth_values = [None if v != v else int(v) for v in low]
    fired = False
    for _, limit, _, _ in limits:
        for k in crossings(truth_values, limit):
            ax.plot(x[k], low[k], marker="*", markersize=15, color="black", markeredgecolor="white", zorder=9,
                    linestyle="none", label=None if fired else "truth crosses a threshold")
            fired = True
    if any(crossings(list(ys), lim) for r in runs for _, lim, _, _ in limits
           for ys in [[p.estimate for p in r.report.points if p.estimate is not None]]):
        ax.plot([], [], marker="v", color="0.5", markeredgecolor="black", linestyle="none",
                label="a tracker fires (its colour)")

    step = max(1, len(x) // _MAX_TICKS)
    ax.set_xticks(x[::step], [o.label for o in observations][::step], rotation=60, ha="right", fontsize=7)
    ax.set_xlabel("observation point")
    ax.set_ylabel("tokens in the main context")
    ax.yaxis.set_major_formatter(lambda v, _: f"{v:,.0f}")
    ax.secondary_yaxis("right", functions=(lambda v: 100 * v / window, lambda p: p * window / 100)).set_ylabel(
        "% of the window")
    ax.set_ylim(0, top)
    ax.set_xlim(min(x, default=0) - 0.5, max(x, default=1) + 0.5)
    ax.set_title(title or f"scenario {scenario.name}")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.07, 1.0), borderaxespad=0)
    ax.grid(True, axis="y", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def _clipped(ax: Any, xs: Sequence[int], ys: Sequence[int], top: float, color: str, tracker: str,
             window: int) -> None:
    """Mark the estimates above the axis on its top edge, and name the largest."""
    above = [(x, y) for x, y in zip(xs, ys) if y > top]
    if not above:
        return
    x, y = max(above, key=lambda p: p[1])
    ax.plot([p[0] for p in above], [top] * len(above), marker="^", markersize=7, color=color, linestyle="none",
            clip_on=False, zorder=8)
    more = f", {len(above)} points above" if len(above) > 1 else ""
    ax.annotate(f"{tracker}: {y:,} tokens ({100 * y / window:,.0f}% of the window){more}, off the scale",
                (x, top), xytext=(-15, -48), textcoords="offset points", fontsize=8, color=color, ha="right",
                arrowprops={"arrowstyle": "->", "color": color}, zorder=9,
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "ec": color, "alpha": 0.9})


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ctxsim score</title>
<style>
body {{ font-family: sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; font-size: 14px; }}
th, td {{ border: 1px solid #999; padding: 4px 8px; text-align: right; }}
th {{ background: #dde6f0; }} td.name {{ text-align: left; }} td.name:nth-child(2) {{ font-weight: bold; }}
tr.first td {{ background: #d9f2d9; }} tr.yours td {{ outline: 2px solid #c60; font-weight: bold; }}
figure {{ margin: 24px 0; }} img {{ max-width: 1300px; border: 1px solid #ccc; }}
</style></head><body>
<h1>ctxsim score</h1>
<p>{summary}</p>
<table>
<tr>{head}</tr>
{rows}
</table>
{figures}
</body></html>
"""


def write_scoreboard_html(board: Scoreboard, directory: str | os.PathLike[str]) -> Path:
    """Write ``board`` as ``index.html`` in ``directory``, with each tracker's timeline plot (its worst
    scenario, against the truth) as a PNG beside it; returns the page's path. Needs matplotlib."""
    from html import escape

    require_pyplot()
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    lines = board.table().splitlines()
    rows, figures = [], []
    for (i, r), cells in zip(enumerate(board.rows, 1), board.cells()):
        classes = " ".join(c for c, on in (("first", i == 1), ("yours", r.tracker in board.yours)) if on)
        rows.append(f'<tr class="{classes}">' + "".join(
            f'<td class="{"name" if k in (1, 8) else ""}">{escape(c)}</td>' for k, c in enumerate(cells)) + "</tr>")
        if r.worst is not None:
            image = f"{i:02d}-{''.join(c if c.isalnum() or c in '-_' else '-' for c in r.tracker)}.png"
            what = "its worst scenario" if r.failed else "its longest scenario"
            plot_runs([r.worst], out / image, title=f"{r.tracker}: {r.worst.scenario.name} ({what})")
            figures.append(f'<figure><figcaption>{i}. <b>{escape(board.label(r.tracker))}</b> on '
                           f'{escape(r.worst.scenario.name)} ({what})</figcaption>'
                           f'<img src="{image}" alt="{escape(r.tracker)}"></figure>')
    page = out / "index.html"
    page.write_text(_PAGE.format(summary=escape(lines[0]), head="".join(f"<th>{h}</th>" for h in board.HEADER),
                                 rows="\n".join(rows), figures="\n".join(figures)), encoding="utf-8")
    return page
