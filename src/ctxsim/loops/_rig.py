"""What a restart loop under test is given (:class:`LoopRig`), and the probes that watch the parts it uses.

:mod:`ctxsim.loops` hands a :class:`LoopRig` to the loop it checks. The rig's factories make the tracker and the
lifecycle the loop may use wrapped in probes (:class:`TrackerProbe`, :class:`LifecycleProbe`) that record what
the checks need: a tracker carrying state from one session into the next, a finished lifecycle started again.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from ..agent import LoopPrompts, Task
from ..reference import ContextTracker, LifecycleError, PressurePolicy, SessionLifecycle
from ..trackers import Tracker, TrackerFactory

__all__ = ["LifecycleProbe", "LoopRig", "TrackerProbe"]


def _session_of(message: Any) -> str | None:
    value = getattr(message, "session_id", None)
    if value is None:
        data = getattr(message, "data", None)
        value = data.get("session_id") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else None


class TrackerProbe:
    """A tracker as the loop sees it, recording which sessions it observes between resets.

    Everything but ``observe`` and ``reset`` passes through to the wrapped tracker.
    """

    def __init__(self, tracker: Tracker, index: int) -> None:
        self.tracker = tracker
        self.index = index
        """1-based, in the order the loop made its trackers."""
        self.carried: list[tuple[str, str, int | None]] = []
        """``(old session, new session, context_tokens() then)`` each time state crossed a session boundary."""
        self.resets = 0
        self._session: str | None = None

    def observe(self, message: Any) -> None:
        session = _session_of(message)
        if session is not None:
            if self._session is not None and session != self._session:
                self.carried.append((self._session, session, self.tracker.context_tokens()))
            self._session = session
        self.tracker.observe(message)

    def reset(self) -> None:
        self.resets += 1
        self._session = None
        reset = getattr(self.tracker, "reset", None)
        if callable(reset):
            reset()

    def context_tokens(self) -> int | None:
        return self.tracker.context_tokens()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tracker, name)


class LifecycleProbe(SessionLifecycle):
    """A :class:`~ctxsim.reference.SessionLifecycle` that reports every refused move to its rig."""

    def __init__(self, index: int, errors: list[str]) -> None:
        super().__init__()
        self.index = index
        """1-based, in the order the loop made its lifecycles."""
        self._errors = errors

    def _move(self, verb: str, allowed: Any, to: Any) -> None:
        try:
            super()._move(verb, allowed, to)
        except LifecycleError as error:
            self._errors.append(f"lifecycle #{self.index}: {error}")
            raise


@dataclass
class LoopRig:
    """What a restart loop under test is given: the task's prompt and the parts it may use.

    Build clients with ``ClaudeSDKClient(rig.options)`` (or :meth:`client`): they talk to the fake agent. Use
    :meth:`make_tracker`, :meth:`make_lifecycle` and :meth:`make_policy` where the loop makes its own, so the
    checks can see them; a loop that makes its own parts is still judged on everything else.
    """

    task: Task
    policy: PressurePolicy
    """The settings the loop should use; the checks compute true crossings from its threshold."""
    options: ClaudeAgentOptions
    max_restarts: int
    tracker_factory: TrackerFactory = ContextTracker
    trackers: list[TrackerProbe] = field(default_factory=list)
    lifecycles: list[LifecycleProbe] = field(default_factory=list)
    lifecycle_errors: list[str] = field(default_factory=list)
    prompts: LoopPrompts = field(default_factory=LoopPrompts)
    """What the loop declared it says (the fake agent classifies its prompts by these)."""

    @property
    def prompt(self) -> str:
        """The prompt that starts the task (asking for the declared done marker)."""
        return self.task.prompt_for(self.prompts.done_marker)

    @property
    def threshold_tokens(self) -> int:
        """The restart threshold in tokens, for the task's window."""
        return self.policy.threshold_tokens(window=self.task.window)

    def make_tracker(self) -> TrackerProbe:
        """A new tracker (watched for state carried across sessions)."""
        probe = TrackerProbe(self.tracker_factory(), len(self.trackers) + 1)
        self.trackers.append(probe)
        return probe

    def make_lifecycle(self) -> LifecycleProbe:
        """A new session lifecycle (watched for reuse)."""
        probe = LifecycleProbe(len(self.lifecycles) + 1, self.lifecycle_errors)
        self.lifecycles.append(probe)
        return probe

    def make_policy(self) -> PressurePolicy:
        """A fresh copy of :attr:`policy`."""
        return self.policy.fresh()

    def client(self, options: ClaudeAgentOptions | None = None) -> ClaudeSDKClient:
        """A real ``ClaudeSDKClient`` (on the fake agent), with ``options`` or the rig's."""
        return ClaudeSDKClient(options or replace(self.options))


