"""``ctxsim scenario``: write a commented template, check and list scenario files, list the format's keys."""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from ..corpus import BUNDLED
from ._common import CommandError, _count, _scenario_files

if TYPE_CHECKING:
    from ..scenario import Scenario

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
    check = sub.add_parser("check", help="load scenario files (directories: every *.yaml, *.yml under them) and "
                                         "report the error of every file that does not load")
    check.add_argument("files", nargs="+", type=Path, metavar="FILE|DIR")
    listing = sub.add_parser("list", help="list scenarios by name (default: the corpus bundled with ctxsim; "
                                          "`ctxsim run NAME` runs one)")
    listing.add_argument("dirs", nargs="*", type=Path, metavar="DIR",
                         help="directories or files to list instead of the bundled corpus")
    sub.add_parser("keys", help="print every key of the scenario format")


def _scenario(args: argparse.Namespace) -> int:
    if args.action == "keys":
        from ..scenario import reference

        print(reference(), end="")
        return 0
    if args.action == "check":
        return _check(_scenario_files(args.files, "scenario check"))
    if args.action == "list":
        return _list(_scenario_files(args.dirs or [Path(BUNDLED)], "scenario list"))
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


def _loaded(files: list[Path]) -> Iterator[tuple[Path, Scenario]]:
    """Each file that loads, with its scenario; the ``ctxsim:`` error (file, line, key) of each that does not is
    printed to stderr instead."""
    from ..scenario import ScenarioError, load_scenario

    for file in files:
        try:
            yield file, load_scenario(file)
        except ScenarioError as exc:
            print(exc, file=sys.stderr)


def _check(files: list[Path]) -> int:
    """Load every file; print ``ok`` for each that loads and the ``ctxsim:`` error (file, line, key) of each that
    does not, then the count; 1 when any failed."""
    ok = 0
    for file, scenario in _loaded(files):
        ok += 1
        print(f"{file}: ok ({scenario.name}: {scenario.outline()})")
    bad = len(files) - ok
    if bad:
        print(f"ctxsim scenario check: {bad} of {_count(len(files), 'file')} did not load", file=sys.stderr)
    return 1 if bad else 0


def _list(files: list[Path]) -> int:
    """One line a scenario: its name (what ``ctxsim run NAME`` takes, for a bundled one), kind, the surfaces it is
    real on (``sdk``, ``transcript``, ``statusline``: where all its faults are) and source."""
    from ..scenario import SessionScenario, TaskScenario

    width = max(len(f.stem) for f in files)
    ok = 0
    for file, scenario in _loaded(files):
        ok += 1
        kind = "task" if isinstance(scenario, TaskScenario) else "session"
        where = "+".join(n for n in ("sdk", "transcript", "statusline") if n in scenario.surfaces) if isinstance(
            scenario, SessionScenario) else "sdk"
        about = " ".join((scenario.source or scenario.description or "").split())
        about = about if len(about) <= 80 else about[:79] + "…"
        print(f"{file.stem:<{width}}  {kind:<7}  {where:<25}  {about}".rstrip())
    return 0 if ok == len(files) else 1
