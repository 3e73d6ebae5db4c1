"""Fuzz campaigns over cores and machines: one Hypothesis example database shared by every worker.

Hypothesis saves every failing example it finds (shrunk) in its example database, under the test's key, and starts
every run of that test by replaying what the database holds. Point every worker of a campaign at one database and a
counterexample found by one replays on every other at its next run of the test:

- on one machine, ``pytest -n N`` or HypoFuzz (``hypothesis fuzz -n N``): a directory every process can write
  (:class:`hypothesis.database.DirectoryBasedExampleDatabase`, safe for concurrent writers);
- on several machines: a directory on a shared file system, or a Redis server
  (:class:`hypothesis.extra.redis.RedisExampleDatabase`; ``pip install 'pytest-ctxsim[redis]'``).

``ctxsim fuzz --db URL --workers N`` (:func:`ctxsim.fuzz.fuzz_workers`) runs on such a database: each run replays
what the database holds for that tracker before it generates.

A location is ``redis://``, ``rediss://`` or ``unix://`` (a Redis server), or a directory path; anything else with
a scheme (``http://...``, ``redis:/x``) is refused in one line, as is a URL Redis cannot read, a server that does
not answer, refuses the credentials or the database number. Messages show a URL without its credentials
(:func:`shown_url`). Every Redis command is bounded (:data:`COMMAND_TIMEOUT`, never retried). A Redis database
that fails once the run is under way (the server stopped or killed, the connection lost) is not asked again and
never loses a counterexample: what it could not take is saved in a local directory that really takes a file, with
one ``ctxsim:`` line on stderr saying where and how to replay it (:class:`KeptDatabase`); so is a directory
database whose disk fills (Hypothesis' own drops such a save without a word). A directory database never reads a
FIFO or a device, nor more than :data:`MAX_EXAMPLE_BYTES` of a file (:class:`CheckedDirectoryDatabase`).

:func:`example_database` makes either from one string (``$CTXSIM_FUZZ_DATABASE``), and
:func:`ctxsim.strategies.register_profiles` gives the ``ctx-fuzz`` profile that database, so every process that loads
the profile (pytest's workers, HypoFuzz's, on any machine) shares it. docs/how-to/fuzz-a-tracker.md has the
test file and the commands.
"""

from __future__ import annotations

import importlib
import os
import re
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from hypothesis.database import ExampleDatabase, InMemoryExampleDatabase

from ._kept import KEPT_DIRECTORY, MAX_EXAMPLE_BYTES, CheckedDirectoryDatabase, KeptDatabase

__all__ = ["COMMAND_TIMEOUT", "CONNECT_TIMEOUT", "DATABASE_ENV", "KEPT_DIRECTORY", "MAX_EXAMPLE_BYTES",
           "CheckedDirectoryDatabase", "DatabaseUnreachable", "KeptDatabase", "example_database", "shown_url"]

DATABASE_ENV = "CTXSIM_FUZZ_DATABASE"
"""The environment variable :func:`example_database` reads when given no location."""


def example_database(location: str | os.PathLike[str] | None = None, *, notes: TextIO | None = None,
                     kept_if_unreachable: bool = False) -> ExampleDatabase | None:
    """The example database at ``location`` (default ``$CTXSIM_FUZZ_DATABASE``; None when neither is set).

    ``redis://host:port/db`` (or ``rediss://``, ``unix://``) is a :class:`~hypothesis.extra.redis.RedisExampleDatabase`
    on that server, for campaigns over several machines (needs the ``redis`` package; a server that does not answer
    within :data:`CONNECT_TIMEOUT` raises :class:`DatabaseUnreachable`; one that fails later is replaced by a local
    directory, :class:`KeptDatabase`); anything else is a directory, created if missing, as a
    :class:`CheckedDirectoryDatabase` kept the same way (a save it does not take, on a full disk, goes to a local
    directory that does, said in one line). ``notes`` (default stderr) takes the one-line notes of what failed later.
    With ``kept_if_unreachable`` (a worker of a run whose server answered its parent), a Redis server that does not
    answer is taken as lost mid-run: the note says so and where the examples are kept, nothing is raised.
    """
    where = os.fspath(location) if location is not None else os.environ.get(DATABASE_ENV, "")
    if not where:
        return None
    if where.startswith(_REDIS):
        try:
            return _redis(where, notes)
        except DatabaseUnreachable as exc:
            if not kept_if_unreachable:
                raise
            kept = KeptDatabase(InMemoryExampleDatabase(), shown_url(where), notes=notes)
            kept.lost(str(exc))
            return kept
    scheme = _SCHEME.match(where)
    if scheme is not None and not (os.name == "nt" and len(scheme.group(1)) == 1):  # C:\... is a path
        raise DatabaseUnreachable(f"ctxsim: the example database {shown_url(where)!r} is neither a Redis URL "
                                  f"(redis://HOST:PORT/DB, rediss://..., unix://PATH) nor a directory path")
    path = Path(where).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseUnreachable(f"ctxsim: the example database directory {where!r} cannot be made: "
                                  f"{exc.strerror or exc}") from None
    return KeptDatabase(CheckedDirectoryDatabase(str(path), notes=notes), where, notes=notes)


