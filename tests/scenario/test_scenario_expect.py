"""What a scenario expects beyond tracking: thresholds, faults, the tracker under test, keys not supported yet.

Threshold numbers are worked out by hand from the usage in the YAML below (prompt = in + cc + cr).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, get_args

import pytest
from claude_agent_sdk import ResultMessage

import ctxsim.scenario
from ctxsim.check import crossings, match_firings
from ctxsim.reference import ContextTracker
from ctxsim.reference._checkpoint import Fallback
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import ScenarioError, _schema as schema, load_scenario, parse_scenario
from ctxsim.trackers.catalogue import make

MALFORMED = Path(__file__).resolve().parents[1] / "malformed"


def test_crossings_fire_once_per_crossing_and_rearm_below() -> None:
    assert crossings([10, 95, 96, 50, None, 91, 100], 90) == [1, 5]
    assert crossings([90], 90) == [0] and crossings([89, None], 90) == []


def test_firings_may_move_only_where_the_band_allows() -> None:
    low, high = [100, 170, 182, 182], [101, 181, 183, 183]
    # truth crosses 180 at index 2; the band's top reaches 180 at index 1, so firing there is fine, not at 0
    assert match_firings([2], [1], low, high, 180).ok
    assert not match_firings([2], [0], low, high, 180).ok
    # late: the band's bottom at index 2 is 182, over the threshold: no excuse for firing at 3
    assert not match_firings([2], [3], low, high, 180).ok
    assert match_firings([2], [3], [100, 170, 179, 182], high, 180).ok
    # unpaired on either side
    assert [f.ok for f in match_firings([2], [2, 3], low, high, 180).firings] == [True, False]
    assert not match_firings([2], [], low, high, 180).ok


WORLD = """\
world: {window: 200000}
queries:
  - prompt: "go"
    steps:
      - call: {in: 3, cc: 0, cr: 170000, out: 100}       # 170,003
      - call: {in: 3, cc: 9000, cr: 170000, out: 2000}   # 179,003 .. 181,003
      - call: {in: 3, cc: 3000, cr: 179000, out: 100}    # 182,003: the truth crosses 90% (180,000)
  - prompt: "more"
    steps:
      - call: {in: 3, cc: 1000, cr: 182000, out: 100}    # 183,003
  - prompt: "after compaction"
    steps:
      - compact: {post: 20000}
      - call: {}
