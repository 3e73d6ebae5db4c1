"""``ctxsim run``: a scenario's trackers (or, for a task scenario, its restart loops) with their timelines."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..runner import ScenarioRun
    from ..scenario import ExpectedFailure, Scenario, SessionScenario, TaskScenario
    from ..trackers import AnyTrackerFactory

from ..processes import printable
from ._common import (
    CommandError,
    _count,
    _find,
    _load,
    _resolve_loop,
    _resolve_tracker,
    add_env_option,
    add_report_options,
    write_reports,
)


def _configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, help="the scenario file (YAML), or a bundled scenario's name "
                                                    "(`ctxsim scenario list`)")
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="a catalogued tracker or your own (module:factory); repeatable. Default: the "
                             "trackers the scenario names. The reference always runs.")
    parser.add_argument("--loop", "-l", action="append", default=[], metavar="NAME|module:function",
                        help="on a task scenario, also run this restart loop (yours: a function taking a LoopRig) "
                             "and show its turn timeline; repeatable")
    add_env_option(parser)
    parser.add_argument("--plot", type=Path, metavar="FILE", help="write a plot of truth, estimates and "
                                                                  "thresholds (.png or .svg; needs matplotlib)")
    parser.add_argument("--all", action="store_true", help="show every point of long timelines (and, for a task "
                                                           "scenario, the timeline of every catalogued loop)")
    add_report_options(parser)


def _under_test(scenario: Scenario, specs: Sequence[str], listed: Mapping[str, str],
                env: Sequence[str] = ()) -> list[tuple[str, AnyTrackerFactory, str]]:
    """``(name, factory, expectation)`` for each ``--tracker`` but the reference: what ``listed`` (the scenario's
    own list: name to ``pass`` or ``fail``) says of a catalogued one, else what ``expect.ctx_tracker`` says."""
    chosen: list[tuple[str, AnyTrackerFactory, str]] = []
    for spec in specs:
        resolved = _resolve_tracker(spec, env=env)
        if resolved.name == "reference":
            continue
        expected = listed.get(resolved.name) if resolved.catalogued else None
        if expected is None:
            expected = {"pass": "pass", "fail": "fail"}.get(scenario.ctx_tracker, "none")
        chosen.append((resolved.name, resolved.factory, expected))
    return chosen


def _verdict(run: ScenarioRun, expected: str, failure: ExpectedFailure | None) -> tuple[bool, str]:
    from ..runner import verdict

    if run.inconclusive:
        return False, f"{run.inconclusive}: NOT AS EXPECTED"
    does = "tracks it" if run.ok else "fails on it"
    if expected == "none":
        return True, f"{does} (the scenario expects nothing of it: expect.ctx_tracker: skip)"
    met, how = verdict(run, expected, failure)
    if not run.ok:
        does = how
    want = "track it" if expected == "pass" else "fail on it" + (f" ({failure.describe()})" if failure else "")
    return met, f"{does}; expected to {want}: {'OK' if met else 'NOT AS EXPECTED'}"


def _run_task(args: argparse.Namespace, scenario: TaskScenario) -> int:
    """``ctxsim run`` on a task scenario: each restart loop's verdict, summary and timeline."""
    from ..runner import REFERENCE_LOOP, describe_task, run_task
    from ..trackers import make_tracker

    if args.plot is not None:
        raise CommandError(f"ctxsim: --plot: scenario {args.scenario} is a task scenario: it has a loop timeline, "
                           f"not a tracker timeline to plot (run without --plot)")
    expect = scenario.loop_expect
    runs: list[tuple[str, dict[str, Any], str]] = [(REFERENCE_LOOP, {}, "meet")]
    runs += [(loop, {"loop": loop}, "caught") for loop in expect.must_fail]
    runs += [(loop, {"loop": loop}, "kept") for loop in expect.must_pass]
    for name, factory, expected in _under_test(scenario, args.tracker, {}, args.env):
        wanted = {"pass": "meet", "fail": "miss"}.get(expected, "none")
        made = partial(make_tracker, factory, scenario.session)
        runs.append((f"{REFERENCE_LOOP} with tracker {name}", {"tracker_factory": made, "tracker": name}, wanted))
    mine = [_resolve_loop(spec) for spec in args.loop]
    runs += [(f"{loop.name} (--loop={loop.spec})", {"loop": loop}, "kept") for loop in mine]
    print(f"scenario {scenario.name} ({printable(str(args.scenario))}): {describe_task(scenario)}")
    if scenario.source:
        print(f"source: {scenario.source}")
    all_met = True
    for title, options, expected in runs:
        met, text = run_task(scenario, **options).shown(title, expected, str(args.scenario), full=args.all,
                                                        timeline="--loop=" in title)
        all_met &= met
        print(text)
    print(f"\n{_count(len(runs), 'loop run')}: " + ("every expectation met" if all_met else
                                                    "some expectations NOT met"))
    return 0 if all_met else 1


