"""A catalogue of restart loops shaped like design 003's, each with one bug the designs warn about (or commit).

Every entry is an async loop taking a :class:`~ctxsim.loops.LoopRig`: design 003's ``run_session`` restart loop
(``_process_message_stream`` raising ``ContextPressureError`` when the ratio is at or over the threshold at a
result; ``_get_checkpoint_from_agent``; a continuation prompt built from the checkpoint), with one line changed.
``seed003`` is the loop as the design finally wrote it and keeps every invariant under the design's policy, one
restart threshold (it reads only :attr:`LoopRig.threshold_tokens <ctxsim.loops.LoopRig.threshold_tokens>`, so a
graduated policy's wind-down and a tool-call fallback are not its to keep: ``ctxsim fuzz --loop seed003``, which
draws those policies too, catches it there); the others must each fail :func:`~ctxsim.loops.check_restart_loop`
with the invariant named in :attr:`LoopEntry.invariant`::

    check_restart_loop(CATALOGUE["reuse-lifecycle"].loop, task)   # raises: invariant 'fresh-lifecycle'
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from functools import update_wrapper

from claude_agent_sdk import ClaudeSDKClient

from ..reference import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUE_PROMPT,
    Checkpoint,
    Turn,
    build_continuation_prompt,
    extract_checkpoint,
    is_prompt_too_long,
    run_turn,
    task_complete,
)
from ..trackers import Tracker
from ._rig import LoopRig

__all__ = ["CATALOGUE", "ContextPressureError", "LoopEntry", "design003_loop"]


class ContextPressureError(Exception):
    """Design 003's signal: the context is at or over the restart threshold."""

    def __init__(self, session_id: str | None, tokens: int | None) -> None:
        super().__init__(f"Context pressure: {tokens} tokens")
        self.session_id = session_id
        self.tokens = tokens


async def _stream(client: ClaudeSDKClient, prompt: str, tracker: Tracker, threshold: int) -> Turn:
    """Design 003's ``_process_message_stream``: feed the tracker; at the result, raise at or over the threshold."""
    turn = await run_turn(client, prompt, observe=tracker.observe)
    tokens = tracker.context_tokens()
    if (turn.is_error and is_prompt_too_long(f"{turn.text}\n{turn.result_text}")) or (
            tokens is not None and tokens >= threshold):
        raise ContextPressureError(turn.session_id, tokens)
    return turn


def _checkpoint_of(turn: Turn) -> Checkpoint:
    text = turn.text if not turn.is_error else f"{turn.text}\n{turn.result_text}"
    return extract_checkpoint(text, stop_reason=turn.stop_reason, is_error=turn.is_error)


async def _checkpoint_same_client(client: ClaudeSDKClient, tracker: Tracker, threshold: int,
                                  through_pressure_check: bool) -> Checkpoint:
    if not through_pressure_check:
        return _checkpoint_of(await run_turn(client, CHECKPOINT_REQUEST_PROMPT))
    while True:  # BUG: the checkpoint turn goes through the pressure check like a work turn
        try:
            return _checkpoint_of(await _stream(client, CHECKPOINT_REQUEST_PROMPT, tracker, threshold))
        except ContextPressureError:
            continue  # still over the threshold: "restart" again, i.e. ask for the checkpoint again


async def _checkpoint_new_client(rig: LoopRig, session_id: str | None) -> Checkpoint:
    # BUG (design 003's _get_checkpoint_from_agent): a new client is a new CLI process and a new, empty session;
    # query(session_id=...) only labels the message, it resumes nothing.
    async with ClaudeSDKClient(replace(rig.options)) as client:
        turn = await run_turn(client, CHECKPOINT_REQUEST_PROMPT, session_id=session_id or "default")
    return _checkpoint_of(turn)


