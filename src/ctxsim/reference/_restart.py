"""The reference restart loop (designs 000 and 003) over the real ``ClaudeSDKClient``.

:func:`run_with_restarts` runs a task in sessions. Each session gets a fresh lifecycle, tracker and policy state
and a client whose options resume nothing, so the CLI starts a new session with a new session id. After every
turn the policy is asked about the tracker's count; when it says restart, the loop asks the **same client** (the
old session, before it closes) for a checkpoint, extracts it, and starts the next session with the continuation
prompt built from it. The checkpoint turn is never shown to the tracker or the policy, so its own usage cannot
trigger another restart. A checkpoint request rejected as prompt-too-long yields the minimal continuation prompt.

A task is done when a turn's result says so (:func:`task_complete`: the result text contains :data:`DONE_MARKER`,
the convention :mod:`ctxsim.agent` follows); otherwise the loop sends :data:`CONTINUE_PROMPT` (or
:data:`WIND_DOWN_PROMPT` after a graduated policy's ``WIND_DOWN``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
)

from ._checkpoint import (
    Checkpoint,
    build_continuation_prompt,
    extract_checkpoint,
    is_prompt_too_long,
)
from ._policy import Action, PressurePolicy
from ._prompts import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUE_PROMPT,
    DONE_MARKER,
    WIND_DOWN_PROMPT,
)
from ._tracker import ContextTracker

__all__ = [
    "CONTINUE_PROMPT",
    "DONE_MARKER",
    "WIND_DOWN_PROMPT",
    "Extractor",
    "LifecycleError",
    "LifecycleState",
    "RestartLimitError",
    "RestartLoop",
    "RestartResult",
    "SessionLifecycle",
    "SessionState",
    "SessionTracker",
    "Turn",
    "request_checkpoint",
    "run_turn",
    "run_with_restarts",
    "task_complete",
]



class SessionTracker(Protocol):
    """What the loop reads of a session's tracker: any :class:`ctxsim.trackers.Tracker` with a synchronous
    ``context_tokens`` (the reference stands below the trackers package, which catalogues it, so it names the
    contract by its shape rather than importing it)."""

    def observe(self, message: Any) -> None: ...

    def context_tokens(self) -> int | None: ...


# --- the lifecycle ------------------------------------------------------------------------------------------------


class LifecycleState(enum.Enum):
    """Where a session's lifecycle is."""

    INITIAL = "initial"
    RUNNING = "running"
    CHECKPOINTING = "checkpointing"
    FINISHED = "finished"


class LifecycleError(RuntimeError):
    """A lifecycle was driven from a state that does not allow it (design 003's "Cannot start from state X")."""


class SessionLifecycle:
    """Design 003's lifecycle shape: ``start()`` only from INITIAL, so one lifecycle serves exactly one session.

    Reusing a finished lifecycle for the next session raises :class:`LifecycleError` ("cannot start from state
    FINISHED"), the crash design 003 fixed by making a fresh lifecycle per restart.
    """

    def __init__(self) -> None:
        self.state = LifecycleState.INITIAL
        """The current state."""

    def _move(self, verb: str, allowed: tuple[LifecycleState, ...], to: LifecycleState) -> None:
        if self.state not in allowed:
            raise LifecycleError(f"ctxsim: SessionLifecycle: cannot {verb} from state {self.state.name}")
        self.state = to

    def start(self) -> None:
        """INITIAL -> RUNNING."""
        self._move("start", (LifecycleState.INITIAL,), LifecycleState.RUNNING)

    def checkpoint(self) -> None:
        """RUNNING -> CHECKPOINTING (the checkpoint is being requested)."""
        self._move("checkpoint", (LifecycleState.RUNNING,), LifecycleState.CHECKPOINTING)

    def finish(self) -> None:
        """RUNNING or CHECKPOINTING -> FINISHED."""
        self._move("finish", (LifecycleState.RUNNING, LifecycleState.CHECKPOINTING), LifecycleState.FINISHED)


# --- one turn -----------------------------------------------------------------------------------------------------


@dataclass
class Turn:
    """One query and everything the SDK yielded for it, up to its result."""

    text: str = ""
    """The main chain's text blocks, joined with newlines."""
    result: ResultMessage | None = None
    """The turn's result (None if the stream ended without one)."""
    messages: int = 0
    """Messages the SDK yielded."""
    tool_calls: int = 0
    """Main-chain tool uses."""
    compacted: bool = False
    """A ``compact_boundary`` arrived during the turn."""

    @property
    def is_error(self) -> bool:
        """The result is an error (or missing)."""
        return self.result is None or bool(self.result.is_error)

    @property
    def stop_reason(self) -> str | None:
        """The result's stop reason."""
        return self.result.stop_reason if self.result is not None else None

    @property
    def session_id(self) -> str | None:
        """The session the turn ran in."""
        return self.result.session_id if self.result is not None else None

    @property
    def result_text(self) -> str:
        """The result's ``result`` text, else the turn's text."""
        if self.result is not None and isinstance(self.result.result, str):
            return self.result.result
        return self.text


