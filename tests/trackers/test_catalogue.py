"""The harness's detection power: each catalogued tracker fails exactly the contracts its entry declares, each the
way it declares (over or under the truth, no estimate, a crash, judged nowhere).

The declarations (``Entry.breaks``) come from each formula, reasoned in ``ctxsim/trackers/catalogue.py``; the run
here measures them. The reference breaks none; every other entry breaks at least one. Because the way is declared,
an entry replaced by a tracker that answers 0 everywhere, or raises, no longer passes for it.
"""

from __future__ import annotations

import dataclasses
import sys

import pytest
from test_expected_failures import ConstantZero, Raises

from ctxsim.cli import main
from ctxsim.reference import ContextTracker
from ctxsim.testing import (
    CONTRACTS,
    PROBES,
    check_tracker_conformance,
    conformance_table,
    declaration_differences,
    run_tracker_conformance,
)
from ctxsim.trackers.catalogue import CATALOGUE
from ctxsim.trackers.catalogue.mutants import MUTANTS

NAMES = tuple(c.name for c in CONTRACTS)


def declared(name: str) -> frozenset[str]:
    """The contracts catalogue entry ``name`` declares it breaks."""
    return CATALOGUE[name].breaks.of(NAMES)


def test_the_reference_is_declared_to_break_nothing_and_every_other_entry_something() -> None:
    assert declared("reference") == frozenset()
    assert all(declared(name) for name in CATALOGUE if name != "reference")


def test_every_declaration_names_only_contracts_and_ways_that_exist() -> None:
    ways = {"over", "under", "none", "crash", "nowhere"}
    for name, entry in CATALOGUE.items():
        named = entry.breaks.names | set(entry.breaks.ways)
        assert named <= set(NAMES), (name, sorted(named - set(NAMES)))
        assert {entry.breaks.way, *entry.breaks.ways.values()} <= ways, name
        assert entry.breaks.how(iter(NAMES)) == entry.breaks.how(NAMES), name   # any iterable of names


@pytest.mark.parametrize("name", list(CATALOGUE))
def test_each_entry_fails_exactly_the_contracts_it_declares_the_way_it_declares(name: str) -> None:
    result = check_tracker_conformance(CATALOGUE[name].factory)
    how = CATALOGUE[name].breaks.how(NAMES)
    assert set(result.failed) == declared(name), conformance_table({name: result}, {name: how})
    assert result.ways == how, conformance_table({name: result}, {name: how})


@pytest.mark.parametrize("entry", ["cache-read-only", "accumulated-cache-read-capped", "mala-cache-read-pressure",
                                   "every-row-totals"])
@pytest.mark.parametrize("impostor", [ConstantZero, Raises])
def test_an_entry_replaced_by_a_constant_or_a_crash_is_not_as_declared(entry: str, impostor: type) -> None:
    # each of these declares it breaks (nearly) every contract: the count alone would not tell the impostor apart
    result = check_tracker_conformance(impostor)
    differences = declaration_differences(result, CATALOGUE[entry].breaks.how(NAMES))
    assert differences, f"{impostor.__name__} passes for {entry}"
    if impostor is Raises:
        assert all(d.endswith(":crash") for d in differences if d.startswith("~"))


def test_each_survey_entry_with_the_right_formula_is_caught_only_where_its_documented_bug_lives() -> None:
    # The trackers that read the latest call's in+cc+cr (Claude Code's own formula) pass the stream's basic facts;
    # what catches them is the fault their report describes.
    assert "compaction" in declared("claude-code-statusline")          # current_usage null after /compact
    assert "compaction-without-post-size" in declared("ccstatusline")   # 0 when postTokens is missing
    assert {"subagent-ignored", "synthetic-errors"} <= declared("ccusage-fallback")
    assert "wrong-context-window" in declared("pegged-reported-window")
    basic_facts = {c.name for c in CONTRACTS if c.number <= 5}
    for name in ("claude-code-statusline", "ccstatusline", "ccusage-fallback", "pegged-reported-window"):
        assert not declared(name) & basic_facts, name


def test_a_tracker_judged_nowhere_fails_the_contract() -> None:
    make = CATALOGUE["result-usage-as-context"].factory   # judged at results only; right on a one-call query
    result = check_tracker_conformance(make, only={"missing-result", "single-call"})
    assert result.failed == result.unjudged == ["missing-result"]
    with pytest.raises(AssertionError, match=r"contract 26 \(missing-result\): the tracker was judged at no point"):
        run_tracker_conformance(make, only={"missing-result"})