def _run(args: argparse.Namespace) -> int:
    """``ctxsim run``: the runs of a session scenario's trackers, or of a task scenario's restart loops."""
    from ..scenario import TaskScenario

    args.scenario = _find(args.scenario)
    scenario = _load(args.scenario)
    if isinstance(scenario, TaskScenario):
        return _run_task(args, scenario)
    return _run_session(args, scenario)


def _run_session(args: argparse.Namespace, scenario: SessionScenario) -> int:
    """``ctxsim run`` on a session scenario: each tracker's verdict, summary and timeline, and the plot."""
    from ..runner import MANY_POINTS

    if args.plot is not None:
        from ..score import FORMATS, PlotUnavailable, require_pyplot

        if args.plot.suffix.lower() not in FORMATS:
            raise CommandError(f"ctxsim: --plot {args.plot}: use a .png or .svg file name")
        try:
            require_pyplot()
        except PlotUnavailable as exc:
            raise CommandError(f"{exc} (or run without --plot)") from None
    from ..runner import judgements

    under_test = [s for s in (_resolve_tracker(t, env=args.env) for t in args.tracker) if s.name != "reference"]
    planned = judgements(scenario, under_test, named=not args.tracker)
    session = scenario.session
    print(f"scenario {scenario.name} ({printable(str(args.scenario))}): window {session.window:,}, tolerance "
          f"±{scenario.tolerance:,} tokens" + (f", recorded stream {scenario.recording.path}"
                                               if scenario.recording is not None else ""))
    if scenario.source:
        print(f"source: {scenario.source}")
    runs, verdicts, all_met = [], [], True
    for judgement in planned:
        judged = judgement.run()
        verdicts.append(judged)
        run = judged.run
        if run is None:
            print(f"\n== {judgement.tracker}: skipped: {judged.skipped}")
            continue
        runs.append(run)
        met, verdict = _verdict(run, judgement.expected, judgement.failure)
        all_met &= met
        print(f"\n== {judgement.tracker}: {verdict}")
        print(run.report.summary())
        many = len(run.report.points) > MANY_POINTS and not args.all
        print(run.table(only_failures=many, explain=True))
        if many:
            print(f"({len(run.report.points)} points; only those off or firing are shown; --all shows every one)")
        for problem in [*run.report.diagnosis(), *run.problems()]:
            print(problem)
        first = judged.first
        if first is not None:
            where = scenario.where(first.label)
            print(f"first failing point: #{first.index} {first.label}" + (f" ({where[0]}:{where[1]})" if where
                                                                          else ""))
    if args.plot is not None:
        from ..score import plot_runs

        print(f"\nplot written to {plot_runs(runs, args.plot)}")
    skipped = sum(v.run is None for v in verdicts)
    print(f"\n{len(runs)} trackers" + (f" ({skipped} skipped)" if skipped else "") + ": "
          + ("every expectation met" if all_met else "some expectations NOT met"))
    write_reports(args, verdicts, "ctxsim run")
    return 0 if all_met else 1
