"""Reading an API ``usage`` dict: the prompt size it reports, its cache read, and the system prefix.

Plain functions over dicts, with no SDK: the reference tracker reads every call through them, and so do the parts of
ctxsim that derive a truth from a recorded stream (:mod:`ctxsim.recordings`) without loading the SDK.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["MAX_OUTPUT_TOKENS", "MAX_PROMPT_FIELD", "SYNTHETIC_MODEL", "all_zero", "cache_read_tokens",
           "prefix_from_context_usage", "prompt_tokens", "token_count", "window_for_model"]

MAX_PROMPT_FIELD = 100_000_000
"""No context window comes near this; a larger prompt count is garbage, not a count."""

MAX_OUTPUT_TOKENS = 1_000_000
"""No model writes more than this in one response; a larger output count is garbage, not a count."""

SYNTHETIC_MODEL = "<synthetic>"
"""The model name Claude Code puts on the assistant messages it makes up for API errors and interrupts."""


def token_count(value: Any) -> int | None:
    """``value`` as a token count, or None when it is not one (None, negative, NaN, non-numeric, a bool).

    Whole floats and numeric strings count (``"12"`` and ``12.0`` are 12); anything else is treated as absent.
    """
    if type(value) is int:  # the common case first (a bool is not one)
        return value if value >= 0 else None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value >= 0 else None
    if isinstance(value, str):
        try:
            return token_count(float(value.strip()))
        except ValueError:
            return None
    return None


def prompt_tokens(usage: Any, *, inclusive: bool = False) -> int | None:
    """The prompt size an API ``usage`` dict reports: ``input + cache_creation + cache_read`` (with ``inclusive``,
    for a gateway whose ``input_tokens`` already holds the cache counts: ``input_tokens``).

    Follows the API's own rules: the three fields are disjoint; when ``iterations`` lists several inference
    iterations, the last ``message`` iteration is the one that occupies the context; a zero or missing
    ``cache_creation_input_tokens`` falls back to the nested ``cache_creation`` TTL breakdown. Missing fields and
    null cache counts (the API documents them as nullable) count as absent; a null ``input_tokens`` next to other
    counts, or a field that is there but is not a count (negative, non-numeric, NaN, implausibly huge)
    makes the whole usage unusable, since a partial sum would be a wrong number. None means the usage says
    nothing usable (that, all fields absent, or all zero as on synthetic error messages).
    """
    if not isinstance(usage, dict):
        return None
    if "iterations" in usage:
        usage = _occupying(usage)
    if inclusive:  # the cache counts are parts of input_tokens, which may stand alone
        usage = {"input_tokens": usage.get("input_tokens")} if "input_tokens" in usage else usage
    uncached, created, read = (usage.get("input_tokens"), usage.get("cache_creation_input_tokens"),
                               usage.get("cache_read_input_tokens"))
    if (type(uncached) is int and type(created) is int and type(read) is int
            and uncached >= 0 and created > 0 and read >= 0 and max(uncached, created, read) <= MAX_PROMPT_FIELD):
        return uncached + created + read  # well-formed usage: what the general path below would return
    raw = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    counts = [token_count(v) for v in raw]
    if any((v is not None and c is None) or (c is not None and c > MAX_PROMPT_FIELD) for v, c in zip(raw, counts)):
        return None  # a field is there but is not a count: a partial sum would be a wrong number
    if raw[0] is None and "input_tokens" in usage:
        return None  # input_tokens is never null in the API (the cache counts may be): not a usage to trust
    uncached, created, read = counts
    if not created:
        nested = usage.get("cache_creation")
        if isinstance(nested, dict):
            parts = [token_count(v) for v in nested.values()]
            if any(p is not None for p in parts):
                created = sum(p for p in parts if p is not None) or created
    known = [v for v in (uncached, created, read) if v is not None]
    if not known or sum(known) == 0:
        return None
    return sum(known)


NOT_THE_PREFIX = frozenset({"messages", "free_space", "autocompact_buffer"})
"""The ``get_context_usage()`` categories that are not the system prefix every request carries."""


def prefix_from_context_usage(context_usage: Any) -> int | None:
    """The system prompt, tools and skills every request carries, as ``get_context_usage()`` reports them: its
    categories in use but messages and free space (deferred tools are not sent); None where it lists none. Give it
    to :class:`ctxsim.reference.ContextTracker` as ``prefix_tokens`` so that a compaction reads right to the token."""
    categories = context_usage.get("categories") if isinstance(context_usage, dict) else None
    if not isinstance(categories, list):
        return None
    counts = [token_count(c.get("tokens")) for c in categories if isinstance(c, dict)
              and c.get("kind", "used") == "used" and not c.get("isDeferred")
              and c.get("id", str(c.get("name", "")).lower().replace(" ", "_")) not in NOT_THE_PREFIX]
    return sum(c for c in counts if c is not None) if counts else None


def cache_read_tokens(usage: Any) -> int:
    """The cache read of the part of ``usage`` that occupies the context (0 when absent or not a count)."""
    if not isinstance(usage, dict):
        return 0
    return token_count(_occupying(usage).get("cache_read_input_tokens")) or 0


def _occupying(usage: dict[str, Any]) -> dict[str, Any]:
    """The part of a usage dict that occupies the context: with several inference ``iterations``, the last
    ``message`` iteration (the top level then sums them all); else the usage itself."""
    iterations = usage.get("iterations")
    if isinstance(iterations, list):
        messages = [it for it in iterations if isinstance(it, dict) and it.get("type", "message") == "message"]
        if messages:
            return messages[-1]
    return usage


def all_zero(usage: Any) -> bool:
    """A usage of zeros, as on the messages Claude Code makes up for errors and interrupts: not a call at all."""
    return isinstance(usage, dict) and all(
        usage.get(k) == 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def window_for_model(model: str | None) -> int | None:
    """1,000,000 for a ``[1m]`` model variant; else None (a model's name tells no other window)."""
    if model and "[1m]" in model:
        return 1_000_000
    return None
