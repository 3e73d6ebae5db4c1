"""Running one session scenario: its tracker's report, its thresholds and its verdict (the package's face says
what a run is)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any

from .._sync import run_blocking
from ..check import Match, Report, arun_tracker, crossings, likely_causes, match_firings, payload_wrong
from ..scenario import ExpectedFailure, SessionScenario
from ..surfaces import Rendition
from ..trackers import AnyTracker, AsyncTracker, Tracker
from ..wire import Script

__all__ = ["Failure", "ScenarioRun", "ThresholdResult", "corpus_verdicts", "explain", "likely_bugs", "percent",
           "run_scenario",
    "threshold_results", "verdict"]

MANY_POINTS = 60
"""Timelines with more points than this show only the rows that matter unless asked for all."""


def percent(ratio: float) -> str:
    """``0.9`` as ``90%``, ``0.835`` as ``83.5%``."""
    return f"{ratio * 100:g}%"


@dataclass(frozen=True)
class ThresholdResult:
    """Where one threshold fires for a tracker and for the truth, at the points the tracker is judged at."""

    at: float
    limit: float
    """The threshold in tokens: ``at`` x window."""
    report: Report
    match: Match

    @property
    def ok(self) -> bool:
        """True when the tracker fires once for each crossing of the truth, where the truth allows."""
        return self.match.ok

    def _label(self, i: int) -> str:
        return self.report.points[i].observation.label

    def _index(self, i: int) -> int:
        return self.report.points[i].observation.index

    def notes(self) -> dict[int, str]:
        """A note for the table at each point involved, by observation index."""
        pct = percent(self.at)
        out: dict[int, str] = {}
        for firing in self.match.firings:
            t, f = firing.truth, firing.tracker
            if t is not None and t == f:
                out[self._index(t)] = f"{pct} fires"
            elif t is None and f is not None:
                out[self._index(f)] = f"{pct} fires; truth does not cross"
            elif f is None and t is not None:
                out[self._index(t)] = f"{pct} truth crosses; tracker does not fire"
            elif t is not None and f is not None:
                verdict = "within the band" if firing.ok else ("too early" if f < t else "too late")
                out[self._index(f)] = f"{pct} fires ({verdict}: truth crosses at #{self._index(t)})"
                out[self._index(t)] = f"{pct} truth crosses (tracker fired at #{self._index(f)})"
        return out

    def problems(self) -> list[str]:
        """One sentence per wrong firing."""
        head = f"threshold {percent(self.at)} ({self.limit:,.0f} tokens)"
        out = []
        for firing in self.match.firings:
            if firing.ok:
                continue
            t, f = firing.truth, firing.tracker
            if f is None and t is not None:
                out.append(f"{head}: the truth crosses at {self._label(t)}; the tracker does not fire")
            elif t is None and f is not None:
                out.append(f"{head}: the tracker fires at {self._label(f)}; the truth does not cross there")
            elif t is not None and f is not None:
                when = "early" if f < t else "late"
                out.append(f"{head}: the tracker fires at {self._label(f)}, too {when}: the truth crosses at "
                           f"{self._label(t)}")
        return out


@dataclass(frozen=True)
class Failure:
    """How a run went, in the terms an expected failure (``expect.fail``) names."""

    kind: str
    """``tracks`` (no failure), ``off`` (off the truth, or thresholds fired wrong), ``crash`` (the tracker raised
    or returned a non-count), ``unreadable`` (a command or stream tracker could not be read), ``stall`` (the run
    did not finish), ``silent`` (no estimate at any point) or ``nowhere`` (judged at no point)."""
    first: str | None = None
    """For ``off``: the first failing point (or, off only on thresholds, the point of the first wrong firing)."""
    direction: str | None = None
    """For ``off``: ``over``, ``under`` or ``none`` (no estimate where the truth is knowable) at ``first``."""
    estimate: int | None = None
    """For ``off``: the estimate at ``first``."""
    detail: str = ""
    """For ``off``: the truth at ``first``; for a crash or stall: the ``ctxsim:`` line."""
    point: int | None = None
    """For ``off``: where ``first`` is among the report's points (0-based), when it is one."""

    def matches(self, expected: ExpectedFailure | None) -> bool:
        """True when this is a failure (off the truth: never a crash, a stall or silence) and every field
        ``expected`` states holds."""
        if self.kind != "off":
            return False
        if expected is None:
            return True
        if expected.first is not None and expected.first != self.first:
            return False
        if expected.direction is not None and expected.direction != self.direction:
            return False
        if expected.range is not None:
            low, high = expected.range
            return self.estimate is not None and low <= self.estimate <= high
        return True

    def describe(self) -> str:
        """What happened, in a clause: ``fails first at q1 result, over the truth (estimate 1,438,000, truth
        6,013..6,033)``."""
        if self.kind == "tracks":
            return "tracks it"
        if self.kind == "off":
            way = {"over": "over the truth", "under": "under the truth",
                   "none": "no estimate where the truth is knowable"}[self.direction or "none"]
            estimate = "" if self.estimate is None else f"estimate {self.estimate:,}, "
            return f"fails first at {self.first}, {way} ({estimate}{self.detail})"
        if self.kind == "silent":
            return "gives no estimate at any point (context_tokens() is None everywhere): not a reproduction"
        if self.kind == "nowhere":
            return "is judged at no point"
        if self.kind == "crash":
            return f"crashed, which is never a reproduction: {self.detail}"
        if self.kind == "unreadable":
            return f"could not be read: {self.detail}"
        return f"did not finish: {self.detail}"


