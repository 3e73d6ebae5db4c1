"""Reading the files a scenario names (the scenario itself, a recording, a transcript to import), bounded: in size,
in lines and in nesting.

:func:`read_bounded` reads a regular file only (a device such as ``/dev/zero``, a FIFO or a socket is refused at
once, without blocking on it: it is opened non-blocking and checked before a byte is read) and at most ``limit``
bytes of it; every refusal is a :class:`FileRefused` saying why in a few words.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["MAX_DEPTH", "MAX_LINES", "MAX_RECORDING_BYTES", "MAX_SCENARIO_BYTES", "FileRefused", "cut", "deeper_than",
           "lines_of", "read_bounded"]

MAX_SCENARIO_BYTES = 8 * 1024 * 1024
"""The largest scenario file read (the bundled ones are a few KiB; 20,000 calls written out are about 2 MiB)."""
MAX_RECORDING_BYTES = 256 * 1024 * 1024
"""The largest recording (stream-json or transcript) read, for a scenario or an import."""

_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class FileRefused(OSError):
    """A file :func:`read_bounded` will not read (not a regular file, or too large); the message says why."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them. Raises :class:`FileRefused` for
    anything else or anything larger, ``OSError`` when it cannot be opened."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(Path(path), flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FileRefused(f"{_kind(mode)}, not a regular file")
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise FileRefused(f"larger than {limit // (1024 * 1024):,} MiB, the most ctxsim reads")
        return b"".join(chunks)
    finally:
        os.close(fd)


MAX_DEPTH = 64
"""The deepest nesting of a recording's line (Claude Code writes about 8 levels)."""
MAX_LINES = 500_000
"""The most lines a recording may hold."""


def deeper_than(value: Any, depth: int) -> bool:
    """Whether ``value`` (parsed JSON) nests deeper than ``depth`` lists and objects (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if level > depth:
            return True
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return False


def cut(text: str, limit: int = 200) -> str:
    """``text`` as an error quotes it: at most ``limit`` characters."""
    return text if len(text) <= limit else f"{text[:limit]}..."


def lines_of(text: str) -> Iterator[tuple[int, str, int]]:
    """``(number, line, end)`` for each line of ``text`` (``end``: the offset just past it), split on ``\\n``
    alone (as JSON lines are: U+2028, U+2029, U+0085 or a form feed inside a string are text, not line ends), one
    at a time (a large recording is not copied into a list of lines)."""
    start, number, size = 0, 0, len(text)
    while start < size:
        end = text.find("\n", start)
        end = size if end < 0 else end
        number += 1
        yield number, text[start:end], end
        start = end + 1
