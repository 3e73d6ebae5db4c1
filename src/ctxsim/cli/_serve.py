"""``ctxsim serve``: one scenario's fake Messages API on 127.0.0.1 for any client of the real CLI, its truth, and the
verdict on a tracker's estimates.

::

    ctxsim serve SCENARIO [--port N] [--json] [--judge FILE] [--timeout S]

It prints what a client needs (the environment, the model, the prompts), serves until Ctrl-C or SIGTERM (or
``--timeout`` seconds), then prints the truth at every observation point and, with ``--judge FILE``, the verdict on
the estimates ``FILE`` holds (:func:`ctxsim.live.read_estimates`); exit 1 when the tracker is off.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..processes import printable
from ._common import CommandError, _find, _load

if TYPE_CHECKING:
    from ..live import ScenarioServer, TaskServer


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, help="the scenario file (YAML), or a bundled scenario's name "
                                                    "(`ctxsim scenario list`); a task scenario is served by its "
                                                    "fake agent")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--json", action="store_true", help="print the client's settings, then the truth (and the "
                                                            "verdict), as one JSON line each")
    parser.add_argument("--judge", type=Path, metavar="FILE",
                        help="on exit, judge the estimates in FILE: JSON lines {\"point\": LABEL or NUMBER, "
                             "\"estimate\": TOKENS or null}")
    parser.add_argument("--timeout", type=float, default=3600.0, metavar="S",
                        help="stop serving after S seconds (default 3600)")


MAX_TIMEOUT = 7 * 24 * 3600.0
"""The longest ``--timeout``: a week."""


def _serve(args: argparse.Namespace) -> int:
    from ..live import ScenarioServer, TaskServer
    from ..scenario import SessionScenario

    scenario = _load(_find(args.scenario))
    if not isinstance(scenario, SessionScenario) and args.judge is not None:
        raise CommandError(f"ctxsim: serve: --judge: {args.scenario} is a task scenario: its fake agent's record is "
                           f"what is printed (a tracker's estimates are judged on session scenarios)")
    if not 0 <= args.port <= 65535:
        raise CommandError(f"ctxsim: serve: --port {args.port} is not a port (0..65535)")
    if not 0 < args.timeout <= MAX_TIMEOUT:
        raise CommandError(f"ctxsim: serve: --timeout must be seconds in (0, {MAX_TIMEOUT:g}], not {args.timeout:g}")
    if args.judge is not None and args.judge.exists() and not args.judge.is_file():
        raise CommandError(f"ctxsim: serve: --judge {args.judge} is not a regular file (a FIFO, a device or a "
                           f"directory): the estimates are read from a file")
    try:
        server: ScenarioServer | TaskServer = (ScenarioServer(scenario, port=args.port)
                                               if isinstance(scenario, SessionScenario)
                                               else TaskServer(scenario, port=args.port))
        server.__enter__()
    except (ValueError, RuntimeError) as exc:
        raise CommandError(str(exc)) from None
    try:
        with _stop_signals() as stop:  # before the settings are printed: a client may stop it as soon as it reads them
            _print_settings(server, args.json)
            waited_out = not stop.wait(args.timeout)
    finally:
        server.__exit__()
    if waited_out:
        print(f"ctxsim: serve: stopped after --timeout {args.timeout:g} s", file=sys.stderr)
    if not isinstance(server, ScenarioServer):
        return _finish_task(server, args.json)
    return _finish(server, args)


@contextlib.contextmanager
def _stop_signals() -> Iterator[threading.Event]:
    """While inside, SIGINT, SIGTERM and SIGHUP set the event yielded (the server's normal stop) instead of
    interrupting."""
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM,
                                                                             signal.SIGHUP)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _print_settings(server: ScenarioServer | TaskServer, as_json: bool) -> None:
    settings = server.settings()
    if as_json:
        print(json.dumps(settings), flush=True)
        return
    print(f"# ctxsim serve: scenario {printable(settings['scenario'])} at {server.api.base_url} (Ctrl-C stops it and "
          f"prints the truth)")
    for key, value in settings["env"].items():
        print(f"export {key}={shlex.quote(value)}")
    flags = f"--model {shlex.quote(settings['model'])} --permission-mode {settings['permission_mode']}"
    if settings["include_partial_messages"]:
        flags += " --include-partial-messages"
    print(f"# the CLI's settings: {flags}")
    for number, prompt in enumerate(settings["prompts"], 1):
        print(f"# prompt {number} (send it once the previous one's result came): {json.dumps(prompt)}")
    for kind, patterns in settings.get("loop_prompts", {}).items():
        print(f"# the fake agent reads as your loop's {kind}: {patterns}")
    print(f"# the truth: curl {settings['truth_url']}", flush=True)


def _finish(server: ScenarioServer, args: argparse.Namespace) -> int:
    from ..live import EstimatesError, read_estimates
    from ..runner import served

    truth = server.truth()
    run = None
    if args.judge is not None:
        try:
            estimates = read_estimates(args.judge, server.observations())
        except EstimatesError as exc:
            print(exc, file=sys.stderr)
            return 2
        run = server.judge(estimates, tracker=args.judge.name)
    verdict = None if run is None else served(server.scenario, args.judge.name).judge(run)
    if args.json:
        out: dict[str, Any] = {"truth": truth}
        if verdict is not None and run is not None:  # the plan's verdict, the likely cause included
            out["verdict"] = {"ok": run.ok, **verdict.as_dict()}
        print(json.dumps(out), flush=True)
    else:
        print(f"\n# truth of scenario {truth['scenario']} (tolerance ±{truth['tolerance']:,}); "
              f"{truth['requests']} requests served")
        for point in truth["points"]:
            band = "not knowable" if not point["knowable"] else f"{point['low']:,}..{point['high']:,}"
            print(f"{point['index']:>3}  {point['point']:<24} {band}")
        if run is not None:
            print(f"\n== {args.judge}: {'tracks it' if run.ok else 'fails on it'}")
            print(run.report.summary())
            print(run.table(explain=True))
    for refused in truth["refused"]:
        print(refused, file=sys.stderr)
    return 0 if run is None or run.ok else 1


def _finish_task(server: TaskServer, as_json: bool) -> int:
    """What the task's fake agent did, printed (its record); 0 when every step was done exactly once."""
    record = server.record()
    if as_json:
        print(json.dumps({"record": record}), flush=True)
    else:
        print(f"\n# what the fake agent of task scenario {record['scenario']} did: finished {record['finished']}, "
              f"{record['redone']} steps redone, {len(record['skipped'])} never done")
        for session in record["sessions"]:
            for turn in session["turns"]:
                print(f"session {session['session']} turn {turn['turn']:>2}  {turn['kind']:<12} "
                      f"steps {','.join(turn['steps']) or '-':<24} context {turn['prompt']:,}..{turn['next_request']:,}"
                      + ("  (prompt too long)" if turn["rejected"] else ""))
    for refused in record["refused"]:
        print(refused, file=sys.stderr)
    return 0 if record["finished"] and not record["redone"] and not record["skipped"] else 1
