"""``ctxsim judge`` follows the plan of judgement: the reference (by name or by module) and every correct catalogue
entry pass the whole corpus; skips are listed with their reasons and never counted as met; the JSON and JUnit XML
reports say the same as the page; a statusline is judged at its own points when a query has two subagents."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ctxsim.cli import main
from ctxsim.trackers.catalogue import CATALOGUE

TESTS = Path(__file__).parent.parent
TWO_SUBAGENTS = TESTS / "runner" / "scenarios" / "two-subagents.yaml"


@pytest.mark.parametrize("spec", ["ctxsim.reference:ContextTracker",
                                  *(name for name, entry in CATALOGUE.items() if not entry.bug)])
def test_a_correct_tracker_passes_the_whole_corpus(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the reference named by module is told the scenario's usage convention, as cmd: and stream: trackers are
    assert main(["judge", spec]) == 0
    out = capsys.readouterr().out
    assert "does what all" in out and "not as expected" not in out


def test_skips_are_listed_with_their_reason_and_never_counted_as_met(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    code = main(["judge", "reference", "b06-message-in-several-files", "compaction", "--json",
                 str(tmp_path / "v.json"), "--junitxml", str(tmp_path / "v.xml")])
    assert code == 0
    assert "does what all 2 scenarios it is judged on expect" in capsys.readouterr().out
    (tmp_path / "mine.py").write_text("from ctxsim.reference import ContextTracker\n\n\n"
                                      "def make(world):\n    return ContextTracker(world=world)\n")
    monkeypatch.chdir(tmp_path)  # a tracker under test of the SDK stream (the reference's code, not catalogued)
    code = main(["judge", "mine:make", "b06-message-in-several-files", "compaction",
                 "--json", str(tmp_path / "p.json"), "--junitxml", str(tmp_path / "p.xml")])
    out = capsys.readouterr().out
    assert code == 0
    # b06's fault is real only in transcript files: a tracker of the SDK stream is not judged there
    assert "does what all 1 scenarios it is judged on expect (1 skipped" in out
    assert "| `b06-message-in-several-files` | pass | skipped: fault " in out
    rows = [json.loads(line) for line in (tmp_path / "p.json").read_text().splitlines()]
    assert [r.get("status") for r in rows[:2]] == ["skipped", "met"] and rows[2] == {
        "tally": {"met": 1, "unmet": 0, "skipped": 1}}
    suite = ET.parse(tmp_path / "p.xml").getroot().find("testsuite")
    assert suite is not None and (suite.get("tests"), suite.get("skipped"), suite.get("failures")) == ("2", "1", "0")


def test_the_reference_is_judged_on_the_same_scenarios_by_name_and_by_module(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # by module it was a tracker under test, not judged where a fault is real only in transcripts (57 of 62)
    verdicts = {}
    for spec in ("reference", "ctxsim.reference:ContextTracker"):
        assert main(["judge", spec, "--json", str(tmp_path / "v.json")]) == 0
        rows = [json.loads(line) for line in (tmp_path / "v.json").read_text().splitlines()]
        verdicts[spec] = {(r["scenario"], r["tracker"], r["rule"], r["status"]) for r in rows if "tally" not in r}
    capsys.readouterr()
    assert len(verdicts["reference"]) > 50 and {v[3] for v in verdicts["reference"]} == {"met"}
    assert verdicts["ctxsim.reference:ContextTracker"] == verdicts["reference"]


def test_a_failure_carries_its_first_point_and_whole_likely_cause_into_every_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["judge", "ctxsim.trackers.catalogue.mutants:_SubagentsAsMain", "seed001-subagent-max-cache-read",
                 "--json", str(tmp_path / "v.json"), "--junitxml", str(tmp_path / "v.xml")])
    page = capsys.readouterr().out
    row = json.loads((tmp_path / "v.json").read_text().splitlines()[0])
    assert code == 1 and row["status"] == "unmet" and row["first"]["point"]
    failure = ET.parse(tmp_path / "v.xml").getroot().find("testsuite/testcase/failure")
    assert failure is not None and failure.text is not None
    assert f"first failing point: #{row['first']['index']} {row['first']['point']}" in failure.text
    # never cut: the whole clause (longer than a table's column), in the page, the JSON and the JUnit text
    assert len(row["cause"]) > 100 and "ccusage-fallback" in row["cause"]
    assert row["cause"] in page and f"likely cause: {row['cause']}" in failure.text


def test_a_statusline_is_judged_at_its_own_points_when_a_query_has_two_subagents() -> None:
    # the two subagents' first calls were both "q1 subagent call 1": the second took the first one's payload
    assert main(["judge", f"cmd:bash {TESTS}/statusline_trackers/last_row.sh", str(TWO_SUBAGENTS)]) == 0
