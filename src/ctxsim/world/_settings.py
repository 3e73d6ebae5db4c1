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
window the point is computed from, not the statusline's window; with auto-compact off it moves nothing (recorded:
the REPL of 2.1.332 with both did not compact at 80,003 of a 100,000 autocompact window; openclaw/openclaw#111723
is a session that grew to 984K so), so the limit is the raw window's effective window.

A subagent's own window (:func:`subagent_point`): an agent definition's ``autoCompactWindow`` (Claude Code's
agent frontmatter and ``--agents`` key, the TypeScript SDK's per-agent setting; at least 100,000) lowers the window
the subagent compacts against and never raises it; the main chain ignores it (anthropics/claude-code#90862:
subagents that reached 863K and 940K of a 1M window before compacting).

Idle compaction (:meth:`ClaudeSettings.idle_compacts`), as read from the bundle of Claude Code 2.1.332 (inferred:
no recording shows it, since it waits for most of an hour): on by default (``idleCompaction: false`` turns it off),
main chain only, in an interactive session whose prompt cache has a one-hour TTL, it compacts (trigger ``auto``)
a conversation left idle for 90% of the cache's lifetime, when auto-compact is on and the context holds at least
``CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`` (default 200,000, never under 100,000).

Worked by hand: 200,000 with a 32,000 max output: effective 180,000, point 167,000; auto-compact off: 180,000.
1,000,000: effective 980,000, point 967,000. A max output of 8,192: effective 191,808, point 178,808 (a gauge that
hard-codes a 33,000 buffer says 167,000).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._releases import holds

__all__ = [
    "AUTOCOMPACT_BUFFER",
    "IDLE_COMPACT_MIN_TOKENS",
    "OUTPUT_RESERVE_CAP",
    "SUBAGENT_WINDOW_MIN",
    "ClaudeSettings",
    "autocompact_point",
    "display_name",
    "effective_window",
    "override_point",
    "subagent_point",
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

SUBAGENT_WINDOW_MIN = 100_000
"""The least ``autoCompactWindow`` an agent definition may set."""

IDLE_COMPACT_MIN_TOKENS = 200_000
"""The context below which an idle session is not compacted (``CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS``'s default)."""

IDLE_COMPACT_FLOOR = 100_000
"""The least ``CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS`` counts for."""


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


def subagent_point(inherited: int, own: int | None, max_output_tokens: int, *, auto_compact: bool = True) -> int:
    """Where a subagent compacts: against its own ``autoCompactWindow`` (``own``) where that is below the window
    it would inherit (``inherited``: the session's autocompact window, else the model's), else against the
    inherited one (:func:`autocompact_point`)."""
    window = inherited if own is None else min(inherited, max(own, SUBAGENT_WINDOW_MIN))
    return autocompact_point(window, max_output_tokens, auto_compact=auto_compact)


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
    """The subagents' own ``autoCompactWindow`` (an agent definition's key; at least 100,000; it only lowers the
    window a subagent inherits); None: the session's (:func:`subagent_point`)."""
    idle_compaction: bool = True
    """``idleCompaction``: whether a conversation left idle compacts before its prompt cache expires (Claude
    Code's default: on)."""
    idle_compact_min_tokens: int | None = None
    """``CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS``: the least context an idle compaction needs (None: 200,000; never
    under 100,000)."""

    def window_for(self, model: str) -> int:
        """The window ``model`` runs in under these settings (:func:`window_for`)."""
        return window_for(model, disable_1m_context=self.disable_1m_context)

    def point(self, window: int, max_output_tokens: int, *, auto_compact_window: int | None = None) -> int:
        """Where a session on the raw ``window`` compacts under these settings (:func:`autocompact_point`):
        computed from ``auto_compact_window`` where one is set and auto-compact is on; with auto-compact off the
        autocompact window moves nothing, and the limit is ``window``'s effective window."""
        if self.auto_compact and auto_compact_window is not None:
            window = auto_compact_window
        return autocompact_point(window, max_output_tokens, auto_compact=self.auto_compact)

    def percent_window(self, window: int, *, auto_compact_window: int | None, cli_version: str) -> int:
        """The window Claude Code's statusline ``used_percentage`` counts against while the raw window is ``window``,
        in Claude Code ``cli_version``: where rule ``statusline-percent-of-autocompact-window`` holds (2.1.337 on),
        ``auto_compact_window`` when one is set and auto-compact is on, as ``/context`` counts; else ``window``."""
        if auto_compact_window is not None and self.auto_compact and holds("statusline-percent-of-autocompact-window",
                                                                          cli_version):
            return auto_compact_window
        return window

    def subagent_point(self, window: int, max_output_tokens: int, *, auto_compact_window: int | None = None) -> int:
        """Where a subagent compacts while the main chain's raw window is ``window`` (:func:`subagent_point`)."""
        inherited = auto_compact_window if self.auto_compact and auto_compact_window is not None else window
        return subagent_point(inherited, self.subagent_compact_window, max_output_tokens,
                              auto_compact=self.auto_compact)

    def idle_compacts(self, context: int) -> bool:
        """Whether a main chain holding ``context`` tokens, left idle, compacts (see the module's docstring)."""
        least = max(IDLE_COMPACT_FLOOR, self.idle_compact_min_tokens or IDLE_COMPACT_MIN_TOKENS)
        return self.idle_compaction and self.auto_compact and context >= least

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
        if self.idle_compact_min_tokens is not None:
            env["CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS"] = str(self.idle_compact_min_tokens)
        return env
