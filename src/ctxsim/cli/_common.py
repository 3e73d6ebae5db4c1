"""What the subcommands share: the error they raise, how a command is declared, loading a scenario
and naming a tracker."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hypothesis.database import ExampleDatabase

    from ..loops import LoopSpec
    from ..runner import Verdict
    from ..scenario import SessionScenario, TaskScenario
    from ..trackers import TrackerSpec



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
    plays: bool | Callable[[argparse.Namespace], bool] = False
    """Whether it plays sessions (runs or judges a tracker, serves a scenario), for these arguments: then it takes
    ``--cli-version`` (the Claude Code release sessions that name none render as), and a run that reached its verdict
    ends by saying on stderr when the Claude Code in use is newer than every release ctxsim
    recorded (:func:`ctxsim.live.release_notice`)."""

    def says_release(self, args: argparse.Namespace) -> bool:
        """Whether this run of the command, once it reached its verdict, ends with
        :func:`ctxsim.live.release_notice`."""
        return self.plays(args) if callable(self.plays) else self.plays


def _load(path: Path) -> SessionScenario | TaskScenario:
    from ..scenario import ScenarioError, load_scenario

    try:
        return load_scenario(path)
    except ScenarioError as exc:
        raise CommandError(str(exc)) from None


def _find(ref: str | Path) -> Path:
    """The scenario file ``ref`` names: a path, else a bundled scenario's name (:func:`ctxsim.corpus.find_scenario`)."""
    from ..corpus import ScenarioNotFound, find_scenario

    try:
        return find_scenario(ref)
    except ScenarioNotFound as exc:
        raise CommandError(str(exc)) from None


def _scenario_files(refs: list[Path], command: str) -> list[Path]:
    """The scenario files of ``refs`` (files, directories, bundled names; ``bundled``: the corpus), in order."""
    from ..corpus import BUNDLED, scenario_files

    files: list[Path] = []
    for ref in refs:
        if str(ref) == BUNDLED and not ref.exists():
            files += scenario_files(ref)
        elif ref.is_dir():
            found = scenario_files(ref)
            if not found:
                raise CommandError(f"ctxsim: {command}: {ref}: no scenario files (*.yaml, *.yml) in this directory")
            files += found
        else:
            files.append(_find(ref))
    return files


def add_env_option(parser: argparse.ArgumentParser) -> None:
    """Declare ``--env NAME`` on a command that runs trackers."""
    parser.add_argument("--env", action="append", default=[], metavar="NAME",
                        help="pass this environment variable through to cmd: and stream: commands, which get only "
                             "PATH, HOME, LANG, TERM and the world's CTXSIM_* otherwise (a glob such as TRACKER_* "
                             "passes every match); repeatable")


def _resolve_tracker(spec: str, env: Sequence[str] = ()) -> TrackerSpec:
    """What ``--tracker=spec`` names, module:name from the working directory; ``env``: the names of the variables
    passed through to a command (``--env``)."""
    from ..trackers import SpecError, passed_environment, resolve

    try:
        return resolve(spec, search=[str(Path.cwd())], env=passed_environment(env))
    except SpecError as exc:
        raise CommandError(f"ctxsim: --tracker={spec}: {exc}") from None


def _resolve_loop(spec: str) -> LoopSpec:
    """What ``--loop=spec`` names, module:name from the working directory."""
    from ..loops import resolve_loop
    from ..trackers import SpecError

    try:
        return resolve_loop(spec, search=[str(Path.cwd())])
    except SpecError as exc:
        raise CommandError(f"ctxsim: --loop={spec}: {exc}") from None


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _write_page(page: str, out: Path | None, said: str) -> None:
    """Print ``page``, or write it to ``out`` and say so on stderr (``said``: ``ctxsim tools: verdicts``)."""
    if out is None:
        print(page)
        return
    from ..processes import FileNotWritten, write_whole

    try:
        write_whole({out: page}, who="ctxsim: " + said.partition(":")[0].removeprefix("ctxsim "))
    except FileNotWritten as exc:
        raise CommandError(str(exc)) from None
    print(f"{said} written to {out}", file=sys.stderr)


def printed_instead(report: str, counterexample: str, exc: Exception) -> int:
    """A fuzz run's counterexample that could not be written (``exc``: a full disk, a file that is not one): the
    report and the counterexample on stdout, one ``ctxsim:`` line on stderr saying so; the exit status (1)."""
    print(f"{report}\n\n{counterexample}")
    print(f"{exc}; the counterexample is printed on stdout instead", file=sys.stderr)
    return 1


def fuzz_database(args: argparse.Namespace) -> ExampleDatabase | None:
    """``ctxsim fuzz``'s counts checked (``--examples``, ``--workers``) and its example database opened (``--db``),
    for a tracker and a restart loop alike; every mistake is one ``ctxsim:`` line."""
    if args.examples < 1:
        raise CommandError(f"ctxsim: fuzz: --examples must be at least 1, got {args.examples}")
    if args.workers < 1:
        raise CommandError(f"ctxsim: fuzz: --workers must be at least 1, got {args.workers}")
    from ..strategies import DatabaseUnreachable, example_database

    try:
        return example_database(args.db) if args.db else None
    except (ImportError, DatabaseUnreachable) as exc:
        raise CommandError(f"{exc} (--db)") from None


def add_report_options(parser: argparse.ArgumentParser) -> None:
    """``--json FILE`` and ``--junitxml FILE``: the verdicts as JSON lines and as JUnit XML, beside the text."""
    parser.add_argument("--json", type=Path, metavar="FILE", dest="json_out",
                        help="also write the verdicts as JSON lines (one a tracker and scenario, then the tally); "
                             "- for stdout")
    parser.add_argument("--junitxml", type=Path, metavar="FILE",
                        help="also write the verdicts as JUnit XML (as pytest --junitxml), for CI test reports")


def write_reports(args: argparse.Namespace, verdicts: Sequence[Verdict], suite: str) -> None:
    """Write the ``--json`` and ``--junitxml`` reports of ``verdicts``, when asked for."""
    from ..runner import verdicts_json, verdicts_junit

    if args.json_out is not None:
        text = verdicts_json(verdicts)
        if str(args.json_out) == "-":
            print(text)
        else:
            _write_page(text + "\n", args.json_out, f"{suite}: JSON")
    if args.junitxml is not None:
        _write_page(verdicts_junit(verdicts, suite=suite), args.junitxml, f"{suite}: JUnit XML")
