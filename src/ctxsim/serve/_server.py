"""One scenario served to any client of the real CLI: the fake Messages API, its truth, and the verdict on estimates.

:class:`ScenarioServer` is what ``ctxsim serve`` runs: the :class:`~ctxsim.live.FakeMessagesAPI` answering a
session scenario's calls in order (each request the next call of its chain, tool inputs inert) on 127.0.0.1,
behind a credential made for this server alone. Whatever speaks to the real Claude Code CLI plays it: the
TypeScript Agent SDK, an interactive ``claude`` with the user's own statusline, a Go agent. :meth:`~ScenarioServer.
settings` is what such a client needs (the environment, the model, the prompts to send, one per query).

A request the script has no answer for (the script is used up, a side request, a subagent the session does not
have) and a request without the credential are answered with a 4xx that says so (400 and 401), never a 5xx: the CLI
retries a 5xx for minutes and fails on a 4xx at once. :meth:`~ScenarioServer.truth` is the truth at every
observation point, with what closes each point in the stream the client reads (the n-th message of an API call, or
a query's result); ``GET /ctxsim/truth`` answers it. :meth:`~ScenarioServer.verdict` judges a tracker's estimates
at those points (:func:`ctxsim.serve.read_estimates`) against it, as ``ctxsim run`` judges a tracker.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import sys
import tempfile
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..live import (
    BUNDLED_MARK,
    ApiRequest,
    FakeMessagesAPI,
    Reply,
    SessionModel,
    TurnEnds,
    autocompact_window,
    bundled_cli_notice,
    bundled_cli_path,
    cli_env,
    client_model,
    is_model_query,
    keyed_points,
    live_skip_reason,
    live_twin,
    read_transcripts,
    twin_changes,
)
from ..runner import ScenarioRun
from ..trackers import TrackerWorld
from ..wire import Observation
from ..world import Call, Compaction, Quantity, Session, Text, Truth, compaction_band
from ._faults import LiveFaults

if TYPE_CHECKING:
    from ..runner import Verdict
    from ..scenario import SessionScenario

__all__ = ["ScenarioServer", "session_serve_reason"]

TRUTH_PATH = "/ctxsim/truth"
"""Where the server answers its truth (``GET``)."""
FRAMES_PATH = "/ctxsim/frames"
"""Where the CLI wrapper sends a query's frames and gets them back faulted (``POST``, the server's credential)."""
TURN_PATH = "/ctxsim/turn"
"""Where the hook serve gives the CLI asks whether the turn ends (``POST``, the server's credential)."""

FAST = "-E -s -S"
"""How serve runs its hook and CLI wrapper (standard library only): no site, no user site, no ``PYTHON*`` variables,
so that each starts in the least time a Python takes."""


def _file(module: str) -> str:
    """The shell-quoted path of this package's module ``module`` (run as a file)."""
    return shlex.quote(str(Path(__file__).with_name(f"{module}.py")))


def client_environment(base_url: str, key: str) -> dict[str, str]:
    """The environment a client gives the CLI: the base URL and the key, traffic other than the API's off, no proxy
    for 127.0.0.1, and ``IS_SANDBOX=1`` (as root the CLI refuses ``bypassPermissions`` without it)."""
    env = cli_env(base_url, Path("~"))
    keep = ("ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING", "IS_SANDBOX", "NO_PROXY", "no_proxy")
    return {"ANTHROPIC_API_KEY": key, **{k: env[k] for k in keep}}


def session_serve_reason(scenario: SessionScenario) -> str | None:
    """Why ``ctxsim serve`` cannot play the session scenario ``scenario`` (or its live twin) to a live CLI, or None
    when it can."""
    return live_skip_reason(live_twin(scenario) or scenario, compactions=True, windows=True, faults=True, turns=True,
                            resets=True, models=True)


class Refuser:
    """What both servers' responders share: a request they have no answer for is answered 400, saying why, and
    recorded in :attr:`refused`."""

    def __init__(self, what: str) -> None:
        self.what = what
        """What is served, as the 400s name it (``scenario 'b01-...'``)."""
        self.refused: list[str] = []
        """Each request refused, as its 400 said it."""

    def __call__(self, request: ApiRequest) -> Reply:
        """The answer to ``request``."""
        raise NotImplementedError

    def refuse(self, request: ApiRequest, why: str) -> Reply:
        """The 400 for ``request``, saying ``why``."""
        message = f"ctxsim serve: {self.what}: request #{request.number} refused: {why}"
        self.refused.append(message)
        return Reply(error=(400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}))


