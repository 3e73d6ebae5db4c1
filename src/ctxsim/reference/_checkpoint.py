"""Checkpoints (design 003): the request prompt, extracting the ``<checkpoint>`` block, the continuation prompt.

When a session nears its limit the loop sends :data:`CHECKPOINT_REQUEST_PROMPT` on the old session, reads the
state out of the reply with :func:`extract_checkpoint`, and starts the new session with
:func:`build_continuation_prompt`. Replies are not always well formed; :func:`extract_checkpoint` defines what it
takes in every case and says which rule it used (:attr:`Checkpoint.fallback`):

============== ====================================================================================================
fallback       when, and what :attr:`Checkpoint.text` is
============== ====================================================================================================
block          exactly one complete ``<checkpoint>...</checkpoint>`` block: its content. Code fences around the
               block (```` ```xml ````, ```` ```markdown ````, bare ```` ``` ````) are outside the tags and do
               not matter; a fence wrapping the whole content inside the tags is removed.
last_block     several complete blocks: the **last** non-empty one. A reply that revises itself puts the final
               state last, and a block that only echoes the request's template (every section a ``[...]``
               placeholder) is skipped, so the echo of the prompt never wins.
unclosed       an opening tag and no closing tag, and the reply was not cut off: everything after the last
               opening tag (a trailing fence line removed). The model forgot the closing tag.
truncated      the reply was cut off by ``max_tokens`` (``stop_reason="max_tokens"``) with no complete block:
               what there is (after the opening tag, or the whole reply). :attr:`Checkpoint.complete` is False
               and the continuation prompt says so.
empty_block    the only blocks are empty (or whitespace): the text outside them, if any, else nothing.
whole_reply    no tags at all: the whole reply, unwrapped from a fence that encloses all of it.
refusal        no tags and the model declined (``stop_reason="refusal"``, or a short reply that opens with
               "I can't", "I'm sorry", ...): nothing; a refusal is no state to continue from.
empty_reply    nothing was said: nothing.
prompt_too_long the checkpoint request itself was rejected ("Prompt is too long", an error result): nothing.
error          any other error result: nothing.
============== ====================================================================================================

Tags match in any case and with spaces inside the brackets (``<Checkpoint >``, ``</ CHECKPOINT>``); an opening
tag may carry attributes. When there is nothing to continue from (:attr:`Checkpoint.usable` is False),
:func:`build_continuation_prompt` returns :data:`MINIMAL_CONTINUATION_PROMPT`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ._prompts import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUATION_TEMPLATE,
    MINIMAL_CONTINUATION_PROMPT,
    TRUNCATED_NOTE,
)

__all__ = [
    "CHECKPOINT_REQUEST_PROMPT",
    "CONTINUATION_TEMPLATE",
    "MINIMAL_CONTINUATION_PROMPT",
    "TRUNCATED_NOTE",
    "Checkpoint",
    "Fallback",
    "build_continuation_prompt",
    "checkpoint_blocks",
    "extract_checkpoint",
    "is_prompt_too_long",
    "unfence",
]

Fallback = Literal["block", "last_block", "unclosed", "truncated", "empty_block", "whole_reply", "refusal",
                   "empty_reply", "prompt_too_long", "error"]


@dataclass(frozen=True)
class Checkpoint:
    """What :func:`extract_checkpoint` took from a reply, and by which rule."""

    text: str
    """The state to continue from, stripped; empty when there is none."""
    fallback: Fallback
    """Which rule produced ``text`` (see the module docstring)."""
    blocks: int = 0
    """Complete, non-empty ``<checkpoint>`` blocks in the reply (template echoes not counted)."""
    complete: bool = True
    """False when the reply was cut off and ``text`` may lack its end."""

    @property
    def usable(self) -> bool:
        """True when there is a state to continue from."""
        return bool(self.text)


_OPEN = re.compile(r"<\s*checkpoint(?:\s[^<>]*)?>", re.IGNORECASE)
_CLOSE = re.compile(r"<\s*/\s*checkpoint\s*>", re.IGNORECASE)
_TAG = re.compile(f"(?P<open>{_OPEN.pattern})|(?P<close>{_CLOSE.pattern})", re.IGNORECASE)
_WHOLE_FENCE = re.compile(r"\A[ \t]*(?P<fence>`{3,}|~{3,})[^\n`]*\n(?P<body>.*?)\n?[ \t]*(?P=fence)[ \t]*\Z",
                          re.DOTALL)
_FENCE_LINE = re.compile(r"^[ \t]*(?:`{3,}|~{3,})[^\n`]*$")
_HEADING = re.compile(r"^\s*#{1,6}\s", re.MULTILINE)
_PLACEHOLDER = re.compile(r"^\s*\[[^\]]*\]\s*$")
_REFUSAL = re.compile(
    r"\A\W*(?:i'?m sorry|i am sorry|sorry\b|i apologi[sz]e|i can(?:no|'|’)t|i cannot|i won(?:'|’)?t|"
    r"i(?:'m| am) (?:not able|unable)|i must decline|i(?:'m| am) not going to)", re.IGNORECASE)
_REFUSAL_MAX_CHARS = 600
"""Longer replies without tags are taken as the state (a model that explains, then gives it) not as a refusal."""
_PROMPT_TOO_LONG = re.compile(r"prompt is too long|prompt_too_long|input is too long", re.IGNORECASE)


def is_prompt_too_long(text: str | None) -> bool:
    """True for the API's and Claude Code's prompt-too-long errors (``Prompt is too long``, ``prompt is too long:
    216327 tokens > 200000 maximum``, ``Input is too long for requested model``)."""
    return bool(text) and _PROMPT_TOO_LONG.search(text or "") is not None


def unfence(text: str) -> str:
    """``text`` stripped, without a code fence that encloses all of it."""
    text = text.strip()
    match = _WHOLE_FENCE.match(text)
    return match.group("body").strip() if match else text


def checkpoint_blocks(text: str) -> list[str]:
    r"""The contents of the complete ``<checkpoint>`` blocks of ``text``, in order, each :func:`unfence`\ d (empty
    ones included): what a variant of :func:`extract_checkpoint` that picks another block chooses among."""
    return [unfence(content) for _, _, content in _scan(text)[0]]


def _drop_trailing_fence(text: str) -> str:
    lines = text.rstrip().split("\n")
    if lines and _FENCE_LINE.match(lines[-1]):
        lines.pop()
    return "\n".join(lines)


def _is_template_echo(content: str) -> bool:
    """True when every line is a heading or a ``[...]`` placeholder: the request's template, unfilled."""
    lines = [line for line in content.splitlines() if line.strip()]
    return bool(lines) and any(_PLACEHOLDER.match(line) for line in lines) and all(
        _HEADING.match(line) or _PLACEHOLDER.match(line) for line in lines)


