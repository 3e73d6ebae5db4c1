"""The truth of a recorded stream, read from the API's usage rules alone: no code shared with the reference.

The reference tracker (:mod:`ctxsim.reference`) is what recordings judge; if the truth of a recording came from its
functions, a bug there would move truth and estimate together and pass. So this module reads a usage dict anew,
from the documented rules (docs/explanation/truth-band.md and wire.md), written independently of
:mod:`ctxsim.reference`, and ``tests/scenario/test_recorded_streams.py`` pins it to numbers worked out by hand
and to the CLI's own ``get_context_usage`` figures.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["SYNTHETIC", "UsageRead", "read_usage"]

SYNTHETIC = "<synthetic>"
"""The model name of the assistant messages Claude Code makes up (API errors, interrupts): never a call."""

_PROMPT_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
_LARGEST = 10**8
"""A prompt count above this is not a count (no window comes near it)."""


class UsageRead:
    """What one usage dict says of the call's prompt."""

    __slots__ = ("cache_read", "prompt", "state")

    def __init__(self, state: str, prompt: int = 0, cache_read: int = 0) -> None:
        self.state = state
        """``counts`` (the prompt is ``prompt``), ``garbage`` (a prompt count is there but is not a count: the
        call's size cannot be known), ``zero`` (all counts 0: a made-up message) or ``absent`` (no counts)."""
        self.prompt = prompt
        self.cache_read = cache_read


def _count(value: Any) -> int | None:
    """A token count: a non-negative whole number (as int, whole float or numeric string); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, int):
        return value if 0 <= value <= _LARGEST else None
    if isinstance(value, float) and math.isfinite(value) and value >= 0 and value == int(value):
        return int(value) if value <= _LARGEST else None
    return None


def read_usage(usage: Any, *, inclusive: bool = False) -> UsageRead:
    """The prompt an API ``usage`` dict reports for the context.

    The three prompt counts are disjoint and summed (``inclusive``: a gateway whose ``input_tokens`` already holds
    the cached part, read alone). With ``iterations``, the top level sums every inference iteration and the context is
    the last ``message`` iteration's. A cache write reported only in the nested ``cache_creation`` breakdown (the
    top-level count 0 or absent) counts as the breakdown's sum. A null cache count is 0 (the API documents them as
    nullable); a null ``input_tokens`` or any other non-count makes the size unknowable.
    """
    if not isinstance(usage, dict):
        return UsageRead("absent")
    part = usage
    iterations = usage.get("iterations")
    if isinstance(iterations, list):
        messages = [i for i in iterations if isinstance(i, dict) and i.get("type", "message") == "message"]
        if messages:
            part = messages[-1]
    keys = ("input_tokens",) if inclusive else _PROMPT_KEYS
    present = [k for k in keys if k in part]
    if not present:
        return UsageRead("absent")
    values: dict[str, int] = {}
    for key in present:
        raw = part[key]
        if raw is None and key != "input_tokens":
            values[key] = 0
            continue
        count = _count(raw)
        if count is None:
            return UsageRead("garbage")
        values[key] = count
    if not inclusive and not values.get("cache_creation_input_tokens"):
        nested = part.get("cache_creation")
        if isinstance(nested, dict):
            values["cache_creation_input_tokens"] = sum(_count(v) or 0 for v in nested.values())
    total = sum(values.values())
    read = _count(part.get("cache_read_input_tokens")) or 0
    if total == 0:
        return UsageRead("zero")
    return UsageRead("counts", total, read)
