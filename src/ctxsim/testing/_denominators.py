"""The sessions of the denominator's contracts: the window, the autocompact point and the quantity a gauge divides
by or counts to, each moved by one of Claude Code's settings, in the smallest session that shows it.

A tracker that reports tokens is judged on tokens there, as everywhere; a gauge (a tracker that declares a
quantity) is judged on the quantity it declares, told the session's world (its model, window and settings) where
its factory takes one, as :func:`ctxsim.trackers.make_tracker` tells it. Worked by hand in each docstring.
"""

from __future__ import annotations

from ..world import ClaudeSettings, Session, SessionBuilder

__all__ = ["autocompact_off", "autocompact_window", "autocompact_window_off", "autocompact_window_percent",
           "disabled_1m", "model_switch_window", "one_million", "output_reserve"]


def one_million() -> Session:
    """An Opus model with the ``[1m]`` suffix: a 1,000,000 window. 250,003 tokens are 25% of it (125% of
    200,000)."""
    b = SessionBuilder(seed=0, name="one-million-window", model="claude-opus-4-6[1m]", window=1_000_000)
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=248_000).build()


def disabled_1m() -> Session:
    """A ``[1m]`` model under ``CLAUDE_CODE_DISABLE_1M_CONTEXT``: 200,000. 150,003 tokens are 75% of it (15% of the
    1,000,000 the name claims)."""
    b = SessionBuilder(seed=0, name="disabled-1m-window", model="claude-sonnet-4-5[1m]", window=200_000,
                       settings=ClaudeSettings(disable_1m_context=True))
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=148_000).build()


def model_switch_window() -> Session:
    """``/model`` to the ``[1m]`` model between queries: 62,003 tokens are 31% of 200,000, then 6% of 1,000,000."""
    b = SessionBuilder(seed=0, name="model-switch-window").query("go")
    b.call(input=3, cache_creation=2_000, cache_read=60_000)
    return b.switch_model("claude-sonnet-4-5[1m]").query("more").call().build()


def autocompact_window() -> Session:
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000``, in Claude Code before 2.1.337 (where the statusline still divides
    by the model's window): the session compacts at 100,000 - 20,000 - 13,000 = 67,000, not 167,000. 40,003 tokens
    leave 40% of the way (76% of the way to 167,000), and are 20% of the window."""
    b = SessionBuilder(seed=0, name="autocompact-window", auto_compact_window=100_000, cli="<2.1.337")
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=38_000).build()


def autocompact_window_percent() -> Session:
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000`` in Claude Code 2.1.337 and later (rule
    ``statusline-percent-of-autocompact-window``): a percentage of the window counts against 100,000, as its
    statusline's ``used_percentage`` does. 30,003 tokens are 30% (15% of the model's 200,000) and leave 55% of the
    way to the autocompact point (67,000)."""
    b = SessionBuilder(seed=0, name="autocompact-window-percent", auto_compact_window=100_000, cli=">=2.1.337")
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=28_000).build()


def autocompact_off() -> Session:
    """Auto-compact off: "until auto-compact" counts to 200,000 - 20,000 = 180,000, no buffer. 90,003 tokens leave
    50% (46% of the way to 167,000)."""
    b = SessionBuilder(seed=0, name="autocompact-off", settings=ClaudeSettings(auto_compact=False))
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=88_000).build()


def autocompact_window_off() -> Session:
    """Auto-compact off beside ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000``: the autocompact window moves nothing, so
    "until auto-compact" counts to 200,000 - 20,000 = 180,000. 90,003 tokens leave 50% (past the 80,000 that
    window less the reserve would say: -13%)."""
    b = SessionBuilder(seed=0, name="autocompact-window-off", auto_compact_window=100_000,
                       settings=ClaudeSettings(auto_compact=False))
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=88_000).build()


def output_reserve() -> Session:
    """A max output of 8,192: the output reserve is 8,192, the point 200,000 - 8,192 - 13,000 = 178,808. 102,003
    tokens leave 43% (39% of the way to 167,000)."""
    b = SessionBuilder(seed=0, name="output-reserve", max_output_tokens=8_192)
    return b.query("go").call(input=3, cache_creation=2_000, cache_read=100_000).build()
