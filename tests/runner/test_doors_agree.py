"""Every door gives the same verdict: pytest (scenario files as items), ``ctxsim run``, ``ctxsim judge``, ``ctxsim
score`` and, on every scenario ``ctxsim serve`` can play (``/clear`` included), ``ctxsim serve --judge``'s judging
function agree on (scenario, verdict, first failing point, likely cause) for the reference, every catalogue entry and
three trackers of each kind (Python, ``cmd:`` in node and bash+jq, ``stream:`` in node and Python).

The doors run in-process over one set of runs: a tracker's run over a scenario (and its likely causes) is made
once and shared by every door that asks for the same tracker, told the same world; a door that made its tracker
otherwise (another world, another factory) would get a run of its own, and its verdict would show it. The default
tier judges the in-process kinds over the whole corpus and the trackers run as processes over a covering set of
scenarios (each way a tracker is skipped, a recording, a gateway, compaction, subagents, two servable ones); the slow
tier judges them over the whole corpus.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxsim.cli import main
from ctxsim.corpus import BUNDLED, scenario_files
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers import TrackerSpec, resolve
from ctxsim.trackers.catalogue import CATALOGUE

HERE = Path(__file__).parent
TESTS = HERE.parent
TWO_SUBAGENTS = HERE / "scenarios" / "two-subagents.yaml"

PYTHON = ["ctxsim.reference:ContextTracker", "ctxsim.trackers.catalogue.mutants:_SubagentsAsMain",
          "ctxsim.trackers.catalogue.mutants:_KeepsContextOverCompaction"]
PROCESSES = [f"cmd:node {TESTS}/statusline_trackers/last_row.js", f"cmd:node {TESTS}/statusline_trackers/never_down.js",
             f"cmd:bash {TESTS}/statusline_trackers/last_row.sh", f"stream:node {TESTS}/stream_trackers/last_main.mjs",
             f"stream:node {TESTS}/stream_trackers/sum_all.mjs",
             f"stream:python3 {TESTS}/stream_trackers/last_main.py"]
COVERING = ["b02-first-wins-keeps-placeholder", "statusline-replayed-row-later", "b06-message-in-several-files",
            "gateway-inclusive-usage-aider-5516", "compaction", "seed001-subagent-max-cache-read",
            "window-1m-suffix", "b13-cache-creation-ignored", "seed000-overwrite-not-accumulate",
            "b17-clear-keeps-old-context"]
"""Scenarios the process trackers are judged on in the default tier: skipped for an SDK-stream tracker, skipped
for a statusline command, a gateway's usage, compaction, subagents, a 1M window, two servable scenarios (and the
recorded stream and the two-subagent scenario, added below), and a ``/clear`` served."""

Key = tuple[Any, ...]


def _corpus() -> list[Path]:
    files = [f for f in scenario_files(Path(BUNDLED)) if isinstance(load_scenario(f), SessionScenario)]
    return [*files, TWO_SUBAGENTS]


@pytest.fixture(scope="module")
def shared_runs() -> Iterator[None]:
    """One run (and so one set of likely causes) per scenario, tracker and world, whichever door asks for it; one
    run of the catalogue a scenario for the likely causes of every tracker failing on it."""
    import ctxsim.runner._plan as plan

    runs: dict[tuple[Any, ...], Any] = {}
    run_scenario = plan.run_scenario

    def shared_run(scenario: SessionScenario, tracker: Any, *, name: str) -> Any:
        world = (type(tracker).__qualname__, getattr(tracker, "usage", None), getattr(tracker, "world", None),
                 getattr(tracker, "command", None), getattr(getattr(tracker, "inner", None), "usage", None))
        key = (str(scenario.path), repr(scenario.session.queries), name, repr(world))  # a live twin: its own
        if key not in runs:
            runs[key] = run_scenario(scenario, tracker, name=name)
        return runs[key]

    mp = pytest.MonkeyPatch()
    mp.setattr(plan, "run_scenario", shared_run)
    yield
    mp.undo()


class _Verdicts:
    """Collects the verdict of every scenario item of an inline pytest run."""

    def __init__(self) -> None:
        self.keys: set[Key] = set()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Iterator[None]:
        result = yield
        verdict = getattr(item, "verdict", None)
        if verdict is not None:
            self.keys.add(verdict.key())
        return result


def _json_keys(path: Path) -> set[Key]:
    out = set()
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if "tally" in row:
            continue
        first = row["first"]["index"] if row["first"] else None
        out.add((row["scenario"], row["tracker"], row["status"], row["outcome"], first, row["cause"]))
    return out


def _through_pytest(pytester: pytest.Pytester, files: list[Path], specs: list[str]) -> set[Key]:
    collected = _Verdicts()
    pytester.inline_run(*map(str, files), *(f"--ctx-tracker={s}" for s in specs), "-p", "no:randomly",
                        "-p", "no:cacheprovider", plugins=[collected])
    return collected.keys


def _through_cli(tmp: Path, files: list[Path], specs: list[str]) -> dict[str, set[Key]]:
    doors: dict[str, set[Key]] = {"run": set(), "judge": set(), "score": set()}
    for i, file in enumerate(files):
        main(["run", str(file), *(a for s in specs for a in ("-t", s)), "--json", str(tmp / f"run{i}.json")])
        doors["run"] |= _json_keys(tmp / f"run{i}.json")
    for i, spec in enumerate(specs):
        main(["judge", spec, *map(str, files), "--json", str(tmp / f"judge{i}.json")])
        doors["judge"] |= _json_keys(tmp / f"judge{i}.json")
    yours = [s for s in specs if s not in CATALOGUE]
    main(["score", *map(str, files), *(a for s in yours for a in ("-t", s)), "--json", str(tmp / "score.json")])
    doors["score"] |= _json_keys(tmp / "score.json")
    return doors


def _through_serve(files: list[Path], specs: list[TrackerSpec]) -> tuple[set[Key], set[Key], int]:
    """For each scenario ``ctxsim serve`` can play (its live twin where it plays one) and each tracker whose estimates
    a file can carry (a figure or a gauge's number at every point): the verdict of ``ctxsim serve --judge``'s
    function fed its estimates, and the in-process one on the scenario served (without the tracker's name and the
    expectation: a served file is judged as a tracker under test); and how many served scenarios reset the
    conversation (``/clear``). The CLI is taken to write the compaction boundaries the scenario says."""
    from ctxsim.runner import judgement
    from ctxsim.serve import ScenarioServer, session_serve_reason
    from ctxsim.world import Compaction

    mine, theirs = set(), set()
    resets = 0
    for file in files:
        scenario = load_scenario(file)
        assert isinstance(scenario, SessionScenario)
        if session_serve_reason(scenario) is not None:
            continue
        server = ScenarioServer(scenario)
        session = server.scenario.session
        posts = [step.post_tokens for query in session.queries for step in query.steps if isinstance(step, Compaction)]
        setattr(server, "post_tokens", lambda posts=posts: posts)  # noqa: B010 (the boundaries the CLI wrote)
        points = {o.label: o for o in server.observations()}
        resets += any(o.kind == "reset" for o in points.values())
        for spec in specs:
            verdict = judgement(server.scenario, spec).run()
            run = verdict.run
            if run is None or run.report.error or run.report.crash or len(run.report.points) != len(points) or any(
                    p.band is not None and p.shown is None for p in run.report.points):
                continue
            estimates = {points[p.observation.label].index: p.estimate if p.shown is None else p.shown
                         for p in run.report.points}
            judged = server.verdict(estimates, tracker=spec.name, quantity=run.report.declared)
            # a served file carries the estimates, not the statusline payload a command read: where Claude Code's
            # own payload is wrong, only the in-process run can say so, so a command's likely cause is left out
            shown = slice(3, 5) if spec.feeding.fed == "points" else slice(3, None)
            mine.add(verdict.key()[shown])
            theirs.add(judged.key()[shown])
    return mine, theirs, resets


def _agree(pytester: pytest.Pytester, tmp: Path, files: list[Path], given: list[str]) -> None:
    specs = [resolve(s) for s in given]
    doors = {"pytest": _through_pytest(pytester, files, given), **_through_cli(tmp, files, given)}
    everyone = {(k[0], k[1]) for keys in doors.values() for k in keys}
    for door, keys in doors.items():
        assert keys, door
    reference = doors["judge"]
    for door, keys in doors.items():
        # run and pytest also judge the catalogued trackers each scenario names, judge and score every tracker on
        # every scenario: compared where both judged
        common = {(k[0], k[1]) for k in keys} & {(k[0], k[1]) for k in reference}
        assert common, door
        mine = {k for k in keys if (k[0], k[1]) in common}
        theirs = {k for k in reference if (k[0], k[1]) in common}
        assert mine == theirs, (door, sorted(mine ^ theirs)[:6])
    assert len(everyone) >= len(files) * len(given) // 2
    mine, theirs, resets = _through_serve(files, specs)
    assert mine and mine == theirs, sorted(map(repr, mine ^ theirs))[:6]
    assert resets, "no scenario served here resets the conversation (/clear)"


def test_every_door_gives_the_same_verdicts_for_python_trackers_over_the_corpus(
        pytester: pytest.Pytester, tmp_path: Path, shared_runs: None) -> None:
    _agree(pytester, tmp_path, _corpus(), ["reference", *CATALOGUE, *PYTHON])


def test_every_door_gives_the_same_verdicts_for_process_trackers(pytester: pytest.Pytester, tmp_path: Path,
                                                                 shared_runs: None) -> None:
    from ctxsim.corpus import find_scenario

    recorded = next(f for f in _corpus() if f != TWO_SUBAGENTS and load_scenario(f).recording is not None)
    files = [*map(find_scenario, COVERING), recorded, TWO_SUBAGENTS]
    _agree(pytester, tmp_path, files, PROCESSES)


@pytest.mark.slow
def test_every_door_gives_the_same_verdicts_for_process_trackers_over_the_corpus(
        pytester: pytest.Pytester, tmp_path: Path, shared_runs: None) -> None:
    _agree(pytester, tmp_path, _corpus(), PROCESSES)
