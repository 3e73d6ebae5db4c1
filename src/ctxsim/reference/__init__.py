"""The reference implementation: what a correct tracker, pressure policy, checkpoint handling and restart loop do.

- :class:`ContextTracker` — the main context's size from the SDK stream, right on every reproduced fact.
- :class:`PressurePolicy` — a single threshold or graduated zones, of the effective window, firing once per
  crossing.
- :func:`extract_checkpoint`, :func:`build_continuation_prompt` and :data:`CHECKPOINT_REQUEST_PROMPT` — seed 003's
  checkpoint handling, with every fallback defined.
- :func:`run_with_restarts` — seed 003's restart loop over the real ``ClaudeSDKClient``
  (:class:`RestartLoop`).
- :data:`CHECKPOINT_REQUEST_PROMPT`, :data:`CONTINUATION_TEMPLATE`, :data:`DONE_MARKER`... — the words of that loop.

It stands on the SDK and the lowest layers only (the world's facts; the tracker contract by its shape, never by
importing :mod:`ctxsim.trackers`, which catalogues the reference): code to read or
copy. Its names load on first use, so reading a prompt does not load the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._checkpoint import (
        Checkpoint as Checkpoint,
        Fallback as Fallback,
        build_continuation_prompt as build_continuation_prompt,
        checkpoint_blocks as checkpoint_blocks,
        extract_checkpoint as extract_checkpoint,
        is_prompt_too_long as is_prompt_too_long,
        unfence as unfence,
    )
    from ._policy import Action as Action, PolicyState as PolicyState, PressurePolicy as PressurePolicy
    from ._prompts import (
        CHECKPOINT_REQUEST_PROMPT as CHECKPOINT_REQUEST_PROMPT,
        CONTINUATION_TEMPLATE as CONTINUATION_TEMPLATE,
        CONTINUE_PROMPT as CONTINUE_PROMPT,
        DONE_MARKER as DONE_MARKER,
        MINIMAL_CONTINUATION_PROMPT as MINIMAL_CONTINUATION_PROMPT,
        TRUNCATED_NOTE as TRUNCATED_NOTE,
        WIND_DOWN_PROMPT as WIND_DOWN_PROMPT,
    )
    from ._restart import (
        LifecycleError as LifecycleError,
        RestartLimitError as RestartLimitError,
        RestartLoop as RestartLoop,
        RestartResult as RestartResult,
        SessionLifecycle as SessionLifecycle,
        SessionState as SessionState,
        Turn as Turn,
        request_checkpoint as request_checkpoint,
        run_turn as run_turn,
        run_with_restarts as run_with_restarts,
        task_complete as task_complete,
    )
    from ._tracker import ContextTracker as ContextTracker
    from ._usage import (
        MAX_OUTPUT_TOKENS as MAX_OUTPUT_TOKENS,
        cache_read_tokens as cache_read_tokens,
        prefix_from_context_usage as prefix_from_context_usage,
        prompt_tokens as prompt_tokens,
        token_count as token_count,
    )

__getattr__, __dir__ = lazy_face(globals())
