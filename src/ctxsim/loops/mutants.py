"""Behavioural mutants of the reference restart loop: one per bug class, to measure whether the task corpus catches
each.

Each mutant (a :class:`~ctxsim.trackers.catalogue.mutants.Mutant`, the one mutant class) is the reference loop
(:class:`~ctxsim.reference.RestartLoop`, what :func:`~ctxsim.reference.run_with_restarts` runs) with one guarantee of
one of its parts broken: the pressure policy (:class:`~ctxsim.reference.PressurePolicy`: thresholds ``>=``,
percentages of the effective window, events once per crossing, hysteresis, graduated wind-down then restart, the
masking zone, unknown never fires), the loop (a policy fresh per session and re-armed by a compaction, the checkpoint
carried into the next session, the task's end) or checkpoint extraction (:func:`~ctxsim.reference.extract_checkpoint`:
the last block, an unclosed block, the whole reply, a refusal, an error, a cut-off reply). Its :attr:`Mutant.edit` is
a loop function taking a :class:`~ctxsim.loops.LoopRig`, run exactly as
``pytest --ctx-scenarios --ctx-loop=ctxsim.loops.mutants:<function>`` runs a loop of yours (every mutant is a function
of this module). ``benchmarks/bench_adequacy.py`` runs the corpus's task scenarios alone against each and prints how
many it kills; a mutant no run can tell from the reference says why in :attr:`Mutant.equivalent`.

These are not catalogue entries (:data:`ctxsim.loops.CATALOGUE` holds loops with a reported bug, such as the
checkpoint turn run through the pressure check, and is not repeated here); the held-out loops of
``tests/loops/test_adequacy.py``, written independently of this module, check that the corpus catches the same bug
classes in code that is not a one-line edit of the reference.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import fields, replace
from typing import Any

from ..reference import (
    Action,
    Checkpoint,
    PolicyState,
    PressurePolicy,
    RestartLoop,
    RestartResult,
    SessionState,
    checkpoint_blocks,
    extract_checkpoint,
    unfence,
)
from ..trackers.catalogue.mutants import Mutant
from ._rig import LoopRig

__all__ = ["MUTANTS", "reference"]

_LoopFunction = Callable[[LoopRig], Awaitable[RestartResult]]
_LoopMutant = Mutant[_LoopFunction]
"""A mutant of the reference loop: :class:`ctxsim.trackers.catalogue.mutants.Mutant` (the one mutant class) whose
``edit`` is a loop function of this module taking a rig, named by its ``spec`` (``ctxsim.loops.mutants:<function>``)."""


# --- the policy ---------------------------------------------------------------------------------------------------


class _StrictThreshold(PressurePolicy):
    def threshold_tokens(self, level: float | None = None, window: int | None = None) -> int:
        at = super().threshold_tokens(level, window)
        return at + 1 if level is None else at  # fires above the threshold only: ratio > 0.9


class _FullWindow(PressurePolicy):
    def effective_window(self, window: int | None = None) -> int:
        return self.window_for(window)


class _FiresEveryEvaluation(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        if self._state is PolicyState.FIRED:
            self._state = PolicyState.ARMED
        return super().decide(tokens, window=window, tool_calls=tool_calls)


class _RearmsWithoutHysteresis(PressurePolicy):
    def _rearm_below(self, window: int) -> int:
        return self.threshold_tokens(window=window)


class _NeverRearms(PressurePolicy):
    def _rearm_below(self, window: int) -> int:
        return 0


class _WindsDownEveryTime(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        if self._state is PolicyState.WOUND_DOWN:
            self._state = PolicyState.ARMED
        self._wound_down = False
        return super().decide(tokens, window=window, tool_calls=tool_calls)


class _NoWindDown(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        self._wound_down = True  # as if it had wound down already: the first crossing restarts
        return super().decide(tokens, window=window, tool_calls=tool_calls)


class _NoMaskZone(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        action = super().decide(tokens, window=window, tool_calls=tool_calls)
        return Action.CONTINUE if action is Action.MASK else action


class _UnknownAsZero(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        return super().decide(0 if tokens is None else tokens, window=window, tool_calls=tool_calls)


class _UnknownKeepsLast(PressurePolicy):
    _last: int | None = None

    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        self._last = tokens if tokens is not None else self._last
        return super().decide(self._last, window=window, tool_calls=tool_calls)


class _UnknownAsOver(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        if tokens is None:
            tokens = self.threshold_tokens(window=window)
        return super().decide(tokens, window=window, tool_calls=tool_calls)


class _ToolCallsStrict(PressurePolicy):
    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        calls = None if tool_calls is None else tool_calls - 1  # the fallback fires past max_tool_calls: > not >=
        return super().decide(tokens, window=window, tool_calls=calls)


# --- the loop -----------------------------------------------------------------------------------------------------


class _NoResetOnCompaction(SessionState):
    def observe(self, message: Any) -> None:
        self.tracker.observe(message)


class _KeepsPolicyOnCompaction(RestartLoop):
    def new_session(self) -> SessionState:
        return _NoResetOnCompaction(self.tracker_factory(), self.policy.fresh())


class _PolicyAcrossSessions(RestartLoop):
    def new_session(self) -> SessionState:
        return SessionState(self.tracker_factory(), self.policy)  # the same policy object, never fresh


class _ToolCallsAcrossSessions(RestartLoop):
    _previous: SessionState | None = None

    def new_session(self) -> SessionState:
        session = super().new_session()
        if self._previous is not None:
            session.tool_calls = self._previous.tool_calls  # counted on from the last session, not from 0
        self._previous = session
        return session


class _FirstCheckpointAlways(RestartLoop):
    _first: Checkpoint | None = None

    def continuation(self, checkpoint: Checkpoint, prompt: str) -> str:
        self._first = self._first or checkpoint
        return super().continuation(self._first, prompt)


class _CheckpointNotCarried(RestartLoop):
    def continuation(self, checkpoint: Checkpoint, prompt: str) -> str:
        return prompt  # the new session starts from the prompt the last one started from


class _StopsAtWindDown(RestartLoop):
    def next_prompt(self, action: Action) -> str:
        if action is Action.WIND_DOWN:
            self.is_done = lambda turn: True  # the wound-down turn is taken as the end of the task
        return super().next_prompt(action)


# --- checkpoint extraction ----------------------------------------------------------------------------------------


def _extracting(extract: Callable[[str, Checkpoint, str | None], Checkpoint]) -> type[RestartLoop]:
    """The reference loop whose extractor passes the reference's answer through ``extract(text, answer,
    stop_reason)`` (the mutation)."""

    class Extracting(RestartLoop):
        def extract(self, text: str | None, *, stop_reason: str | None = None, is_error: bool = False) -> Checkpoint:
            answer = extract_checkpoint(text, stop_reason=stop_reason, is_error=is_error)
            return extract(text if isinstance(text, str) else "", answer, stop_reason)

    return Extracting


def _first_block(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    if answer.fallback != "last_block":
        return answer
    first = next(c for c in checkpoint_blocks(text) if c)
    return replace(answer, text=first)


def _template_echo_taken(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    blocks = [c for c in checkpoint_blocks(text) if c]
    return replace(answer, text=blocks[-1]) if len(blocks) > 1 else answer  # an echo of the template wins if last


def _unclosed_dropped(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    return Checkpoint("", "empty_reply") if answer.fallback == "unclosed" else answer


def _no_whole_reply(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    return Checkpoint("", "empty_reply") if answer.fallback == "whole_reply" else answer


def _refusal_as_state(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    return Checkpoint(unfence(text), "whole_reply") if answer.fallback == "refusal" else answer


def _error_as_state(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    if answer.fallback in ("prompt_too_long", "error"):
        return Checkpoint(text.strip(), "whole_reply")
    return answer


def _cut_off_as_complete(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    return replace(answer, complete=True) if answer.fallback == "truncated" else answer


def _empty_block_as_state(text: str, answer: Checkpoint, stop_reason: str | None) -> Checkpoint:
    return Checkpoint(text.strip(), "whole_reply") if answer.fallback == "empty_block" else answer


# --- as loops -----------------------------------------------------------------------------------------------------


def _policy_as(cls: type[PressurePolicy], policy: PressurePolicy) -> PressurePolicy:
    return cls(**{f.name: getattr(policy, f.name) for f in fields(policy) if f.init})


def _loop(name: str, loop: type[RestartLoop] = RestartLoop,
          policy: type[PressurePolicy] = PressurePolicy) -> _LoopFunction:
    """The reference loop (as :func:`ctxsim.runner.reference_loop` builds it from the rig) made of ``loop`` and
    ``policy``, as a function of this module called ``name`` with ``_`` for ``-``."""

    async def run(rig: LoopRig) -> RestartResult:
        parts = loop(options=rig.options, policy=_policy_as(policy, rig.make_policy()),
                     tracker_factory=rig.make_tracker, lifecycle_factory=rig.make_lifecycle,
                     max_restarts=rig.max_restarts)
        return await parts.run(rig.prompt)

    run.__name__ = run.__qualname__ = name.replace("-", "_")
    run.__module__ = __name__
    return run


def _mutant(name: str, bug: str, *, loop: type[RestartLoop] = RestartLoop,
            policy: type[PressurePolicy] = PressurePolicy, equivalent: str = "") -> _LoopMutant:
    edit = _loop(name, loop, policy)
    return Mutant(name, bug, edit, equivalent, spec=f"{__name__}:{edit.__name__}")


reference = _loop("reference")
"""The reference loop itself, built the same way (``--ctx-loop=ctxsim.loops.mutants:reference``): what every
mutant edits, and keeps every invariant on the corpus."""

_LOOP_ONLY = "the reference loop leaves the session at RESTART, and after WIND_DOWN (the one event it survives) "


MUTANTS: dict[str, _LoopMutant] = {m.name: m for m in (
    # the policy's thresholds
    _mutant("threshold-strict", "fires above the threshold only (ratio > 0.9), not at it",
           policy=_StrictThreshold),
    _mutant("reserve-ignored", "percentages of the full window: the reserve (autocompact buffer) left in",
           policy=_FullWindow),
    # events once per crossing, and re-arming
    _mutant("fires-every-evaluation", "an event fires again at every evaluation at or over the threshold",
           policy=_FiresEveryEvaluation,
           equivalent=("FIRED is set only where decide() answers RESTART (the threshold, or the tool-call "
                      "fallback), and the reference loop then leaves the session and gives the next one a fresh "
                      "policy: a FIRED policy is never evaluated again, so the mutation never runs")),
    _mutant("rearms-without-hysteresis", "re-armed as soon as the pressure is below the threshold, not below "
                                        "restart_at - hysteresis",
           policy=_RearmsWithoutHysteresis,
           equivalent=(_LOOP_ONLY + "the re-arm changes the state only from WOUND_DOWN, and the "
                                   "wind-down stays spent until reset(): re-armed or not, the policy answers RESTART "
                                   "at its next evaluation at or over the threshold and MASK or CONTINUE (by level) "
                                   "below it, and the tool-call fallback reads no state; so every answer, hence every "
                                   "action of the loop, is the same in every run, whatever the pressure does (a "
                                   "compaction resets both alike)")),
    _mutant("never-rearms", "never re-armed by the pressure falling (only by reset())",
           policy=_NeverRearms,
           equivalent=(_LOOP_ONLY + "re-arming a wound-down policy changes none of its answers "
                                   "(RESTART at the next evaluation at or over the threshold either way, MASK or "
                                   "CONTINUE by level below it; see rearms-without-hysteresis)")),
    # graduated zones
    _mutant("winds-down-every-time", "graduated: every evaluation at or over the threshold winds down, the repeat "
                                    "never restarts", policy=_WindsDownEveryTime),
    _mutant("no-wind-down", "graduated: the first crossing restarts, without the wind-down turn",
           policy=_NoWindDown),
    _mutant("no-mask-zone", "the masking zone never returned (CONTINUE instead of MASK)",
           policy=_NoMaskZone,
           equivalent=("the reference loop sends the same prompt after MASK as after CONTINUE (masking is "
                      "the agent's business, design 004) and MASK changes no state of the policy, so no action of the "
                      "loop depends on it")),
    # unknown
    _mutant("unknown-as-zero", "an unknown count (None) read as 0", policy=_UnknownAsZero,
           equivalent=("0 and None both answer CONTINUE by level (below every zone) and fire nothing; the "
                      "only other effect of 0 is re-arming a wound-down policy, which changes none of its answers "
                      "(see rearms-without-hysteresis); the tool-call fallback reads no count")),
    _mutant("unknown-keeps-last", "an unknown count (None) read as the last known one",
           policy=_UnknownKeepsLast),
    _mutant("unknown-as-over", "an unknown count (None) read as at the threshold",
           policy=_UnknownAsOver),
    _mutant("tool-calls-strict", "the tool-call fallback fires past max_tool_calls (>), not at it (>=)",
           policy=_ToolCallsStrict),
    # the loop
    _mutant("policy-across-sessions", "one policy for every session, not a fresh one: a spent wind-down stays spent",
           loop=_PolicyAcrossSessions),
    _mutant("no-reset-on-compaction", "a compact_boundary does not re-arm the policy",
           loop=_KeepsPolicyOnCompaction),
    _mutant("tool-calls-across-sessions", "the tool-call count of the fallback carried over from earlier sessions",
           loop=_ToolCallsAcrossSessions),
    _mutant("first-checkpoint-always", "every new session continues from the first checkpoint, not the latest",
           loop=_FirstCheckpointAlways),
    _mutant("checkpoint-not-carried", "the new session starts from the last session's first prompt, not from the "
                                     "checkpoint", loop=_CheckpointNotCarried),
    _mutant("stops-at-wind-down", "the turn after a wind-down is taken as the end of the task",
           loop=_StopsAtWindDown),
    # checkpoint extraction
    _mutant("first-block", "several blocks: the first is taken, not the last",
           loop=_extracting(_first_block)),
    _mutant("template-echo-taken", "several blocks: the last is taken even when it only echoes the request's "
                                    "template", loop=_extracting(_template_echo_taken)),
    _mutant("unclosed-dropped", "an unclosed block (reply not cut off) taken as no state",
           loop=_extracting(_unclosed_dropped)),
    _mutant("no-whole-reply", "a reply without tags taken as no state, not as the whole-reply fallback",
           loop=_extracting(_no_whole_reply)),
    _mutant("refusal-as-state", "a refusal taken as the checkpoint (the whole reply)",
           loop=_extracting(_refusal_as_state)),
    _mutant("error-as-state", "an error result (Prompt is too long) taken as the checkpoint",
           loop=_extracting(_error_as_state)),
    _mutant("empty-block-as-state", "an empty block taken as the checkpoint (the whole reply)",
           loop=_extracting(_empty_block_as_state)),
    _mutant("cut-off-as-complete", "a reply cut off by max_tokens taken as complete (no note that it is cut off)",
           loop=_extracting(_cut_off_as_complete)),
)}
"""Every mutant, by name."""

_BY_FUNCTION = {m.edit.__name__: m.edit for m in MUTANTS.values()}


def __getattr__(name: str) -> _LoopFunction:
    """Each mutant's loop function by its name, as ``--ctx-loop=ctxsim.loops.mutants:<function>`` names it
    (``Mutant.spec``): the functions are built by :func:`_mutant`, so they are looked up here (PEP 562)."""
    try:
        return _BY_FUNCTION[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