@dataclass(frozen=True)
class ScenarioRun:
    """One tracker over one scenario: the oracle's report and every threshold's firings."""

    scenario: SessionScenario
    report: Report
    thresholds: tuple[ThresholdResult, ...] = ()
    rendition: Rendition | None = field(default=None, compare=False, repr=False)
    """The run's world on every surface (None: a run made elsewhere, e.g. estimates a client of ``ctxsim serve``
    wrote): its likely causes read the stream played from it."""

    @property
    def tracker(self) -> str:
        return self.report.tracker

    @property
    def ok(self) -> bool:
        """True when the tracker tracks the session within tolerance at the points it is judged at (at least one)
        and fires every threshold right."""
        return self.report.ok and bool(self.report.points) and all(t.ok for t in self.thresholds)

    @property
    def stalled(self) -> bool:
        """True when the run did not finish (the SDK client went silent): a failure whatever was expected."""
        return self.report.stall is not None

    @property
    def judged_nowhere(self) -> bool:
        """True when the tracker was compared at no point (a results-only tracker on a stream without results):
        it showed neither that it tracks the session nor that it fails on it."""
        report = self.report
        return not report.points and report.crash is None and report.stall is None and report.error is None

    @property
    def inconclusive(self) -> str:
        """Why the run gives no verdict (it stalled, or judged the tracker nowhere), else "": a failure whatever
        the scenario expects of the tracker."""
        if self.stalled:
            return "the run did not finish (the SDK client went silent)"
        if self.report.error is not None:
            return "the tracker could not be read"
        if self.judged_nowhere:
            return "it was judged at no point (none of the points it can be read at occurs in this stream)"
        return ""

    @property
    def failure(self) -> Failure:
        """How the run went: tracked, off the truth (where first, which way), or no verdict (crash, stall,
        silence, judged nowhere)."""
        report = self.report
        if report.stall is not None:
            return Failure("stall", detail=report.stall)
        if report.crash is not None:
            return Failure("crash", detail=report.crash)
        if report.error is not None:
            return Failure("unreadable", detail=report.error)
        if self.judged_nowhere:
            return Failure("nowhere")
        if self.ok:
            return Failure("tracks")
        if all(p.estimate is None for p in report.points):
            return Failure("silent")
        if report.failures:
            p = report.failures[0]
            truth = f"{p.low:,}" if p.low == p.high else f"{p.low:,}..{p.high:,}"
            return Failure("off", p.observation.label, report.how, p.estimate, f"truth {truth}",
                           next(i for i, q in enumerate(report.points) if q is p))
        for result in self.thresholds:
            for firing in result.match.firings:
                if firing.ok:
                    continue
                t, f = firing.truth, firing.tracker
                over = f is not None and (t is None or f < t)
                at = f if f is not None else t
                assert at is not None
                point = report.points[at]
                how = "early or where the truth does not cross" if over else "late or not at all"
                return Failure("off", point.observation.label, "over" if over else "under", point.estimate,
                               f"threshold {percent(result.at)} fired {how}", at)
        return Failure("off")  # unreachable: not ok, yet nothing off

    def notes(self) -> dict[int, str]:
        """The threshold column, by observation index."""
        out: dict[int, str] = {}
        for result in self.thresholds:
            for index, note in result.notes().items():
                out[index] = f"{out[index]}; {note}" if index in out else note
        return out

    def table(self, *, only_failures: bool = False, explain: bool = False) -> str:
        """The timeline: point, truth band, estimate, error, a threshold column when thresholds are set, and with
        ``explain`` the likely cause at each failing point (:func:`likely_bugs`)."""
        likely = self.likely if explain and self.report.failures else None
        return self.report.table(only_failures=only_failures, notes=self.notes() if self.thresholds else None,
                                 likely=likely)

    @cached_property
    def likely(self) -> dict[int, str]:
        """The likely cause at each failing point, by observation index (:func:`likely_bugs`), worked out once a
        run whichever door asks for it."""
        if not self.report.failures:
            return {}
        rendition = self.rendition
        return likely_bugs(self.report, self.scenario.scripts if rendition is None else lambda: rendition.stream)

    def problems(self) -> list[str]:
        """Every wrong threshold firing, one sentence each."""
        return [p for t in self.thresholds for p in t.problems()]


