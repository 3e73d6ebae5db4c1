"""What the command trackers (``cmd:``, ``stream:``) share about the command they are given: how a spec
``PREFIX:COMMAND`` / ``PREFIX[OPTIONS]:COMMAND`` is split and joined again, what reports call the command, whether
it can start at all, how its stderr is cut."""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["join_spec", "passed_environment", "program", "split_spec", "tail", "unstartable"]

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


_SHELL_SYNTAX = frozenset("|&;<>()$`\\*?{}")
"""Characters that make a command line more than one simple command (pipes, lists, expansions, globs): such a
line is not looked into before it runs."""
_SCRIPT_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".sh", ".bash", ".rb", ".pl")
_CODE_OPTIONS = frozenset({"-c", "-e", "-m", "-p", "--eval", "--print"})
"""Interpreter options whose next word is code or a module, not a file."""
_BUILTINS = frozenset({"exec", "eval", "source", ".", "command", "cd", "export", "set", "time", "!"})
"""Shell builtins and keywords a simple command may start with: not looked up on ``PATH``."""


def unstartable(command: str, cwd: str | os.PathLike[str]) -> str | None:
    """Why ``command`` cannot start when run from ``cwd``, where that is certain before running it, in a few words;
    None when it may start. Looked into: a simple command only (no pipes, lists, expansions or globs), its program
    (a path: a file there; a bare name: on ``PATH``) and, after an interpreter or launcher (``python3``,
    ``node``, ``npx``...), each word naming a script by its suffix or as ``./``/``../`` (a file there)."""
    if any(char in _SHELL_SYNTAX for char in command):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and "=" in words[0] and words[0].partition("=")[0].isidentifier():
        words = words[1:]  # VAR=value before the program
    if not words:
        return None
    base = Path(cwd).expanduser()
    first = words[0]
    if first in _BUILTINS:
        return None
    if "/" in first or first.startswith("~"):
        path = base / Path(first).expanduser()
        if not path.is_file():
            return f"{first}: no such file"
        if not os.access(path, os.X_OK):
            return f"{first}: not executable; chmod +x it or name its interpreter"
    elif shutil.which(first) is None:
        return f"{first}: not found on PATH"
    if Path(first).name.rstrip("0123456789.") not in _INTERPRETERS:
        return None
    if any(word in _CODE_OPTIONS for word in words[1:]):
        return None  # the rest is code, or a module and its arguments
    for word in words[1:]:
        script = word.endswith(_SCRIPT_SUFFIXES) or word.startswith(("./", "../"))
        if script and not word.startswith(("-", "@")) and not (base / word).exists():
            return f"{word}: no such file"
    return None


def passed_environment(names: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables of ``environ`` (default: this process's) that ``names`` pass through to a command, as tox's
    ``passenv`` does: each name exactly, or a glob (``TRACKER_*``); a name that is not set passes nothing."""
    environ = os.environ if environ is None else environ
    passed: dict[str, str] = {}
    for name in names:
        if any(char in name for char in "*?["):
            passed.update((key, environ[key]) for key in sorted(environ) if fnmatch.fnmatchcase(key, name))
        elif name in environ:
            passed[name] = environ[name]
    return passed


def join_spec(prefix: str, command: str, options: Mapping[str, Any]) -> str:
    """The spec ``PREFIX[OPTIONS]:COMMAND`` (``PREFIX:COMMAND`` without options) that :func:`split_spec` reads
    back as ``(command, options)``."""
    if not options:
        return f"{prefix}:{command}"
    words = [key if value is True else f"{key}={str(value).lower() if isinstance(value, bool) else value}"
             for key, value in options.items()]
    return f"{prefix}[{' '.join(shlex.quote(w) for w in words)}]:{command}"


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
