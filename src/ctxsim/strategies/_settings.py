"""Claude Code's models, windows and compaction settings, drawn swarm-style for generated sessions.

Each drawn session stresses a few of the settings that move a gauge's denominator (a model family, the ``[1m]``
suffix, ``CLAUDE_CODE_DISABLE_1M_CONTEXT``, ``/model`` switches, auto-compact off, the percentage override,
``CLAUDE_CODE_AUTO_COMPACT_WINDOW``, a smaller or larger max output) and leaves the others at Claude Code's
defaults: the set of stressed settings is drawn first, so a counterexample shrinks to the fewest settings that show
it, each at its smallest value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from ..world import DEFAULT_MODEL, ClaudeSettings

__all__ = ["STRESSES", "Denominator", "denominators"]

FAMILIES = ("claude-sonnet-4-5", "claude-opus-4-6", "claude-haiku-4-5")
"""Model families a session may run on (each with or without ``[1m]``)."""

STRESSES = ("1m", "switch", "disable_1m", "auto_compact_off", "pct_override", "auto_compact_window", "max_output",
            "family")
"""What a drawn session may stress, in the order a shrunk counterexample keeps them."""


@dataclass(frozen=True)
class Denominator:
    """What moves a session's denominator: its first model, its settings, its autocompact window, its max output
    and the models ``/model`` switches to (one per switch, at drawn query starts)."""

    model: str = DEFAULT_MODEL
    settings: ClaudeSettings = field(default_factory=ClaudeSettings)
    auto_compact_window: int | None = None
    max_output: int | None = None
    """None: as the caller's knob says."""
    switches: tuple[str, ...] = ()

    def world(self) -> dict[str, Any]:
        """The scenario ``world`` keys that state these settings (the defaults left out)."""
        out: dict[str, Any] = {}
        if self.settings.disable_1m_context:
            out["disable_1m_context"] = True
        if not self.settings.auto_compact:
            out["auto_compact"] = False
        if self.settings.pct_override is not None:
            out["autocompact_pct_override"] = self.settings.pct_override
        if self.auto_compact_window is not None:
            out["auto_compact_window"] = self.auto_compact_window
        return out


def _model(draw: Any, stress: frozenset[str], one_million: bool) -> str:
    family = draw(st.sampled_from(FAMILIES)) if "family" in stress else DEFAULT_MODEL
    return family + "[1m]" if one_million else family


@st.composite
def denominators(draw: Any) -> Denominator:
    """A :class:`Denominator` stressing a few settings (shrinking towards none: the default model and settings)."""
    stress = draw(st.frozensets(st.sampled_from(STRESSES), max_size=3))
    one_million = bool(stress & {"1m", "disable_1m"})
    model = _model(draw, stress, one_million)
    settings = ClaudeSettings(
        auto_compact="auto_compact_off" not in stress,
        pct_override=draw(st.integers(10, 85)) if "pct_override" in stress else None,
        disable_1m_context="disable_1m" in stress,
    )
    # an autocompact window beside auto-compact off half the time: the two interact (the window moves nothing then),
    # and a gauge that misses it is found only where both are drawn, which independent draws seldom give
    window = (draw(st.sampled_from((100_000, 150_000)))
              if "auto_compact_window" in stress or ("auto_compact_off" in stress and draw(st.booleans())) else None)
    max_output = draw(st.sampled_from((8_192, 16_000, 64_000))) if "max_output" in stress else None
    switches: tuple[str, ...] = ()
    if "switch" in stress:
        switches = tuple(_model(draw, stress | {"family"}, draw(st.booleans()))
                         for _ in range(draw(st.integers(1, 2))))
        if all(s.endswith("[1m]") == model.endswith("[1m]") for s in switches):  # a switch that moves the window
            switches = (*switches[:-1], switches[-1].removesuffix("[1m]") if model.endswith("[1m]")
                        else switches[-1] + "[1m]")
    return Denominator(model, settings, window, max_output, switches)


def no_stress() -> SearchStrategy[Denominator]:
    """The default model and settings, always."""
    return st.just(Denominator())
