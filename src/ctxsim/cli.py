"""The ``ctxsim`` command: run a scenario and look at it, write and check scenario files.

::

    ctxsim run SCENARIO [--tracker NAME|module:factory ...] [--plot out.png|out.svg] [--all]

``run`` on a task scenario (a ``task`` section) runs the restart loops instead: the reference loop (with each
``--tracker``, too), then each catalogued loop the scenario names and each ``--loop`` (yours:
``module:function``), and prints each one's verdict, summary and
loop timeline (turns, context, zones, checkpoints, restarts, steps).
    ctxsim scenario new NAME [--dir DIR] [--force]
    ctxsim scenario check FILE ...
    ctxsim scenario keys
    ctxsim fuzz --tracker NAME|module:factory [--examples N] [--tolerance T] [--seed S] [--out FILE]
    ctxsim catalogue [--tracker NAME|module:factory ...]
    ctxsim import RECORDING... -o scenarios/NAME.yaml [--stream] [--force]
    ctxsim score [SCENARIOS...] [--tracker NAME|module:factory ...] [--fuzz N] [--html DIR]
    ctxsim record [NAME...] [--dir tests/captures] [--list]

``catalogue`` prints the detection table: each catalogued tracker (and each ``--tracker`` of yours) against every
conformance contract, with where a catalogued tracker differs from the contracts its entry declares it breaks.

Subcommands are registered in one place, :data:`COMMANDS`: a new one (``ctxsim fuzz``) is one more
:class:`Command` there. Exit status: 0 when every expectation holds, 1 when one does not, 2 for a usage or input
error, which is printed as one ``ctxsim:`` line without a traceback.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scenario import Scenario, SessionScenario, TaskScenario
    from .scenario_run import ScenarioRun
    from .trackers.base import TrackerFactory
    from .trackers.resolve import TrackerSpec

__all__ = ["COMMANDS", "Command", "CommandError", "main"]


class CommandError(Exception):
    """A usage or input error: the message (a ``ctxsim:`` line) is printed, the exit status is 2."""


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one line of help, how to declare its arguments and what it does."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    """Returns the exit status; raises :class:`CommandError` for a usage or input error."""


# --- ctxsim run -------------------------------------------------------------------------------------------------


def _configure_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, help="the scenario file (YAML)")
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="a catalogued tracker or your own (module:factory); repeatable. Default: the "
                             "trackers the scenario names. The reference always runs.")
    parser.add_argument("--loop", "-l", action="append", default=[], metavar="NAME|module:function",
                        help="on a task scenario, also run this restart loop (yours: a function taking a LoopRig) "
                             "and show its turn timeline; repeatable")
    parser.add_argument("--plot", type=Path, metavar="FILE", help="write a plot of truth, estimates and "
                                                                  "thresholds (.png or .svg; needs matplotlib)")
    parser.add_argument("--all", action="store_true", help="show every point of long timelines (and, for a task "
                                                           "scenario, the timeline of every catalogued loop)")


def _load(path: Path) -> SessionScenario | TaskScenario:
    from .scenario import ScenarioError, load_scenario

    try:
        return load_scenario(path)
    except ScenarioError as exc:
        raise CommandError(str(exc)) from None


def _resolve_tracker(spec: str, option: str = "--tracker") -> TrackerSpec:
    """What ``--tracker=spec`` (or ``--loop=spec``: a ``LoopSpec``) names, module:name from the working directory."""
    from .loops.resolve import resolve_loop
    from .trackers.resolve import SpecError, resolve

    try:
        return (resolve if option == "--tracker" else resolve_loop)(spec, search=[str(Path.cwd())])  # type: ignore
    except SpecError as exc:
        raise CommandError(f"ctxsim: {option}={spec}: {exc}") from None


def _trackers(scenario: SessionScenario, specs: Sequence[str]) -> list[tuple[str, TrackerFactory, str]]:
    """``(name, factory, expectation)`` for each tracker to run on a session scenario: the reference, then the
    trackers the scenario lists (or the ``--tracker`` ones, when given); expectation ``pass``, ``fail`` or ``none``."""
    from .trackers import CATALOGUE, reference_for

    chosen: list[tuple[str, TrackerFactory, str]] = [
        ("reference", partial(reference_for, scenario.session), "pass" if scenario.expect_reference else "fail")]
    listed = {**dict.fromkeys(scenario.must_fail, "fail"), **dict.fromkeys(scenario.must_pass, "pass")}
    if not specs:
        return chosen + [(name, CATALOGUE[name].factory, expected) for name, expected in listed.items()]
    return chosen + _under_test(scenario, specs, listed)


def _under_test(scenario: Scenario, specs: Sequence[str],
                listed: Mapping[str, str]) -> list[tuple[str, TrackerFactory, str]]:
    """``(name, factory, expectation)`` for each ``--tracker`` but the reference: what ``listed`` (the scenario's
    own list: name to ``pass`` or ``fail``) says of a catalogued one, else what ``expect.ctx_tracker`` says."""
    chosen: list[tuple[str, TrackerFactory, str]] = []
    for spec in specs:
        resolved = _resolve_tracker(spec)
        if resolved.name == "reference":
            continue
        expected = listed.get(resolved.name) if resolved.catalogued else None
        if expected is None:
            expected = {"pass": "pass", "fail": "fail"}.get(scenario.ctx_tracker, "none")
        chosen.append((resolved.name, resolved.factory, expected))
    return chosen


def _verdict(run: ScenarioRun, expected: str) -> tuple[bool, str]:
    if run.inconclusive:
        return False, f"{run.inconclusive}: NOT AS EXPECTED"
    does = "tracks it" if run.ok else "fails on it"
    if expected == "none":
        return True, f"{does} (the scenario expects nothing of it: expect.ctx_tracker: skip)"
    met = run.ok == (expected == "pass")
    want = "track it" if expected == "pass" else "fail on it"
    return met, f"{does}; expected to {want}: {'OK' if met else 'NOT AS EXPECTED'}"


def _run_task(args: argparse.Namespace, scenario: TaskScenario) -> int:
    """``ctxsim run`` on a task scenario: each restart loop's verdict, summary and timeline."""
    from .task_run import REFERENCE_LOOP, describe_task, run_task

    if args.plot is not None:
        raise CommandError(f"ctxsim: --plot: scenario {args.scenario} is a task scenario: it has a loop timeline, "
                           f"not a tracker timeline to plot (run without --plot)")
    expect = scenario.loop_expect
    runs: list[tuple[str, dict[str, Any], str]] = [(REFERENCE_LOOP, {}, "meet")]
    runs += [(loop, {"loop": loop}, "caught") for loop in expect.must_fail]
    runs += [(loop, {"loop": loop}, "kept") for loop in expect.must_pass]
    for name, factory, expected in _under_test(scenario, args.tracker, {}):
        wanted = {"pass": "meet", "fail": "miss"}.get(expected, "none")
        runs.append((f"{REFERENCE_LOOP} with tracker {name}", {"tracker_factory": factory, "tracker": name}, wanted))
    mine = [_resolve_tracker(spec, "--loop") for spec in args.loop]
    runs += [(f"{loop.name} (--loop={loop.spec})", {"loop": loop}, "kept") for loop in mine]
    print(f"scenario {scenario.name} ({args.scenario}): {describe_task(scenario)}")
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


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _run(args: argparse.Namespace) -> int:
    """``ctxsim run``: the runs of a session scenario's trackers, or of a task scenario's restart loops."""
    from .scenario import TaskScenario

    scenario = _load(args.scenario)
    if isinstance(scenario, TaskScenario):
        return _run_task(args, scenario)
    return _run_session(args, scenario)


