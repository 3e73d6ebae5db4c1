"""Scenarios through the live backend: a session scenario's world served by the fake Messages API to the real CLI.

:func:`live_skip_reason` says why a scenario cannot run live (None when it can); :func:`run_scenario_live` runs a
tracker over one that can, and judges it as :func:`ctxsim.runner.run_scenario` does in-process: the same
observation points, truth, tolerance and thresholds, but the messages the tracker sees are the real CLI's.

The fake API answers each request with the next call of its chain from the world (main chain, subagents in
order), reporting that call's usage exactly, so the truth is the world's. Tools the world's calls use are
executed by the real CLI, with inert inputs (``true``, a file that does not exist): a scenario file's commands
are never run. Faults, recordings, compactions (the CLI computes their sizes itself), resets inside a query,
other windows than the model's 200,000 and turns that end on a tool call cannot be reproduced live.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent

from .._sync import run_blocking
from ..check import Point, Report, Tracker, tracker_name
from ..processes import described
from ..trackers import feeding
from ..wire import Observation, Script, render
from ..world import Call, Compaction, ConversationReset, Session, SubagentCompaction, SubagentStart, ToolUse
from ._api import ApiRequest, Reply
from ._claude import LiveClaude
from ._twins import compaction_reason, is_model_query, window_reason

if TYPE_CHECKING:
    from ..runner import ScenarioRun
    from ..scenario import SessionScenario

__all__ = ["PointKey", "SessionModel", "arun_tracker_live", "inert_block", "keyed_points", "live_skip_reason",
           "observation_points", "point_keys", "run_scenario_live", "tracker_skip_reason"]

_INERT = frozenset({"Bash", "Read", "Grep", "Glob", "Edit", "Write"})
"""The tools a scenario's calls may use live: each is played as an inert ``Bash`` command (``true``), which every CLI
release has and which succeeds (so the hooks after a tool run: a release without ``Grep`` answers that one with an
error instead of running it, and an inert edit of a file that does not exist fails)."""


def inert_block(block: Any) -> Any:
    """``block`` as the live CLI plays it: a use of ``Bash``, ``Read``, ``Grep``, ``Glob``, ``Edit`` or ``Write``
    becomes an inert ``Bash`` command, a subagent runs in the foreground; any other block is itself."""
    if not isinstance(block, ToolUse):
        return block
    if block.name in ("Agent", "Task"):
        return ToolUse(block.id, "Agent", {**block.input, "run_in_background": False})
    return ToolUse(block.id, "Bash", {"command": "true", "description": f"ctxsim: an inert {block.name}"})


def live_skip_reason(scenario: SessionScenario, *, compactions: bool = False, windows: bool = False,
                     faults: bool = False, turns: bool = False, resets: bool = False,
                     models: bool = False) -> str | None:
    """Why ``scenario`` cannot run through the live backend, or None when it can. ``compactions``: the compactions
    the live CLI can be steered to make are playable; ``windows``: so are the windows a model id and the CLI's
    settings give; ``faults``: so are stream faults, applied to what the CLI writes; ``turns``: so are queries
    that end on a tool call, where a hook ends the CLI's turn; ``resets``: so is a ``/clear`` query that only
    resets; ``models``: so is a ``/model`` query that only switches the model (``ctxsim serve`` does all six)."""
    if scenario.recording is not None:
        return "a recorded stream is played as recorded; the live CLI writes its own"
    if scenario.faults and not faults:
        return "faults edit the rendered stream; the live CLI writes its own"
    session = scenario.session
    if windows:
        if (why := window_reason(session)) is not None:
            return why
    elif session.window != 200_000 or "[1m]" in session.model:
        return f"the live CLI gives {session.model} a 200,000 window, the scenario {session.window:,}"
    if compactions and (why := compaction_reason(session)) is not None:
        return why
    for number, query in enumerate(session.queries, 1):
        steps = query.steps
        if any(isinstance(s, SubagentStart) and s.background for s in steps):
            return (f"query {number} runs a subagent in the background: live, the CLI answers its notification in a "
                    f"turn of its own after the query's result, which the live backend does not wait for")
        if any(isinstance(s, SubagentCompaction) for s in steps):
            return (f"query {number} compacts a subagent: live, the CLI does so only against an agent definition's "
                    f"autoCompactWindow, which the live backend gives no agent")
        if any(isinstance(s, Compaction) for s in steps):
            if not compactions:
                return f"query {number} compacts: the live CLI decides compaction sizes itself"
            if not query.main_calls:
                continue  # a /compact query of its own
        if any(isinstance(s, ConversationReset) for s in steps):
            if len(steps) > 1 or not resets:
                return f"query {number} resets the conversation: live, a reset is a /clear query of its own"
            continue  # a /clear query of its own
        for call in (s for s in steps if isinstance(s, Call)):
            names = {b.name for b in call.blocks if isinstance(b, ToolUse)} - {"Agent", "Task"} - set(_INERT)
            if names:
                return f"query {number} calls tools the live backend has no inert input for: {sorted(names)}"
        main = query.main_calls
        if not main and models and is_model_query(query):
            continue  # a /model query: the CLI switches without asking the API (a probe of the model aside)
        if not main:
            return f"query {number} makes no main-chain call"
        if main[-1].stop_reason == "tool_use" and not turns:
            return f"query {number} does not end on a main-chain answer, where the live CLI would call again"
        if any(c.stop_reason != "tool_use" for c in main[:-1]):
            return (f"query {number} has a main-chain call that ends the turn before its last; the live CLI stops "
                    f"there (a Stop hook would make it go on, but adds its feedback to the conversation)")
        chains: dict[str, list[Call]] = {}
        for call in (s for s in steps if isinstance(s, Call) and not s.is_main):
            chains.setdefault(str(call.parent_tool_use_id), []).append(call)
        for calls in chains.values():
            if calls[-1].stop_reason == "tool_use" or any(c.stop_reason != "tool_use" for c in calls[:-1]):
                return f"query {number} has a subagent whose calls do not end exactly on its last one"
    return None


def tracker_skip_reason(tracker: object) -> str | None:
    """Why ``tracker`` cannot be judged live, or None when it can: a statusline command, a tracker fed raw lines, or
    one whose ``live_skip`` says why (the character counter of seed 002 reads tool results' text, which the live
    CLI's inert tools replace)."""
    fed = feeding(tracker).fed
    if fed == "points":
        return ("it reads the transcript and statusline payload ctxsim renders at each point, not the SDK's "
                "messages of a live run")
    if fed == "frames":
        return "it is fed the raw stream-json lines, and the live backend hands it the SDK's messages only"
    declared = getattr(tracker, "live_skip", "")  # a tracker that says why the live CLI cannot show it its world
    return declared if isinstance(declared, str) and declared else None


class SessionModel:
    """A responder that answers each request with the next call of its chain in ``session``, usage exact (in the
    session's usage convention: an inclusive gateway's ``input_tokens`` holds the whole prompt). A request
    the session does not have is answered with an API error and recorded in :attr:`unexpected` (the run is then
    void: :func:`arun_tracker_live` fails it), never with another chain's call."""

    def __init__(self, session: Session) -> None:
        def reply(call: Call) -> Reply:
            usage = (session.reported_input(call), call.cache_creation_input_tokens, call.cache_read_input_tokens)
            return Reply(tuple(inert_block(b) for b in call.blocks), call.output_tokens, usage,
                         message_id=call.message_id)

        self.main = deque(reply(c) for c in session.calls if c.is_main)
        self.subagent = deque(reply(c) for c in session.calls if not c.is_main)
        self.unexpected: list[str] = []
        """What was asked beyond the session, request by request."""

    def __call__(self, request: ApiRequest) -> Reply:
        queue = self.subagent if request.kind == "subagent" else self.main if request.kind == "main" else None
        if not queue:
            what = f"request #{request.number}, a {request.kind} request the session does not have"
            self.unexpected.append(what)
            return Reply(error=(400, {"type": "error", "error": {"type": "invalid_request_error",
                                                                 "message": f"ctxsim: {what}"}}))
        return queue.popleft()

    def void(self) -> str | None:
        """Why the run cannot be judged (a request beyond the session, a call of it never asked for), or None."""
        if self.unexpected:
            return f"the live CLI made {len(self.unexpected)} request(s) beyond the session ({self.unexpected[0]})"
        left = len(self.main) + len(self.subagent)
        if left:
            return f"{left} call(s) of the session were never asked for: the live CLI took another path"
        return None


PointKey = tuple[str, int] | str
"""What closes an observation point live: ``(message_id, n)`` for the n-th message of a call,
``("compact_boundary", n)`` for the query's n-th compaction boundary, ``("message_stop", n)`` for its n-th
``message_stop`` stream event (partial messages on), ``("conversation_reset", n)`` for its n-th
``conversation_reset`` (what ``/clear`` writes first, before the new session's ``init``), ``"result"`` for the
result."""


def point_keys(frames: Iterable[dict[str, Any]]) -> Iterator[PointKey | None]:
    """For each frame of one query, the key of the point it would close (None for a frame that closes none)."""
    counts: dict[str, int] = {}
    boundaries = stops = resets = 0
    for data in frames:
        kind = data.get("type")
        message = data.get("message")
        event = data.get("event")
        if kind == "assistant" and isinstance(message, dict) and isinstance(message.get("id"), str):
            counts[message["id"]] = counts.get(message["id"], 0) + 1
            yield message["id"], counts[message["id"]]
        elif kind == "result":
            yield "result"
        elif kind == "system" and data.get("subtype") == "compact_boundary":
            boundaries += 1
            yield "compact_boundary", boundaries
        elif kind == "stream_event" and isinstance(event, dict) and event.get("type") == "message_stop":
            stops += 1
            yield "message_stop", stops
        elif kind == "conversation_reset":  # what the CLI writes of a /clear (recorded), before the new init
            resets += 1
            yield "conversation_reset", resets
        else:
            yield None


def keyed_points(script: Script) -> dict[PointKey, Observation]:
    """The observation points of one query's script, keyed by what closes them live."""
    return {key: frame.observation for frame, key in zip(script.frames, point_keys(script.dicts()), strict=True)
            if frame.observation is not None and key is not None}


def observation_points(session: Session, partial: bool) -> list[dict[PointKey, Observation]]:
    """Per query: the observation points of the in-process rendering, keyed by what closes them live
    (:data:`PointKey`)."""
    return [keyed_points(script) for script in render(session, include_partial_messages=partial)]


async def arun_tracker_live(tracker: Tracker, session: Session, *, tolerance: int = 0,
                            include_partial_messages: bool = False, timeout: float = 60.0) -> Report:
    """Run ``tracker`` over ``session`` played by the real CLI; judged at the in-process observation points (those
    of the kinds in the tracker's ``judged_at``, when it has one)."""
    report = Report(tracker_name(tracker), session, tolerance)
    points = observation_points(session, include_partial_messages)
    judged_at = getattr(tracker, "judged_at", None)
    model = SessionModel(session)
    live = LiveClaude(model=session.model, include_partial_messages=include_partial_messages, timeout=timeout)
    live.api.responder = model
    async with live:
        for number, query in enumerate(session.queries):
            seen: dict[str, int] = {}
            for message in await live.ask(query.prompt):
                report.messages += 1
                try:
                    tracker.observe(message)
                    key: tuple[str, int] | str | None = None
                    if isinstance(message, AssistantMessage) and message.message_id is not None:
                        seen[message.message_id] = seen.get(message.message_id, 0) + 1
                        key = (message.message_id, seen[message.message_id])
                    elif isinstance(message, ResultMessage):
                        key = "result"
                    elif isinstance(message, StreamEvent) and message.event.get("type") == "message_stop":
                        seen["\0stop"] = seen.get("\0stop", 0) + 1
                        key = ("message_stop", seen["\0stop"])
                    observation = points[number].get(key) if key is not None else None
                    if observation is not None and (judged_at is None or observation.kind in judged_at):
                        report.points.append(Point(observation, tracker.context_tokens(), tolerance))
                except Exception as exc:
                    report.crash = f"ctxsim: tracker {report.tracker} raised {described(exc)} (live)"
                    return report
    why = model.void()
    wanted = sum(1 for query in points for o in query.values() if judged_at is None or o.kind in judged_at)
    if why is None and len(report.points) != wanted:
        why = f"the live run reached {len(report.points)} of the session's {wanted} observation points"
    if why is not None:
        report.crash = f"ctxsim: {why}; the run is void, nothing judged (live)"
    return report


def run_scenario_live(scenario: SessionScenario, tracker: Tracker, *, name: str | None = None,
                      timeout: float = 60.0) -> ScenarioRun:
    """:func:`ctxsim.runner.run_scenario` through the live backend (see :func:`live_skip_reason`)."""
    from ..runner import ScenarioRun, threshold_results

    reason = live_skip_reason(scenario)
    if reason is not None:
        raise ValueError(f"ctxsim: scenario {scenario.name!r} cannot run live: {reason}")
    reason = tracker_skip_reason(tracker)
    if reason is not None:
        raise ValueError(f"ctxsim: tracker {tracker_name(tracker)} cannot be judged live: {reason}")
    report = run_blocking(lambda: arun_tracker_live(tracker, scenario.session, tolerance=scenario.tolerance,
                                                 include_partial_messages=scenario.partial, timeout=timeout))
    if name is not None:
        report.tracker = name
    return ScenarioRun(scenario, report, threshold_results(scenario, report))
