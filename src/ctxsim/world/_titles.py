"""The session title Claude Code's interactive REPL asks the model for (rule ``repl-session-title``).

Read from the bundle of Claude Code 2.1.337 and held to its REPL recordings. The REPL asks for a title with a
request without tools, no cache and a JSON schema for ``{"title": ...}``, on the model in force, before a prompt's
first call; slash commands ask nothing. Which prompts ask, in a conversation (a session id: ``/clear`` starts
another) whose replies hold no title:

- a prompt whose text has at least :data:`TITLE_MIN_CHARS` characters once trimmed (``run a command``, ``still
  more``; not ``hello``, ``go on``, ``again``) asks with its own text;
- the next prompt, whatever its text, asks again with the same text while tries are left: :data:`TITLE_TRIES` in
  all for one text (a new prompt worth a title starts again with its own);
- a reply that holds a title ends the asking for the conversation.

The model's answer decides it: the world takes replies without a title, as ctxsim's fake Messages API gives
(``ok``), so every recorded session is reproduced exactly; against the real API, whose reply is a title, a
conversation asks once (and the REPL then names the session: the payload's ``session_name``, the transcript's
``ai-title`` rows, neither modelled). Each request is priced like any call, so it counts in the statusline
payload's cost and in the conversation's ``cost-state``; it is not in the stream-json an SDK client reads, nor a row
of the transcript.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._session import Call, Text

__all__ = ["TITLE_INPUT_TOKENS", "TITLE_MIN_CHARS", "TITLE_OUTPUT_TOKENS", "TITLE_TRIES", "asks_title",
           "title_asks", "title_call"]

TITLE_MIN_CHARS = 10
"""The fewest characters (trimmed) a prompt needs to be worth a title."""
TITLE_INPUT_TOKENS = 886
"""The title request's input: its instructions and the prompt (886-887 tokens for prompts of 10 to 15 characters,
as ctxsim's fake Messages API measured the requests of 2.1.337; it reports this figure since)."""
TITLE_OUTPUT_TOKENS = 50
"""The title reply's output."""
TITLE_TRIES = 2
"""How many requests one prompt's text gets while the replies hold no title (the bundle's ``unusableRepliesLeft``)."""


def asks_title(prompt: str) -> bool:
    """Whether ``prompt`` (as typed) is worth a title: not a slash command, and at least :data:`TITLE_MIN_CHARS`
    characters once trimmed."""
    text = prompt.strip()
    return not text.startswith("/") and len(text) >= TITLE_MIN_CHARS


def title_asks(prompts: Sequence[str]) -> list[bool]:
    """For each prompt of one conversation, in order, whether the REPL sends a title request as it is answered
    (see the module's docstring; every reply holds no title). A slash command asks nothing and spends no try."""
    out: list[bool] = []
    left = 0  # tries left for the pending text
    for prompt in prompts:
        if prompt.strip().startswith("/"):
            out.append(False)
            continue
        if asks_title(prompt):
            left = TITLE_TRIES
        out.append(left > 0)
        left = max(0, left - 1)
    return out


def title_call(model: str, number: int) -> Call:
    """The ``number``-th title request of a session, on ``model``, as a call: no cache, no tools, a reply without a
    title (what ctxsim's fake API answers)."""
    return Call(TITLE_INPUT_TOKENS, 0, 0, TITLE_OUTPUT_TOKENS, (Text("ok"),), f"msg_ctxsim_title{number:04d}", model)