def _scan(text: str) -> tuple[list[tuple[int, int, str]], int | None]:
    """The complete blocks ``(start, end, content)`` in order, and where a trailing unclosed block's content starts.

    An opening tag followed by another opening tag before any closing tag is abandoned (the later one opens the
    block); a closing tag without an open block is ignored.
    """
    blocks: list[tuple[int, int, str]] = []
    open_at: int | None = None
    open_start = 0
    for match in _TAG.finditer(text):
        if match.group("open") is not None:
            open_at, open_start = match.end(), match.start()
        elif open_at is not None:
            blocks.append((open_start, match.end(), text[open_at:match.start()]))
            open_at = None
    return blocks, open_at


def extract_checkpoint(text: str | None, *, stop_reason: str | None = None, is_error: bool = False) -> Checkpoint:
    """The checkpoint in a reply to :data:`CHECKPOINT_REQUEST_PROMPT` (rules in the module docstring).

    ``text`` is the reply's text (its text blocks, joined); ``stop_reason`` the turn's stop reason
    (``max_tokens`` marks a cut-off reply, ``refusal`` a refusal); ``is_error`` is True when the turn ended in an
    error result (the text is then the error, e.g. ``Prompt is too long``). Never raises.
    """
    text = text if isinstance(text, str) else ""
    if is_error:
        return Checkpoint("", "prompt_too_long" if is_prompt_too_long(text) else "error", complete=False)
    truncated = stop_reason == "max_tokens"
    blocks, trailing = _scan(text)
    contents = [unfence(content) for _, _, content in blocks]
    real = [c for c in contents if c and not _is_template_echo(c)]
    if real:
        return Checkpoint(real[-1], "block" if len(real) == 1 else "last_block", len(real))
    if trailing is not None:
        rest = unfence(_drop_trailing_fence(text[trailing:]))
        if rest and not _is_template_echo(rest):
            return Checkpoint(rest, "truncated" if truncated else "unclosed", 0, complete=not truncated)
    if blocks:
        outside = text
        for start, end, _ in reversed(blocks):
            outside = outside[:start] + outside[end:]
        return Checkpoint(unfence(outside), "empty_block", 0, complete=not truncated)
    whole = unfence(text)
    if not whole:
        return Checkpoint("", "empty_reply", complete=not truncated)
    if stop_reason == "refusal" or (len(whole) <= _REFUSAL_MAX_CHARS and _REFUSAL.match(whole)
                                     and not _HEADING.search(whole)):
        return Checkpoint("", "refusal")
    if truncated:
        return Checkpoint(whole, "truncated", complete=False)
    return Checkpoint(whole, "whole_reply")


def build_continuation_prompt(checkpoint: Checkpoint | str) -> str:
    """The first prompt of the new session: :data:`CONTINUATION_TEMPLATE` around the checkpoint.

    A string is taken as checkpoint text (design 003's signature). With nothing usable it is
    :data:`MINIMAL_CONTINUATION_PROMPT`; an incomplete checkpoint is followed by :data:`TRUNCATED_NOTE`.
    """
    if isinstance(checkpoint, str):
        checkpoint = Checkpoint(checkpoint.strip(), "whole_reply")
    if not checkpoint.usable:
        return MINIMAL_CONTINUATION_PROMPT
    body = checkpoint.text if checkpoint.complete else f"{checkpoint.text}\n\n{TRUNCATED_NOTE}"
    return CONTINUATION_TEMPLATE.format(checkpoint=body)