class ReportsNaN(ContextTracker):
    def context_tokens(self) -> int | None:
        return float("nan")  # type: ignore[return-value]


def test_a_tracker_returning_a_non_count_fails_with_what_it_returned() -> None:
    report = check_tracker_conformance(ReportsNaN, only={"single-call"}).reports["single-call"]
    assert not report.ok
    assert report.crash is not None and report.crash.startswith(
        "ctxsim: tracker ReportsNaN returned nan from context_tokens(), not a token count, on message #")


def test_ctxsim_catalogue_prints_the_table_with_your_tracker_as_a_row(
        tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "mytracker.py").write_text(  # type: ignore[operator]
        "from claude_agent_sdk import AssistantMessage\n"
        "class InputOnly:\n"
        "    value = None\n"
        "    def observe(self, message):\n"
        "        if isinstance(message, AssistantMessage) and message.usage:\n"
        "            self.value = message.usage.get('input_tokens')\n"
        "    def context_tokens(self):\n"
        "        return self.value\n")
    monkeypatch.chdir(tmp_path)  # type: ignore[arg-type]
    monkeypatch.delitem(sys.modules, "mytracker", raising=False)  # another test's mytracker, imported in this worker
    assert main(["catalogue", "-t", "input-only", "-t", "mytracker:InputOnly"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:] if line and line[0].isalpha()
            and not line.startswith("contracts")}
    assert rows["input-only"][-1] == "same" and rows["input-only"][-2] == str(len(declared("input-only")))
    assert "InputOnly" in rows and len(rows["InputOnly"]) == len(CONTRACTS) + 1   # no declaration for your own
    assert "21 uncached-gateway-usage" in out


def test_ctxsim_catalogue_names_a_tracker_it_cannot_load(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["catalogue", "-t", "arbiter-msgd"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxsim: --tracker=arbiter-msgd: ") and "did you mean 'arbiter-msgid'?" in err


def test_ctxsim_catalogue_fails_when_an_entry_breaks_other_contracts_than_declared(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    entry = CATALOGUE["ccstatusline"]
    ways = {name: way for name, way in entry.breaks.ways.items() if name != "usage-iterations"}
    wrong = dataclasses.replace(entry.breaks, names=entry.breaks.names | {"single-call"}, ways=ways)
    monkeypatch.setitem(CATALOGUE, "ccstatusline", dataclasses.replace(entry, breaks=wrong))
    assert main(["catalogue", "-t", "ccstatusline"]) == 1
    captured = capsys.readouterr()
    row = next(line for line in captured.out.splitlines() if line.startswith("ccstatusline"))
    assert row.endswith("+usage-iterations -single-call")
    assert "ctxsim catalogue: ccstatusline not as declared" in captured.err


def test_ctxsim_catalogue_fails_when_an_entry_breaks_a_contract_another_way_than_declared(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    entry = CATALOGUE["ccstatusline"]
    wrong = dataclasses.replace(entry.breaks, ways={**entry.breaks.ways, "compaction": "over"})
    monkeypatch.setitem(CATALOGUE, "ccstatusline", dataclasses.replace(entry, breaks=wrong))
    assert main(["catalogue", "-t", "ccstatusline"]) == 1
    captured = capsys.readouterr()
    row = next(line for line in captured.out.splitlines() if line.startswith("ccstatusline"))
    assert row.endswith("~compaction:under")   # it reads the summary alone: under, not over
    assert "ctxsim catalogue: ccstatusline not as declared" in captured.err


def test_every_contract_has_a_probe_named_in_the_catalogue_or_the_mutants() -> None:
    assert set(PROBES) == set(NAMES)
    assert all(PROBES[name] for name in NAMES)
    unknown = {p for probes in PROBES.values() for p in probes} - set(CATALOGUE) - set(MUTANTS)
    assert unknown == set()


@pytest.mark.parametrize("contract", NAMES)
def test_each_contract_fails_the_probes_that_carry_its_bug(contract: str) -> None:
    for probe in PROBES[contract]:
        make = CATALOGUE[probe].factory if probe in CATALOGUE else (lambda p=probe: MUTANTS[p].edit("additive"))
        result = check_tracker_conformance(make, only={contract})
        assert result.failed == [contract], f"probe {probe} meets contract {contract}: it cannot expose the bug"
