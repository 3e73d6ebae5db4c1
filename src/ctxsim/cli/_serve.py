"""``ctxsim serve``: one scenario's fake Messages API on 127.0.0.1 for any client of the real CLI, its truth, and the
verdict on a tracker's estimates.

::

    ctxsim serve SCENARIO [--port N] [--json] [--judge FILE] [--timeout S]
    ctxsim serve --list [SCENARIO or DIR] [--json]

It prints what a client needs (the environment, the model, the prompts), serves until Ctrl-C or SIGTERM (or
``--timeout`` seconds), then prints the truth at every observation point and, with ``--judge FILE``, the verdict on
the estimates ``FILE`` holds (:func:`ctxsim.serve.read_estimates`); exit 1 when the tracker is off, when a request
was refused (the client left the script) or when the client did not play the whole script. ``--list`` says which
scenarios can be served and why not the others.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shlex
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..processes import printable
from ._common import CommandError, _find, _load, _scenario_files

if TYPE_CHECKING:
    from ..serve import ScenarioServer, TaskServer


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("scenario", type=Path, nargs="?",
                        help="the scenario file (YAML), or a bundled scenario's name (`ctxsim scenario list`); a task "
                             "scenario is served by its fake agent; with --list, a file or directory (default: the "
                             "bundled corpus)")
    parser.add_argument("--list", action="store_true", help="say which scenarios can be served to a live CLI, and "
                                                            "why not the others, then exit")
    parser.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    parser.add_argument("--json", action="store_true", help="print the client's settings, then the truth (and the "
                                                            "verdict), as one JSON line each")
    parser.add_argument("--judge", type=Path, metavar="FILE",
                        help="on exit, judge the estimates in FILE: JSON lines {\"point\": LABEL or NUMBER, "
                             "\"estimate\": TOKENS or null}; a gauge's numbers after a line {\"quantity\": "
                             "QUANTITY} (percent_of_window, percent_until_autocompact, tokens_left)")
    parser.add_argument("--prompts", type=Path, metavar="FILE",
                        help="a task scenario: the loop's prompts the fake agent reads, declared in FILE (JSON: "
                             "checkpoint_request, continuation, continue_prompt, inspect, each a template text or "
                             "{\"regex\": PATTERN} or a list of them, and done_marker; default: the reference "
                             "loop's, printed in full with the settings)")
    parser.add_argument("--timeout", type=float, default=3600.0, metavar="S",
                        help="stop serving after S seconds (default 3600)")


MAX_TIMEOUT = 7 * 24 * 3600.0
"""The longest ``--timeout``: a week."""


def _serve(args: argparse.Namespace) -> int:
    from ..scenario import SessionScenario
    from ..serve import ScenarioServer, TaskServer, read_loop_prompts

    if args.list:
        return _list(args)
    if args.scenario is None:
        raise CommandError("ctxsim: serve: name the scenario to serve (or --list to see which can be)")
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
    if isinstance(scenario, SessionScenario) and args.prompts is not None:
        raise CommandError(f"ctxsim: serve: --prompts: {args.scenario} is a session scenario: its prompts are the "
                           f"scenario's (--prompts declares a restart loop's, for a task scenario)")
    try:
        prompts = read_loop_prompts(args.prompts) if args.prompts is not None else None
        server: ScenarioServer | TaskServer = (ScenarioServer(scenario, port=args.port)
                                               if isinstance(scenario, SessionScenario)
                                               else TaskServer(scenario, port=args.port, prompts=prompts))
        server.__enter__()
    except (ValueError, RuntimeError) as exc:
        raise CommandError(str(exc)) from None
    try:
        # the handlers before the settings are printed: a client may stop it as soon as it reads them
        with _stop_signals() as arrived:
            _print_settings(server, args.json)
            waited_out = not _wait_for_stop(arrived, args.timeout)
    finally:
        server.__exit__()
    if waited_out:
        print(f"ctxsim: serve: stopped after --timeout {args.timeout:g} s", file=sys.stderr)
    if not isinstance(server, ScenarioServer):
        return _finish_task(server, args.json)
    return _finish(server, args)


def _list(args: argparse.Namespace) -> int:
    """One row per scenario: servable or not, and why not; the counts under them."""
    from ..corpus import BUNDLED
    from ..scenario import SessionScenario
    from ..serve import serve_skip_reason

    rows: list[dict[str, Any]] = []
    for path in _scenario_files([args.scenario or Path(BUNDLED)], "serve --list"):
        scenario = _load(path)
        reason = serve_skip_reason(scenario)
        rows.append({"name": scenario.name, "kind": "session" if isinstance(scenario, SessionScenario) else "task",
                     "servable": reason is None, "reason": reason})
    counts = {kind: {"servable": sum(r["servable"] for r in rows if r["kind"] == kind),
                     "total": sum(r["kind"] == kind for r in rows)} for kind in ("session", "task")}
    if args.json:
        print(json.dumps({"scenarios": rows, "counts": counts}))
        return 0
    width = max((len(r["name"]) for r in rows), default=0)
    for row in rows:
        print(f"{'yes' if row['servable'] else 'no ':<4}{row['kind']:<8}{row['name']:<{width}}"
              + (f"  {row['reason']}" if row["reason"] else ""))
    print(f"# servable: {counts['session']['servable']} of {counts['session']['total']} session scenarios, "
          f"{counts['task']['servable']} of {counts['task']['total']} task scenarios")
    return 0


@contextlib.contextmanager
def _stop_signals() -> Iterator[list[signal.Signals]]:
    """While inside, SIGINT, SIGTERM and SIGHUP are noted in the list yielded (the server's normal stop) instead of
    interrupting. A plain list, not an ``Event``: a handler that takes a lock deadlocks when the signal lands while
    the main thread holds it (as ``Event.wait`` does on its way in)."""
    arrived: list[signal.Signals] = []
    previous = {sig: signal.signal(sig, lambda signum, _: arrived.append(signal.Signals(signum)))
                for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield arrived
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _wait_for_stop(arrived: list[signal.Signals], timeout: float) -> bool:
    """Wait until a stop signal arrived (True) or ``timeout`` seconds passed (False)."""
    from .._sync import wait_in_slices

    def stopped(seconds: float) -> bool:
        time.sleep(seconds)  # a signal's handler runs within the sleep, or right after it: the list is read after
        return bool(arrived)

    return bool(arrived) or wait_in_slices(stopped, timeout)


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
    if "cli_path" in settings:
        print(f"# the CLI to run (it runs the real one and applies the scenario's faults to what it writes; "
              f"`claude` on the PATH above): {settings['cli_path']}")
    if "twin" in settings:
        print(f"# played as the scenario's live twin: {settings['twin']}")
    for number, prompt in enumerate(settings["prompts"], 1):
        print(f"# prompt {number} (send it once the previous one's result came): {json.dumps(prompt)}")
    for kind, patterns in settings.get("loop_prompts", {}).items():
        print(f"# the fake agent reads as your loop's {kind} (a template, {{checkpoint}} standing for any text; or a "
              f"regex found in the prompt) any of:")
        for number, pattern in enumerate(patterns, 1):
            shown = pattern if isinstance(pattern, str) else json.dumps(pattern)
            print(f"#   ({number})")
            print("\n".join(f"#   | {line}" for line in shown.splitlines() or [""]))
    if "done_marker" in settings:
        print(f"# the fake agent's reply starts with {json.dumps(settings['done_marker'])} once the task is done")
    print(f"# the truth: curl -H \"x-api-key: $ANTHROPIC_API_KEY\" {settings['truth_url']}", flush=True)


def _finish(server: ScenarioServer, args: argparse.Namespace) -> int:
    from ..serve import EstimatesError, read_estimates

    truth = server.truth()
    run = verdict = None
    if args.judge is not None:
        try:
            estimates = read_estimates(args.judge, server.observations())
        except EstimatesError as exc:
            print(exc, file=sys.stderr)
            return 2
        verdict = server.verdict(estimates, tracker=args.judge.name)
        run = verdict.run
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
    off_script = _off_script(truth["refused"], truth["unplayed"], truth["unfaulted"])
    return 1 if off_script or (run is not None and not run.ok) else 0


def _off_script(refused: list[str], unplayed: int = 0, unfaulted: int = 0) -> bool:
    """Print each refusal and one ``ctxsim:`` line saying how the client left the script; whether it did."""
    for line in refused:
        print(line, file=sys.stderr)
    said = []
    if refused:
        said.append(f"{len(refused)} request{'s' if len(refused) != 1 else ''} refused")
    if unplayed:
        said.append(f"{unplayed} of the script's calls never asked for")
    if unfaulted:
        said.append(f"{unfaulted} quer{'ies' if unfaulted != 1 else 'y'} not through the CLI wrapper serve handed it "
                    f"(cli_path), so without the scenario's faults")
    if said:
        print(f"ctxsim: serve: the client did not play the script ({', '.join(said)}): exit 1", file=sys.stderr)
    return bool(said)


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
    off_script = _off_script(record["refused"])
    return 0 if record["finished"] and not record["redone"] and not record["skipped"] and not off_script else 1