def _run_session(args: argparse.Namespace, scenario: SessionScenario) -> int:
    """``ctxsim run`` on a session scenario: each tracker's verdict, summary and timeline, and the plot."""
    from .scenario_run import MANY_POINTS, run_scenario

    if args.plot is not None:
        from .plot import FORMATS, PlotUnavailable, require_pyplot

        if args.plot.suffix.lower() not in FORMATS:
            raise CommandError(f"ctxsim: --plot {args.plot}: use a .png or .svg file name")
        try:
            require_pyplot()
        except PlotUnavailable as exc:
            raise CommandError(f"{exc} (or run without --plot)") from None
    trackers = _trackers(scenario, args.tracker)
    session = scenario.session
    print(f"scenario {scenario.name} ({args.scenario}): window {session.window:,}, tolerance "
          f"±{scenario.tolerance:,} tokens" + (f", recorded stream {scenario.recording.path}"
                                               if scenario.recording is not None else ""))
    if scenario.source:
        print(f"source: {scenario.source}")
    runs, all_met = [], True
    for name, factory, expected in trackers:
        run = run_scenario(scenario, factory(), name=name)
        runs.append(run)
        met, verdict = _verdict(run, expected)
        all_met &= met
        print(f"\n== {name}: {verdict}")
        print(run.report.summary())
        many = len(run.report.points) > MANY_POINTS and not args.all
        print(run.table(only_failures=many))
        if many:
            print(f"({len(run.report.points)} points; only those off or firing are shown; --all shows every one)")
        for problem in run.problems():
            print(problem)
        if run.report.failures:
            first = run.report.failures[0].observation.label
            where = scenario.where(first)
            print(f"first failing point: {first}" + (f" ({where[0]}:{where[1]})" if where else ""))
    if args.plot is not None:
        from .plot import plot_runs

        print(f"\nplot written to {plot_runs(runs, args.plot)}")
    print(f"\n{len(runs)} trackers: " + ("every expectation met" if all_met else "some expectations NOT met"))
    return 0 if all_met else 1


