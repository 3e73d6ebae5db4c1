"""Writing result files so that a failure leaves nothing half written: each file is written beside its target and
renamed onto it only once every file is whole (a full disk, a file size limit or a read-only directory is one
``ctxsim:`` line and no partial file).

Only the standard library is used; every package that writes a result file writes it through it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["FileNotWritten", "refuse_non_files", "write_whole"]


class FileNotWritten(OSError):
    """A file could not be written; the message is one ``ctxsim:`` line, and no partial file is left."""


_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_a_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file (symbolic links followed), else None."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    return next((kind for test, kind in _KINDS if test(mode)), None)


def _mode(target: Path) -> int:
    """The permissions ``target`` gets: its own where it exists, else those a new file gets (the umask's)."""
    try:
        return stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mask = os.umask(0o022)
        os.umask(mask)
        return 0o666 & ~mask


def refuse_non_files(targets: Iterable[Path], *, who: str) -> None:
    """Raise :class:`FileNotWritten` (one ``ctxsim:`` line starting with ``who``) for the first of ``targets`` that
    exists and is not a regular file: what :func:`write_whole` refuses, checked before the work that makes the
    text."""
    for target in targets:
        kind = _not_a_file(target)
        if kind is not None:
            raise FileNotWritten(f"{who}: {target} is {kind}, not a file it can write")


def write_whole(files: Mapping[Path, str], *, who: str) -> list[Path]:
    """Write each text of ``files`` (target path to text, UTF-8) whole, or none of them: each is written to a
    temporary file beside its target (its directory is created) and renamed onto it once all are written. A target
    that exists and is not a regular file (a device such as ``/dev/full``, a FIFO, a directory) is refused before
    anything is written. On any failure what this call wrote is removed and :class:`FileNotWritten` says, in one
    ``ctxsim:`` line starting with ``who`` (``ctxsim: import``), which file and why. Returns the targets."""
    refuse_non_files(files, who=who)
    written: list[Path] = []
    pending: dict[Path, Path] = {}
    current = next(iter(files), Path())
    try:
        for target, text in files.items():
            current = target
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
            pending[target] = Path(name)
            os.fchmod(handle, _mode(target))
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
        for target, temporary in pending.items():
            current = target
            os.replace(temporary, target)
            written.append(target)
    except OSError as exc:
        for temporary in pending.values():
            temporary.unlink(missing_ok=True)
        for target in written:
            target.unlink(missing_ok=True)
        why = exc.strerror or type(exc).__name__
        raise FileNotWritten(f"{who}: could not write {current}: {why}; nothing was written") from None
    return list(files)
