"""The scenario files as test items: each scenario file collects one item per thing it expects (the reference,
each catalogued tracker or loop it names, each tracker under test), dispatched once by the scenario's kind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest

from ..processes import printable
from ._shared import BACKEND, LOOPS, TRACKERS, freeze_if_asked, shown

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from ..loops import LoopSpec
    from ..runner import Judgement, Verdict
    from ..scenario import Scenario, ScenarioError, SessionScenario, TaskScenario
    from ..trackers import TrackerSpec

__all__ = ["LoopItem", "MalformedScenario", "ScenarioFailed", "ScenarioFile", "ScenarioItem"]


class ScenarioFile(pytest.File):
    """A scenario file: its items, by the scenario's kind (see :meth:`_tracker_items` and :meth:`_loop_items`); a
    file the loader rejects is one failing ``load`` item."""

    def collect(self) -> Iterator[pytest.Item]:
        from ..scenario import ScenarioError, TaskScenario, load_scenario

        try:
            scenario = load_scenario(self.path, display=shown(self.path, self.config))
        except ScenarioError as error:
            # Raising here would be a collection error, and pytest stops the whole session on one ("Interrupted:
            # 1 error during collection") unless --continue-on-collection-errors. A typo in one scenario must
            # not keep the others from running, so a malformed file becomes a single item that fails with the
            # loader's one-line message.
            yield MalformedScenario.from_parent(self, name="load", error=error)
            return
        except Exception as error:  # whatever the loader missed (MemoryError included): one item
            where = shown(self.path, self.config)
            said = " ".join(str(error).split())[:300]
            yield MalformedScenario.from_parent(self, name="load", error=ScenarioError(
                f"ctxsim: {where}: the scenario could not be loaded: {type(error).__name__}"
                + (f": {said}" if said else ""), file=where))
            return
        if isinstance(scenario, TaskScenario):
            yield from self._loop_items(scenario)
        else:
            yield from self._tracker_items(scenario)

    def _tracker_items(self, scenario: SessionScenario) -> Iterator[pytest.Item]:
        """A session scenario's items, one a judgement of the plan (:func:`ctxsim.runner.judgements`): ``reference``,
        each catalogued tracker it names, the trackers under test; a skip of the plan is a skipped item."""
        from ..runner import Verdict, judgements

        specs = self.config.stash.get(TRACKERS, [])
        taken: set[str] = set()
        for planned in judgements(scenario, specs):
            if planned.rule == "expect.fail":  # named so that PASSED reads as what it means
                name = f"{planned.tracker}{FAILS_AS_DECLARED}"
            else:
                name = planned.tracker if planned.tracker not in taken else planned.spec
            taken.add(name)
            spec = next((s for s in specs if s.spec == planned.spec), None) if planned.spec else None
            item = ScenarioItem.from_parent(self, name=name, scenario=scenario, tracker=planned.tracker,
                                            expect_ok=planned.expected == "pass", spec=spec, planned=planned)
            if planned.skip is not None:
                item.add_marker(pytest.mark.skip(reason=f"ctxsim: {planned.tracker} is not judged here: "
                                                        f"{planned.skip}"))
                item.verdict = Verdict(planned, None)
            yield item

    def _loop_items(self, scenario: TaskScenario) -> Iterator[pytest.Item]:
        """A task scenario's items: ``reference-loop``, each catalogued loop it names, the trackers under test."""
        from ..runner import REFERENCE_LOOP

        yield LoopItem.from_parent(self, name=REFERENCE_LOOP, scenario=scenario, loop=REFERENCE_LOOP,
                                   expected="meet")
        for loop in scenario.loop_expect.must_fail:
            yield LoopItem.from_parent(self, name=loop, scenario=scenario, loop=loop, expected="caught")
        for loop in scenario.loop_expect.must_pass:
            yield LoopItem.from_parent(self, name=loop, scenario=scenario, loop=loop, expected="kept")
        taken = {REFERENCE_LOOP, *scenario.loop_expect.must_fail, *scenario.loop_expect.must_pass}
        for spec in self.config.stash.get(TRACKERS, []):
            name = spec.name if spec.name not in taken else spec.spec
            taken.add(name)
            expected = {"pass": "meet", "fail": "miss"}.get(scenario.ctx_tracker, "none")
            item = LoopItem.from_parent(self, name=name, scenario=scenario, loop=REFERENCE_LOOP, expected=expected,
                                        spec=spec)
            if scenario.ctx_tracker == "skip":
                item.add_marker(pytest.mark.skip(reason=f"expect.ctx_tracker: skip (line {item.line})"))
            yield item
        fed: list[TrackerSpec | None] = [spec for spec in self.config.stash.get(TRACKERS, []) if not spec.command]
        trackers = fed or [None]
        for mine in self.config.stash.get(LOOPS, []):
            for given in trackers:  # your loop with each tracker under test fed messages, else the reference
                name = mine.name if mine.name not in taken else mine.spec
                name += f"[{given.name}]" if given is not None and len(trackers) > 1 else ""
                taken.add(name)
                yield LoopItem.from_parent(self, name=name, scenario=scenario, loop=mine.name, expected="kept",
                                           loop_spec=mine, spec=given)