class _Refusing(Refuser):
    """The scenario's responder, answering a request its script has no call for with a 400 that says so."""

    def __init__(self, model: SessionModel, scenario: str, session: Session) -> None:
        super().__init__(f"scenario {scenario!r}")
        self.model = model
        self._main_calls = len(model.main)
        self.summaries = deque(reply for query in session.queries for step in query.steps
                               if isinstance(step, Compaction) for reply in (*map(_refused, step.rejected),
                                                                             _summary(step)))
        """The answers to the CLI's compaction summary requests, in order (a refused one's before its summary)."""
        self.probes = sum(1 for query in session.queries if is_model_query(query))
        """The model probes left to answer: the CLI asks the API once (``max_tokens`` 1) per ``/model`` query."""


    def __call__(self, request: ApiRequest) -> Reply:
        if request.kind == "compact":
            if not self.summaries:
                return self.refuse(request, "a compaction summary request: the scenario compacts no more")
            return self.summaries.popleft()
        if request.kind == "side" and request.body.get("max_tokens") == 1 and self.probes:
            self.probes -= 1  # a /model query's probe of the model it switches to: not a call of the scenario's
            return Reply((Text("Hi"),), output_tokens=1)
        queue = {"main": self.model.main, "subagent": self.model.subagent}.get(request.kind)
        if queue:
            return self.model(request)
        if queue is None:
            return self.refuse(request, (f"a {request.kind} request (no tools: a title, a probe)"
                                         if request.kind == "side" else f"a {request.kind} request")
                               + " does not belong to the scenario's script")
        return self.refuse(request, f"the script's {request.kind} calls are used up")


    @property
    def main_served(self) -> int:
        """How many of the script's main-chain calls were served."""
        return self._main_calls - len(self.model.main)


def _refused(call: Call) -> Reply:
    """The answer to a summary request the CLI refuses (:attr:`~ctxsim.world.Compaction.rejected`): its usage, and
    no ``<summary>`` in its text, so the CLI asks again."""
    text = [b for b in call.blocks if isinstance(b, Text) and "<summary>" not in b.text] or [Text("Nothing to add.")]
    return Reply(tuple(text), call.output_tokens,
                 (call.input_tokens, call.cache_creation_input_tokens, call.cache_read_input_tokens))


def _summary(compaction: Compaction) -> Reply:
    """The answer to the summary request of ``compaction``: its summary call's blocks and usage where the scenario
    has it, else a short summary (the CLI writes its own ``post_tokens`` either way)."""
    text = "<analysis>The conversation so far.</analysis>\n<summary>The work so far, served by ctxsim.</summary>"
    summary = compaction.summary
    if summary is None:
        return Reply((Text(text),), output_tokens=60)
    # a derived summary call has no text; the CLI takes a reply without <summary> as a failed compaction and asks again
    said = any(isinstance(b, Text) and "<summary>" in b.text for b in summary.blocks)
    return Reply(summary.blocks if said else (Text(text),), summary.output_tokens,
                 (summary.input_tokens, summary.cache_creation_input_tokens, summary.cache_read_input_tokens))


_S = TypeVar("_S", bound="Server")


class Server:
    """What both servers are: the fake Messages API on 127.0.0.1:``port`` (0: a free one) behind a credential of
    its own, answering with ``responder``, its truth at :data:`TRUTH_PATH`; a context manager."""

    def __init__(self, responder: Refuser, *, port: int = 0, window: int = 200_000,
                 routes: Sequence[Route] = ()) -> None:
        self.key = f"sk-ant-ctxsim-{secrets.token_hex(16)}"
        """The credential this server accepts, and no other."""
        self.responder = responder
        self.api = FakeMessagesAPI(responder, key=self.key, port=port, window=window,
                                   routes=[Route(TRUTH_PATH, self._truth, methods=["GET"]), *routes])

    def __enter__(self: _S) -> _S:
        self.api.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.api.stop()

    @property
    def refused(self) -> list[str]:
        """Every request refused (its 400's message), in order."""
        return list(self.responder.refused)

    def truth(self) -> dict[str, Any]:
        """What ``GET`` :data:`TRUTH_PATH` answers."""
        raise NotImplementedError

    async def _truth(self, request: Request) -> Response:
        return JSONResponse(self.truth())


