"""The plan of judgement: for a tracker of any kind on a session scenario, whether it is judged there, against what
expectation, at what tolerance and quantity, and what it is told of the world; and the verdict a run of it gives.

Every door (``pytest --ctx-scenarios``, ``pytest my.yaml``, ``ctxsim run``, ``ctxsim judge``, ``ctxsim score``,
``ctxsim serve --judge``) asks :func:`judgement` (or :func:`judgements`) instead of deciding itself, and renders the
:class:`Verdict` it gets (:mod:`ctxsim.runner` renders one for a terminal, Markdown, JSON and JUnit XML), so the
same tracker gets the same verdict at every door.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

from ..check import Report
from ..scenario import ExpectedFailure, SessionScenario
from ..trackers import AnyTracker, AnyTrackerFactory, TrackerSpec, TrackerWorld, make_tracker
from ..trackers.catalogue import reference_for
from ._scenario import ScenarioRun, run_scenario, threshold_results, verdict

if TYPE_CHECKING:
    from ..surfaces import Rendition
    from ..wire import Observation
    from ..world import Quantity

__all__ = ["Judgement", "TrackerKind", "Verdict", "judgement", "judgements", "named_apart", "served", "tracker_kind"]

TrackerKind = Literal["reference", "catalogued", "python", "cmd", "stream", "estimates"]
"""The kinds of tracker a door may be given: the reference, a catalogued tracker, a Python ``module:factory``, a
statusline command (``cmd:``), a stream tracker (``stream:``), or the estimates a client of ``ctxsim serve`` wrote
(a tracker ctxsim does not run)."""


def tracker_kind(spec: TrackerSpec) -> TrackerKind:
    """The kind of the tracker ``spec`` names."""
    if spec.command:
        return "cmd"
    if spec.stream:
        return "stream"
    if spec.catalogued:
        return "reference" if spec.name == "reference" else "catalogued"
    return "python"


@dataclass(frozen=True)
class Judgement:
    """One tracker on one session scenario, as planned: what it must do there, or why it is not judged."""

    scenario: SessionScenario
    tracker: str
    """What reports call the tracker."""
    kind: TrackerKind
    expected: str
    """``pass`` (track the session), ``fail`` (fail on it, as :attr:`failure` says when set) or ``none``."""
    rule: str
    """The key of the scenario that says so: ``expect.reference``, ``expect.fail``, ``expect.pass`` or
    ``expect.ctx_tracker``."""
    failure: ExpectedFailure | None = None
    skip: str | None = None
    """Why the tracker is not judged here (then it is not run, and its verdict is a skip), else None."""
    factory: AnyTrackerFactory | None = field(default=None, compare=False)
    spec: str = ""
    """How the tracker was given (``--ctx-tracker``, ``--tracker``, ``ctxsim judge SPEC``); empty for one the
    scenario names."""
    declared: Quantity | None = None
    """For estimates a client of ``ctxsim serve`` wrote: the quantity they declare they are (None: tokens)."""

    @property
    def world(self) -> TrackerWorld:
        """What the tracker is told of the session, whatever its kind (a factory's ``world``, a command's
        ``CTXSIM_*`` variables)."""
        return TrackerWorld.of(self.scenario.session)

    @property
    def tolerance(self) -> int:
        """The tokens either side of the truth an estimate may be off (``expect.tolerance``)."""
        return self.scenario.tolerance

    @property
    def quantity(self) -> str:
        """What a gauge must show (``world.quantity``); a tracker declaring none is judged on tokens. Estimates
        are judged as the quantity they declare (:attr:`declared`), tokens when they declare none, as a tracker
        is."""
        if self.kind == "estimates":
            return self.declared or "tokens"
        return self.scenario.session.quantity

    @property
    def line(self) -> int:
        """The line of the scenario file that says what is expected of the tracker."""
        scenario = self.scenario
        if self.rule == "expect.ctx_tracker":
            return scenario.lines.get("expect.ctx_tracker") or scenario.line_of(scenario.reference)
        return scenario.line_of(self.tracker)

    def make(self) -> AnyTracker:
        """A fresh tracker, told the session's world: the reference as
        :func:`ctxsim.trackers.catalogue.reference_for` makes it (its usage convention, the quantity the scenario
        asks), any other through its factory (:func:`ctxsim.trackers.make_tracker`)."""
        if self.kind == "reference":
            return reference_for(self.scenario.session)
        assert self.factory is not None
        made: AnyTracker = make_tracker(self.factory, self.scenario.session)
        return made

    def run(self) -> Verdict:
        """The verdict: a skip when not judged here, else the tracker's run through the real SDK client."""
        if self.skip is not None:
            return Verdict(self, None)
        return Verdict(self, run_scenario(self.scenario, self.make(), name=self.tracker))

    def judge(self, run: ScenarioRun) -> Verdict:
        """The verdict on a run made elsewhere (the estimates a client of ``ctxsim serve`` wrote)."""
        return Verdict(self, run)

    def judge_estimates(self, observations: Sequence[Observation], estimates: Mapping[int, float | None], *,
                        rendition: Rendition | None = None) -> Verdict:
        """The verdict on estimates given by point number (a point missing: no estimate) at ``observations`` (what
        a client of ``ctxsim serve`` wrote), each read as :attr:`quantity` (a gauge's number as the tokens it stands
        for on the window in force at its point), judged as a run in-process is (``rendition``: the world the
        estimates were made on, whose stream the likely causes read)."""
        scenario = self.scenario
        report = Report(self.tracker, scenario.session, scenario.tolerance)
        report.quantity = self.declared or "tokens"
        report.declared = self.declared
        for o in observations:
            report.points.append(report.point(o, estimates.get(o.index)))
        return Verdict(self, ScenarioRun(scenario, report, threshold_results(scenario, report), rendition))


