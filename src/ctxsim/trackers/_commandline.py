"""What the command trackers (``cmd:``, ``stream:``) share about the command they are given: how a spec
``PREFIX:COMMAND`` / ``PREFIX[OPTIONS]:COMMAND`` is split, what reports call the command, how its stderr is cut."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["program", "split_spec", "tail"]

STDERR_TAIL = 400
"""Characters of a command's stderr an error line quotes (the last ones)."""
_INTERPRETERS = frozenset({"node", "nodejs", "python", "python3", "bash", "sh", "npx", "uv", "uvx", "env", "bun",
                           "deno", "ruby", "perl"})


def tail(text: str, limit: int = STDERR_TAIL) -> str:
    """The end of ``text`` (stripped), at most ``limit`` characters, ``...`` in front when cut."""
    text = text.strip()
    return text if len(text) <= limit else "..." + text[-limit:]


def program(command: str) -> str:
    """The program a command line runs, for its name: ``node dist/ccstatusline.js`` -> ``ccstatusline.js``."""
    try:
        words = shlex.split(command)
    except ValueError:
        words = command.split()
    names = [Path(w).name for w in words if not w.startswith("-") and "=" not in w]
    return next((n for n in names if n not in _INTERPRETERS), names[0] if names else command.strip())


def split_spec(spec: str, prefix: str, options: Mapping[str, type], *, example: str) -> tuple[str, dict[str, Any]]:
    """``(command, options)`` of ``PREFIX:COMMAND`` or ``PREFIX[OPTIONS]:COMMAND``: options space-separated, shell
    quoting, ``key=value`` of the types ``options`` gives (a ``bool`` may stand alone). Raises ``ValueError``
    saying what is wrong."""
    if not spec.startswith(prefix):
        raise ValueError(f"{spec!r} is not a {prefix}: spec")
    rest = spec[len(prefix):]
    found: dict[str, Any] = {}
    if rest.startswith("["):
        end = _closing_bracket(rest)
        if end < 0:
            raise ValueError(f"{spec!r}: the options' '[' is never closed (quote a ']' inside them)")
        found = _options(rest[1:end], spec, options)
        rest = rest[end + 1:]
    if not rest.startswith(":") or not rest[1:].strip():
        raise ValueError(f"{spec!r} is not {prefix}:COMMAND or {prefix}[OPTIONS]:COMMAND (e.g. {example})")
    return rest[1:].strip(), found


def _closing_bracket(text: str) -> int:
    """Where the ``]`` closing ``text``'s leading ``[`` is, outside quotes; -1 when it is not closed."""
    quote = ""
    escaped = False
    for i, char in enumerate(text):
        if escaped:
            escaped = False
        elif char == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "]":
            return i
    return -1


def _options(text: str, spec: str, known: Mapping[str, type]) -> dict[str, Any]:
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"{spec!r}: its options do not parse: {exc}") from None
    out: dict[str, Any] = {}
    for word in words:
        key, has_value, value = word.partition("=")
        kind = known.get(key)
        if kind is None:
            raise ValueError(f"{spec!r}: no option {key!r} (known: {', '.join(sorted(known))})")
        if kind is bool:
            out[key] = value.lower() not in ("0", "false", "no") if has_value else True
            continue
        if not has_value:
            raise ValueError(f"{spec!r}: option {key!r} needs a value ({key}=...)")
        try:
            out[key] = kind(value)
        except ValueError:
            raise ValueError(f"{spec!r}: option {key}={value!r} is not a {kind.__name__}") from None
    return out
