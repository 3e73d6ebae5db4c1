"""The words of the reference restart loop (designs 003 and 004): what it asks the model, and what it reads back.

The checkpoint request and continuation prompts are design 003's, verbatim; :data:`DONE_MARKER` is what a turn's
result says when the whole task is done (the convention :mod:`ctxsim.agent` answers to). No dependency: the fake
agent and the loops read these without loading the SDK.
"""

from __future__ import annotations

__all__ = [
    "CHECKPOINT_REQUEST_PROMPT",
    "CONTINUATION_TEMPLATE",
    "CONTINUE_PROMPT",
    "DONE_MARKER",
    "MINIMAL_CONTINUATION_PROMPT",
    "TRUNCATED_NOTE",
    "WIND_DOWN_PROMPT",
]

CHECKPOINT_REQUEST_PROMPT = """\
CONTEXT LIMIT APPROACHING - CHECKPOINT REQUIRED

Output a checkpoint summary now:

<checkpoint>
## Goal
[1-2 sentence summary of the original task]

## Completed Work
[List each file modified and what changed]

## Remaining Tasks
[Ordered list of what still needs to be done]

## Do Not Redo
[Completed items that should not be repeated]

## Key Decisions
[Architectural choices or constraints for continuation]
</checkpoint>

After outputting this checkpoint, STOP."""
"""Design 003's ``checkpoint_request.md``, verbatim."""

CONTINUATION_TEMPLATE = """\
CONTINUING FROM PREVIOUS SESSION

The previous session hit the context limit. Here is the state:

{checkpoint}

Continue from the remaining tasks. Do not repeat completed work."""
"""Design 003's ``continuation.md``, verbatim; ``{checkpoint}`` is the extracted text."""

MINIMAL_CONTINUATION_PROMPT = """\
CONTINUING FROM PREVIOUS SESSION

The previous session hit the context limit before its state could be saved. Inspect the current state of the \
work, then continue the previous work. Do not repeat completed work."""
"""What a new session starts with when no usable checkpoint was obtained (design 003: "restart with minimal
'continue previous work' prompt")."""

TRUNCATED_NOTE = "(This state was cut off before it was complete: verify its last items before relying on them.)"
"""Added after an incomplete checkpoint in the continuation prompt."""

DONE_MARKER = "TASK COMPLETE"
"""What a turn's result says when the whole task is done."""

CONTINUE_PROMPT = "Continue with the task."
"""The prompt of every turn after a session's first."""

WIND_DOWN_PROMPT = ("CONTEXT NEARLY FULL: finish the step in progress, then stop and report where you are. "
                    "A fresh session will continue the task.")
"""The prompt after a graduated policy says ``WIND_DOWN`` (design 004)."""