# --- ctxsim scenario ... ----------------------------------------------------------------------------------------

TEMPLATE = '''\
# {name}: a ctxsim scenario. Run it:  pytest --ctx-scenarios={path}   or   ctxsim run {path}
# Every key is listed by `ctxsim scenario keys`. Numbers are tokens; YAML allows 172_301.
name: {name}
# Where the numbers come from: the issue, report or log you are reproducing.
source: "TODO: the report this reproduces"
# What the tracker shows, and what the truth is, in a sentence or two.
description: >-
  The context is compacted from ~150k tokens to a 20k summary (32k with the system prompt and tools). A tracker
  that keeps the largest cache read it has seen still shows ~74% afterwards.
world:
  model: claude-sonnet-4-5
  window: 200000      # the context window
  baseline: 12000     # system prompt + tools at the start of a conversation
  seed: 0             # ids, uuids and filler text derive from it
queries:
  # One item per client.query(); each ends with one ResultMessage.
  - prompt: "Refactor the parser"
    steps:
      # An API call with its exact usage: uncached input, cache creation, cache read; and its output.
      - call: {{in: 3, cc: 2000, cr: 148000, out: 300}}
      # A call derived from growth: the previous prompt + its output + this tool result (2,500 tokens).
      - call: {{results: [2500], out: 90}}
  - prompt: "Continue"
    steps:
      # Claude Code compacted the conversation: its compact_boundary says post_tokens 20,000 (the summary alone;
      # the context then holds the baseline too). Or give context: what /context showed after.
      - compact: {{post: 20000}}
      - call: {{}}
      # Other steps: repeat, expire_cache, subagent, reset.
expect:
  tolerance: 2000          # tokens a tracker may be off at any point
  reference: pass          # the reference tracker tracks this session
  fail: [arbiter-msgid]    # catalogued trackers that must fail on it (`ctxsim run` lists what they do)
  ctx_tracker: pass        # what your tracker (pytest --ctx-tracker=module:factory) must do
  # 70% of the window (140,000 tokens): the truth crosses at the first call, and not again after compaction.
  threshold: {{at: 0.7, fires: [q1 call 1]}}
'''


def _configure_scenario(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    new = sub.add_parser("new", help="write a commented scenario template that loads and passes")
    new.add_argument("name", help="the scenario's name (letters, digits, '.', '_', '-'); the file is NAME.yaml")
    new.add_argument("--dir", type=Path, default=None,
                     help="where to write it (default: ./scenarios if it exists, else .)")
    new.add_argument("--force", action="store_true", help="overwrite an existing file")
    check = sub.add_parser("check", help="load scenario files and report every error")
    check.add_argument("files", nargs="+", type=Path)
    sub.add_parser("keys", help="print every key of the scenario format")


def _scenario(args: argparse.Namespace) -> int:
    if args.action == "keys":
        from .scenario.schema import reference

        print(reference(), end="")
        return 0
    if args.action == "check":
        from .scenario import ScenarioError, load_scenario

        bad = 0
        for file in args.files:
            try:
                scenario = load_scenario(file)
            except ScenarioError as exc:
                print(exc, file=sys.stderr)
                bad += 1
                continue
            print(f"{file}: ok ({scenario.name}: {scenario.outline()})")
        return 1 if bad else 0
    name = args.name
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise CommandError(f"ctxsim: scenario new: {name!r} is not a usable name (letters, digits, '.', '_', '-')")
    directory = args.dir if args.dir is not None else (Path("scenarios") if Path("scenarios").is_dir() else Path())
    path = directory / f"{name.removesuffix('.yaml')}.yaml"
    if path.exists() and not args.force:
        raise CommandError(f"ctxsim: scenario new: {path} exists (--force overwrites it)")
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(TEMPLATE.format(name=path.stem, path=path), encoding="utf-8")
    print(f"wrote {path}: edit it, then run  ctxsim run {path}")
    return 0


def _configure_fuzz(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", required=True, metavar="SPEC",
                        help="the tracker to fuzz: module:factory, or a catalogue name")
    parser.add_argument("--examples", type=int, default=200, metavar="N", help="streams to generate (default 200)")
    parser.add_argument("--tolerance", type=int, default=0, metavar="TOKENS", help="allowed error (default 0)")
    parser.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0: the same run every time)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE",
                        help="where to write a counterexample (default ctxsim-fuzz-<tracker>.yaml)")


