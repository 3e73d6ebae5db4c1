"""``ctxsim tools``: install the shipped statusline tools at their pinned versions, and judge them over the
scenarios into a verdicts page (Markdown), generated, never written by hand.

::

    ctxsim tools install [NAME ...] [--timeout S]
    ctxsim tools verdicts [SCENARIOS ...] [--tool NAME ...] [--out FILE]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import CommandError, _load, _scenario_files

if TYPE_CHECKING:
    from ..scenario import SessionScenario
    from ..scenario_run import ScenarioRun
    from ..trackers.shipped import Tool


def _configure_tools(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=("install", "verdicts"),
                        help="install: put the tools into the tools directory ($CTXSIM_TOOLS_DIR, default "
                             "~/.cache/ctxsim/tools); verdicts: run each installed tool over the scenarios and "
                             "write the verdicts page")
    parser.add_argument("paths", nargs="*", metavar="NAME|SCENARIOS",
                        help="install: the tools (default: all); verdicts: scenario files or directories "
                             "(default: the bundled corpus; its session scenarios that judge a tracker under test)")
    parser.add_argument("--tool", action="append", default=[], metavar="NAME",
                        help="verdicts: only this tool (repeatable; default: every installed one)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="verdicts: write the page here (default: stdout)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                        help="install: seconds each install step may take (default 300)")


def _tools(args: argparse.Namespace) -> int:
    from ..trackers.shipped import TOOLS

    if args.action == "install":
        return _install(args.paths or list(TOOLS), args.timeout)
    unknown = [name for name in args.tool if name not in TOOLS]
    if unknown:
        raise CommandError(f"ctxsim: tools: no tool {unknown[0]!r} (known: {', '.join(TOOLS)})")
    page = verdicts_page(_scenarios(args.paths), [TOOLS[n] for n in args.tool or TOOLS], progress=True)
    if args.out is None:
        print(page)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(page, encoding="utf-8")
        print(f"ctxsim tools: verdicts written to {args.out}", file=sys.stderr)
    return 0


def _install(names: list[str], timeout: float) -> int:
    from ..trackers.shipped import TOOLS, InstallError, install

    failed = 0
    for name in names:
        if name not in TOOLS:
            raise CommandError(f"ctxsim: tools install: no tool {name!r} (known: {', '.join(TOOLS)})")
        try:
            print(f"ctxsim tools: {name} ({TOOLS[name].package}) in {install(TOOLS[name], timeout=timeout)}")
        except InstallError as exc:
            print(exc, file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def _scenarios(paths: list[str]) -> list[SessionScenario]:
    from ..corpus import BUNDLED
    from ..scenario import SessionScenario

    files = _scenario_files([Path(p) for p in paths] or [Path(BUNDLED)], "tools verdicts")
    return [s for s in map(_load, files) if isinstance(s, SessionScenario) and s.ctx_tracker != "skip"]


@dataclass(frozen=True)
class _Column:
    label: str
    tool: Tool
    mode: str


def _cell(run: ScenarioRun) -> str:
    """A verdict cell: ✓, or ✗ with the first point off (estimate vs truth), or the error."""
    report = run.report
    if report.error is not None:
        return "error"
    if run.ok:
        return "✓"
    if run.judged_nowhere:  # a recorded stream: no world to render the transcript and payload from
        return "✗ judged at no point"
    if not report.failures:
        return "✗ " + (run.inconclusive or "thresholds")
    first = report.failures[0]
    estimate = "no estimate" if first.estimate is None else (
        f"{first.band[0]:,}..{first.band[1]:,}" if first.band else f"{first.estimate:,}")
    truth = f"{first.low:,}" if first.low == first.high else f"{first.low:,}..{first.high:,}"
    return f"✗ {first.observation.label}: {estimate} (truth {truth})"


def verdicts_page(scenarios: list[SessionScenario], tools: list[Tool], *, progress: bool = False) -> str:
    """The Markdown page: each installed tool in each of its modes over ``scenarios``, with what each tool reads
    and its known bugs; tools not installed are listed as such."""
    from ..scenario_run import run_scenario
    from ..trackers.shipped import RESEARCHED_CLI, installed, tracker

    columns = [_Column(t.label(m), t, m) for t in tools if installed(t) is not None for m in t.modes]
    missing = [t for t in tools if installed(t) is None]
    lines = ["# The shipped statusline tools, judged by ctxsim", "",
             "Generated by `ctxsim tools verdicts`: each tool installed at its pinned version, run as Claude Code runs "
             "a statusline command at every observation point (the transcript written so far under a private "
             "`HOME`, the statusline payload on stdin), its output read through its preset and judged against the "
             f"truth, fed what Claude Code {RESEARCHED_CLI} writes and sends (the version the research measured). "
             "*payload*: the payload with `context_window` (Claude Code today); *transcript*: without it "
             "(before 2.0.65; the tool's transcript fallback). ✓ tracks the scenario; ✗ names the first point off "
             "(a scenario played from a recorded stream has no world to render a transcript from: judged at no "
             "point). Why each fails: the tools' known bugs below, and the pins of `tests/test_shipped_tools.py`.",
             "", "| scenario | " + " | ".join(c.label for c in columns) + " |",
             "|---|" + "---|" * len(columns)]
    errors: list[str] = []
    for scenario in scenarios:
        cells = []
        for column in columns:
            if progress:
                print(f"ctxsim tools: {column.label} on {scenario.name} ...", file=sys.stderr, flush=True)
            run = run_scenario(scenario, tracker(column.tool, column.mode))
            cells.append(_cell(run))
            if run.report.error is not None:
                errors.append(f"- {column.label} on `{scenario.name}`: {run.report.error}")
        lines.append(f"| `{scenario.name}` | " + " | ".join(cells) + " |")
    lines += ["", "## The tools", ""]
    for tool in tools:
        state = "" if installed(tool) is not None else " — **not installed** (`ctxsim tools install`): not judged"
        lines += [f"### {tool.name} {tool.version}{state}", "", f"- install: `{tool.package}` ({tool.registry})",
                  f"- reads: {tool.reads}"] + [f"- known bug: {bug}" for bug in tool.bugs] + [""]
    if errors:
        lines += ["## Errors", "", *errors, ""]
    if missing:
        lines += [f"Not installed: {', '.join(t.name for t in missing)}.", ""]
    return "\n".join(lines)
