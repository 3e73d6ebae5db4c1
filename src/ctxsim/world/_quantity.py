"""What a gauge's number means, and the arithmetic between tokens and each meaning.

A context gauge shows one of four quantities (:data:`~ctxsim.world.Quantity`): tokens in the context, the share of
the window used, the share of the way to the autocompact point still left, or the tokens left in the window.
Claude Code's own statusline payload says ``used_percentage`` of the raw window (anthropics/claude-code#18944); its
"Context left until auto-compact" counts against the autocompact point (#62210; ccstatusline PR #319 and
claude-powerline PR #64 add that gauge beside the first); users read one for the other, and a gauge that divides by
200,000 on a 1,000,000 window (#73399, #76751, ccstatusline #233) shows a fifth of the pressure. Worked by hand for
a 1M window with the default max output (32,000): the autocompact point is 1,000,000 - 20,000 - 13,000 =
967,000; a context of 483,500 tokens is 48% (48.35) of the window, 50% left until autocompact, 516,500 tokens
left; divided by 200,000 it reads 242%.

:func:`in_quantity` turns tokens into a quantity (what a correct gauge shows), :func:`tokens_band` a shown number
back into the tokens it stands for: a percentage shown rounded stands for half a point either side.
"""

from __future__ import annotations

from collections.abc import Mapping

from ._session import Quantity

__all__ = ["QUANTITY_NAMES", "in_quantity", "tokens_band"]

QUANTITY_NAMES: Mapping[Quantity, str] = {
    "tokens": "tokens",
    "percent_of_window": "% of the window",
    "percent_until_autocompact": "% until autocompact",
    "tokens_left": "tokens left",
}
"""How verdicts name each quantity."""


def in_quantity(tokens: float, quantity: Quantity, window: int, threshold: int) -> float:
    """``tokens`` in the context as ``quantity``, on a ``window``-token window that autocompacts at ``threshold``:
    ``100 * tokens / window`` (% of the window), ``100 * (threshold - tokens) / threshold`` (% until autocompact,
    negative past it), ``window - tokens`` (tokens left), or the tokens themselves."""
    if quantity == "percent_of_window":
        return 100 * tokens / window
    if quantity == "percent_until_autocompact":
        return 100 * (threshold - tokens) / threshold
    if quantity == "tokens_left":
        return window - tokens
    return tokens


def tokens_band(value: float, quantity: Quantity, window: int, threshold: int) -> tuple[int, int]:
    """The tokens a gauge showing ``value`` as ``quantity`` stands for (the inverse of :func:`in_quantity`): a
    percentage stands for half a point either side of it (gauges round), a count for itself."""
    if quantity == "percent_of_window":
        return round((value - 0.5) * window / 100), round((value + 0.5) * window / 100)
    if quantity == "percent_until_autocompact":
        return round((100 - value - 0.5) * threshold / 100), round((100 - value + 0.5) * threshold / 100)
    if quantity == "tokens_left":
        return round(window - value), round(window - value)
    return round(value), round(value)