def _fuzz(args: argparse.Namespace) -> int:
    from .fuzz import fuzz, write_scenario

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
    print(f"reproduce it: pytest --ctx-scenarios={path} --ctx-tracker={args.tracker}")
    return 1


def _configure_catalogue(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tracker", "-t", action="append", default=[], metavar="NAME|module:factory",
                        help="the rows to show (repeatable; the reference always comes first): catalogued trackers "
                             "or your own. Default: the whole catalogue")


def _catalogue(args: argparse.Namespace) -> int:
    from .testing import CONTRACTS, check_tracker_conformance, conformance_table
    from .trackers import CATALOGUE

    rows = {name: entry.factory for name, entry in CATALOGUE.items()}
    if args.tracker:
        rows = {"reference": rows["reference"]}
    for spec in args.tracker:
        resolved = _resolve_tracker(spec)
        rows[resolved.name] = resolved.factory
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


# --- ctxsim import, ctxsim score -------------------------------------------------------------------------------


def _configure_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recordings", nargs="+", type=Path, metavar="RECORDING",
                        help="Claude Code transcripts (a session's .jsonl and its subagents/*.jsonl, any order) or "
                             "one stream-json capture")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the scenario to write")
    parser.add_argument("--stream", action="store_true", help="always write the scrubbed stream, never steps")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def _import(args: argparse.Namespace) -> int:
    from .scenario.importer import ImportFailure, write_import

    try:
        written = write_import(args.recordings, args.output, force=args.force, steps=not args.stream)
    except ImportFailure as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote {' and '.join(map(str, written))}: text scrubbed, ids re-keyed, numbers kept; "
          f"run it:  ctxsim run {written[0]}")
    return 0


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
    from .scenario import SessionScenario
    from .score import score
    from .trackers import CATALOGUE

    if args.html is not None:
        from .plot import PlotUnavailable, require_pyplot

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
    trackers = [(name, entry.factory) for name, entry in CATALOGUE.items()]
    for spec in args.tracker:
        resolved = _resolve_tracker(spec)
        if resolved.name not in CATALOGUE:
            trackers.append((resolved.name, resolved.factory))
    board = score(scenarios, trackers, fuzz=args.fuzz, seed=args.seed, progress=sys.stderr)
    print(board.table())
    if args.html is not None:
        from .plot import write_scoreboard_html

        print(f"\nctxsim score: page written to {write_scoreboard_html(board, args.html)}")
    return 0


# --- the command ------------------------------------------------------------------------------------------------

def _configure_record(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="scripted sessions (default: all; --list shows them)")
    parser.add_argument("--dir", type=Path, default=Path("tests/captures"),
                        help="where the captures go, under claude-code-<CLI version>/ (default: tests/captures)")
    parser.add_argument("--list", action="store_true", help="list the scripted sessions and exit")


def _record(args: argparse.Namespace) -> int:
    from .live.record import record_command

    return record_command(args.names, args.dir, list_only=args.list)


COMMANDS: tuple[Command, ...] = (
    Command("run", "run a scenario: print the timeline of each tracker, optionally plot it", _configure_run, _run),
    Command("scenario", "write a scenario template, check scenario files, list the format's keys",
            _configure_scenario, _scenario),
    Command("fuzz", "generate faulted streams until one breaks a tracker; write it as a scenario",
            _configure_fuzz, _fuzz),
    Command("catalogue", "run the conformance contracts over the tracker catalogue (and yours): the detection table",
            _configure_catalogue, _catalogue),
    Command("import", "turn transcripts or a stream-json capture into a shareable scenario (text scrubbed)",
            _configure_import, _import),
    Command("score", "score the catalogue (and your trackers) over the scenarios: the accuracy scoreboard",
            _configure_score, _score),
    Command("record", "play the live conformance sessions through the bundled CLI and write their captures",
            _configure_record, _record),
)
"""Every subcommand, in the order ``ctxsim --help`` lists them."""


def _parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="ctxsim", description="Check context-window trackers of Claude Agent "
                                                                "SDK agents against a simulated ground truth.")
    parser.add_argument("--version", action="version", version=f"ctxsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.configure(sub.add_parser(command.name, help=command.help, description=command.help))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctxsim`` with ``argv`` (default: the process's arguments); returns the exit status."""
    args = _parser().parse_args(argv)
    command = next(c for c in COMMANDS if c.name == args.command)
    try:
        return command.run(args)
    except CommandError as exc:
        print(exc, file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ctxsim run ... | head`
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
