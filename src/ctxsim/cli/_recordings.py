"""Recordings: ``ctxsim import`` (a user's transcripts or stream-json to a shareable scenario) and ``ctxsim
record`` (the live fidelity sessions' captures) and ``ctxsim fidelity`` (the fake judged against a CLI; its old name
``ctxsim conformance`` a deprecated alias)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

from ._common import CommandError


def _configure_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("recordings", nargs="+", type=Path, metavar="RECORDING",
                        help="Claude Code transcripts (a session's .jsonl and its subagents/*.jsonl, any order) or "
                             "one stream-json capture")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="FILE", help="the scenario to write")
    parser.add_argument("--stream", action="store_true", help="always write the scrubbed stream, never steps")
    parser.add_argument("--force", action="store_true", help="overwrite existing files")


def _import(args: argparse.Namespace) -> int:
    from ..importer import ImportFailure, write_import

    try:
        written = write_import(args.recordings, args.output, force=args.force, steps=not args.stream)
    except ImportFailure as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote {' and '.join(map(str, written))}: text scrubbed, ids re-keyed, numbers kept; "
          f"run it:  ctxsim run {written[0]}")
    return 0


def _configure_record(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="scripted sessions (default: all; --list shows them)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the captures go, under claude-code-<CLI version>/ (default: the captures "
                             "ctxsim ships, src/ctxsim/wire/captures in a checkout)")
    parser.add_argument("--list", action="store_true", help="list the scripted sessions and exit")
    parser.add_argument("--statusline", action="store_true",
                        help="record the statusline payloads instead: the CLI's interactive REPL driven under tmux "
                             "(NAME: the statusline sessions), written under claude-code-<CLI version>/statusline/")
    parser.add_argument("--repl", action="store_true",
                        help="record whole REPL sessions under tmux (every statusline payload, the transcript, the "
                             "calls served; NAME: the REPL sessions), written under claude-code-<CLI version>/repl/")


def _record(args: argparse.Namespace) -> int:
    from ..lab import CAPTURES, record_command

    if args.repl or args.statusline:  # the REPL under tmux: its sessions, and the command that records them
        from ..lab import REPL_SESSIONS, STATUSLINE_SESSIONS, record_repl_command, record_statusline_command
        from ..live import LiveError

        sessions, record = ((REPL_SESSIONS, record_repl_command) if args.repl
                            else (STATUSLINE_SESSIONS, record_statusline_command))
        if args.list:
            for name, session in sessions.items():
                print(f"{name}: {session.description}")
            return 0
        try:
            return record(args.names, args.dir or CAPTURES)
        except LiveError as exc:
            raise CommandError(str(exc)) from None

    return record_command(args.names, args.dir or CAPTURES, list_only=args.list)


def _configure_fidelity(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="scripted sessions (default: all; "
                                                                 "`ctxsim record --list` shows them)")
    parser.add_argument("--cli", metavar="PATH", help="the Claude Code CLI to judge: any executable that speaks its "
                                                      "stream-json protocol, a wrapper script included (default: the "
                                                      "one bundled in the installed claude-agent-sdk)")
    parser.add_argument("--record", type=Path, metavar="DIR",
                        help="also write the live runs as captures under DIR/claude-code-<CLI version>/, and beside "
                             "them rules-draft.md: each field trackers read that differs, for a person to turn into "
                             "version rules")
    parser.add_argument("--no-noise", dest="noise", action="store_false",
                        help="do not measure this machine's run-to-run noise (by default each session that drifted "
                             "from the capture is played live a second time, and what moves between the two runs is "
                             "reported as noise, apart from the release's change)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--repl", nargs="*", metavar="NAME",
                        help="the REPL sessions also recorded under tmux and compared row by row (default: four, "
                             "with tmux on the bundled CLI and no NAME given; --repl alone: none)")
    parser.add_argument("--all", action="store_true", help="list every key no tracker reads that differs and every "
                                                           "shift of the drift (default: one summary line, the first "
                                                           "12 shifts)")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds any one wait may take (default 60)")


def _conformance(args: argparse.Namespace) -> int:
    print("ctxsim: 'ctxsim conformance' is deprecated: it is 'ctxsim fidelity' now (the same command)", file=sys.stderr)
    return _fidelity(args)


def _fidelity(args: argparse.Namespace) -> int:
    import json

    from ..lab import check_release
    from ..live import LiveError

    try:
        check = check_release(args.cli, names=args.names or None, record=args.record, timeout=args.timeout,
                              repl=args.repl, noise=args.noise)
    except LiveError as exc:
        raise CommandError(str(exc)) from None
    print(json.dumps(check.to_json(), indent=1) if args.json else check.table(every_key=args.all))
    return 0 if check.ok else 1
