"""The reference pressure policy: what to do about a context of N tokens.

:class:`PressurePolicy` turns a token count (from a tracker) and a window into an :class:`Action`. It covers the
policies of the seed designs:

- a single restart threshold (seeds 000 and 003: restart at 90%)::

      PressurePolicy(restart_at=0.90)

- the same with a tool-call fallback (seed 002: 80%, or 100 tool calls)::

      PressurePolicy(restart_at=0.80, max_tool_calls=100)

- graduated zones (seed 004: continue below 70%, mask 70-90%, wind down the first time at 90% or more, restart
  when it repeats)::

      PressurePolicy(mask_at=0.70, restart_at=0.90, wind_down=True)

Percentages are of the **effective** window, ``window - reserve`` (the part of the window the conversation may
fill; Claude Code keeps an autocompact buffer, docs/explanation/windows.md). A threshold in tokens is
``ceil(level x effective window)``, computed exactly: with a 200,000 window and no reserve, 90% is 180,000 tokens,
and 179,999 tokens is below it.

Guarantees:

- **Events fire once per crossing.** ``WIND_DOWN`` and ``RESTART`` are returned at the first evaluation at or
  above the restart threshold, and not again until the policy re-arms: after :meth:`PressurePolicy.reset` (a
  restart or a compaction) or once the pressure has fallen below ``restart_at - hysteresis``.
- **Graduated zones.** With ``wind_down=True`` the first crossing in a session returns ``WIND_DOWN``; the next
  evaluation still at or above the threshold (or the next crossing, if the pressure fell back in between)
  returns ``RESTART``.
- **Zones are levels.** ``MASK`` is returned at every evaluation in ``mask_at .. restart_at`` (seed 004 masks a
  batch of observations per evaluation), and above the threshold once its event has fired.
- **Unknown never fires.** A token count of None (tracking disabled, not known yet) is ``CONTINUE``, except that
  the tool-call fallback still applies.

Call :meth:`PressurePolicy.decide` once per evaluation point; the reference restart loop evaluates once per turn,
at its result, which is where a loop on the SDK can act.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from fractions import Fraction

__all__ = ["DEFAULT_WINDOW", "Action", "PolicyState", "PressurePolicy"]

DEFAULT_WINDOW = 200_000
"""The window assumed when neither the policy nor the caller gives one (every seed design assumes 200k)."""


class Action(str, enum.Enum):
    """What a policy tells the loop to do."""

    CONTINUE = "continue"
    """Below every zone: carry on."""
    MASK = "mask"
    """In the masking zone: shrink old observations (seed 004), carry on."""
    WIND_DOWN = "wind_down"
    """First crossing of the threshold in a graduated policy: finish up; a restart follows if it repeats."""
    RESTART = "restart"
    """Checkpoint and start a fresh session."""


class PolicyState(enum.Enum):
    ARMED = "armed"
    WOUND_DOWN = "wound_down"
    FIRED = "fired"


def _fraction(value: float, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"ctxsim: PressurePolicy.{name} must be a finite number, got {value!r}")
    return Fraction(str(value))  # 0.9 is 9/10 exactly, so 90% of 200,000 is 180,000, not 180,000.00000000003


@dataclass
class PressurePolicy:
    """Decides, from a token count, whether to continue, mask, wind down or restart (see the module docstring)."""

    restart_at: float = 0.90
    """The restart threshold, a fraction of the effective window (1.1 never fires: seed 003's quick disable)."""
    mask_at: float | None = None
    """Start of the masking zone (seed 004: 0.70); None for no masking zone."""
    wind_down: bool = False
    """Graduated: the first crossing winds down, the repeat restarts (seed 004)."""
    window: int | None = None
    """The context window in tokens; None takes the window given to :meth:`decide`, else ``DEFAULT_WINDOW``."""
    reserve: int = 0
    """Tokens kept out of the window (an autocompact buffer); percentages are of ``window - reserve``."""
    hysteresis: float = 0.05
    """How far (a fraction of the effective window) the pressure must fall below ``restart_at`` to re-arm."""
    max_tool_calls: int | None = None
    """Seed 002's fallback: restart once this many tool calls have been made in the session (None: off)."""
    _state: PolicyState = field(default=PolicyState.ARMED, init=False, repr=False)
    _wound_down: bool = field(default=False, init=False, repr=False)
    _tool_armed: bool = field(default=True, init=False, repr=False)

    def __post_init__(self) -> None:
        restart = _fraction(self.restart_at, "restart_at")
        if restart <= 0:
            raise ValueError(f"ctxsim: PressurePolicy.restart_at must be above 0, got {self.restart_at!r}")
        if self.mask_at is not None:
            mask = _fraction(self.mask_at, "mask_at")
            if not 0 < mask < restart:
                raise ValueError(f"ctxsim: PressurePolicy.mask_at must lie between 0 and restart_at "
                                 f"({self.restart_at!r}), got {self.mask_at!r}")
        if _fraction(self.hysteresis, "hysteresis") < 0:
            raise ValueError(f"ctxsim: PressurePolicy.hysteresis must be 0 or more, got {self.hysteresis!r}")
        if self.window is not None:
            self._effective(self.window)
        elif self.reserve < 0:
            raise ValueError(f"ctxsim: PressurePolicy.reserve must be 0 or more, got {self.reserve!r}")
        if self.max_tool_calls is not None and self.max_tool_calls < 1:
            raise ValueError(f"ctxsim: PressurePolicy.max_tool_calls must be 1 or more, got {self.max_tool_calls!r}")

    # sizes -----------------------------------------------------------------------------------------------------

    def window_for(self, window: int | None = None) -> int:
        """The window in force: the policy's own, else ``window``, else ``DEFAULT_WINDOW``."""
        return self.window or window or DEFAULT_WINDOW

    def _effective(self, window: int) -> int:
        if not 0 <= self.reserve < window:
            raise ValueError(f"ctxsim: PressurePolicy.reserve must be 0 or more and below the window "
                             f"({window:,}), got {self.reserve!r}")
        return window - self.reserve

    def effective_window(self, window: int | None = None) -> int:
        """``window - reserve``: what percentages are of."""
        return self._effective(self.window_for(window))

    def threshold_tokens(self, level: float | None = None, window: int | None = None) -> int:
        """The smallest token count at or above ``level`` (default ``restart_at``) of the effective window."""
        fraction = _fraction(self.restart_at if level is None else level, "level")
        return math.ceil(fraction * self.effective_window(window))

    def pressure(self, tokens: int | None, window: int | None = None) -> float | None:
        """``tokens`` as a fraction of the effective window, None when unknown."""
        if tokens is None:
            return None
        return tokens / self.effective_window(window)

    def _rearm_below(self, window: int) -> int:
        level = _fraction(self.restart_at, "restart_at") - _fraction(self.hysteresis, "hysteresis")
        return math.ceil(level * self.effective_window(window))

    # deciding --------------------------------------------------------------------------------------------------

    def zone(self, tokens: int | None, window: int | None = None) -> Action:
        """The level ``tokens`` lies in, without events: CONTINUE, MASK, or RESTART at or above the threshold."""
        if tokens is None:
            return Action.CONTINUE
        if tokens >= self.threshold_tokens(window=window):
            return Action.RESTART
        if self.mask_at is not None and tokens >= self.threshold_tokens(self.mask_at, window):
            return Action.MASK
        return Action.CONTINUE

    def decide(self, tokens: int | None, *, window: int | None = None, tool_calls: int | None = None) -> Action:
        """What to do at an evaluation point where the context holds ``tokens`` (None: unknown).

        ``window`` is the window the tracker knows of (used when the policy has none); ``tool_calls`` the tool
        calls made in the session so far, for the ``max_tool_calls`` fallback.
        """
        level = self.zone(tokens, window)
        event: Action | None = None
        if tokens is not None:
            if tokens < self._rearm_below(self.window_for(window)) and self._state is not PolicyState.ARMED:
                self._state = PolicyState.ARMED
            if level is Action.RESTART:
                if self._state is PolicyState.ARMED:
                    if self.wind_down and not self._wound_down:
                        self._wound_down = True
                        self._state = PolicyState.WOUND_DOWN
                        event = Action.WIND_DOWN
                    else:
                        self._state = PolicyState.FIRED
                        event = Action.RESTART
                elif self._state is PolicyState.WOUND_DOWN:
                    self._state = PolicyState.FIRED
                    event = Action.RESTART
        if (self.max_tool_calls is not None and tool_calls is not None and tool_calls >= self.max_tool_calls
                and self._tool_armed):
            self._tool_armed = False
            self._state = PolicyState.FIRED
            event = Action.RESTART
        if event is not None:
            return event
        if level is Action.RESTART:
            return Action.MASK if self.mask_at is not None else Action.CONTINUE
        return level

    def reset(self) -> None:
        """Re-arm every event, as after a restart (a fresh session) or a compaction."""
        self._state = PolicyState.ARMED
        self._wound_down = False
        self._tool_armed = True

    def fresh(self) -> PressurePolicy:
        """A copy with the same settings and no history: one per session."""
        return replace(self)