async def run_turn(client: ClaudeSDKClient, prompt: str, *, observe: Callable[[Any], None] | None = None,
                   session_id: str = "default") -> Turn:
    """Send ``prompt`` and read the answer up to its result; ``observe`` sees every message on the way.

    ``session_id`` is passed to ``client.query`` (it labels the message; it does not choose a session).
    """
    turn = Turn()
    texts: list[str] = []
    await client.query(prompt, session_id=session_id)
    async for message in client.receive_response():
        turn.messages += 1
        if observe is not None:
            observe(message)
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            for block in message.content:
                if isinstance(block, TextBlock):
                    texts.append(block.text)
                elif isinstance(block, ToolUseBlock):
                    turn.tool_calls += 1
        elif isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            turn.compacted = True
        elif isinstance(message, ResultMessage):
            turn.result = message
    turn.text = "\n".join(texts)
    return turn


def task_complete(turn: Turn) -> bool:
    """The default end of a task: a successful result whose text contains :data:`DONE_MARKER`."""
    return not turn.is_error and DONE_MARKER in turn.result_text


class Extractor(Protocol):
    """What takes the checkpoint out of a reply: :func:`~ctxsim.reference.extract_checkpoint`'s signature."""

    def __call__(self, text: str | None, *, stop_reason: str | None = None, is_error: bool = False) -> Checkpoint: ...


async def request_checkpoint(client: ClaudeSDKClient, prompt: str = CHECKPOINT_REQUEST_PROMPT, *,
                             extract: Extractor = extract_checkpoint) -> Checkpoint:
    """Ask the session on ``client`` for its checkpoint and extract it (prompt-too-long gives an unusable one)."""
    turn = await run_turn(client, prompt)
    text = turn.text if not turn.is_error else f"{turn.text}\n{turn.result_text}"
    return extract(text, stop_reason=turn.stop_reason, is_error=turn.is_error)


# --- the loop -----------------------------------------------------------------------------------------------------


class RestartLimitError(RuntimeError):
    """The context filled up again after the allowed number of restarts."""


@dataclass
class RestartResult:
    """How a task went through :func:`run_with_restarts`."""

    result: str
    """The final turn's result text."""
    continuation_count: int
    """Restarts: sessions after the first."""
    session_ids: list[str] = field(default_factory=list)
    """Every session's id, in order."""
    checkpoints: list[Checkpoint] = field(default_factory=list)
    """The checkpoint taken at each restart, in order."""
    turns: int = 0
    """Work turns over all sessions (checkpoint turns not counted)."""


@dataclass
class SessionState:
    """One session's tracker and policy, fed the work turns' messages (a part of :class:`RestartLoop`)."""

    tracker: SessionTracker
    policy: PressurePolicy
    tool_calls: int = 0
    """Main-chain tool calls made in the session so far (the policy's ``max_tool_calls`` fallback)."""

    def observe(self, message: Any) -> None:
        """Feed a work turn's message to the tracker; a compaction re-arms the policy."""
        self.tracker.observe(message)
        if isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            self.policy.reset()  # a compaction re-arms the policy

    def window(self) -> int | None:
        """The window the tracker knows of, if any."""
        window = getattr(self.tracker, "window", None)
        value = window() if callable(window) else None
        return value if isinstance(value, int) and value > 0 else None

    def decide(self, turn: Turn) -> Action:
        """The policy's word at the end of ``turn``; a turn rejected as prompt-too-long is a restart."""
        self.tool_calls += turn.tool_calls
        if turn.is_error and is_prompt_too_long(f"{turn.text}\n{turn.result_text}"):
            return Action.RESTART  # the context is already over the window
        return self.policy.decide(self.tracker.context_tokens(), window=self.window(),
                                  tool_calls=self.tool_calls)


async def run_with_restarts(
    prompt: str,
    *,
    options: ClaudeAgentOptions | None = None,
    policy: PressurePolicy | None = None,
    tracker_factory: Callable[[], SessionTracker] = ContextTracker,
    lifecycle_factory: Callable[[], SessionLifecycle] = SessionLifecycle,
    max_restarts: int = 10,
    max_turns: int = 1_000,
    is_done: Callable[[Turn], bool] = task_complete,
    continue_prompt: str = CONTINUE_PROMPT,
    wind_down_prompt: str = WIND_DOWN_PROMPT,
    client_factory: Callable[[ClaudeAgentOptions], ClaudeSDKClient] = ClaudeSDKClient,
) -> RestartResult:
    """Run the task that ``prompt`` starts, restarting with a checkpoint whenever ``policy`` says so.

    ``options`` are used for every session with ``resume``, ``continue_conversation`` and ``fork_session``
    cleared; ``policy`` (default: restart at 90%) is copied fresh for each session; ``tracker_factory`` and
    ``lifecycle_factory`` make one tracker and one lifecycle per session. At most ``max_restarts`` restarts, then
    :class:`RestartLimitError`; at most ``max_turns`` turns per session, then ``RuntimeError``.
    """
    loop = RestartLoop(options=options, policy=policy or PressurePolicy(), tracker_factory=tracker_factory,
                       lifecycle_factory=lifecycle_factory, max_restarts=max_restarts, max_turns=max_turns,
                       is_done=is_done, continue_prompt=continue_prompt, wind_down_prompt=wind_down_prompt,
                       client_factory=client_factory)
    return await loop.run(prompt)


