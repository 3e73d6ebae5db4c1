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
a query's result); ``GET /ctxsim/truth`` answers it. :meth:`~ScenarioServer.judge` compares a tracker's estimates
at those points (:func:`read_estimates`) with it, as ``ctxsim run`` does.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..check import Point, Report
from ..runner import ScenarioRun, threshold_results
from ..trackers import TrackerWorld
from ..wire import Observation
from ._api import ApiRequest, FakeMessagesAPI, Reply
from ._claude import cli_env
from ._scenarios import SessionModel, _observations, live_skip_reason

if TYPE_CHECKING:
    from ..scenario import SessionScenario

__all__ = ["EstimatesError", "ScenarioServer", "read_estimates"]

ESTIMATES_LIMIT = 64 * 1024 * 1024
"""Bytes an estimates file may hold."""
TRUTH_PATH = "/ctxsim/truth"
"""Where the server answers its truth (``GET``)."""


def client_environment(base_url: str, key: str) -> dict[str, str]:
    """The environment a client gives the CLI: the base URL and the key, traffic other than the API's off, no proxy
    for 127.0.0.1, and ``IS_SANDBOX=1`` (as root the CLI refuses ``bypassPermissions`` without it)."""
    env = cli_env(base_url, Path("~"))
    keep = ("ANTHROPIC_BASE_URL", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY",
            "DISABLE_AUTOUPDATER", "DISABLE_ERROR_REPORTING", "IS_SANDBOX", "NO_PROXY", "no_proxy")
    return {"ANTHROPIC_API_KEY": key, **{k: env[k] for k in keep}}


class EstimatesError(ValueError):
    """An estimates file that cannot be read: one ``ctxsim:`` line with the file, the line and what is wrong."""


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

    def __init__(self, model: SessionModel, scenario: str) -> None:
        super().__init__(f"scenario {scenario!r}")
        self.model = model

    def __call__(self, request: ApiRequest) -> Reply:
        queue = {"main": self.model.main, "subagent": self.model.subagent}.get(request.kind)
        if queue:
            return self.model(request)
        if queue is None:
            return self.refuse(request, (f"a {request.kind} request (no tools: a title, a probe)"
                                         if request.kind == "side" else f"a {request.kind} request")
                               + " does not belong to the scenario's script")
        return self.refuse(request, f"the script's {request.kind} calls are used up")


_S = TypeVar("_S", bound="Server")


class Server:
    """What both servers are: the fake Messages API on 127.0.0.1:``port`` (0: a free one) behind a credential of
    its own, answering with ``responder``, its truth at :data:`TRUTH_PATH`; a context manager."""

    def __init__(self, responder: Refuser, *, port: int = 0, window: int = 200_000) -> None:
        self.key = f"sk-ant-ctxsim-{secrets.token_hex(16)}"
        """The credential this server accepts, and no other."""
        self.responder = responder
        self.api = FakeMessagesAPI(responder, key=self.key, port=port, window=window,
                                   routes=[Route(TRUTH_PATH, self._truth, methods=["GET"])])

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
        reason = live_skip_reason(scenario)
        if reason is not None:
            raise ValueError(f"ctxsim: serve: scenario {scenario.name!r} cannot be played to a live CLI: {reason}")
        self.scenario = scenario
        super().__init__(_Refusing(SessionModel(scenario.session), scenario.name), port=port)
        self.points = _observations(scenario.session, scenario.partial)

    def settings(self) -> dict[str, Any]:
        """What a client needs to play the scenario: ``env``, ``model``, the ``prompts`` to send (one per query, in
        order, each after the previous one's result), whether partial messages are on, the permission mode the
        scenario's tool calls need (their inputs are inert: ``true``, a file that does not exist) and where the
        truth is."""
        session = self.scenario.session
        return {"scenario": self.scenario.name, "env": client_environment(self.api.base_url, self.key),
                "model": session.model,
                "prompts": [q.prompt for q in session.queries], "include_partial_messages": self.scenario.partial,
                "permission_mode": "bypassPermissions", "truth_url": self.api.base_url + TRUTH_PATH,
                "world": TrackerWorld.of(session).environment()}

    def observations(self) -> list[Observation]:
        """Every observation point, in order."""
        return sorted((o for query in self.points for o in query.values()), key=lambda o: o.index)

    def truth(self) -> dict[str, Any]:
        """The truth at every observation point: its number and label, what closes it in the stream the client
        reads (``after``: the ``n``-th message of API call ``message_id``, or query ``query``'s result), and the
        band a tracker must be within (``low``..``high``, ``tolerance`` tokens either side), or ``knowable``
        false."""
        points: list[dict[str, Any]] = []
        for number, query in enumerate(self.points, 1):
            for key, o in query.items():
                after: dict[str, Any] = ({"type": "result", "query": number} if key == "result" else
                                         {"type": "assistant", "message_id": key[0], "n": key[1]})
                points.append({"index": o.index, "point": o.label, "kind": o.kind, "after": after,
                               "low": o.truth.prompt, "high": o.truth.next_request, "knowable": o.truth.knowable})
        points.sort(key=lambda p: p["index"])
        return {"scenario": self.scenario.name, "tolerance": self.scenario.tolerance,
                "window": self.scenario.session.window, "requests": len(self.api.served),
                "refused": self.refused, "points": points}

    def judge(self, estimates: Mapping[int, int | None], *, tracker: str = "tracker") -> ScenarioRun:
        """The run of a tracker whose estimate at each observation point (by number) is ``estimates`` (a point
        missing: no estimate), judged as ``ctxsim run`` judges one."""
        report = Report(tracker, self.scenario.session, self.scenario.tolerance)
        for o in self.observations():
            report.points.append(Point(o, estimates.get(o.index), self.scenario.tolerance))
        return ScenarioRun(self.scenario, report, threshold_results(self.scenario, report))


def read_estimates(path: Path, observations: list[Observation]) -> dict[int, int | None]:
    """A tracker's estimates from ``path``: JSON lines ``{"point": LABEL or NUMBER, "estimate": TOKENS or null}``
    (a point given twice: the last line wins), by point number. Raises :class:`EstimatesError` with the file and
    line of what cannot be read."""
    by_label = {o.label: o.index for o in observations}
    numbers = set(by_label.values())
    out: dict[int, int | None] = {}
    try:
        if not path.is_file():  # a FIFO would block, a device never end
            raise EstimatesError(f"ctxsim: serve --judge: {path} is not a regular file")
        if path.stat().st_size > ESTIMATES_LIMIT:
            raise EstimatesError(f"ctxsim: serve --judge: {path} is over {ESTIMATES_LIMIT} bytes: not estimates")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise EstimatesError(f"ctxsim: serve --judge: cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"ctxsim: serve --judge: {path}:{number}"
        try:
            row = json.loads(line)
        except ValueError:
            raise EstimatesError(f"{where}: not a JSON line ({line[:80]!r})") from None
        if not isinstance(row, dict) or "point" not in row or "estimate" not in row:
            raise EstimatesError(f"{where}: expected {{\"point\": LABEL or NUMBER, \"estimate\": TOKENS or null}}")
        point, estimate = row["point"], row["estimate"]
        index = by_label.get(point) if isinstance(point, str) else point if point in numbers else None
        if index is None or isinstance(point, bool):
            raise EstimatesError(f"{where}: key 'point': {point!r} is no observation point of the scenario "
                                 f"(known: {', '.join(by_label)})")
        if estimate is not None and (type(estimate) is not int or estimate < 0):
            raise EstimatesError(f"{where}: key 'estimate': {estimate!r} is not a token count or null")
        out[index] = estimate
    return out
