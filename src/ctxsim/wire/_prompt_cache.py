"""Claude Code's ``prompt_cache`` statistics: the statusline payload's account of the prompt cache, from the world.

Since Claude Code 2.1.251 the payload carries ``prompt_cache`` once the session has made a request (absent before,
and again after ``/clear``). :class:`PromptCacheStats` follows a session's main-chain calls and computes each key
as the bundled CLI was recorded computing it (the REPL of 2.1.330, 2.1.331 and 2.1.332 under tmux against a fake
API whose usage was stated exactly; the recordings ship in ``ctxsim/wire/captures/claude-code-*/repl``):

- ``requests``: the main chain's calls (a subagent's and the compaction summary request do not count);
  ``cache_write_tokens``: the sum of their ``cache_creation_input_tokens``; ``hit_ratio``: the sum of their cache
  reads over the sum of their prompts (input + cache writes + cache reads), 0 while there is none;
- a *miss*: a main call that reads nothing from the cache after an earlier main call of the conversation read or
  wrote some (recorded: a call reading 0 after one that wrote 32,000 is a miss; one reading 14,000 after one
  that read 968,000, or 21,500 after 23,213, is not), not counting the first call after a compaction or a
  reset; ``misses`` counts them, ``miss_recache_tokens`` sums their ``cache_creation_input_tokens``,
  ``last_miss_at`` is the miss's time (epoch seconds) and ``last_miss_cause`` ``{"causes": [cause]}``,
  ``miss_causes`` counts by cause. Every miss ctxsim renders happens within the TTL with the prompt unchanged,
  which the CLI calls ``likely_server_side`` (recorded: a call reading 0 after one that wrote 32,000);
- ``ttl`` ``"5m"``, ``expires_at`` the last request's time (the summary request's included) plus 300 s, rounded;
  ``warm`` whether the payload's moment is before it; ``caching_observed`` whether any call read or wrote the
  cache; ``expected_rebuilds`` 0 (no recording showed another value);
- ``recache_tokens_if_cold``: the prompt of the call ``current_usage`` comes from, null when it is null or zeroed
  (right after a compaction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["MISS_CAUSE", "PROMPT_CACHE_KEYS", "TTL_SECONDS", "PromptCacheStats"]

TTL_SECONDS = 300
"""The prompt cache's lifetime Claude Code assumes (``ttl: "5m"``)."""

MISS_CAUSE = "likely_server_side"
"""The cause Claude Code gives a miss within the TTL with the prompt unchanged."""

PROMPT_CACHE_KEYS = ("warm", "caching_observed", "ttl", "expires_at", "requests", "misses", "expected_rebuilds",
                     "hit_ratio", "cache_write_tokens", "miss_recache_tokens", "last_miss_at", "last_miss_cause",
                     "miss_causes", "recache_tokens_if_cold")
"""Every key of ``prompt_cache``, in the order the CLI writes them."""


@dataclass
class PromptCacheStats:
    """What the CLI has counted of the prompt cache so far in one conversation (a ``/clear`` starts a new one)."""

    requests: int = 0
    read: int = 0
    prompt: int = 0
    written: int = 0
    misses: int = 0
    miss_recache: int = 0
    last_miss_at: int | None = None
    miss_causes: dict[str, int] = field(default_factory=dict)
    last_request_at: float | None = None
    """When the last request of any kind was sent, in epoch seconds (None: none yet)."""
    cached: bool = False
    """Whether a main call since the start or the last compaction read or wrote the cache."""

    def call(self, cache_creation: int, cache_read: int, prompt: int, at: float) -> None:
        """Count a main-chain call of ``prompt`` tokens sent at ``at`` (epoch seconds)."""
        if self.cached and cache_read == 0:
            self.misses += 1
            self.miss_recache += cache_creation
            self.last_miss_at = int(at)
            self.miss_causes[MISS_CAUSE] = self.miss_causes.get(MISS_CAUSE, 0) + 1
        self.requests += 1
        self.read += cache_read
        self.written += cache_creation
        self.prompt += prompt
        self.cached = self.cached or cache_read + cache_creation > 0
        self.last_request_at = at

    def request(self, at: float) -> None:
        """Another request (the compaction summary's) was sent at ``at``: the cache's expiry moves."""
        self.last_request_at = at

    def compacted(self) -> None:
        """A compaction: the next call starts a new prefix, not a miss."""
        self.cached = False

    def payload(self, now: float, recache_if_cold: int | None) -> dict[str, Any] | None:
        """``prompt_cache`` at ``now`` (epoch seconds), or None (the key is left out) before any request."""
        if self.last_request_at is None:
            return None
        expires = round(self.last_request_at + TTL_SECONDS)
        return {
            "warm": now < expires, "caching_observed": self.read + self.written > 0, "ttl": "5m",
            "expires_at": expires, "requests": self.requests, "misses": self.misses, "expected_rebuilds": 0,
            "hit_ratio": self.read / self.prompt if self.read else 0, "cache_write_tokens": self.written,
            "miss_recache_tokens": self.miss_recache, "last_miss_at": self.last_miss_at,
            "last_miss_cause": {"causes": [MISS_CAUSE]} if self.last_miss_at is not None else None,
            "miss_causes": dict(self.miss_causes), "recache_tokens_if_cold": recache_if_cold,
        }