_REDIS = ("redis://", "rediss://", "unix://")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def shown_url(url: str) -> str:
    """``url`` as messages show it: any user name, password and query (``?password=``) replaced by ``***``."""
    try:
        parts = urlsplit(url)
        host = parts.netloc.rpartition("@")[2]
    except ValueError:
        return url.split(":", 1)[0] + "://***"
    if not parts.scheme or "://" not in url:
        return url if "@" not in url else "***"
    userinfo = "***@" if "@" in parts.netloc else ""
    return f"{parts.scheme}://{userinfo}{host}{parts.path}" + ("?***" if parts.query else "")


CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a Redis server to accept the connection."""
COMMAND_TIMEOUT = 10.0
"""Seconds to wait for a Redis command's answer (a stopped server): the command is not retried."""


class DatabaseUnreachable(ConnectionError):
    """The Redis server of an example database did not answer; the message is one ``ctxsim:`` line."""


def _redis(url: str, notes: TextIO | None) -> ExampleDatabase:
    try:
        redis = importlib.import_module("redis")  # optional: no stubs needed
    except ImportError:
        raise ImportError(f"ctxsim: the example database {url!r} is a Redis server, and the redis package is not "
                          f"installed: pip install 'pytest-ctxsim[redis]' (or pip install redis)") from None
    from hypothesis.extra.redis import RedisExampleDatabase

    shown = shown_url(url)
    once = importlib.import_module("redis.retry").Retry(importlib.import_module("redis.backoff").NoBackoff(), 0)
    try:
        client: Any = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT,
                                           socket_timeout=COMMAND_TIMEOUT, retry=once)
    except (ValueError, TypeError) as exc:
        raise DatabaseUnreachable(f"ctxsim: the example database {shown!r} is not a Redis URL it can read "
                                  f"({_secretless(str(exc), url)}): write redis://HOST:PORT/DB") from None
    try:
        client.ping()
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        if isinstance(exc, redis.AuthenticationError):
            raise DatabaseUnreachable(f"ctxsim: the example database {shown!r} refused the credentials: "
                                      f"{_secretless(str(exc), url)}") from None
        bound = COMMAND_TIMEOUT if isinstance(exc, redis.TimeoutError) else CONNECT_TIMEOUT
        raise DatabaseUnreachable(f"ctxsim: the example database {shown!r} did not answer within "
                                  f"{bound:g} s: {type(exc).__name__}: "
                                  f"{_secretless(str(exc), url)}") from None
    except (redis.RedisError, OSError, ValueError) as exc:
        raise DatabaseUnreachable(f"ctxsim: the example database {shown!r} refused the connection: "
                                  f"{type(exc).__name__}: {_secretless(str(exc), url)}") from None
    return KeptDatabase(RedisExampleDatabase(client), shown, notes=notes)


def _secretless(text: str, url: str) -> str:
    """``text`` without the credentials of ``url``, on one line."""
    try:
        parts = urlsplit(url)
        secrets = [v for v in (parts.password, parts.username) if v]
    except ValueError:
        secrets = []
    for secret in secrets:
        text = text.replace(secret, "***")
    return " ".join(text.split())[:300]
