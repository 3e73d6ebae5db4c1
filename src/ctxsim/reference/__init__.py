"""The reference implementation: what a correct tracker, pressure policy, checkpoint handling and restart loop do.

- :class:`ContextTracker` — the main context's size from the SDK stream, right on every reproduced fact.
- :class:`PressurePolicy` — a single threshold or graduated zones, of the effective window, firing once per
  crossing (:mod:`.policy`).
- :func:`extract_checkpoint`, :func:`build_continuation_prompt` and :data:`CHECKPOINT_REQUEST_PROMPT` — seed 003's
  checkpoint handling, with every fallback defined (:mod:`.checkpoint`).
- :func:`run_with_restarts` — seed 003's restart loop over the real ``ClaudeSDKClient`` (:mod:`.restart`).
- :mod:`.prompts` — the words of that loop: checkpoint request, continuation, done marker.

It stands on the SDK and the lowest layers only (the world's facts; the tracker contract by its shape, never by
importing :mod:`ctxsim.trackers`, which catalogues the reference): code to read or
copy. Its names load on first use, so reading a prompt does not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS = {
    "Checkpoint": "checkpoint",
    "build_continuation_prompt": "checkpoint",
    "extract_checkpoint": "checkpoint",
    "is_prompt_too_long": "checkpoint",
    "CHECKPOINT_REQUEST_PROMPT": "prompts",
    "CONTINUATION_TEMPLATE": "prompts",
    "MINIMAL_CONTINUATION_PROMPT": "prompts",
    "Action": "policy",
    "PressurePolicy": "policy",
    "LifecycleError": "restart",
    "RestartLimitError": "restart",
    "RestartResult": "restart",
    "SessionLifecycle": "restart",
    "Turn": "restart",
    "request_checkpoint": "restart",
    "run_turn": "restart",
    "run_with_restarts": "restart",
    "ContextTracker": "tracker",
    "cache_read_tokens": "usage",
    "prompt_tokens": "usage",
    "prefix_from_context_usage": "usage",
    "token_count": "usage",
}

__all__ = [
    "CHECKPOINT_REQUEST_PROMPT",
    "CONTINUATION_TEMPLATE",
    "MINIMAL_CONTINUATION_PROMPT",
    "Action",
    "Checkpoint",
    "ContextTracker",
    "LifecycleError",
    "PressurePolicy",
    "RestartLimitError",
    "RestartResult",
    "SessionLifecycle",
    "Turn",
    "build_continuation_prompt",
    "cache_read_tokens",
    "extract_checkpoint",
    "is_prompt_too_long",
    "prefix_from_context_usage",
    "prompt_tokens",
    "request_checkpoint",
    "run_turn",
    "run_with_restarts",
    "token_count",
]

if TYPE_CHECKING:
    from .checkpoint import (
        Checkpoint,
        build_continuation_prompt,
        extract_checkpoint,
        is_prompt_too_long,
    )
    from .policy import Action, PressurePolicy
    from .prompts import (
        CHECKPOINT_REQUEST_PROMPT,
        CONTINUATION_TEMPLATE,
        MINIMAL_CONTINUATION_PROMPT,
    )
    from .restart import (
        LifecycleError,
        RestartLimitError,
        RestartResult,
        SessionLifecycle,
        Turn,
        request_checkpoint,
        run_turn,
        run_with_restarts,
    )
    from .tracker import ContextTracker
    from .usage import cache_read_tokens, prefix_from_context_usage, prompt_tokens, token_count

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())
