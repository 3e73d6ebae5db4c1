"""Claude Code's window and compaction settings: which window a model runs in, and where a session autocompacts.

The window a model gets (:func:`window_for`): 1,000,000 for a ``[1m]`` model id of any family (Sonnet, Opus,
Haiku), unless ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` is set, else 200,000. ``/model`` between queries changes the
model, and the window and the statusline's denominator follow it. ``CLAUDE_CODE_MAX_CONTEXT_TOKENS=100000`` moved
nothing in the REPL of Claude Code 2.1.332 (recorded: ``context_window_size`` stayed 200000 and a context of 80,003
did not compact), so it moves nothing here.

Where the session compacts (:func:`autocompact_point`), as third-party readings of the CLI bundle give it
(anthropics/claude-code#31806): the *effective* window is the window less an output reserve of
``min(max output, 20,000)``; the autocompact point is that less a 13,000-token buffer (167,000 of 200,000 with a
32,000 max output). Those readings have ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=P`` lower it to ``P%`` of the effective
window, but the REPLs recorded did not compact at 93,003 nor at 103,003 of 200,000 with ``P=50``, as users report
of it (anthropics/claude-code#64773, #57567, #63627), so the override moves nothing here; a gauge that counts to
it is wrong. With auto-compact off (``autoCompactEnabled: false``, ``DISABLE_AUTO_COMPACT``) nothing compacts
on its own, and the "until auto-compact" gauge counts to the effective window itself: no buffer subtracted
(open-gsd/gsd-core#4844 is a statusline that subtracts it anyway). ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` replaces the
window the point is computed from, not the statusline's window. A subagent may compact against a window of its own
(the TypeScript SDK's per-agent ``autoCompactWindow``, anthropics/claude-code#90862); idle compaction (on by
default) compacts a session left idle, in the main chain only.

Worked by hand: 200,000 with a 32,000 max output: effective 180,000, point 167,000; auto-compact off: 180,000.
1,000,000: effective 980,000, point 967,000. A max output of 8,192: effective 191,808, point 178,808 (a gauge that
hard-codes a 33,000 buffer says 167,000).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "AUTOCOMPACT_BUFFER",
    "OUTPUT_RESERVE_CAP",
    "ClaudeSettings",
    "autocompact_point",
    "display_name",
    "effective_window",
    "override_point",
    "window_for",
]

ONE_MILLION = 1_000_000
"""The window of a model run with the ``[1m]`` suffix (the 1M-context beta)."""

STANDARD_WINDOW = 200_000
"""The window of every model family without the suffix."""

OUTPUT_RESERVE_CAP = 20_000
"""The most of the window Claude Code reserves for the model's output."""

AUTOCOMPACT_BUFFER = 13_000
"""The safety buffer between the effective window and the autocompact point."""


def window_for(model: str, *, disable_1m_context: bool = False) -> int:
    """The window Claude Code gives ``model``: 1,000,000 for an id with the ``[1m]`` suffix (any family) unless
    ``disable_1m_context``, else 200,000."""
    return ONE_MILLION if model.endswith("[1m]") and not disable_1m_context else STANDARD_WINDOW


def display_name(model: str) -> str:
    """The name Claude Code shows for ``model``: ``claude-sonnet-4-5`` -> ``Sonnet 4.5``, a ``[1m]`` variant with
    ``(1M context)``; an id it cannot read, as it is."""
    match = re.fullmatch(r"claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?(\[1m\])?", model)
    if match is None:
        return model
    family, major, minor, wide = match.groups()
    name = f"{family.capitalize()} {major}" + (f".{minor}" if minor else "")
    return name + (" (1M context)" if wide else "")


def effective_window(window: int, max_output_tokens: int) -> int:
    """The window less the output reserve, ``min(max output, 20,000)``: what the autocompact point is computed
    from, and what "until auto-compact" counts to when auto-compact is off."""
    return window - min(max_output_tokens, OUTPUT_RESERVE_CAP)


def autocompact_point(window: int, max_output_tokens: int, *, auto_compact: bool = True) -> int:
    """Where Claude Code compacts a ``window``-token window (the point "Context left until auto-compact" counts
    to): the effective window less 13,000; with ``auto_compact`` off, the effective window itself."""
    effective = effective_window(window, max_output_tokens)
    return effective - AUTOCOMPACT_BUFFER if auto_compact else effective


def override_point(window: int, max_output_tokens: int, pct_override: int) -> int:
    """Where the readings of the CLI bundle say ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` would move the point: down to
    ``pct_override`` percent of the effective window (what a gauge that believes the override counts to)."""
    effective = effective_window(window, max_output_tokens)
    return min(effective - AUTOCOMPACT_BUFFER, effective * pct_override // 100)


@dataclass(frozen=True)
class ClaudeSettings:
    """The settings of Claude Code that move a gauge's denominator, as a session ran with them."""

    auto_compact: bool = True
    """``autoCompactEnabled`` (``DISABLE_AUTO_COMPACT`` turns it off): whether the session compacts on its own."""
    pct_override: int | None = None
    """``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``: recorded to move nothing (the session compacts where it would
    without); kept so that a gauge that believes it can be caught."""
    max_context_tokens: int | None = None
    """``CLAUDE_CODE_MAX_CONTEXT_TOKENS``: recorded to move neither the statusline's window nor the autocompact
    point (Claude Code 2.1.332); kept so that a scenario can say the session ran with it."""
    disable_1m_context: bool = False
    """``CLAUDE_CODE_DISABLE_1M_CONTEXT``: a ``[1m]`` model runs in 200,000 (its id keeps the suffix)."""
    subagent_compact_window: int | None = None
    """A subagent's own ``autoCompactWindow`` (the TypeScript SDK's per-agent setting); None: the session's."""
    idle_compaction: bool = True
    """Whether a session left idle compacts (Claude Code's default: on)."""

    def window_for(self, model: str) -> int:
        """The window ``model`` runs in under these settings (:func:`window_for`)."""
        return window_for(model, disable_1m_context=self.disable_1m_context)

    def point(self, window: int, max_output_tokens: int) -> int:
        """Where a session on ``window`` (the autocompact window where one is set) compacts under these
        settings (:func:`autocompact_point`)."""
        return autocompact_point(window, max_output_tokens, auto_compact=self.auto_compact)

    @property
    def env(self) -> dict[str, str]:
        """These settings as the environment Claude Code reads them from."""
        env: dict[str, str] = {}
        if not self.auto_compact:
            env["DISABLE_AUTO_COMPACT"] = "1"
        if self.pct_override is not None:
            env["CLAUDE_AUTOCOMPACT_PCT_OVERRIDE"] = str(self.pct_override)
        if self.max_context_tokens is not None:
            env["CLAUDE_CODE_MAX_CONTEXT_TOKENS"] = str(self.max_context_tokens)
        if self.disable_1m_context:
            env["CLAUDE_CODE_DISABLE_1M_CONTEXT"] = "1"
        return env
