"""The reference implementation: what a correct tracker (and, later, policy and restart loop) does.

- :class:`ContextTracker` — the main context's size from the SDK stream, right on every reproduced fact.
"""

from __future__ import annotations

from .tracker import ContextTracker, prompt_tokens, token_count

__all__ = ["ContextTracker", "prompt_tokens", "token_count"]
