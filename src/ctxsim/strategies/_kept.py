"""Example databases that never lose a counterexample and never hang on a file: a Redis or directory database backed
by a local directory that is really written (:class:`KeptDatabase`), and a directory database whose reads are bounded
and that refuses FIFOs and devices (:class:`CheckedDirectoryDatabase`).

A database that fails once the run is under way (a Redis server stopped or killed, the connection lost; a directory
that stops taking files, its disk full) is not
asked again: what it is given from then on is saved in the first directory that really takes a file, of
:data:`KEPT_DIRECTORY` (under the working directory), ``$XDG_CACHE_HOME/ctxsim/kept`` (``~/.cache``) and
``ctxsim-kept-<uid>`` in the temporary directory; one ``ctxsim:`` line says which, and how to replay it. Where none
takes a file, the line says so, the examples are kept in memory for the rest of the run, and the counterexample is
the scenario file the run writes (or prints, when that cannot be written either).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase, InMemoryExampleDatabase

__all__ = ["KEPT_DIRECTORY", "MAX_EXAMPLE_BYTES", "CheckedDirectoryDatabase", "KeptDatabase", "kept_directory"]

KEPT_DIRECTORY = ".hypothesis/ctxsim-kept"
"""The first place a counterexample a Redis database could not take is saved (relative to the working
directory)."""

MAX_EXAMPLE_BYTES = 1 << 20
"""The largest example a directory database reads (Hypothesis' examples are a few kilobytes): a larger file is
skipped, not read."""


def _kept_candidates() -> list[str]:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return [KEPT_DIRECTORY, os.path.join(cache, "ctxsim", "kept"),
            os.path.join(tempfile.gettempdir(), f"ctxsim-kept-{uid}")]


def kept_directory() -> tuple[str | None, list[str]]:
    """The first directory of the candidates (the module's docstring lists them) that is made and really takes a
    file (a probe is written and removed), and why each one before it did not (``path: reason``)."""
    refused = []
    for candidate in _kept_candidates():
        try:
            os.makedirs(candidate, exist_ok=True)
            handle, probe = tempfile.mkstemp(prefix=".probe-", dir=candidate)
            try:
                if os.write(handle, b"ctxsim") != len(b"ctxsim"):  # cut short: a full disk, a file size limit
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            finally:
                os.close(handle)
                os.unlink(probe)
        except OSError as exc:
            refused.append(f"{candidate}: {exc.strerror or type(exc).__name__}")
            continue
        return candidate, refused
    return None, refused


class KeptDatabase(ExampleDatabase):
    """An example database (Redis, or a directory) that never loses what it is given: once an operation fails (the
    server stopped, the connection lost, a save the directory did not take) the primary is not asked again, every
    operation is done on a local directory that really takes a file (:func:`kept_directory`; in memory where none
    does), and one ``ctxsim:`` line on ``notes`` (default stderr) says where, once."""

    def __init__(self, primary: ExampleDatabase, shown: str, *, notes: TextIO | None = None) -> None:
        super().__init__()
        self.primary = primary
        self.shown = shown
        self.notes = notes
        self.failed: str | None = None
        """Why the primary failed (its first failure), or None."""
        self.where: str | None = None
        """The directory that keeps what the primary could not take (None: none, or memory)."""
        self._local: ExampleDatabase | None = None
        self._refused: list[str] = []

    @property
    def local(self) -> ExampleDatabase:
        """Where examples go once the primary failed: the kept directory, or memory where no directory takes a
        file."""
        if self._local is None:
            where, refused = kept_directory()
            self.where = where
            self._local = InMemoryExampleDatabase() if where is None else CheckedDirectoryDatabase(where,
                                                                                                 notes=self.notes)
            self._refused = refused
        return self._local

    def _lost(self, exc: Exception, what: str) -> None:
        if self.failed is None:
            self.failed = f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            self.lost(f"ctxsim: the example database {self.shown!r} could not {what} ({self.failed})")

    def lost(self, why: str) -> None:
        """Take the primary as lost (``why``: the ``ctxsim:`` line's start, saying what failed): it is not asked
        again, and one line says where what it cannot take is kept."""
        self.failed = self.failed or why
        local = self.local
        if isinstance(local, InMemoryExampleDatabase):
            kept = (f"no directory could keep what it cannot take ({'; '.join(self._refused)}): it is kept in "
                    f"memory for this run, and the counterexample is in the scenario file the run writes")
        else:
            kept = f"what it could not take is kept in {self.where} (replay it with --db {self.where})"
        print(f"{why}; {kept}", file=self.notes or sys.stderr)

    def _keep(self, key: bytes, value: bytes) -> None:
        """Save on the local database, and fall back to memory (saying so) where the directory did not take it."""
        local = self.local
        local.save(key, value)
        if not isinstance(local, CheckedDirectoryDatabase) or local.holds(key, value):
            return
        memory = InMemoryExampleDatabase()  # the directory stopped taking files (a full disk): keep the rest here
        for old in local.fetch(key):
            memory.save(key, old)
        memory.save(key, value)
        self._local = memory
        print(f"ctxsim: the example database {self.shown!r} could not keep an example in {self.where} either; it "
              f"is kept in memory for this run, and the counterexample is in the scenario file the run writes",
              file=self.notes or sys.stderr)

    def save(self, key: bytes, value: bytes) -> None:
        if self.failed is None:
            try:
                self.primary.save(key, value)
                if isinstance(self.primary, CheckedDirectoryDatabase) and not self.primary.holds(key, value):
                    raise OSError("the directory did not take the file (a full disk, or no longer writable)")
                return
            except Exception as exc:  # whatever the client raises, the example must not be lost
                self._lost(exc, "save a counterexample")
        self._keep(key, value)

    def fetch(self, key: bytes) -> Iterable[bytes]:
        found: list[bytes] = []
        if self.failed is None:
            try:
                found = list(self.primary.fetch(key))
            except Exception as exc:
                self._lost(exc, "be read")
        if self.failed is not None:
            found += [v for v in self.local.fetch(key) if v not in found]
        yield from found

    def delete(self, key: bytes, value: bytes) -> None:
        if self.failed is None:
            try:
                self.primary.delete(key, value)
            except Exception as exc:
                self._lost(exc, "delete an example")
        if self._local is not None:
            self._local.delete(key, value)

    def move(self, src: bytes, dest: bytes, value: bytes) -> None:
        if self.failed is None:
            try:
                self.primary.move(src, dest, value)
                return
            except Exception as exc:
                self._lost(exc, "move an example")
        self._keep(dest, value)
        self.local.delete(src, value)

    def _start_listening(self) -> None:  # HypoFuzz's dashboard: the primary's changes are this one's
        self.primary.add_listener(self._broadcast_change)

    def _stop_listening(self) -> None:
        self.primary.remove_listener(self._broadcast_change)


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


class CheckedDirectoryDatabase(DirectoryBasedExampleDatabase):
    """Hypothesis' directory database whose reads never hang nor exhaust memory: an entry that is not a regular
    file (a FIFO, a device, a socket, or a symbolic link to one) is skipped without reading it, as is one larger than
    :data:`MAX_EXAMPLE_BYTES`; the first skipped entry is said in one ``ctxsim:`` line on ``notes`` (stderr)."""

    def __init__(self, path: str, *, notes: TextIO | None = None) -> None:
        super().__init__(path)
        self.notes = notes
        self.skipped: str | None = None
        """The first entry skipped, and why (None: none was)."""

    def _skip(self, path: Path, why: str) -> None:
        if self.skipped is None:
            self.skipped = f"{path}: {why}"
            print(f"ctxsim: the example database directory {str(self.path)!r} holds {str(path)!r}, {why}: skipped "
                  f"(only regular files of at most {MAX_EXAMPLE_BYTES:,} bytes are read)",
                  file=self.notes or sys.stderr)

    def _read(self, path: Path) -> bytes | None:
        """``path``'s bytes, read without blocking on a FIFO and at most :data:`MAX_EXAMPLE_BYTES`; None (and the
        skip said) when it is not a regular file or is larger."""
        try:
            handle = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
        except OSError as exc:
            if exc.errno == errno.ENXIO:
                self._skip(path, "a socket")
            return None
        try:
            mode = os.fstat(handle).st_mode
            kind = next((name for test, name in _KINDS if test(mode)), None)
            if kind is not None:
                self._skip(path, kind)
                return None
            data = os.read(handle, MAX_EXAMPLE_BYTES + 1)
            if len(data) > MAX_EXAMPLE_BYTES:
                self._skip(path, f"larger than {MAX_EXAMPLE_BYTES:,} bytes")
                return None
            return data
        except OSError:
            return None
        finally:
            os.close(handle)

    def holds(self, key: bytes, value: bytes) -> bool:
        """Whether ``value`` is on disk under ``key``, whole: Hypothesis' own ``save`` drops an example it could not
        write (a full disk) without a word, or keeps the part of it that was written, so a caller that must not lose
        it asks."""
        return self._read(self._value_path(key, value)) == value  # Hypothesis' own layout (tests/architecture)

    def save(self, key: bytes, value: bytes) -> None:
        """Hypothesis' save, less the part of an example a full disk cut short (removed: it would be replayed as
        another example); an entry in the example's own place that is not a regular file (a FIFO, a device, a link to
        one) is replaced (Hypothesis' own would take it for the example already saved)."""
        path = self._value_path(key, value)
        with contextlib.suppress(OSError):
            if not stat.S_ISREG(os.stat(path).st_mode):
                path.unlink()
        super().save(key, value)
        if path.is_file() and not self.holds(key, value):
            with contextlib.suppress(OSError):
                path.unlink()

    def fetch(self, key: bytes) -> Iterable[bytes]:
        directory = self._key_path(key)  # Hypothesis' own layout (checked by tests/architecture)
        try:
            names = sorted(os.listdir(directory)) if directory.is_dir() else []
        except OSError:
            names = []
        for name in names:
            data = self._read(directory / name)
            if data is not None:
                yield data