async def design003_loop(rig: LoopRig, *, reuse_lifecycle: bool = False, keep_session_id: bool = False,
                       keep_tracker: bool = False, checkpoint_through_pressure_check: bool = False,
                       checkpoint_on_new_client: bool = False) -> int:
    """Design 003's restart loop; each flag is one catalogued bug. Returns ``continuation_count``."""
    threshold = rig.threshold_tokens
    prompt, continuation_count, session_id = rig.prompt, 0, None
    lifecycle, tracker = rig.make_lifecycle(), rig.make_tracker()
    while True:
        if not reuse_lifecycle:
            lifecycle = rig.make_lifecycle()
        if not keep_tracker:
            tracker = rig.make_tracker()
        if not keep_session_id:
            session_id = None  # forces a fresh SDK session
        lifecycle.start()
        async with ClaudeSDKClient(replace(rig.options, resume=session_id)) as client:
            try:
                next_prompt = prompt
                while True:
                    turn = await _stream(client, next_prompt, tracker, threshold)
                    session_id = turn.session_id
                    if task_complete(turn):
                        lifecycle.finish()
                        return continuation_count
                    next_prompt = CONTINUE_PROMPT
            except ContextPressureError as pressure:
                session_id = pressure.session_id or session_id
                if continuation_count >= rig.max_restarts:
                    raise
                lifecycle.checkpoint()
                if checkpoint_on_new_client:
                    checkpoint = await _checkpoint_new_client(rig, session_id)
                else:
                    checkpoint = await _checkpoint_same_client(client, tracker, threshold,
                                                               checkpoint_through_pressure_check)
        lifecycle.finish()
        continuation_count += 1
        prompt = build_continuation_prompt(checkpoint)


@dataclass(frozen=True)
class LoopEntry:
    """One catalogued loop."""

    name: str
    loop: Callable[[LoopRig], Awaitable[int]]
    invariant: str
    """The invariant the checks must report broken ("" for the correct loop)."""
    bug: str
    """What is wrong with it, and where ("none under ..." for the correct loop: the policies it keeps every
    invariant under)."""
    source: str


def _variant(name: str, **bugs: bool) -> Callable[[LoopRig], Awaitable[int]]:
    async def loop(rig: LoopRig) -> int:
        return await design003_loop(rig, **bugs)

    update_wrapper(loop, design003_loop)
    loop.__name__ = loop.__qualname__ = name
    return loop


CATALOGUE: dict[str, LoopEntry] = {e.name: e for e in (
    LoopEntry("seed003", _variant("seed003"), "",
              "none under one restart threshold (design 003's policy): fresh lifecycle and tracker per session, "
              "session id cleared, checkpoint on the old client; but it reads only the threshold, so under "
              "graduated zones it restarts at the first crossing without the wind-down turn, and it ignores a "
              "tool-call fallback (max_tool_calls): both break restart-count",
              "design 003 (mala, 'Context Exhaustion Handling'), Task 5 as resolved"),
    LoopEntry("reuse-lifecycle", _variant("reuse-lifecycle", reuse_lifecycle=True), "fresh-lifecycle",
              "keeps the lifecycle across restarts: start() on a finished lifecycle raises 'cannot start from "
              "state FINISHED'",
              "design 003, risk table: 'Lifecycle start() crash on restart'"),
    LoopEntry("keep-session-id", _variant("keep-session-id", keep_session_id=True), "new-session",
              "does not clear the session id: the next client resumes the full session instead of a fresh one",
              "design 003, Key design decision 2: 'Clear session_id on restart'"),
    LoopEntry("keep-tracker", _variant("keep-tracker", keep_tracker=True), "tracker-reset",
              "keeps the tracker across restarts: the old session's usage carries into the new one",
              "design 000 ('fresh LifecycleContext ... so explicit reset() wiring is not needed'), reset() unwired"),
    LoopEntry("restart-on-checkpoint",
              _variant("restart-on-checkpoint", checkpoint_through_pressure_check=True), "checkpoint",
              "runs the checkpoint turn through the pressure check: its own usage, still over the threshold, "
              "restarts the restart (the checkpoint is requested again and again)",
              "design 003, Task 2 check ('ratio >= threshold' at every result) applied to the checkpoint turn"),
    LoopEntry("checkpoint-on-new-client", _variant("checkpoint-on-new-client", checkpoint_on_new_client=True),
              "checkpoint",
              "asks for the checkpoint on a new client (a new, empty session), so the checkpoint knows nothing",
              "design 003, Task 5: _get_checkpoint_from_agent creates a client and query(..., session_id=...)"),
)}
"""Every catalogued loop by name."""