def threshold_results(scenario: SessionScenario, report: Report) -> tuple[ThresholdResult, ...]:
    """Each threshold of ``scenario`` checked on ``report``: where the truth and the estimates fire."""
    points = report.points
    tolerance = report.tolerance
    truth = [p.low if p.observation.truth.knowable else None for p in points]
    low = [None if v is None else v - tolerance for v in truth]
    high = [p.high + tolerance if p.observation.truth.knowable else None for p in points]
    estimates = [p.reading for p in points]
    out = []
    for spec in scenario.thresholds:
        limit = spec.at * scenario.session.window
        match = match_firings(crossings(truth, limit), crossings(estimates, limit), low, high, limit)
        out.append(ThresholdResult(spec.at, limit, report, match))
    return tuple(out)


def run_scenario(scenario: SessionScenario, tracker: AnyTracker, *, name: str | None = None,
                 async_backend: str = "asyncio", silence_timeout: float | None = 30.0) -> ScenarioRun:
    """Run ``tracker`` over ``scenario`` through the real SDK client and check its thresholds.

    ``name`` is what the report calls the tracker (default: its ``name`` attribute, else its class name).
    ``async_backend`` is ``asyncio`` or ``trio``, run as ``run_blocking`` runs them (asyncio on one
    reused event loop per thread; where an event loop already runs, on a worker thread while the caller waits).
    ``silence_timeout`` bounds every wait on the client, in seconds without progress
    (:func:`ctxsim.check.arun_tracker`): a run that stalls is not ok, whatever the scenario expects, and its report's
    ``stall`` says where. Raises ``ValueError`` for a :class:`~ctxsim.scenario.TaskScenario`
    (:func:`ctxsim.runner.run_task` runs those).
    """
    if not isinstance(scenario, SessionScenario):
        raise ValueError(f"ctxsim: run_scenario: scenario {scenario.name!r} is a task scenario: run its restart loop "
                         f"with ctxsim.runner.run_task")
    rendition = scenario.rendition()
    options: dict[str, Any] = {"tolerance": scenario.tolerance, "rendition": rendition,
                               "include_partial_messages": scenario.partial, "silence_timeout": silence_timeout}
    report = run_blocking(partial(arun_tracker, tracker, scenario.session, **options), backend=async_backend)
    if name is not None:
        report.tracker = name
    return ScenarioRun(scenario, report, threshold_results(scenario, report), rendition)


def likely_bugs(report: Report, scripts: Callable[[], Iterable[Script]]) -> dict[int, str]:
    """What each failing point of ``report`` likely means, by observation index: :func:`ctxsim.check.likely_causes`
    (not knowable, Claude Code's payload wrong, or a catalogued bug named only when it is specific)."""
    return likely_causes(report, scripts)


