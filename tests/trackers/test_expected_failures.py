"""Expected failures name the failure: every catalogue entry is pinned by the corpus (first failing point, direction,
range), a stand-in that answers 0 or raises fails the pin naming the entry, and a crash or silence never reproduces.
"""

from __future__ import annotations

import dataclasses
import textwrap
from functools import cache
from pathlib import Path

import pytest

from ctxsim.runner._scenario import run_scenario, verdict
from ctxsim.scenario import ExpectedFailure, ScenarioError, SessionScenario, load_scenario, parse_scenario
from ctxsim.trackers.catalogue import CATALOGUE, make

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@cache
def pins() -> dict[str, list[tuple[SessionScenario, ExpectedFailure]]]:
    """Every catalogued tracker's expected failures in the corpus: ``name -> [(scenario, failure)]``."""
    out: dict[str, list[tuple[SessionScenario, ExpectedFailure]]] = {}
    for path in sorted(SCENARIOS.glob("*.yaml")):
        scenario = load_scenario(path)
        if isinstance(scenario, SessionScenario):
            for name, failure in scenario.failures.items():
                out.setdefault(name, []).append((scenario, failure))
    return out


class ConstantZero:
    """A stand-in that always answers 0 tokens."""

    def observe(self, message: object) -> None:
        pass

    def context_tokens(self) -> int:
        return 0


class Raises:
    """A stand-in that raises on every message."""

    def observe(self, message: object) -> None:
        raise RuntimeError("boom")

    def context_tokens(self) -> int:
        return 0


class Silent:
    """A stand-in that never gives an estimate."""

    def observe(self, message: object) -> None:
        pass

    def context_tokens(self) -> None:
        return None


ENTRIES = [name for name in CATALOGUE if name != "reference"]


def test_every_corpus_expected_failure_is_pinned() -> None:
    loose = [f"{s.name}: {name}" for name, found in pins().items() for s, f in found if not f.pinned]
    assert loose == []


@pytest.mark.parametrize("name", ENTRIES)
def test_every_catalogue_entry_is_pinned_by_the_corpus_in_a_way_a_constant_zero_cannot_meet(name: str) -> None:
    found = pins().get(name, [])
    assert found, f"no corpus scenario lists {name} under expect.fail"
    excludes_zero = [f for _, f in found if f.direction == "over" or (f.range is not None and f.range[0] > 0)]
    assert excludes_zero, f"every pin of {name} would be met by a tracker that always answers 0"


@pytest.mark.parametrize("name", ENTRIES)
def test_each_entry_fails_its_corpus_scenarios_as_pinned(name: str) -> None:
    for scenario, failure in pins()[name]:
        run = run_scenario(scenario, make(name, scenario.session), name=name)
        met, does = verdict(run, "fail", failure)
        assert met, f"{scenario.name}: {name} {does}; expected {failure.describe()}"


@pytest.mark.parametrize("stand_in", [ConstantZero, Raises, Silent])
@pytest.mark.parametrize("name", ENTRIES)
def test_a_stand_in_for_an_entry_fails_one_of_its_pins(name: str, stand_in: type) -> None:
    results = []
    for scenario, failure in pins()[name]:
        run = run_scenario(scenario, stand_in(), name=name)
        results.append(verdict(run, "fail", failure))
    assert not all(met for met, _ in results), results
    if stand_in is Raises:
        assert all("crashed, which is never a reproduction" in does for _, does in results)
        assert "RuntimeError: boom" in results[0][1]


def test_the_plugin_names_the_entry_and_what_was_expected_of_it(pytester: pytest.Pytester,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "seed000.yaml").write_text((SCENARIOS / "seed000-cache-read-719.yaml").read_text())
    entry = CATALOGUE["mala-cache-read-pressure"]
    monkeypatch.setitem(CATALOGUE, entry.name, dataclasses.replace(entry, factory=ConstantZero))
    result = pytester.runpytest("--ctx-scenarios=seed000.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*seed000.yaml:*: mala-cache-read-pressure must fail on scenario 'seed000-cache-read-719' (expect.fail: "
        "first failing point q1 result, over the truth, estimate in 1,438,000..1,438,000), but fails first at "
        "q1 call 1, under the truth (estimate 0, truth 5,993..6,883)"])
    monkeypatch.setitem(CATALOGUE, entry.name, dataclasses.replace(entry, factory=Raises))
    result = pytester.runpytest("--ctx-scenarios=seed000.yaml", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*mala-cache-read-pressure must fail*but crashed, which is never a reproduction: "
                                 "ctxsim: tracker * raised RuntimeError: boom*",
                                 "Traceback (most recent call last*", "*raise RuntimeError(\"boom\")"])


SESSION = """\
queries:
  - steps:
      - call: {in: 3, cc: 100, cr: 12000, out: 50}
"""


def parse(expect: str) -> SessionScenario:
    scenario = parse_scenario(SESSION + textwrap.dedent(expect), file="t.yaml")
    assert isinstance(scenario, SessionScenario)
    return scenario


def test_an_expected_failure_reads_from_a_name_or_a_mapping() -> None:
    s = parse("""\
        expect:
          fail:
            - input-only
            - mala-overwrite: {first: q1 result, direction: under, range: [3, 3]}
        """)
    assert s.must_fail == ("input-only", "mala-overwrite")
    assert s.failures["input-only"] == ExpectedFailure("input-only", line=6)
    assert s.failures["mala-overwrite"] == ExpectedFailure("mala-overwrite", "q1 result", "under", (3, 3), 7)
    assert s.failures["mala-overwrite"].describe() == ("first failing point q1 result, under the truth, estimate "
                                                       "in 3..3")


@pytest.mark.parametrize(("fail", "message"), [
    ("{first: q9 call 1, direction: over}", "t.yaml:6: expect.fail.input-only.first: no observation point 'q9 call 1'"),
    ("{direction: sideways}", "t.yaml:6: expect.fail[0].input-only.direction: expected one of over, under, none"),
    ("{range: [5, 1]}", "t.yaml:6: expect.fail[0].input-only.range: low 5 is above high 1"),
    ("{range: [5]}", "t.yaml:6: expect.fail[0].input-only.range: expected [low, high], got 1 items"),
    ("{direction: none, range: [1, 2]}", "direction none means no estimate"),
    ("{when: now}", "expect.fail[0].input-only.when: unknown key"),
])
def test_a_malformed_expected_failure_is_one_error_naming_its_key(fail: str, message: str) -> None:
    with pytest.raises(ScenarioError) as error:
        parse(f"expect:\n  fail:\n    - input-only: {fail}\n")
    assert message in str(error.value)


def test_verdicts_on_crash_silence_and_a_wrong_failure() -> None:
    s = parse("""\
        expect:
          fail:
            - input-only: {first: q1 call 1, direction: under, range: [3, 3]}
        """)
    failure = s.failures["input-only"]
    assert verdict(run_scenario(s, make("input-only")), "fail", failure) == (
        True, "fails first at q1 call 1, under the truth (estimate 3, truth 12,103..12,153)")
    met, does = verdict(run_scenario(s, Silent()), "fail", failure)
    assert not met and does.startswith("gives no estimate at any point")
    met, does = verdict(run_scenario(s, Raises()), "fail", failure)
    assert not met and does.startswith("crashed, which is never a reproduction: ctxsim: tracker Raises raised")
    met, does = verdict(run_scenario(s, ConstantZero()), "fail", failure)
    assert not met and does.startswith("fails first at q1 call 1, under the truth (estimate 0,")
    assert verdict(run_scenario(s, ConstantZero()), "fail", None)[0]   # unpinned: any failure but a crash