class ScenarioServer(Server):
    """The fake Messages API playing ``scenario`` (a session scenario that can run live) on 127.0.0.1:``port``
    (0: a free one); a context manager. Raises ``ValueError`` naming why a scenario cannot be served."""

    def __init__(self, scenario: SessionScenario, *, port: int = 0) -> None:
        reason = session_serve_reason(scenario)
        if reason is not None:
            raise ValueError(f"ctxsim: serve: scenario {scenario.name!r} cannot be played to a live CLI: {reason}")
        twin, self.changes = twin_changes(scenario)
        """What the live twin changed for this scenario, one phrase a change (empty: the scenario is played)."""
        self.split = twin is not None
        """Whether what is played is the scenario's live twin (:func:`live_twin`: queries split where a call ends
        the turn), whose points and prompts the settings and the truth give."""
        scenario = twin or scenario
        self.scenario = scenario
        super().__init__(_Refusing(SessionModel(scenario.session), scenario.name, scenario.session), port=port,
                         window=scenario.session.window, routes=[Route(FRAMES_PATH, self._frames, methods=["POST"]),
                                                                 Route(TURN_PATH, self._turn, methods=["POST"])])
        self.rendition = scenario.rendition()
        """The scenario's world on every surface, rendered once: its points and the faults' frames are read from it."""
        self.faults = LiveFaults(scenario, self.rendition) if scenario.faults else None
        """The scenario's stream faults, applied to what the CLI writes through the wrapper (None: no faults)."""
        self.turns = TurnEnds(scenario.session) if TurnEnds.needed(scenario.session) else None
        """Where the scenario's queries end their turns, told to the CLI by hooks (None: where the CLI ends them)."""
        self.points = [keyed_points(script) for script in self.rendition.stream]
        self._dir: Path | None = None
        self._posts: list[int] | None = None
        self._said_cli = False

    @property
    def _config(self) -> Path | None:
        return None if self._dir is None else self._dir / "config"

    def __enter__(self) -> ScenarioServer:
        super().__enter__()
        self._dir = Path(tempfile.mkdtemp(prefix="ctxsim-serve-"))
        if self.faults is not None or self.turns is not None:
            self._write_wrapper(self._dir)
        return self

    def _write_wrapper(self, root: Path) -> None:
        """The CLI wrapper (``bin/claude``) and, for the turns, the settings with the hooks it hands the CLI. It runs
        the CLI named in the client's ``CTXSIM_CLI``, else in serve's, else the bundled one, marking that it did."""
        python, key = shlex.quote(sys.executable), shlex.quote(self.key)
        frames = shlex.quote(self.api.base_url + FRAMES_PATH) if self.faults is not None else "-"
        extra = ""
        if self.turns is not None:
            settings = root / "settings.json"
            hook = f"{python} {FAST} {_file('_hook')} {shlex.quote(self.api.base_url + TURN_PATH)} {key}"
            settings.write_text(json.dumps(TurnEnds.settings(hook)))
            extra = f" --settings {shlex.quote(str(settings))}"
        wrapper = root / "bin" / "claude"
        wrapper.parent.mkdir()
        named = os.environ.get("CTXSIM_CLI", "")
        cli = shlex.quote(shutil.which(named) or os.path.abspath(named) if named else str(bundled_cli_path()))
        mark = "" if named else f"[ -n \"$CTXSIM_CLI\" ] || : > {shlex.quote(str(root / BUNDLED_MARK))}\n"
        wrapper.write_text(f"#!/bin/sh\n{mark}exec {python} {FAST} {_file('_wrap')} {frames} {key} "
                           f"\"${{CTXSIM_CLI:-{cli}}}\"{extra} \"$@\"\n")
        wrapper.chmod(0o700)

    def say_bundled_cli(self) -> None:
        """Say :func:`bundled_cli_notice` on stderr, once, after the CLI wrapper ran the bundled CLI."""
        if not self._said_cli and self._dir is not None and (self._dir / BUNDLED_MARK).exists():
            self._said_cli = True
            print(bundled_cli_notice(), file=sys.stderr, flush=True)

    def __exit__(self, *exc: object) -> None:
        try:
            self.say_bundled_cli()
            self._posts = self.post_tokens()
        finally:
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
            super().__exit__(*exc)

    @property
    def cli_path(self) -> Path | None:
        """The CLI wrapper the client runs in place of ``claude`` (None: neither faults nor turns to steer, any CLI
        does)."""
        wrapper = None if self._dir is None else self._dir / "bin" / "claude"
        return wrapper if wrapper is not None and wrapper.exists() else None

    def _unauthorised(self, request: Request) -> Response | None:
        given = request.headers.get("x-api-key", "")
        if secrets.compare_digest(given.encode(), self.key.encode()):
            return None
        return JSONResponse({"type": "error", "error": {"type": "authentication_error",
                                                        "message": "ctxsim: not this server's key"}}, 401)

    async def _turn(self, request: Request) -> Response:
        if (refused := self._unauthorised(request)) is not None:
            return refused
        try:
            event = (await request.json())["event"]
        except (ValueError, KeyError, TypeError):
            event = None
        if self.turns is None or not isinstance(event, str):
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error", "message": (
                "ctxsim: expected {\"event\": HOOK EVENT} for a scenario whose turns serve ends")}}, 400)
        assert isinstance(self.responder, _Refusing)
        self.say_bundled_cli()
        return JSONResponse(self.turns.answer(event, self.responder.main_served))

    async def _frames(self, request: Request) -> Response:
        if (refused := self._unauthorised(request)) is not None:
            return refused
        try:
            frames = (await request.json())["frames"]
            if self.faults is None or not isinstance(frames, list) or not all(isinstance(f, dict) for f in frames):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"type": "error", "error": {"type": "invalid_request_error", "message": (
                "ctxsim: expected {\"frames\": [stream-json objects]} for a scenario with faults")}}, 400)
        self.say_bundled_cli()
        faulted = self.faults.fault(frames)
        for number, keyed in self.faults.points.items():
            self.points[number] = keyed
        return JSONResponse({"frames": faulted})

    @property
    def unfaulted(self) -> int:
        """With faults: the queries the CLI played whose frames never came through the wrapper (0 without)."""
        if self.faults is None or not self.api.served:
            return 0
        return max(0, len(self.scenario.session.queries) - len(self.faults.played))

    def post_tokens(self) -> list[int]:
        """The ``postTokens`` of every compaction boundary the CLI wrote in its main transcripts (under the
        ``CLAUDE_CONFIG_DIR`` :meth:`settings` hands the client), in the order written; kept once serving stops."""
        if self._config is None:
            return self._posts or []
        rows = [row for path, rows in read_transcripts(self._config / "projects").items() if "/" not in path
                for row in rows if row.get("type") == "system" and row.get("subtype") == "compact_boundary"]
        rows.sort(key=lambda row: str(row.get("timestamp", "")))
        posts = [(row.get("compactMetadata") or {}).get("postTokens") for row in rows]
        return [post for post in posts if type(post) is int]

    def settings(self) -> dict[str, Any]:
        """What a client needs to play the scenario: ``env``, ``model``, the ``prompts`` to send (one per query, in
        order, each after the previous one's result), whether partial messages are on, the permission mode the
        scenario's tool calls need (their inputs are inert: ``true``, a file that does not exist) and where the
        truth is."""
        session = self.scenario.session
        env = client_environment(self.api.base_url, self.key)
        if self._config is not None:  # where serve reads the compaction boundaries the CLI writes
            env["CLAUDE_CONFIG_DIR"] = str(self._config)
        if self.cli_path is not None:  # faults: the client runs the wrapper, which runs the CLI
            env["PATH"] = os.pathsep.join([str(self.cli_path.parent), os.environ.get("PATH", os.defpath)])
        window = autocompact_window(session)
        if window is not None:  # where the CLI compacts on its own, as the scenario does
            env["CLAUDE_CODE_AUTO_COMPACT_WINDOW"] = str(window)
        model, window_env = client_model(session)  # the model id and settings that give the scenario's window
        env.update(window_env)
        env.update(session.settings.env)  # Claude Code's own settings the scenario states (auto-compact off, ...)
        return {"scenario": self.scenario.name, "env": env,
                "model": model,
                "prompts": [q.prompt for q in session.queries], "include_partial_messages": self.scenario.partial,
                **({"twin": f"{'; '.join(self.changes)} (the main chain's calls and their usage are the "
                            f"scenario's; the truth lists the twin's points)"} if self.split else {}),
                "permission_mode": "bypassPermissions", "truth_url": self.api.base_url + TRUTH_PATH,
                "world": TrackerWorld.of(session).environment(),
                **({"cli_path": str(self.cli_path)} if self.cli_path is not None else {})}

    def observations(self) -> list[Observation]:
        """Every observation point, in order. At a compaction, the estimates that track it are the CLI's: the band
        in-process gives a boundary of the ``postTokens`` it wrote (:func:`ctxsim.world.compaction_band`); none where
        the CLI wrote no boundary serve could read (a client that set its own ``CLAUDE_CONFIG_DIR``)."""
        points = sorted((o for query in self.points for o in query.values()), key=lambda o: o.index)
        posts = iter(self.post_tokens())
        out = []
        anchor: Truth | None = None  # the compaction's truth as served, which the points after it carry
        for o in points:
            if o.kind == "compaction" and o.truth.knowable:
                post = next(posts, None)
                estimated = None
                if post is not None and o.truth.first_call is not None:  # the band in-process gives that boundary
                    estimated = compaction_band(post, o.truth.prompt, o.truth.first_call)
                anchor = replace(o.truth, estimated=estimated)
                o = replace(o, truth=anchor)
            elif o.kind in ("call", "compaction", "reset"):
                anchor = None
            elif anchor is not None and o.truth == anchor:  # a result or subagent point: the anchor's truth
                o = replace(o, truth=anchor)
            out.append(o)
        return out

    def truth(self) -> dict[str, Any]:
        """The truth at every observation point: its number and label, what closes it in the stream the client
        reads (``after``, in query ``query`` (1-based), counting from that query's start: the ``n``-th message of
        API call ``message_id``, the result, the ``n``-th compaction boundary, ``message_stop`` stream event or
        ``conversation_reset``), and the band a tracker must be within (``low``..``high``, ``tolerance`` tokens either
        side; ``estimated``: the band of estimates a stream allows after a compaction), or ``knowable`` false."""
        points: list[dict[str, Any]] = []
        served = {o.index: o for o in self.observations()}
        for number, query in enumerate(self.points, 1):
            for key, o in query.items():
                o = served[o.index]
                after: dict[str, Any] = (
                    {"type": "result", "query": number} if key == "result" else
                    {"type": "compact_boundary", "query": number, "n": key[1]} if key[0] == "compact_boundary" else
                    {"type": "stream_event", "event": "message_stop", "query": number, "n": key[1]}
                    if key[0] == "message_stop" else
                    {"type": "conversation_reset", "query": number, "n": key[1]} if key[0] == "conversation_reset"
                    else
                    {"type": "assistant", "query": number, "message_id": key[0], "n": key[1]})
                points.append({"index": o.index, "point": o.label, "kind": o.kind, "after": after,
                               "low": o.truth.prompt, "high": o.truth.next_request, "knowable": o.truth.knowable,
                               **({"estimated": list(o.truth.estimated)} if o.truth.estimated else {})})
        points.sort(key=lambda p: p["index"])
        return {"scenario": self.scenario.name, "tolerance": self.scenario.tolerance,
                "window": self.scenario.session.window, "requests": len(self.api.served),
                "refused": self.refused, "unplayed": self.unplayed, "unfaulted": self.unfaulted, "points": points}

    @property
    def unplayed(self) -> int:
        """How many calls of the script no request asked for (yet)."""
        model = self.responder.model if isinstance(self.responder, _Refusing) else None
        return 0 if model is None else len(model.main) + len(model.subagent)

    def verdict(self, estimates: Mapping[int, float | None], *, tracker: str = "tracker",
                quantity: Quantity | None = None) -> Verdict:
        """The verdict on a tracker whose estimate at each observation point (by number) is ``estimates`` (a point
        missing: no estimate), judged as ``ctxsim run`` judges one, through the plan of judgement
        (:func:`ctxsim.runner.served`): in the quantity ``quantity`` declares, else the one the estimates declare
        (:class:`Estimates`), else tokens. Its likely causes read the stream this server rendered."""
        from ..runner import served

        declared = quantity or getattr(estimates, "quantity", None)
        return served(self.scenario, tracker, declared).judge_estimates(self.observations(), estimates,
                                                                         rendition=self.rendition)

    def judge(self, estimates: Mapping[int, float | None], *, tracker: str = "tracker",
              quantity: Quantity | None = None) -> ScenarioRun:
        """The run of :meth:`verdict`."""
        run = self.verdict(estimates, tracker=tracker, quantity=quantity).run
        assert run is not None  # estimates are always judged
        return run