"""
POINTS = ["q1 call 1", "q1 call 2", "q1 call 3", "q1 result", "q2 call 1", "q2 result", "q3 compaction",
          "q3 call 1", "q3 result"]


def scenario(expect: str, *, stream: str = "") -> ctxsim.scenario.Scenario:
    return parse_scenario(WORLD + stream + "expect:\n" + textwrap.indent(textwrap.dedent(expect), "  "),
                          file="t.yaml")


class Offset:
    """The reference, ``by`` tokens off; with ``at_results_only``, only while it stands at a result."""

    def __init__(self, by: int, *, at_results_only: bool = False) -> None:
        self.inner = ContextTracker()
        self.by = by
        self.at_results_only = at_results_only
        self.at_result = False
        self.name = f"offset{by:+}"

    def observe(self, message: Any) -> None:
        self.inner.observe(message)
        self.at_result = isinstance(message, ResultMessage)

    def context_tokens(self) -> int | None:
        value = self.inner.context_tokens()
        if value is None or (self.at_results_only and not self.at_result):
            return value
        return value + self.by


def test_fires_must_say_where_the_truth_crosses() -> None:
    sc = scenario("threshold: {at: 0.9, fires: [q1 call 3]}\n")
    assert sc.thresholds[0].at == 0.9 and sc.thresholds[0].fires == ("q1 call 3",)
    with pytest.raises(ScenarioError, match=r"^ctxsim: t\.yaml:16: expect\.threshold\.fires: the truth crosses 90% "
                                            r"of the window \(180,000 tokens\) at q1 call 3, not at q1 call 2$"):
        scenario("threshold: {at: 0.9, fires: [q1 call 2]}\n")
    with pytest.raises(ScenarioError, match=r"expect\.threshold\.fires: no observation point 'q4 call 1' in this "
                                            r"session \(points: q1 call 1 \.\. q3 result\)"):
        scenario("threshold: {at: 0.9, fires: [q4 call 1]}\n")
    two = scenario("threshold:\n  - {at: 0.9, fires: [q1 call 3]}\n  - {at: 0.5, fires: [q1 call 1]}\n")
    assert [t.at for t in two.thresholds] == [0.9, 0.5]


@pytest.mark.parametrize(("expect", "message"), [
    ("threshold: {at: true}\n", "expect.threshold.at: expected a fraction of the window, 0 < at <= 1"),
    ("threshold: {fires: []}\n", "expect.threshold.at: required key is missing"),
    ("threshold: {at: 0.9, fires: q1 call 3}\n", "expect.threshold.fires: expected a list, got 'q1 call 3'"),
    ("threshold: []\n", "expect.threshold: expected a non-empty list"),
    ("threshold: {at: 0.9, when: now}\n", "expect.threshold.when: unknown key"),
])
def test_threshold_mistakes(expect: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message.replace(".", r"\.").replace("(", r"\(")):
        scenario(expect)


def test_the_reference_fires_where_the_truth_crosses() -> None:
    run = run_scenario(scenario("threshold: {at: 0.9, fires: [q1 call 3]}\n"), make("reference"))
    assert run.ok and run.report.ok
    notes = run.notes()
    assert notes == {3: "90% fires"}  # q1 call 3 is observation 3
    assert "90% fires" in run.table() and run.table().splitlines()[0].split()[-1] == "threshold"


def test_firing_early_is_fine_where_the_output_takes_the_context_over() -> None:
    # with partial messages the reference adds the final output: 181,003 at q1 call 2
    run = run_scenario(scenario("threshold: {at: 0.9}\n", stream="stream: {partial: true}\n"), make("reference"))
    assert run.ok
    assert run.notes()[2] == "90% fires (within the band: truth crosses at #3)"


def test_a_tracker_within_tolerance_that_fires_twice_fails_the_threshold() -> None:
    run = run_scenario(scenario("tolerance: 3000\nthreshold: {at: 0.9}\n"), Offset(-2900, at_results_only=True))
    assert [p.observation.label for p in run.report.points] == POINTS
    # 182,003 - 2,900 = 179,103 at q1 result: below 180,000, so it re-arms and fires again at q2 call 1 (183,003)
    assert [p.estimate for p in run.report.points][2:5] == [182_003, 179_103, 183_003]
    assert run.report.ok and not run.ok
    assert run.problems() == ["threshold 90% (180,000 tokens): the tracker fires at q2 call 1; the truth does not "
                              "cross there"]
    assert run.notes() == {3: "90% fires", 5: "90% fires; truth does not cross"}


def test_a_tracker_that_never_fires_is_caught_even_within_tolerance() -> None:
    run = run_scenario(scenario("tolerance: 6000\nthreshold: {at: 0.9}\n"), Offset(-5000))
    assert run.report.ok and not run.ok  # 177,003 and 178,003 at most: never 180,000
    assert run.problems() == ["threshold 90% (180,000 tokens): the truth crosses at q1 call 3; the tracker does "
                              "not fire"]
    assert "90% truth crosses; tracker does not fire" in run.table()


def test_a_results_only_tracker_is_judged_at_results() -> None:
    # mala-overwrite is read at results only: there the truth first crosses at q1 result
    run = run_scenario(scenario("tolerance: 200000\nthreshold: {at: 0.9}\n"), make("mala-overwrite"))
    assert [p.observation.label for p in run.report.points] == ["q1 result", "q2 result", "q3 result"]
    assert run.problems() == ["threshold 90% (180,000 tokens): the truth crosses at q1 result; the tracker does not "
                              "fire"]


def test_faults_are_built_from_the_list_and_change_the_stream() -> None:
    sc = parse_scenario("faults:\n  - duplicate_blocks\n  - cache_read_drop: {rate: 1.0}\n" + WORLD
                        + "expect:\n  fail: [arbiter-uuid]\n", file="f.yaml")
    assert [f.name for f in sc.faults] == ["duplicate_blocks", "cache_read_drop"]
    assert sc.faults[1].params == {"rate": 1.0} and sc.faults[0].line == 2
    plain = parse_scenario(WORLD, file="p.yaml")
    assert len([f for s in sc.scripts() for f in s.frames]) > len([f for s in plain.scripts() for f in s.frames])
    assert run_scenario(sc, make("reference")).ok
    assert not run_scenario(sc, make("arbiter-uuid")).ok


@pytest.mark.parametrize(("faults", "message"), [
    ("faults: duplicate_blocks\n", "1: faults: expected a list, got 'duplicate_blocks'"),
    ("faults:\n  - [duplicate_blocks]\n", "2: faults[0]: a fault is NAME or {NAME: {PARAM: VALUE}}, got a list"),
    ("faults:\n  - {a: 1, b: 2}\n", "2: faults[0]: a fault is NAME or {NAME: {PARAM: VALUE}} (one key)"),
    ("faults:\n  - cache_read_drop: 0.5\n", "2: faults[0].cache_read_drop: expected a mapping, got 0.5"),
    ("faults:\n  - cache_read_drop: {rate: 7}\n", "2: faults[0]: fault cache_read_drop: rate must be a number"),
])
def test_fault_mistakes(faults: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(faults + WORLD, file="f.yaml")
    assert str(info.value).startswith(f"ctxsim: f.yaml:{message}"), str(info.value)


def test_what_the_tracker_under_test_must_do() -> None:
    assert scenario("{}\n").ctx_tracker == "pass"
    assert scenario("reference: fail\n").ctx_tracker == "skip"
    assert scenario("ctx_tracker: fail\n").ctx_tracker == "fail"
    with pytest.raises(ScenarioError, match=r"expect\.ctx_tracker: expected one of pass, fail, skip, got 'maybe'"):
        scenario("ctx_tracker: maybe\n")


@pytest.mark.parametrize(("expect", "message"), [
    ("restarts: 2\n", "16: expect.restarts: applies to a task scenario (a restart loop working through a task); this "
                      "scenario has no task"),
    ("checkpoint: [block]\n", "16: expect.checkpoint: applies to a task scenario"),
    ("steps: {redone: 0}\n", "16: expect.steps: applies to a task scenario"),
    ("loop: {fail: [keep-tracker]}\n", "16: expect.loop: applies to a task scenario"),
])
def test_task_expectations_need_a_task(expect: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        scenario(expect)
    assert str(info.value).startswith(f"ctxsim: t.yaml:{message}"), str(info.value)


def test_world_defaults_fill_what_the_text_leaves_out() -> None:
    sc = parse_scenario("world: {window: 300000}\nqueries:\n  - steps:\n      - call: {}\n", file="w.yaml",
                        world={"window": 1_000_000, "baseline": 5000, "model": "m"})
    assert (sc.session.window, sc.session.baseline, sc.session.model) == (300_000, 5000, "m")


def test_the_schema_documents_every_key_the_loader_takes() -> None:
    doc = ctxsim.scenario.__doc__ or ""
    for section in schema.SECTIONS.values():
        for key in section.keys:
            assert f"``{key.name}``" in doc
            assert key.doc and key.kind
    assert schema.reference() in doc
    # the keys of one kind of scenario say so, and the loader refuses them in the other (test_task_scenario.py)
    assert {k.name for k in schema.SECTIONS["expect"].keys if k.scope == schema.TASK} == {
        "restarts", "checkpoint", "steps", "loop"}
    assert "``restarts`` (integer >= 0; task scenarios only)" in schema.reference()
    checkpoint = next(k for k in schema.SECTIONS["expect"].keys if k.name == "checkpoint")
    assert all(f"``{name}``" in checkpoint.doc for name in get_args(Fallback))  # every rule a restart may take


MALFORMED_FILES = sorted(MALFORMED.glob("*.yaml"))


def expected_error(path: Path) -> str:
    """The error the file's first line states: ``# error: LINE: MESSAGE``."""
    first = path.read_text().splitlines()[0]
    assert first.startswith("# error: "), path
    return f"ctxsim: scenarios/{path.name}:{first.removeprefix('# error: ')}"


