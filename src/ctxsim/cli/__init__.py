"""The ``ctxsim`` command: run a scenario and look at it, write and check scenario files.

::

    ctxsim run SCENARIO [--tracker NAME|module:factory ...] [--plot out.png|out.svg] [--all]
    ctxsim scenario new NAME [--dir DIR] [--force]
    ctxsim scenario check FILE ...
    ctxsim scenario keys
    ctxsim fuzz --tracker NAME|module:factory [--examples N] [--tolerance T] [--seed S] [--out FILE]
    ctxsim fuzz --loop NAME|module:function [--tracker SPEC] [--examples N] [--seed S] [--out FILE]
                [--db redis://HOST:PORT/DB|DIR] [--workers N]
    ctxsim catalogue [--tracker NAME|module:factory ...]
    ctxsim import RECORDING... -o scenarios/NAME.yaml [--stream] [--force]
    ctxsim score [SCENARIOS...] [--tracker NAME|module:factory ...] [--fuzz N] [--html DIR]
    ctxsim record [NAME...] [--dir DIR] [--list] [--statusline]
    ctxsim fidelity [NAME...] [--cli PATH] [--record DIR] [--json] [--no-noise]
    ctxsim tools install [NAME...] | ctxsim tools verdicts [SCENARIOS...] [--tool NAME ...] [--out FILE]
    ctxsim serve SCENARIO [--port N] [--json] [--judge FILE] [--timeout S]
    ctxsim judge SPEC [SCENARIOS...] [--out FILE]

``run`` on a task scenario (a ``task`` section) runs the restart loops instead: the reference loop (with each
``--tracker``, too), then each catalogued loop the scenario names and each ``--loop`` (yours:
``module:function``), and prints each one's verdict, summary and
loop timeline (turns, context, zones, checkpoints, restarts, steps).

``fidelity`` (the fake's fidelity to the CLI) plays the scripted sessions on a Claude Code CLI (default: the bundled
one) and in-process and prints every field where the two differ, by the path of what changed, marking those
trackers read; exit 1 when one of those differs. Its drift from the last recorded release is split into this
machine's run-to-run noise (measured: the sessions that drifted played again) and the release's change. ``ctxsim
conformance`` is its old name, a deprecated alias that says so in one line: "conformance" now means one thing, a
tracker's conformance to the contracts (:mod:`ctxsim.testing`, ``ctxsim catalogue``).

``catalogue`` prints the detection table: each catalogued tracker (and each ``--tracker`` of yours) against every
conformance contract, with where a catalogued tracker differs from the contracts its entry declares it breaks.

Subcommands are registered in one place, :data:`COMMANDS`: a new one (``ctxsim fuzz``) is one more
:class:`Command` there. Exit status: 0 when every expectation holds, 1 when one does not, 2 for a usage or input
error, which is printed as one ``ctxsim:`` line without a traceback; 130 (Ctrl-C) or 143 (SIGTERM) for a run
stopped on the way, also one line, once what it started is gone.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from ._common import Command, CommandError
from ._judge import _configure_judge, _judge
from ._quality import _catalogue, _configure_catalogue, _configure_fuzz, _configure_score, _fuzz, _score
from ._recordings import (
    _configure_fidelity,
    _configure_import,
    _configure_record,
    _conformance,
    _fidelity,
    _import,
    _record,
)
from ._run import _configure_run, _run
from ._scenario import _configure_scenario, _scenario
from ._serve import _configure_serve, _serve
from ._tools import _configure_tools, _tools

__all__ = ["COMMANDS", "Command", "CommandError", "main"]


COMMANDS: tuple[Command, ...] = (
    Command("run", "run a scenario: print the timeline of each tracker, optionally plot it", _configure_run, _run,
            plays=True),
    Command("scenario", "write a scenario template, check scenario files, list the format's keys",
            _configure_scenario, _scenario),
    Command("fuzz", "generate faulted streams until one breaks a tracker (or tasks until one breaks a restart "
                    "loop); write it as a scenario",
            _configure_fuzz, _fuzz, plays=True),
    Command("catalogue", "run the conformance contracts over the tracker catalogue (and yours): the detection table",
            _configure_catalogue, _catalogue, plays=True),
    Command("import", "turn transcripts or a stream-json capture into a shareable scenario (text scrubbed)",
            _configure_import, _import),
    Command("score", "score the catalogue (and your trackers) over the scenarios: the accuracy scoreboard",
            _configure_score, _score, plays=True),
    Command("record", "play the live fidelity sessions through the bundled CLI and write their captures",
            _configure_record, _record),
    Command("fidelity", "judge the fake's fidelity to a Claude Code CLI: the scripted sessions live and in-process, "
                        "every field a tracker reads compared", _configure_fidelity, _fidelity),
    Command("serve", "serve one scenario's fake Messages API on 127.0.0.1 to any client of the real CLI; print its "
                     "truth (and judge a tracker's estimates) on exit", _configure_serve, _serve,
            plays=lambda args: not args.list),
    Command("judge", "judge one tracker (cmd:, stream:, module:factory) over the scenarios: a Markdown report",
            _configure_judge, _judge, plays=True),
    Command("tools", "install the shipped statusline tools (pinned) and write the page of their verdicts",
            _configure_tools, _tools, plays=lambda args: args.action == "verdicts"),
    Command("conformance", "deprecated: the old name of `ctxsim fidelity`", _configure_fidelity, _conformance),
)
"""Every subcommand, in the order ``ctxsim --help`` lists them. Those that play sessions (``plays``) end a run that
reached its verdict (exit 0 or 1) with one line on stderr when the Claude Code in use is newer than every release
ctxsim recorded (:func:`ctxsim.live.release_notice`): the verdict stands on a truth that may be a release behind.
An input error stays its one line. ``record`` and ``fidelity`` do not say it: they record a new release and compare
it."""


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(prog="ctxsim", description="Check context-window trackers of Claude Agent "
                                                                "SDK agents against a simulated ground truth.")
    parser.add_argument("--version", action="version", version=f"ctxsim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        each = sub.add_parser(command.name, help=command.help, description=command.help)
        command.configure(each)
        if command.plays:
            each.add_argument("--cli-version", metavar="VERSION", default=None,
                              help="render sessions that name no Claude Code release (a scenario's world.cli) as "
                                   "this release, its rules included (default: the CLI in use: $CTXSIM_CLI's, else "
                                   "the one bundled in the installed claude-agent-sdk)")
    return parser


def _say_release() -> None:
    """:func:`ctxsim.live.release_notice`, when there is one, on stderr (stdout stays the command's output, JSON
    included)."""
    from ..live import release_notice

    notice = release_notice()
    if notice is not None:
        print(notice, file=sys.stderr, flush=True)


def _interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C (or SIGTERM, made one), alone or in an exception group (anyio's task groups)."""
    inner = getattr(exc, "exceptions", None)
    if isinstance(inner, tuple) and inner:
        return any(_interrupt(e) for e in inner)
    return isinstance(exc, KeyboardInterrupt)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``ctxsim`` with ``argv`` (default: the process's arguments); returns the exit status.

    Without ``argv`` (the ``ctxsim`` command, ``python -m ctxsim.cli``) the run is the whole process: a child
    subreaper for its whole life (Linux), it owns every process it started, whatever they did to leave its tree,
    and ends them all, found by ancestry, as it exits. Called with ``argv`` from inside another program, it ends
    only what it started itself."""
    args = _parser().parse_args(argv)
    command = next(c for c in COMMANDS if c.name == args.command)
    from .._sync import end_descendants, end_now, interrupts, signal_name, terminate_as_interrupt, terminated
    from ..processes import subreaper

    whole = argv is None
    release = getattr(args, "cli_version", None)
    if release is not None:
        from ..wire import use_cli

        try:
            use_cli(release)
        except ValueError as exc:
            print(f"{exc} (--cli-version)", file=sys.stderr)
            return 2
    elif command.says_release(args) and os.environ.get("CTXSIM_CLI"):  # sessions render as the CLI in use
        from ..live import render_as_named_cli

        release = render_as_named_cli()
    try:
        # SIGTERM unwinds the run as Ctrl-C does: what it started is stopped
        with terminate_as_interrupt(), subreaper() if whole else contextlib.nullcontext():
            status = command.run(args)
            if status in (0, 1) and command.says_release(args):  # after its verdict, never after an error
                _say_release()
            return status
    except CommandError as exc:  # one line: what it quotes of input (a path, a spec) cannot break it nor act
        from ..processes import printable

        print(printable(str(exc)), file=sys.stderr)
        return 2
    except BrokenPipeError:  # `ctxsim run ... | head`
        return 0
    except BaseException as exc:  # an interrupt, maybe inside a task group's exception group
        if not _interrupt(exc):
            raise
        name = signal_name()
        print(f"ctxsim: {args.command}: interrupted ({name}); stopped, with every process and temporary directory "
              f"it started", file=sys.stderr)
        status = {"SIGTERM": 143, "SIGHUP": 129}.get(name, 130) if terminated() else 130
        if interrupts() > 1:  # interrupted again: what other threads still stop is ended now, not waited for
            sys.stdout.flush()
            sys.stderr.flush()
            end_now()
        return status
    finally:
        if release is not None:
            from ..wire import use_cli

            use_cli(None)
        if whole:
            end_descendants()
