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

:func:`example_database` makes either from one string (``$CTXSIM_FUZZ_DATABASE``), and
:func:`ctxsim.strategies.register_profiles` gives the ``ctx-fuzz`` profile that database, so every process that loads
the profile (pytest's workers, HypoFuzz's, on any machine) shares it. docs/how-to/fuzz-a-tracker.md has the
test file and the commands.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

__all__ = ["COMMAND_TIMEOUT", "CONNECT_TIMEOUT", "DATABASE_ENV", "DatabaseUnreachable", "example_database"]

DATABASE_ENV = "CTXSIM_FUZZ_DATABASE"
"""The environment variable :func:`example_database` reads when given no location."""


def example_database(location: str | os.PathLike[str] | None = None) -> ExampleDatabase | None:
    """The example database at ``location`` (default ``$CTXSIM_FUZZ_DATABASE``; None when neither is set).

    ``redis://host:port/db`` (or ``rediss://``, ``unix://``) is a :class:`~hypothesis.extra.redis.RedisExampleDatabase`
    on that server, for campaigns over several machines (needs the ``redis`` package; a server that does not answer
    within :data:`CONNECT_TIMEOUT` raises :class:`DatabaseUnreachable`); anything else is a directory, created if
    missing, as a :class:`~hypothesis.database.DirectoryBasedExampleDatabase`.
    """
    where = os.fspath(location) if location is not None else os.environ.get(DATABASE_ENV, "")
    if not where:
        return None
    if where.startswith(("redis://", "rediss://", "unix://")):
        return _redis(where)
    path = Path(where).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return DirectoryBasedExampleDatabase(str(path))


CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a Redis server to accept the connection."""
COMMAND_TIMEOUT = 30.0
"""Seconds to wait for a Redis command's answer."""


class DatabaseUnreachable(ConnectionError):
    """The Redis server of an example database did not answer; the message is one ``ctxsim:`` line."""


def _redis(url: str) -> ExampleDatabase:
    try:
        redis = importlib.import_module("redis")  # optional: no stubs needed
    except ImportError:
        raise ImportError(f"ctxsim: the example database {url!r} is a Redis server, and the redis package is not "
                          f"installed: pip install 'pytest-ctxsim[redis]' (or pip install redis)") from None
    from hypothesis.extra.redis import RedisExampleDatabase

    client: Any = redis.Redis.from_url(url, socket_connect_timeout=CONNECT_TIMEOUT, socket_timeout=COMMAND_TIMEOUT)
    try:
        client.ping()
    except redis.RedisError as exc:
        raise DatabaseUnreachable(f"ctxsim: the example database {url!r} did not answer within "
                                  f"{CONNECT_TIMEOUT:g} s: {type(exc).__name__}: {exc}") from None
    return RedisExampleDatabase(client)
