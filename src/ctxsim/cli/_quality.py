"""How good a tracker is: ``ctxsim fuzz`` (generated faulted streams until one breaks it), ``ctxsim
catalogue`` (the conformance contracts over the catalogue) and ``ctxsim score`` (the scoreboard)."""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..trackers.base import AnyTrackerFactory

from ._common import CommandError, _load, _resolve_tracker


def _configure_fuzz(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", required=True, metavar="SPEC",
                        help="the tracker to fuzz: module:factory, or a catalogue name")
    parser.add_argument("--examples", type=int, default=200, metavar="N", help="streams to generate (default 200)")
    parser.add_argument("--tolerance", type=int, default=0, metavar="TOKENS", help="allowed error (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0: the same run every time)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE",
                        help="where to write a counterexample (default ctxsim-fuzz-<tracker>.yaml)")


def _fuzz(args: argparse.Namespace) -> int:
    from ..fuzz import fuzz, write_scenario

    spec = _resolve_tracker(args.tracker)
    if args.examples < 1:
        raise CommandError(f"ctxsim: fuzz: --examples must be at least 1, got {args.examples}")
    result = fuzz(spec.factory, examples=args.examples, tolerance=args.tolerance, seed=args.seed)
    if result.scenario is None:
        print(f"ctxsim fuzz: {spec.name} tracked all {result.examples} generated streams")
        return 0
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", spec.name).strip("-") or "tracker"
    path = write_scenario(result, args.out or Path(f"ctxsim-fuzz-{safe}.yaml"))
    print(f"{result.report}\n\nctxsim fuzz: {spec.name} fails after {result.examples} streams {result.timing()}; "
          f"the shrunk counterexample is {path}")
    print(f"reproduce it: pytest --ctx-scenarios={path} {shlex.quote('--ctx-tracker=' + args.tracker)}")
    return 1


def _configure_catalogue(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="the rows to show (repeatable; the reference always comes first): catalogued trackers "
                             "or your own. Default: the whole catalogue")


def _catalogue(args: argparse.Namespace) -> int:
    from ..testing import CONTRACTS, check_tracker_conformance, conformance_table
    from ..trackers import CATALOGUE

    rows = {name: entry.factory for name, entry in CATALOGUE.items()}
    if args.tracker:
        rows = {"reference": rows["reference"]}
    for spec in args.tracker:
        resolved = _resolve_tracker(spec)
        if resolved.fed_messages is None:
            raise CommandError(f"ctxsim: catalogue: --tracker={spec}: the conformance contracts feed a tracker the "
                               f"SDK's messages; judge a statusline command over scenarios (ctxsim score, pytest "
                               f"--ctx-scenarios --ctx-tracker)")
        rows[resolved.name] = resolved.fed_messages
    results = {}
    for name, factory in rows.items():
        print(f"ctxsim catalogue: {name} ...", file=sys.stderr, flush=True)
        results[name] = check_tracker_conformance(factory)
    declared = {name: CATALOGUE[name].breaks.of(c.name for c in CONTRACTS) for name in rows if name in CATALOGUE}
    print(conformance_table(results, declared))
    off = [name for name, want in declared.items() if set(results[name].failed) != want]
    if off:
        print(f"\nctxsim catalogue: {', '.join(off)} not as declared", file=sys.stderr)
    return 1 if off else 0


def _configure_score(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenarios", nargs="*", type=Path, metavar="SCENARIOS",
                        help="scenario files or directories (default: ./scenarios)")
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="your tracker, scored beside the catalogue (repeatable)")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N", help="also score N generated faulted streams")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated streams (default 0)")
    parser.add_argument("--html", type=Path, metavar="DIR", help="write DIR/index.html: the table and each "
                                                                "tracker's timeline plot (needs matplotlib)")


def _score(args: argparse.Namespace) -> int:
    from ..scenario import SessionScenario
    from ..score import score
    from ..trackers import CATALOGUE

    if args.html is not None:
        from ..plot import PlotUnavailable, require_pyplot

        try:
            require_pyplot()
        except PlotUnavailable as exc:
            raise CommandError(f"{exc} (needed by --html; or run without it)") from None
    if args.fuzz < 0:
        raise CommandError(f"ctxsim: score: --fuzz must be 0 or more, got {args.fuzz}")
    files = []
    for path in args.scenarios or [Path("scenarios")]:
        if not path.exists():
            raise CommandError(f"ctxsim: score: no such file or directory: {path}")
        files += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    scenarios = [s for s in map(_load, files) if isinstance(s, SessionScenario)]
    trackers: list[tuple[str, AnyTrackerFactory]] = [(name, entry.factory) for name, entry in CATALOGUE.items()]
    for spec in args.tracker:
        resolved = _resolve_tracker(spec)
        if resolved.name not in CATALOGUE:
            trackers.append((resolved.name, resolved.factory))
    board = score(scenarios, trackers, fuzz=args.fuzz, seed=args.seed, progress=sys.stderr)
    print(board.table())
    if args.html is not None:
        from ..plot import write_scoreboard_html

        print(f"\nctxsim score: page written to {write_scoreboard_html(board, args.html)}")
    return 0