@dataclass(frozen=True)
class Verdict:
    """What a planned judgement gave: a skip with its reason, or the run and whether it met the expectation."""

    judgement: Judgement
    run: ScenarioRun | None
    """None for a skip."""

    @property
    def scenario(self) -> SessionScenario:
        """The scenario judged on."""
        return self.judgement.scenario

    @property
    def tracker(self) -> str:
        """What reports call the tracker."""
        return self.judgement.tracker

    @property
    def skipped(self) -> str | None:
        """Why the tracker was not judged here, else None."""
        return self.judgement.skip

    @cached_property
    def _met(self) -> tuple[bool, str]:
        if self.run is None:
            return False, f"skipped: {self.judgement.skip}"
        return verdict(self.run, self.judgement.expected, self.judgement.failure)

    @property
    def met(self) -> bool:
        """True when the run did what the scenario expects of the tracker; never for a skip."""
        return self.run is not None and self._met[0]

    @property
    def does(self) -> str:
        """What the run did, in a clause (``tracks it``, ``fails first at q1 result, over the truth (...)``)."""
        return self._met[1]

    @property
    def status(self) -> str:
        """``met``, ``unmet`` or ``skipped``."""
        return "skipped" if self.run is None else "met" if self.met else "unmet"

    @property
    def first(self) -> Observation | None:
        """The first failing point (or, off only on thresholds, the point of the first wrong firing), else None."""
        if self.run is None:
            return None
        point = self.run.failure.point
        return None if point is None else self.run.report.points[point].observation

    @property
    def causes(self) -> dict[int, str]:
        """The likely cause at each failing point, by point number (:func:`ctxsim.check.likely_causes`)."""
        return {} if self.run is None else self.run.likely

    @property
    def cause(self) -> str | None:
        """The likely cause at the first failing point, whole, else None."""
        first = self.first
        return None if first is None else self.causes.get(first.index)

    def key(self) -> tuple[str, str, str, str, int | None, str | None]:
        """What every door must agree on: ``(scenario, tracker, status, outcome, first failing point, cause)``."""
        outcome = "skipped" if self.run is None else self.run.failure.kind
        first = self.first
        return (self.scenario.name, self.tracker, self.status, outcome, None if first is None else first.index,
                self.cause)

    def as_dict(self) -> dict[str, Any]:
        """The verdict as JSON: scenario, tracker, kind, expected, status, outcome (a failure's kind), what it
        did, the first failing point (its number and label), the likely cause, the skip's reason, the summary."""
        first = self.first
        out: dict[str, Any] = {
            "scenario": self.scenario.name, "tracker": self.tracker, "kind": self.judgement.kind,
            "expected": self.judgement.expected, "rule": self.judgement.rule, "status": self.status,
            "outcome": "skipped" if self.run is None else self.run.failure.kind,
            "does": self.does, "tolerance": self.judgement.tolerance, "quantity": self.judgement.quantity,
            "first": None if first is None else {"index": first.index, "point": first.label},
            "cause": self.cause, "skip": self.skipped,
        }
        if self.run is not None:
            report = self.run.report
            out["summary"] = report.summary()
            out["points"] = len(report.points)
            out["failures"] = [{"index": p.observation.index, "point": p.observation.label, "estimate": p.estimate,
                                "low": p.low, "high": p.high, "cause": self.causes.get(p.observation.index)}
                               for p in report.failures]
        return out


