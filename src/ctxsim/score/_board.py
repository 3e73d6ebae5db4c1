"""The scoreboard: every tracker over a set of scenarios, with its errors and verdicts (the package's face says
what it shows)."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TextIO

from ..check import Report, crossings, match_firings
from ..runner import ScenarioRun, Verdict, judgement
from ..scenario import SessionScenario
from ..trackers import AnyTrackerFactory, TrackerSpec, make_tracker
from ..trackers.catalogue import CATALOGUE

__all__ = ["Scoreboard", "TrackerScore", "score"]


OFF_THE_SCALE = 1_000.0
"""Errors past this share of the window, in %, print as ``off the scale``: no gauge reads 12 digits of percent."""


def shown_error(percent: float, digits: int) -> str:
    """An error in % of the window as the scoreboard prints it: ``3.2%``, or ``off the scale`` past
    :data:`OFF_THE_SCALE` (a tracker answering a count of another kind, a huge garbage figure)."""
    return "off the scale" if percent > OFF_THE_SCALE else f"{percent:.{digits}f}%"


@dataclass
class TrackerScore:
    """One tracker's score over every run."""

    tracker: str
    runs: int = 0
    failed: int = 0
    points: int = 0
    """Points judged (a tracker fed only results is judged at results only)."""
    off: int = 0
    """Points outside the tolerance."""
    errors: list[float] = field(default_factory=list, repr=False)
    """Every judged point's error, in % of the window (0 inside the band)."""
    offsets: list[int] = field(default_factory=list)
    """For every threshold crossing the tracker fired at: points late (+) or early (-)."""
    missed: int = 0
    """Crossings without a firing, and firings without a crossing."""
    faulted: int = 0
    survived: int = 0
    first_failing: str | None = None
    verdicts: list[Verdict] = field(default_factory=list, repr=False)
    """Its verdict on every scenario, as the plan of judgement gives it (skips included, never scored)."""
    worst: ScenarioRun | None = field(default=None, repr=False)
    """The scenario run with the largest error (or the first failing one), else the longest run."""
    _worst_key: tuple[bool, float, int] = field(default=(False, -1.0, 0), repr=False)

    @property
    def max_error(self) -> float:
        return max(self.errors, default=0.0)

    @property
    def mean_error(self) -> float:
        return sum(self.errors) / len(self.errors) if self.errors else 0.0

    @property
    def timing(self) -> str:
        """``0.0 pts`` (mean absolute offset), with ``, N missed`` for unpaired crossings or firings."""
        mean = sum(abs(o) for o in self.offsets) / len(self.offsets) if self.offsets else 0.0
        return f"{mean:.1f} pts" + (f", {self.missed} missed" if self.missed else "")

    def rank_key(self) -> tuple[int, int, float, float, int]:
        return self.failed, self.off, round(self.max_error, 6), round(self.mean_error, 6), self.missed

    def add(self, name: str, report: Report, limits: Sequence[float], faulted: bool,
            run: ScenarioRun | None = None) -> None:
        """Score one run: ``report`` over the scenario or stream ``name``, thresholds at ``limits`` tokens."""
        window = report.session.window
        ok = run.ok if run is not None else report.ok  # a scenario's run also judges its own thresholds
        self.runs += 1
        judged = [p for p in report.points if p.observation.truth.knowable]
        self.points += len(report.points)
        self.off += len(report.failures)
        # A point the oracle accepts by a rule other than the tolerance (a compaction's range) is no error.
        errors = [100 * (abs(p.error) if not p.ok or abs(p.error) <= report.tolerance else 0) / window
                  for p in judged if p.error is not None]
        self.errors += errors
        truth = [p.low if p.observation.truth.knowable else None for p in report.points]
        low = [None if v is None else v - report.tolerance for v in truth]
        high = [p.high + report.tolerance if p.observation.truth.knowable else None for p in report.points]
        estimates = [p.reading for p in report.points]
        for limit in limits:
            match = match_firings(crossings(truth, limit), crossings(estimates, limit), low, high, limit)
            for firing in match.firings:
                if firing.truth is None or firing.tracker is None:
                    self.missed += 1
                else:
                    self.offsets.append(firing.tracker - firing.truth)
        if faulted:
            self.faulted += 1
            self.survived += ok
        if not ok:
            self.failed += 1
            if self.first_failing is None:
                self.first_failing = name
        if run is not None:
            key = (not ok, max(errors, default=0.0), len(report.points))
            if self.worst is None or key > self._worst_key:
                self.worst, self._worst_key = run, key