@dataclass
class RestartLoop:
    """:func:`run_with_restarts` in parts: each step of the loop is a method, so a variant (a test's, or one of
    :mod:`ctxsim.loops.mutants`, each breaking one guarantee) overrides one step and keeps the others.

    The fields are :func:`run_with_restarts`' keywords; :meth:`run` runs a task.
    """

    options: ClaudeAgentOptions | None = None
    """Every session's options (``resume``, ``continue_conversation`` and ``fork_session`` cleared)."""
    policy: PressurePolicy = field(default_factory=PressurePolicy)
    """The policy's settings, copied fresh for each session."""
    tracker_factory: Callable[[], SessionTracker] = ContextTracker
    """Makes each session's tracker."""
    lifecycle_factory: Callable[[], SessionLifecycle] = SessionLifecycle
    """Makes each session's lifecycle."""
    max_restarts: int = 10
    """Restarts allowed before :class:`RestartLimitError`."""
    max_turns: int = 1_000
    """Turns allowed in one session before ``RuntimeError``."""
    is_done: Callable[[Turn], bool] = task_complete
    """Whether a turn ends the task."""
    continue_prompt: str = CONTINUE_PROMPT
    """The prompt of every work turn after a session's first."""
    wind_down_prompt: str = WIND_DOWN_PROMPT
    """The prompt after the policy says ``WIND_DOWN``."""
    client_factory: Callable[[ClaudeAgentOptions], ClaudeSDKClient] = ClaudeSDKClient
    """Makes each session's client."""

    def session_options(self) -> ClaudeAgentOptions:
        """The options of every session: the given ones, resuming nothing."""
        return replace(self.options or ClaudeAgentOptions(), resume=None, continue_conversation=False,
                       fork_session=False)

    def new_session(self) -> SessionState:
        """A new session's tracker and policy: a fresh tracker, and the policy's settings with no history."""
        return SessionState(self.tracker_factory(), self.policy.fresh())

    def next_prompt(self, action: Action) -> str:
        """The prompt after a work turn the policy answered with ``action`` (not a restart)."""
        return self.wind_down_prompt if action is Action.WIND_DOWN else self.continue_prompt

    def extract(self, text: str | None, *, stop_reason: str | None = None, is_error: bool = False) -> Checkpoint:
        """The checkpoint in the reply to the checkpoint request (:func:`~ctxsim.reference.extract_checkpoint`)."""
        return extract_checkpoint(text, stop_reason=stop_reason, is_error=is_error)

    async def checkpoint(self, client: ClaudeSDKClient) -> Checkpoint:
        """The old session's checkpoint, asked on its own client (never shown to its tracker or policy)."""
        return await request_checkpoint(client, extract=self.extract)

    def continuation(self, checkpoint: Checkpoint, prompt: str) -> str:
        """The first prompt of the next session, after a session started with ``prompt`` gave ``checkpoint``."""
        return build_continuation_prompt(checkpoint)

    async def run(self, prompt: str) -> RestartResult:
        """Run the task that ``prompt`` starts (see :func:`run_with_restarts`)."""
        base = self.session_options()
        outcome = RestartResult(result="", continuation_count=0)
        current = prompt
        while True:
            lifecycle = self.lifecycle_factory()
            lifecycle.start()
            session = self.new_session()
            async with self.client_factory(replace(base)) as client:
                next_prompt = current
                for _ in range(self.max_turns):
                    turn = await run_turn(client, next_prompt, observe=session.observe)
                    outcome.turns += 1
                    if turn.session_id and turn.session_id not in outcome.session_ids:
                        outcome.session_ids.append(turn.session_id)
                    if self.is_done(turn):
                        lifecycle.finish()
                        outcome.result = turn.result_text
                        return outcome
                    action = session.decide(turn)
                    if action is Action.RESTART:
                        break
                    next_prompt = self.next_prompt(action)
                else:
                    lifecycle.finish()
                    raise RuntimeError(f"ctxsim: run_with_restarts: session {outcome.continuation_count + 1} ran "
                                       f"{self.max_turns} turns without finishing or restarting "
                                       f"(max_turns={self.max_turns})")
                if outcome.continuation_count >= self.max_restarts:
                    lifecycle.finish()
                    raise RestartLimitError(
                        f"ctxsim: run_with_restarts: the context filled up again after "
                        f"{outcome.continuation_count} restarts (max_restarts={self.max_restarts})")
                lifecycle.checkpoint()
                checkpoint = await self.checkpoint(client)  # on the old session; never shown to tracker or policy
            lifecycle.finish()
            outcome.checkpoints.append(checkpoint)
            outcome.continuation_count += 1
            current = self.continuation(checkpoint, current)
