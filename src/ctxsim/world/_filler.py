"""The text generated sessions are dressed in: code-like filler of a given size, and plausible tool inputs.

Deterministic: the same ``random.Random`` gives the same text. Used by :class:`~ctxsim.world.SessionBuilder`.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from ._session import CHARS_PER_TOKEN

__all__ = ["TOOL_INPUTS", "filler_text"]

_WORDS = (
    "def return import self value result config error check token cache window stream message usage call "
    "assert test session tracker context prompt output input file line path read write json yaml parse build "
    "class async await item list dict none true false index count total limit buffer state event handler"
).split()

TOOL_INPUTS: tuple[tuple[str, Callable[[random.Random], dict[str, object]]], ...] = (
    ("Bash", lambda rng: {"command": f"pytest -q tests/test_{rng.choice(_WORDS)}.py", "description": "run tests"}),
    ("Read", lambda rng: {"file_path": f"/home/dev/project/src/{rng.choice(_WORDS)}.py"}),
    ("Grep", lambda rng: {"pattern": rng.choice(_WORDS), "path": "src"}),
    ("Edit", lambda rng: {"file_path": f"/home/dev/project/src/{rng.choice(_WORDS)}.py", "old_string": "a",
                          "new_string": "b"}),
)
"""The tools a generated call may use, each with a maker of plausible input."""


_CORPUS = " ".join(random.Random("ctxsim.world.corpus").choices(_WORDS, k=16_384)) + " "
"""Deterministic code-like text that :func:`filler_text` slices from (about 100k characters)."""

_CORPUS_RUN = _CORPUS * 3
"""The corpus repeated: a text of up to twice its length (large tool results) is one slice, not a new repeat."""


def filler_text(rng: random.Random, tokens: int) -> str:
    """Deterministic code-like text of about ``tokens`` tokens (``CHARS_PER_TOKEN`` characters each).

    A slice of a fixed corpus at an offset drawn from ``rng``: one draw however long the text.
    """
    target = max(0, tokens) * CHARS_PER_TOKEN
    if target == 0:
        return ""
    start = rng.randrange(len(_CORPUS))
    end = start + target
    if end <= len(_CORPUS_RUN):
        return _CORPUS_RUN[start:end]
    return (_CORPUS * (end // len(_CORPUS) + 1))[start:end]