@dataclass
class Scoreboard:
    """Every tracker's score, best first."""

    rows: list[TrackerScore]
    scenarios: int
    streams: int
    yours: frozenset[str] = frozenset()
    """The trackers the user brought (``--tracker``): marked ``(yours)`` in the table and on the page."""

    def label(self, tracker: str) -> str:
        """How the table names ``tracker``: its name, marked when it is one of :attr:`yours`."""
        return f"{tracker} (yours)" if tracker in self.yours else tracker

    HEADER: ClassVar[tuple[str, ...]] = ("#", "tracker", "runs ok", "max err", "mean err", "threshold timing",
                                         "points off", "faults survived", "first failing scenario")
    """The columns of :meth:`cells`."""

    def cells(self) -> list[tuple[str, ...]]:
        """Each row's cells as shown (table and page alike), best first."""
        return [(str(i), self.label(r.tracker), f"{r.runs - r.failed}/{r.runs}", shown_error(r.max_error, 1),
                 shown_error(r.mean_error, 2), r.timing, f"{r.off}/{r.points}", f"{r.survived}/{r.faulted}",
                 r.first_failing or "-") for i, r in enumerate(self.rows, 1)]

    def table(self) -> str:
        """The scoreboard as a text table."""
        header = self.HEADER
        rows = [header, *self.cells()]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        align = (">", "<", ">", ">", ">", ">", ">", ">", "<")
        lines = ["  ".join(f"{c:{a}{w}}" for c, a, w in zip(row, align, widths)).rstrip() for row in rows]
        what = f"{self.scenarios} scenarios" + (f" and {self.streams} generated streams" if self.streams else "")
        return (f"ctxsim score: {len(self.rows)} trackers over {what}; errors in % of the window, outside the "
                f"truth band\n" + "\n".join(lines))

    def __str__(self) -> str:
        return self.table()

    @property
    def verdicts(self) -> list[Verdict]:
        """Every tracker's verdict on every scenario, tracker by tracker (best first)."""
        return [v for r in self.rows for v in r.verdicts]


def _limits(scenario: SessionScenario) -> list[float]:
    """The thresholds judged on a scenario, in tokens: its own, then Claude Code's autocompact point."""
    session = scenario.session
    return [spec.at * session.window for spec in scenario.thresholds] + [float(session.auto_compact_threshold)]


def _streams(count: int, seed: int) -> list[Any]:
    """``count`` generated faulted streams, the same ones for the same seed and code."""
    from hypothesis import HealthCheck, Phase, given, seed as hypothesis_seed, settings

    from ..strategies import message_streams

    drawn: list[Any] = []

    @hypothesis_seed(seed)
    @settings(max_examples=count, deadline=None, database=None, suppress_health_check=list(HealthCheck),
              phases=(Phase.generate,))
    @given(message_streams())
    def collect(stream: Any) -> None:
        drawn.append(stream)

    collect()
    return drawn[:count]


def _spec(tracker: TrackerSpec | tuple[str, AnyTrackerFactory]) -> TrackerSpec:
    """A tracker as the plan of judgement takes it: a ``(name, factory)`` pair is the catalogued tracker of that name
    when it is one, else a Python factory."""
    if isinstance(tracker, TrackerSpec):
        return tracker
    name, factory = tracker
    entry = CATALOGUE.get(name)
    return TrackerSpec(name, name, factory, catalogued=entry is not None and entry.factory is factory)


def score(scenarios: Sequence[SessionScenario], trackers: Sequence[TrackerSpec | tuple[str, AnyTrackerFactory]], *,
          fuzz: int = 0, seed: int = 0, progress: TextIO | None = None, yours: Collection[str] = ()) -> Scoreboard:
    """Score each tracker of ``trackers`` (a ``TrackerSpec``, or ``(name, factory)``) over ``scenarios`` and
    ``fuzz`` generated streams; ``yours`` names the user's trackers among them (marked on the board). Each
    scenario's run is planned as every door plans it (:func:`ctxsim.runner.judgement`: the world it is told, the
    scenarios it is not judged on); a skip is kept among the verdicts and not scored."""
    from ..check import run_tracker_parsed

    specs = [_spec(t) for t in trackers]
    rows = {spec.name: TrackerScore(spec.name) for spec in specs}
    say: Callable[[str], None] = (lambda m: print(m, file=progress, flush=True)) if progress else (lambda m: None)
    for scenario in scenarios:
        say(f"ctxsim score: {scenario.name} ...")
        limits = _limits(scenario)
        for spec in specs:
            verdict = judgement(scenario, spec).run()
            rows[spec.name].verdicts.append(verdict)
            if verdict.run is not None:
                rows[spec.name].add(scenario.name, verdict.run.report, limits, bool(scenario.faults), verdict.run)
    streams = _streams(fuzz, seed) if fuzz > 0 else []
    for i, stream in enumerate(streams, 1):
        say(f"ctxsim score: generated stream {i}/{len(streams)} ...") if i % 20 == 0 else None
        limit = [float(stream.session.auto_compact_threshold)]
        for spec in specs:
            tracker = make_tracker(spec.factory, stream.session)
            report = run_tracker_parsed(tracker, stream.session, copy.deepcopy(stream.scripts), tolerance=0,
                                        faults=stream.plan)
            rows[spec.name].add(f"generated stream {i}", report, limit, bool(stream.plan.spec()))
    ranked = sorted(rows.values(), key=lambda r: r.rank_key())
    return Scoreboard(ranked, len(scenarios), len(streams), frozenset(yours))
