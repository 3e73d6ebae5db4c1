"""The reference implementation: what a correct tracker, pressure policy, checkpoint handling and restart loop do.

- :class:`ContextTracker` — the main context's size from the SDK stream, right on every reproduced fact.
- :class:`PressurePolicy` — a single threshold or graduated zones, of the effective window, firing once per
  crossing (:mod:`.policy`).
- :func:`extract_checkpoint`, :func:`build_continuation_prompt` and :data:`CHECKPOINT_REQUEST_PROMPT` — seed 003's
  checkpoint handling, with every fallback defined (:mod:`.checkpoint`).
- :func:`run_with_restarts` — seed 003's restart loop over the real ``ClaudeSDKClient`` (:mod:`.restart`).
"""

from __future__ import annotations

from .checkpoint import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUATION_TEMPLATE,
    MINIMAL_CONTINUATION_PROMPT,
    Checkpoint,
    build_continuation_prompt,
    extract_checkpoint,
    is_prompt_too_long,
)
from .policy import Action, PressurePolicy
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
from .tracker import ContextTracker, prompt_tokens, token_count

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
    "extract_checkpoint",
    "is_prompt_too_long",
    "prompt_tokens",
    "request_checkpoint",
    "run_turn",
    "run_with_restarts",
    "token_count",
]
