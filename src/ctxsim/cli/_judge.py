"""``ctxsim judge``: one tracker (a statusline command, a stream tracker, any spec) over the scenarios, as a Markdown
report in the shape of the shipped tools' page: what a tracker's project pastes in its own CI.

::

    ctxsim judge SPEC [SCENARIOS ...] [--out FILE]

Every session scenario (default: the bundled corpus) is judged as the plan of judgement says
(:func:`ctxsim.runner.judgement`, the same plan pytest follows); a cell is ✓, ✗ with the first point off and its
likely cause, ``error`` (the tracker could not be read: the line is under *Errors*) or a skip with its reason, never
counted as met. Exit 0 when the tracker does what every scenario it is judged on expects of it, 1 when it does not.
``--json FILE`` and ``--junitxml FILE`` write the same verdicts as JSON lines and JUnit XML.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._common import (
    CommandError,
    _load,
    _resolve_tracker,
    _scenario_files,
    _write_page,
    add_env_option,
    add_report_options,
    write_reports,
)


def _configure_judge(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", metavar="SPEC", help="the tracker: \"cmd:COMMAND\" (a statusline command), "
                                                     "\"stream:COMMAND\" (the stream tracker protocol), module:factory "
                                                     "or a catalogued name")
    parser.add_argument("scenarios", nargs="*", type=Path, metavar="SCENARIOS",
                        help="scenario files or directories (default: the bundled corpus)")
    parser.add_argument("--out", type=Path, metavar="FILE", help="write the report here (default: stdout)")
    add_env_option(parser)
    add_report_options(parser)


def _judge(args: argparse.Namespace) -> int:
    from ..corpus import BUNDLED
    from ..runner import judgement, verdicts_markdown
    from ..scenario import SessionScenario

    spec = _resolve_tracker(args.spec, env=args.env)
    files = _scenario_files(args.scenarios or [Path(BUNDLED)], "judge")
    scenarios = [s for s in map(_load, files) if isinstance(s, SessionScenario)]
    if not scenarios:
        raise CommandError("ctxsim: judge: no session scenario judges a tracker under test among the scenarios given "
                           "(a task scenario judges restart loops)")
    verdicts = []
    for scenario in scenarios:
        print(f"ctxsim judge: {spec.name} on {scenario.name} ...", file=sys.stderr, flush=True)
        verdicts.append(judgement(scenario, spec).run())
    page = verdicts_markdown(verdicts, title=f"{spec.name}, judged by ctxsim", command=f"ctxsim judge {args.spec}")
    _write_page(page, args.out, "ctxsim judge: report")
    write_reports(args, verdicts, "ctxsim judge")
    return 1 if any(v.status == "unmet" for v in verdicts) else 0
