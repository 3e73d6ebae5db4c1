"""What a call costs, as Claude Code adds it up (``total_cost_usd``, ``modelUsage[...].costUSD``): list prices
per model family. Private to the wire's formats."""

from __future__ import annotations

import functools

from ..world import Call

# USD per million tokens: input, output, cache write (5 min), cache read.
_PRICES: dict[str, tuple[float, float, float, float]] = {
    "opus": (5.0, 25.0, 6.25, 0.50),
    "sonnet": (3.0, 15.0, 3.75, 0.30),
    "haiku": (1.0, 5.0, 1.25, 0.10),
}


@functools.cache
def price(model: str) -> tuple[float, float, float, float]:
    """USD per million tokens of ``model``: input, output, cache write (5 min), cache read (Sonnet's when the
    family is unknown)."""
    for family, listed in _PRICES.items():
        if family in model:
            return listed
    return _PRICES["sonnet"]


def cost(model: str, call: Call) -> float:
    """What ``call`` costs in USD at ``model``'s list prices."""
    p_in, p_out, p_write, p_read = price(model)
    return (call.input_tokens * p_in + call.output_tokens * p_out
            + call.cache_creation_input_tokens * p_write + call.cache_read_input_tokens * p_read) / 1e6