FAILS_AS_DECLARED = "-fails-as-declared"
"""The suffix of a catalogued buggy tracker's item: ``b04.yaml::every-row-totals-fails-as-declared PASSED``."""


class ScenarioFailed(Exception):
    """A scenario item's expectation was not met; the message is what the user reads, in full."""


class _ScenarioNode(pytest.Item):
    """What both item kinds share: the marker, and failures reported without a traceback."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("ctx_scenario")

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # a bug in the harness: show the traceback


class _CheckItem(_ScenarioNode):
    """What the items checking a loaded scenario share: the scenario, the tracker under test, the line they
    stand for."""

    def __init__(self, *, scenario: Scenario, subject: str, spec: TrackerSpec | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.spec = spec
        """The tracker under test (``--ctx-tracker``) this item checks; None for a catalogued one."""
        self._subject = subject

    @property
    def line(self) -> int:
        """The line of the scenario file that states what this item checks."""
        if self.spec is not None:
            return self.scenario.lines.get("expect.ctx_tracker") or self.scenario.line_of(self.scenario.reference)
        return self.scenario.line_of(self._subject)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, self.line - 1, f"scenario {self.scenario.name}: {self.name}"


class ScenarioItem(_CheckItem):
    """One tracker on one scenario: passes when the tracker tracks the session (``expect_ok``) or fails on it."""

    scenario: SessionScenario

    def __init__(self, *, scenario: SessionScenario, tracker: str, expect_ok: bool, spec: TrackerSpec | None = None,
                 planned: Judgement | None = None, **kwargs: Any) -> None:
        super().__init__(scenario=scenario, subject=tracker, spec=spec, **kwargs)
        self.tracker = tracker
        self.expect_ok = expect_ok
        if planned is None:
            from ..runner import judgement

            planned = judgement(scenario, spec if spec is not None else tracker)
        self.planned = planned
        """The plan of judgement this item follows (:func:`ctxsim.runner.judgement`)."""
        self.verdict: Verdict | None = None
        """The verdict, once the item ran (or, skipped by the plan, at collection)."""

    def _rule(self) -> str:
        if self.spec is not None and self.planned.rule == "expect.ctx_tracker":
            return f"expect.ctx_tracker: {self.planned.expected}, --ctx-tracker={self.spec.spec}"
        return f"{self.planned.rule}: {self.planned.expected}" if self.tracker == "reference" else self.planned.rule

    def runtest(self) -> None:
        from ..runner import explain
        from ..scenario import ExpectedFailure
        from ..trackers.catalogue import CATALOGUE

        freeze_if_asked(self.config)  # the first item loads the SDK: out of the cyclic collector's way

        planned = self.planned
        if self.config.stash.get(BACKEND, "inprocess") == "live":
            from ..live import live_skip_reason, run_scenario_live, tracker_skip_reason
            from ..trackers import Tracker

            tracker = planned.make()
            reason = live_skip_reason(self.scenario) or tracker_skip_reason(tracker)
            if reason is not None:
                pytest.skip(f"ctxsim: --ctx-backend=live: {reason}")
            assert isinstance(tracker, Tracker), tracker  # tracker_skip_reason skips every other kind
            judged = planned.judge(run_scenario_live(self.scenario, tracker, name=self.tracker))
        else:
            judged = planned.run()
        self.verdict = judged
        if judged.met:
            return
        run = judged.run
        assert run is not None
        expected = planned.failure
        does = judged.does
        scenario = self.scenario
        where = f"{shown(self.path, self.config)}:{self.line}"
        if run.inconclusive:
            head = f"{where}: {self.tracker} on scenario {scenario.name!r}: {run.inconclusive} ({self._rule()})"
        elif planned.expected == "pass":
            head = f"{where}: {self.tracker} must track scenario {scenario.name!r} ({self._rule()}), but does not"
        else:
            if run.failure.kind == "tracks":
                does = f"tracks it within ±{scenario.tolerance:,} tokens" + (
                    " and fires every threshold where the truth does" if run.thresholds else "")
            pin = f": {expected.describe()}" if expected is not None and expected != ExpectedFailure(
                expected.tracker, line=expected.line) else ""
            head = f"{where}: {self.tracker} must fail on scenario {scenario.name!r} ({self._rule()}{pin}), but {does}"
        entry = CATALOGUE.get(self.tracker) if planned.kind in ("reference", "catalogued") else None
        raise ScenarioFailed(explain(run, head, verbosity=self.config.get_verbosity(),
                                     bug=getattr(entry, "bug", ""), shown=lambda p: shown(p, self.config)))


_LOOP_RULES = {"miss": "expect.ctx_tracker: fail", "caught": "expect.loop.fail", "kept": "expect.loop.pass",
               "none": "expect.ctx_tracker: skip"}
"""The key behind what a loop item expects, as its failure names it (the reference loop's: every ``expect`` key)."""


class LoopItem(_CheckItem):
    """One restart loop on a task scenario: the reference loop (with the reference tracker or a tracker under test)
    must meet the scenario's expectations; a loop of ``expect.loop.fail`` must be caught breaking the invariant the
    catalogue names; a loop of ``expect.loop.pass`` must keep every invariant."""

    scenario: TaskScenario

    def __init__(self, *, scenario: TaskScenario, loop: str, expected: str, spec: TrackerSpec | None = None,
                 loop_spec: LoopSpec | None = None, **kwargs: Any) -> None:
        super().__init__(scenario=scenario, subject=loop if loop_spec is None else scenario.reference, spec=spec,
                         **kwargs)
        self.loop_spec = loop_spec
        """The restart loop under test (``--ctx-loop``) this item runs; None for the reference or a catalogued one."""
        self.loop = loop
        """``reference-loop`` or a catalogued loop's name (the reference loop given ``spec``, when set)."""
        self.expected = expected
        """What the run must be: see :meth:`ctxsim.runner.TaskRun.verdict`."""

    def runtest(self) -> None:
        from ..runner import explain_task, run_task

        freeze_if_asked(self.config)

        if self.config.stash.get(BACKEND, "inprocess") == "live":
            pytest.skip("ctxsim: --ctx-backend=live: task scenarios (restart loops) run in-process only")
        from ..trackers import make_tracker

        spec = self.spec
        if spec is not None and spec.command:
            pytest.skip(f"ctxsim: --ctx-tracker={spec.spec}: a statusline command is read at observation points; "
                        f"a restart loop needs a tracker fed the SDK's messages")
        if spec is not None and spec.stream:
            pytest.skip(f"ctxsim: --ctx-tracker={spec.spec}: a stream tracker is fed the stream-json line of each "
                        f"message; a restart loop feeds its tracker the SDK's message objects")
        fed = spec.fed_messages if spec is not None else None
        if spec is not None and fed is not None:  # a gauge's number is not the tokens a loop reads
            from ..check import loop_fitness

            unfit = loop_fitness(make_tracker(fed, self.scenario.session), self.scenario.session)
            if unfit is not None:
                pytest.skip(f"{unfit} (--ctx-tracker={spec.spec})")
        made = partial(make_tracker, fed, self.scenario.session) if fed is not None else None
        run = run_task(self.scenario, loop=self.loop_spec or self.loop, tracker_factory=made,
                       tracker=spec.name if spec is not None else "reference")
        met, does = run.verdict(self.expected)
        if met:
            return
        problems = run.problems() if self.expected in ("meet", "miss") else []
        line = problems[0].line if problems and self.expected == "meet" else self.line
        who = self.loop if spec is None else f"{self.loop} with tracker {spec.name} (--ctx-tracker={spec.spec})"
        rule = f" ({_LOOP_RULES[self.expected]})" if self.expected in _LOOP_RULES else ""
        if self.loop_spec is not None:
            rule = f" (--ctx-loop={self.loop_spec.spec}: every invariant must hold)"
        head = f"{shown(self.path, self.config)}:{line}: {who} on scenario {self.scenario.name!r}{rule}: {does}"
        raise ScenarioFailed(explain_task(run, head, verbosity=self.config.get_verbosity(),
                                          shown=lambda p: shown(p, self.config),
                                          expectations=self.expected == "meet"))


class MalformedScenario(_ScenarioNode):
    """A scenario file the loader rejected: one item that fails with the loader's ``ctxsim:`` message."""

    def __init__(self, *, error: ScenarioError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise ScenarioFailed(str(self.error))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, (self.error.line or 1) - 1, f"malformed scenario {printable(self.path.name)}"
