"""How good a tracker is: ``ctxsim fuzz`` (generated faulted streams until one breaks it), ``ctxsim
catalogue`` (the conformance contracts over the catalogue) and ``ctxsim score`` (the scoreboard)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..trackers import AnyTrackerFactory, TrackerSpec

from ._common import (
    CommandError,
    _load,
    _resolve_tracker,
    _scenario_files,
    add_env_option,
    add_report_options,
    fuzz_database,
    printed_instead,
    write_reports,
)


def _configure_fuzz(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", metavar="SPEC",
                        help="the tracker to fuzz: module:factory, or a catalogue name (with --loop: the tracker "
                             "the loop is given, default the reference tracker)")
    parser.add_argument("--loop", metavar="SPEC", help="fuzz a restart loop instead: module:function, or a "
                                                       "catalogued loop; generated tasks and faults until it breaks "
                                                       "an invariant, shrunk to a task scenario")
    parser.add_argument("--examples", type=int, default=200, metavar="N", help="streams to generate (default 200)")
    parser.add_argument("--tolerance", type=int, default=0, metavar="TOKENS", help="allowed error (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0: the same run every time)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE",
                        help="where to write a counterexample (default ctxsim-fuzz-<tracker>.yaml)")
    parser.add_argument("--db", default=None, metavar="URL",
                        help="a Hypothesis example database shared by runs on any machine: redis://host:port/db "
                             "(pip install 'pytest-ctxsim[redis]') or a directory. A run replays what it holds for "
                             "this tracker first, and saves its counterexample there")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="fuzz in N processes on this machine (seeds SEED..SEED+N-1, the examples shared out, "
                             "one database); default 1")
    add_env_option(parser)


def _fuzz(args: argparse.Namespace) -> int:
    from ..fuzz import Reproduction, fuzz, fuzz_workers, import_root, reproduce_command, write_scenario
    from ..processes import FileNotWritten

    if args.loop is not None:
        from ._fuzz_loop import _fuzz_loop

        return _fuzz_loop(args)
    if args.tracker is None:
        raise CommandError("ctxsim: fuzz: give --tracker SPEC (a tracker to fuzz) or --loop SPEC (a restart loop)")
    spec = _resolve_tracker(args.tracker, env=args.env)
    database = fuzz_database(args)
    if args.workers > 1:
        try:
            result = fuzz_workers(args.tracker, workers=args.workers, examples=args.examples,
                                  tolerance=args.tolerance, seed=args.seed, db=args.db, search=[str(Path.cwd())],
                                  env=args.env)
        except (TimeoutError, ChildProcessError) as exc:  # one ctxsim: line from the workers' pool
            raise CommandError(str(exc)) from None
    else:
        result = fuzz(spec.factory, examples=args.examples, tolerance=args.tolerance, seed=args.seed,
                      database=database, key=args.tracker)
    if result.scenario is None:
        print(f"ctxsim fuzz: {spec.name} tracked all {result.examples} generated streams")
        return 0
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-") or "tracker"
    reproduction = Reproduction(args.tracker, tolerance=args.tolerance, seed=args.seed, examples=args.examples,
                                search=import_root(args.tracker) or os.getcwd(), cwd=os.getcwd(),
                                env=tuple(args.env))
    try:
        path = write_scenario(result, args.out or Path(f"ctxsim-fuzz-{safe}.yaml"), reproduction)
    except FileNotWritten as exc:  # a full disk, a read-only directory: the counterexample is printed instead
        return printed_instead(result.report, result.scenario, exc)
    print(_judged_counterexample(path, spec, result.report))
    print(f"\nctxsim fuzz: {spec.name} fails after {result.examples} streams {result.timing()}; "
          f"the shrunk counterexample is {path} (tolerance ±{args.tolerance:,} tokens)")
    print(f"reproduce it, from any directory: {reproduce_command(path, reproduction)}")
    return 1


def _judged_counterexample(path: Path, spec: TrackerSpec, found: str) -> str:
    """The runner's verdict on the counterexample written at ``path``, as pytest, ``ctxsim run`` and ``ctxsim judge``
    give it on that file (its timeline, likely causes and diagnosis); where the runner does not find the tracker off
    there (``found``: what the fuzz saw), that is said, with what the fuzz saw."""
    from ..runner import explain, judgement
    from ..scenario import SessionScenario, load_scenario

    scenario = load_scenario(path)
    verdict = judgement(scenario, spec).run() if isinstance(scenario, SessionScenario) else None
    if verdict is None or verdict.run is None or verdict.run.failure.kind != "off":
        does = "is not judged" if verdict is None else verdict.does
        return (f"{found}\nctxsim: fuzz: judged as a scenario, {spec.name} {does} on {path}: the runner does not "
                f"reproduce the failure the fuzz saw above")
    return explain(verdict.run, f"ctxsim fuzz: {spec.name} on {path}: {verdict.does}")


def _configure_catalogue(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="the rows to show (repeatable; the reference always comes first): catalogued trackers "
                             "or your own. Default: the whole catalogue")


def _catalogue(args: argparse.Namespace) -> int:
    from ..testing import CONTRACTS, check_tracker_conformance, conformance_table, declaration_differences
    from ..trackers import make_tracker
    from ..trackers.catalogue import CATALOGUE

    rows: dict[str, Callable[..., Any]] = {name: entry.factory for name, entry in CATALOGUE.items()}
    if args.tracker:
        rows = {"reference": rows["reference"]}
    for spec in args.tracker:
        resolved = _resolve_tracker(spec)
        if resolved.fed_messages is None:
            raise CommandError(f"ctxsim: catalogue: --tracker={spec}: the conformance contracts feed a tracker the "
                               f"SDK's message objects; judge a statusline command or a stream tracker over "
                               f"scenarios (ctxsim judge, ctxsim score, pytest --ctx-scenarios --ctx-tracker)")
        rows[resolved.name] = resolved.fed_messages
    results = {}
    for name, factory in rows.items():
        print(f"ctxsim catalogue: {name} ...", file=sys.stderr, flush=True)
        results[name] = check_tracker_conformance(partial(make_tracker, factory))
    names = [c.name for c in CONTRACTS]
    declared = {name: CATALOGUE[name].breaks.how(names) for name in rows if name in CATALOGUE}
    print(conformance_table(results, declared))
    off = [name for name, want in declared.items() if declaration_differences(results[name], want)]
    if off:
        print(f"\nctxsim catalogue: {', '.join(off)} not as declared", file=sys.stderr)
    return 1 if off else 0


def _configure_score(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenarios", nargs="*", type=Path, metavar="SCENARIOS",
                        help="scenario files, directories or bundled scenarios' names (default: bundled, the "
                             "corpus shipped with ctxsim)")
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="your tracker, scored beside the catalogue (repeatable)")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N", help="also score N generated faulted streams")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated streams (default 0)")
    parser.add_argument("--html", type=Path, metavar="DIR", help="write DIR/index.html: the table and each "
                                                                "tracker's timeline plot (needs matplotlib)")
    add_env_option(parser)
    add_report_options(parser)


def _score(args: argparse.Namespace) -> int:
    from ..corpus import BUNDLED
    from ..runner import named_apart
    from ..scenario import SessionScenario
    from ..score import score
    from ..trackers.catalogue import CATALOGUE

    if args.html is not None:
        from ..score import PlotUnavailable, require_pyplot

        try:
            require_pyplot()
        except PlotUnavailable as exc:
            raise CommandError(f"{exc} (needed by --html; or run without it)") from None
    if args.fuzz < 0:
        raise CommandError(f"ctxsim: score: --fuzz must be 0 or more, got {args.fuzz}")
    files = _scenario_files(args.scenarios or [Path(BUNDLED)], "score")
    scenarios = [s for s in map(_load, files) if isinstance(s, SessionScenario)]
    trackers: list[TrackerSpec | tuple[str, AnyTrackerFactory]] = [(name, entry.factory)
                                                                   for name, entry in CATALOGUE.items()]
    given = [resolved for resolved in (_resolve_tracker(spec, env=args.env) for spec in args.tracker)
             if not resolved.catalogued]
    mine = named_apart(given, list(CATALOGUE))  # two trackers one name would call: both kept, named apart
    trackers += mine
    yours = [resolved.name for resolved in mine]
    board = score(scenarios, trackers, fuzz=args.fuzz, seed=args.seed, progress=sys.stderr, yours=yours)
    print(board.table())
    write_reports(args, board.verdicts, "ctxsim score")
    if args.html is not None:
        from ..score import write_scoreboard_html

        print(f"\nctxsim score: page written to {write_scoreboard_html(board, args.html)}")
    return 0
