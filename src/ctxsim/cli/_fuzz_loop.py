"""``ctxsim fuzz --loop``: generated tasks and faults against a restart loop (:mod:`ctxsim.fuzz`), the shrunk
counterexample written as a task scenario with the command that reproduces it under pytest."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from ._common import CommandError, _resolve_loop, _resolve_tracker, fuzz_database, printed_instead


def _fuzz_loop(args: argparse.Namespace) -> int:
    from ..fuzz import LoopReproduction, fuzz_loop, fuzz_loop_workers, import_root, write_loop_scenario
    from ..processes import FileNotWritten

    loop = _resolve_loop(args.loop)
    tracker = _resolve_tracker(args.tracker, env=args.env) if args.tracker else None
    if tracker is not None and tracker.fed_messages is None:
        raise CommandError(f"ctxsim: fuzz: --tracker={args.tracker}: a restart loop needs a tracker fed the SDK's "
                           f"messages; a statusline command is read at observation points")
    if args.tolerance:
        raise CommandError("ctxsim: fuzz: --tolerance is a tracker's allowed error; a restart loop is judged by "
                           "its invariants (drop --tolerance with --loop)")
    database = fuzz_database(args)
    if args.workers > 1:
        try:
            result = fuzz_loop_workers(args.loop, workers=args.workers, tracker=args.tracker,
                                       examples=args.examples, seed=args.seed, db=args.db, search=[str(Path.cwd())])
        except (TimeoutError, ChildProcessError) as exc:  # one ctxsim: line from the workers' pool
            raise CommandError(str(exc)) from None
    else:
        result = fuzz_loop(loop, examples=args.examples, seed=args.seed, tracker=tracker, database=database,
                           key=f"{args.loop}|{args.tracker or 'reference'}")
    with_tracker = f" with tracker {tracker.name}" if tracker is not None else ""
    if result.task is None:
        print(f"ctxsim fuzz: {loop.name}{with_tracker} kept every invariant on all {result.examples} generated "
              f"tasks")
        return 0
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", loop.name).strip("-") or "loop"
    roots = [import_root(args.loop), import_root(args.tracker or "")]
    search = os.pathsep.join(dict.fromkeys(root for root in roots if root)) or os.getcwd()
    reproduction = LoopReproduction(args.loop, args.tracker, seed=args.seed, examples=args.examples, search=search)
    try:
        path = write_loop_scenario(result, args.out or Path(f"ctxsim-fuzz-{safe}.yaml"), reproduction)
    except FileNotWritten as exc:  # a full disk, a read-only directory: the counterexample is printed instead
        return printed_instead(result.report, result.task.text(source=reproduction.command()), exc)
    print(f"{result.report}\n\nctxsim fuzz: {loop.name}{with_tracker} fails after {result.examples} tasks "
          f"{result.timing()}; the shrunk counterexample is {path}")
    if loop.catalogued:
        from ..loops import CATALOGUE

        print(f"ctxsim fuzz: {loop.name} is catalogued with: {CATALOGUE[loop.name].bug}")
    print(f"reproduce it, from any directory: {reproduction.pytest_command(path)}")
    return 1
