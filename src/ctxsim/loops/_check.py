"""Checks for a restart loop — yours or the reference — driven against the fake agent through the real SDK.

A restart loop is a callable (sync or async) taking a :class:`LoopRig`: the task prompt, the SDK options to build
clients with, and factories for the tracker, lifecycle and policy it may use. :func:`run_loop` runs it with every
``ClaudeSDKClient`` it builds talking to a :class:`~ctxsim.agent.FakeAgent` (``patch_sdk``), then judges what
happened against the world's truth (the invariants of :mod:`ctxsim.loops`); :func:`check_restart_loop`
raises :class:`LoopCheckError` listing every broken invariant, each line starting ``ctxsim:`` and naming it.

**What the loop declares.** The loop function may carry two attributes (or they are passed as keywords, which
win): ``policy``, the :class:`~ctxsim.reference.PressurePolicy` it restarts by (or a fraction: ``0.8`` is 80% of
the task's window), from which the true crossings are computed and which :attr:`LoopRig.policy` hands it; and
``prompts``, the :class:`~ctxsim.agent.LoopPrompts` it sends (its checkpoint request, continuation prompt, "go on"
prompts and done marker), by which the fake agent classifies every prompt. Without them: restart at 90% and design
003's prompts::

    async def my_loop(rig): ...
    my_loop.policy = 0.8
    my_loop.prompts = LoopPrompts(continuation="{task}\n\nResume from this checkpoint:\n{checkpoint}")

    def my_loop(rig: LoopRig) -> int:
        return anyio.run(partial(my_agent.run, rig.prompt, options=rig.options, make_tracker=rig.make_tracker))

    check_restart_loop(my_loop, Task.uniform(40, tokens=7_400, window=100_000, baseline=10_000))

**What the loop returns**: its restart count (``int``, or an object with ``continuation_count``), checked by
``restart-count`` (docs/how-to/restart-loop.md has the whole contract, its checkpoint step too).
The catalogue of design-shaped buggy loops, each caught by these checks, is :data:`ctxsim.loops.CATALOGUE`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypedDict

import anyio
from claude_agent_sdk import ClaudeAgentOptions

from .._sync import run_blocking
from ..agent import FakeAgent, LoopPrompts, Task
from ..reference import ContextTracker, PressurePolicy
from ..sdk import patch_sdk
from ..trackers import TrackerFactory
from ._judge import LoopCheckError, LoopReport, judge
from ._rig import LoopRig

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "LoopOptions",
    "LoopSetup",
    "arun_loop",
    "check_restart_loop",
    "declared_policy",
    "declared_prompts",
    "fake_agent",
    "run_loop",
]

def declared_policy(loop: Any, task: Task | None = None) -> PressurePolicy | None:
    """The policy ``loop`` declares (its ``policy`` attribute: a :class:`PressurePolicy` or a fraction of the
    window), None when it declares none. Raises ``TypeError`` for anything else."""
    value = getattr(loop, "policy", None)
    if value is None or isinstance(value, PressurePolicy):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return PressurePolicy(restart_at=float(value), window=task.window if task is not None else None)
    raise TypeError(f"ctxsim: {getattr(loop, '__name__', loop)!r}.policy is a {type(value).__name__}: declare a "
                    f"PressurePolicy or a fraction of the window (0.8 is 80%)")


def declared_prompts(loop: Any) -> LoopPrompts | None:
    """The prompts ``loop`` declares (its ``prompts`` attribute), None when it declares none."""
    value = getattr(loop, "prompts", None)
    if value is None or isinstance(value, LoopPrompts):
        return value
    raise TypeError(f"ctxsim: {getattr(loop, '__name__', loop)!r}.prompts is a {type(value).__name__}: declare "
                    f"a ctxsim.agent.LoopPrompts")


@dataclass(frozen=True)
class LoopSetup:
    """How :func:`run_loop` sets up a run: the keywords it takes besides ``async_backend``."""

    checkpoints: str | Sequence[str] | Mapping[int, str] = "well_formed"
    """How the agent answers checkpoint requests (:data:`ctxsim.agent.DEGRADATIONS`; see :class:`FakeAgent`)."""
    policy: PressurePolicy | None = None
    """The setting the loop is told to use and true crossings are computed from (default: restart at 90% of
    the task's window)."""
    max_restarts: int = 10
    """The loop's bound on restarts."""
    tracker_factory: TrackerFactory = ContextTracker
    """What :meth:`LoopRig.make_tracker` wraps."""
    include_partial_messages: bool = False
    """Set on :attr:`LoopRig.options`."""
    hang_timeout: float | None = 60.0
    """Seconds after which an async loop counts as hung (a guard, not a speed check)."""
    name: str | None = None
    """How messages name the loop (default: its ``__name__``)."""
    prompts: LoopPrompts | None = None
    """What the loop says (default: the loop's ``prompts`` attribute, else design 003's prompts)."""

    def prepare(self, loop: Callable[[LoopRig], Any], task: Task) -> LoopReport:
        """An agent and a rig for one run, in an empty report."""
        settings = self.policy or declared_policy(loop, task) or PressurePolicy(window=task.window)
        prompts = self.prompts or declared_prompts(loop) or LoopPrompts()
        agent = FakeAgent(task, checkpoints=self.checkpoints, max_connections=2 * (self.max_restarts + 1) + 2,
                          prompts=prompts)
        rig = LoopRig(task, settings, ClaudeAgentOptions(include_partial_messages=self.include_partial_messages),
                      self.max_restarts, self.tracker_factory, prompts=prompts)
        label = self.name or getattr(loop, "__name__", None) or type(loop).__name__
        return LoopReport(label, agent, rig, settings.threshold_tokens(window=task.window))

    def finish(self, report: LoopReport) -> LoopReport:
        """Judge the run."""
        judge(report, lossless=report.agent.lossless)
        return report


async def _await(outcome: Any, hang_timeout: float | None) -> Any:
    with anyio.fail_after(hang_timeout):
        return await outcome


class LoopOptions(TypedDict, total=False):
    """The keywords of a loop run, said once: :class:`LoopSetup`'s fields (its defaults are theirs), which
    :func:`arun_loop`, :func:`run_loop` and :func:`check_restart_loop` take and hand to :class:`LoopSetup`."""

    checkpoints: str | Sequence[str] | Mapping[int, str]
    policy: PressurePolicy | None
    max_restarts: int
    tracker_factory: TrackerFactory
    include_partial_messages: bool
    hang_timeout: float | None
    name: str | None
    prompts: LoopPrompts | None


async def arun_loop(loop: Callable[[LoopRig], Any], task: Task, **options: Unpack[LoopOptions]) -> LoopReport:
    """:func:`run_loop` from async code, for an async ``loop`` (a sync one would block the event loop).

    The keywords are :class:`LoopSetup`'s fields (:class:`LoopOptions`).
    """
    setup = LoopSetup(**options)
    report = setup.prepare(loop, task)
    with patch_sdk(report.agent.transport):
        try:
            outcome = loop(report.rig)
            report.returned = await _await(outcome, setup.hang_timeout) if inspect.isawaitable(outcome) else outcome
        except Exception as error:  # the loop's failure is part of the verdict
            report.error = error
    return setup.finish(report)


def run_loop(loop: Callable[[LoopRig], Any], task: Task, *, async_backend: str = "asyncio",
             **options: Unpack[LoopOptions]) -> LoopReport:
    """Run ``loop`` against a fake agent working on ``task`` and judge what it did.

    ``loop(rig)`` may be synchronous, or return an awaitable (an ``async def``), which runs on ``async_backend``.
    The other keywords are :class:`LoopSetup`'s fields (:class:`LoopOptions`): ``checkpoints`` (the agent's
    checkpoint replies), ``policy`` (the setting the loop is told to use, from which true crossings are computed;
    default: the loop's ``policy`` attribute, else 90%), ``max_restarts``, ``tracker_factory``,
    ``include_partial_messages``, ``hang_timeout``, ``name``, ``prompts`` (default: the loop's ``prompts``
    attribute, else design 003's). The loop's own exception is judged, never raised. The report's ``violations``
    list every broken invariant."""
    __tracebackhide__ = True  # a failing test shows the user's frames first
    setup = LoopSetup(**options)
    report = setup.prepare(loop, task)
    with patch_sdk(report.agent.transport):
        try:
            outcome = loop(report.rig)
            if inspect.isawaitable(outcome):
                outcome = run_blocking(partial(_await, outcome, setup.hang_timeout), backend=async_backend)
            report.returned = outcome
        except Exception as error:  # the loop's failure is part of the verdict
            report.error = error
    return setup.finish(report)


def check_restart_loop(loop: Callable[[LoopRig], Any], task: Task, *, async_backend: str = "asyncio",
                       **options: Unpack[LoopOptions]) -> LoopReport:
    """:func:`run_loop`, raising :class:`LoopCheckError` (one ``ctxsim:`` line per broken invariant; from the loop's
    exception, if any) unless the loop kept every invariant. Returns the report when it did."""
    __tracebackhide__ = True
    report = run_loop(loop, task, async_backend=async_backend, **options)
    if not report.ok:
        raise LoopCheckError(report) from report.error
    return report


@contextmanager
def fake_agent(task: Task, *, checkpoints: str | Sequence[str] | Mapping[int, str] = "well_formed",
               max_prompts: int | None = None, max_connections: int | None = None,
               prompts: LoopPrompts | None = None) -> Iterator[FakeAgent]:
    """Within the block, every ``ClaudeSDKClient`` / ``query()`` talks to a :class:`FakeAgent` working on ``task``.

    The keywords are :class:`FakeAgent`'s. For tests that drive a loop by hand and look at ``agent.steps`` /
    ``agent.connections`` themselves.
    """
    agent = FakeAgent(task, checkpoints=checkpoints, max_prompts=max_prompts, max_connections=max_connections,
                      prompts=prompts)
    with patch_sdk(agent.transport):
        yield agent