def test_there_are_thirty_malformed_files_each_a_different_mistake() -> None:
    assert len(MALFORMED_FILES) >= 30
    messages = [expected_error(p).split(":", 3)[3] for p in MALFORMED_FILES]
    assert len(set(messages)) == len(messages)


@pytest.mark.parametrize("path", MALFORMED_FILES, ids=[p.stem for p in MALFORMED_FILES])
def test_each_malformed_file_gives_its_one_error(path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, display=f"scenarios/{path.name}")
    message = str(info.value)
    assert message.startswith(expected_error(path)) and "\n" not in message, message
    assert info.value.line == int(expected_error(path).split(":")[2])


def test_runs_on_trio_too_and_inside_a_running_loop() -> None:
    import anyio

    sc = scenario("threshold: {at: 0.9}\n")
    assert run_scenario(sc, make("reference"), async_backend="trio").notes() == {3: "90% fires"}

    async def inside() -> dict[int, str]:  # on a worker thread with its own loop
        run = run_scenario(sc, make("reference"))
        assert run.ok
        return run.notes()

    assert anyio.run(inside) == {3: "90% fires"}
    assert anyio.run(inside, backend="trio") == {3: "90% fires"}
    assert run_scenario(sc, make("reference")).ok  # the reused loop is still fine afterwards
