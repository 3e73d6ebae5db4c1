"""Text from input made safe to print: what no output of ctxsim shows raw.

A scenario's name or text, a command's stderr, anything a user or a child process wrote, may hold terminal escape
sequences (colours, cursor moves, a title), a carriage return or a newline (which can forge a line of ctxsim's
own, or an ``export`` of serve's), or a bidirectional override (which can make text read other than it is).
:func:`printable` writes each such character as a Python escape (``\\x1b``, ``\\n``, ``\\u202e``) and leaves every
other character as it is.
"""

from __future__ import annotations

import unicodedata

__all__ = ["described", "printable", "unprintable"]

_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""The bidirectional marks, embeddings, overrides and isolates."""


def unprintable(char: str) -> bool:
    """Whether ``char`` is a control character (C0, DEL, C1, a line or paragraph separator), a bidirectional
    control, or another format character that changes how text shows."""
    return char in _BIDI or unicodedata.category(char) in ("Cc", "Cf", "Zl", "Zp")


def printable(text: str) -> str:
    """``text`` with every :func:`unprintable` character written as its Python escape; the rest unchanged."""
    if text.isprintable():
        return text
    return "".join(repr(c)[1:-1] if unprintable(c) else c for c in text)


QUOTED_LIMIT = 2000
"""The most characters of an error's message :func:`described` quotes."""


def described(exc: BaseException) -> str:
    """``Type: message`` of ``exc`` (an error a tracker, a loop or a factory raised) as ctxsim quotes it: one
    :func:`printable` line (a newline in the message cannot forge a line of ctxsim's own, an escape cannot act),
    cut at :data:`QUOTED_LIMIT` characters."""
    message = printable(str(exc))
    if len(message) > QUOTED_LIMIT:
        message = message[:QUOTED_LIMIT] + f"... ({len(message) - QUOTED_LIMIT:,} more characters)"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__