def _claude_codes_own(report: Report) -> list[str]:
    """For a statusline command off only where Claude Code's own payload is wrong and it shows what the payload says
    (:func:`ctxsim.check.payload_wrong`): one line saying so."""
    wrong = payload_wrong(report)
    knowable = [p for p in report.failures if p.observation.truth.knowable]
    if not wrong or not knowable or any(p.observation.index not in wrong for p in knowable):
        return []
    return [f"verdict: {report.tracker} is off only where Claude Code's own statusline payload is wrong ({len(wrong)} "
            f"point{'s' if len(wrong) != 1 else ''}) and shows what the payload says: a fair verdict on the gauge, "
            f"but the bug is Claude Code's; the likely-cause column says what to read instead"]


def verdict(run: ScenarioRun, expected: str, failure: ExpectedFailure | None = None) -> tuple[bool, str]:
    """Whether ``run`` did what was ``expected`` of it (``pass``: track the session; ``fail``: fail on it as
    ``failure`` says, when given; ``none``: anything), and what it did, in a clause. A crash, a stall, silence at
    every point or a run judged nowhere meets no expectation."""
    got = run.failure
    if expected == "none":
        return True, got.describe()
    if got.kind in ("stall", "crash", "unreadable", "nowhere", "silent"):
        return False, got.describe()
    if expected == "pass":
        return got.kind == "tracks", got.describe()
    if expected == "fail":
        return got.matches(failure), got.describe()
    raise ValueError(f"ctxsim: verdict: expected is pass, fail or none, got {expected!r}")


def explain(run: ScenarioRun, head: str, *, verbosity: int = 0, bug: str = "",
            shown: Callable[[Path], str] = str) -> str:
    """What a reader needs when ``run`` did not do what was expected: ``head`` (the broken expectation), with
    ``verbosity`` > 0 the scenario's source and the tracker's known ``bug``, then the summary, the timeline (only
    the rows that matter past :data:`MANY_POINTS` points unless ``verbosity`` >= 2), wrong threshold firings and
    the file and line of the first failing point (``shown`` formats paths)."""
    scenario, report = run.scenario, run.report
    lines = [head]
    if verbosity > 0:
        lines += [f"source: {scenario.source}"] if scenario.source else []
        lines += [f"description: {scenario.description}"] if scenario.description else []
        lines += [f"tracker {run.tracker}: {bug}"] if bug else []
    lines.append(report.summary() if not run.judged_nowhere else
                 f"ctxsim: {run.tracker} was judged at no point of session {scenario.name!r}: a tracker read only at "
                 f"some kinds of point (e.g. results) must meet at least one of them to be judged")
    problems = run.problems()
    if report.points:
        many = len(report.points) > MANY_POINTS and verbosity < 2
        only_failures = bool(report.failures or problems) and many
        if report.failures or problems or not many:
            lines.append(run.table(only_failures=only_failures, explain=True))
        if only_failures:
            lines.append(f"({len(report.failures)} of {len(report.points)} points off; -vv shows all)")
        elif many:
            lines.append(f"({len(report.points)} points, all within tolerance; -vv shows them)")
    lines += report.diagnosis()
    lines += _claude_codes_own(report)
    lines += problems
    if report.failures:
        first = report.failures[0].observation
        where = scenario.where(first.label)
        lines.append(f"first failing point: #{first.index} {first.label}"
                     + (f" ({shown(where[0])}:{where[1]})" if where else ""))
    return "\n".join(lines)


def corpus_verdicts(scenarios: Iterable[SessionScenario], make: Callable[[SessionScenario], Tracker | AsyncTracker],
                    *, name: str = "tracker") -> dict[str, tuple[bool, str]]:
    """What ``pytest --ctx-scenarios --ctx-tracker`` says of a tracker on each scenario that expects something of
    it (``expect.ctx_tracker`` ``pass`` or ``fail``): ``scenario name -> (met, what it did)``. ``make`` builds a
    fresh tracker for a scenario (told its world, as the reference is)."""
    out: dict[str, tuple[bool, str]] = {}
    for scenario in scenarios:
        if scenario.ctx_tracker == "skip":
            continue
        run = run_scenario(scenario, make(scenario), name=name)
        out[scenario.name] = verdict(run, scenario.ctx_tracker)
    return out