def judgement(scenario: SessionScenario, tracker: TrackerSpec | str) -> Judgement:
    """The plan for ``tracker`` on ``scenario``: ``reference`` or a catalogued tracker the scenario names is judged
    as the scenario says of it (``expect.reference``, ``expect.fail``, ``expect.pass``); any other tracker (a
    ``TrackerSpec``: catalogued, Python, ``cmd:``, ``stream:``) as ``expect.ctx_tracker`` says, skipped where that
    is ``skip``, where the scenario plays a recorded stream to a statusline command (which reads the transcript
    rendered from a simulated session), and where a fault is real only on surfaces the tracker does not read
    (:meth:`ctxsim.scenario.SessionScenario.not_judged`)."""
    from ..trackers.catalogue import CATALOGUE

    spec = tracker if isinstance(tracker, TrackerSpec) else None
    name = tracker if isinstance(tracker, str) else tracker.name
    catalogued = spec.catalogued if spec is not None else True
    given = spec.spec if spec is not None else ""
    if catalogued and name == "reference":
        return Judgement(scenario, "reference", "reference", "pass" if scenario.expect_reference else "fail",
                         "expect.reference", spec=given)
    if catalogued and name in scenario.must_fail:
        return Judgement(scenario, name, "catalogued", "fail", "expect.fail", scenario.failures.get(name),
                         factory=CATALOGUE[name].factory, spec=given)
    if catalogued and name in scenario.must_pass:
        return Judgement(scenario, name, "catalogued", "pass", "expect.pass", factory=CATALOGUE[name].factory,
                         spec=given)
    if spec is None:
        spec = TrackerSpec(name, name, CATALOGUE[name].factory, catalogued=True)
    kind = tracker_kind(spec)
    expected = {"pass": "pass", "fail": "fail"}.get(scenario.ctx_tracker, "none")
    skip = None
    if scenario.ctx_tracker == "skip":
        skip = f"expect.ctx_tracker: skip (line {scenario.lines.get('expect.ctx_tracker', 1)})"
    elif spec.feeding.fed == "points" and scenario.recording is not None:
        skip = ("the scenario plays a recorded stream; a statusline command reads the transcript and payload ctxsim "
                "renders from a simulated session, which a recording does not give")
    elif (why := scenario.not_judged(spec.reads)) is not None:
        skip = why
    return Judgement(scenario, spec.name, kind, expected, "expect.ctx_tracker", skip=skip, factory=spec.factory,
                     spec=spec.spec)


def served(scenario: SessionScenario, name: str, declared: Quantity | None = None) -> Judgement:
    """The plan for estimates written by a tracker ctxsim does not run (``ctxsim serve --judge FILE``): judged as a
    tracker under test, as ``expect.ctx_tracker`` says (``skip``: what it does is shown, not judged), in the
    quantity they declare (``declared``; None: tokens)."""
    expected = {"pass": "pass", "fail": "fail"}.get(scenario.ctx_tracker, "none")
    return Judgement(scenario, name, "estimates", expected, "expect.ctx_tracker", declared=declared)


def named_apart(specs: Sequence[TrackerSpec], taken: Sequence[str] = ()) -> list[TrackerSpec]:
    """``specs``, each named apart from the others and from ``taken``: a catalogued tracker, or one given twice by the
    same spec, once; a tracker reports would name as an earlier one (two factories making one class, two commands
    of one basename) named ``NAME[SPEC]``, as a parametrized test's id, and kept."""
    out: list[TrackerSpec] = []
    names = set(taken)
    for spec in specs:
        if any(s.spec == spec.spec for s in out) or (spec.catalogued and spec.name in names):
            continue
        if spec.name in names:
            spec = replace(spec, name=f"{spec.name}[{spec.spec}]")
        names.add(spec.name)
        out.append(spec)
    return out


def judgements(scenario: SessionScenario, under_test: Sequence[TrackerSpec] = (), *,
               named: bool = True) -> list[Judgement]:
    """Every judgement a scenario makes: the reference's, with ``named`` each catalogued tracker's the scenario names
    (``expect.fail``, then ``expect.pass``), then each tracker of ``under_test`` (a catalogued one already judged is
    judged once, as the scenario says of it; another named as one already judged is named apart:
    :func:`named_apart`)."""
    out = [judgement(scenario, "reference")]
    if named:
        out += [judgement(scenario, name) for name in (*scenario.must_fail, *scenario.must_pass)]
    out += [judgement(scenario, spec) for spec in named_apart(under_test, [j.tracker for j in out])]
    return out
