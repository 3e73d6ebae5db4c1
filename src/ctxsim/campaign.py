"""Fuzz campaigns over cores and machines: one Hypothesis example database shared by every worker.

Hypothesis saves every failing example it finds (shrunk) in its example database, under the test's key, and starts
every run of that test by replaying what the database holds. Point every worker of a campaign at one database and a
counterexample found by one replays on every other at its next run of the test:

- on one machine, ``pytest -n N`` or HypoFuzz (``hypothesis fuzz -n N``): a directory every process can write
  (:class:`hypothesis.database.DirectoryBasedExampleDatabase`, safe for concurrent writers);
- on several machines: a directory on a shared file system, or a Redis server
  (:class:`hypothesis.extra.redis.RedisExampleDatabase`; ``pip install redis``).

:func:`example_database` makes either from one string (``$CTXSIM_FUZZ_DATABASE``), and
:func:`ctxsim.strategies.register_profiles` gives the ``ctx-fuzz`` profile that database, so every process that loads
the profile (pytest's workers, HypoFuzz's, on any machine) shares it. The README's "Fuzz campaigns" section has the
test file and the commands.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import Any

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

__all__ = ["DATABASE_ENV", "example_database"]

DATABASE_ENV = "CTXSIM_FUZZ_DATABASE"
"""The environment variable :func:`example_database` reads when given no location."""


def example_database(location: str | os.PathLike[str] | None = None) -> ExampleDatabase | None:
    """The example database at ``location`` (default ``$CTXSIM_FUZZ_DATABASE``; None when neither is set).

    ``redis://host:port/db`` (or ``rediss://``, ``unix://``) is a :class:`~hypothesis.extra.redis.RedisExampleDatabase`
    on that server, for campaigns over several machines (needs the ``redis`` package); anything else is a directory,
    created if missing, as a :class:`~hypothesis.database.DirectoryBasedExampleDatabase`.
    """
    where = os.fspath(location) if location is not None else os.environ.get(DATABASE_ENV, "")
    if not where:
        return None
    if where.startswith(("redis://", "rediss://", "unix://")):
        return _redis(where)
    path = Path(where).expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return DirectoryBasedExampleDatabase(str(path))


def _redis(url: str) -> ExampleDatabase:
    try:
        redis = importlib.import_module("redis")  # optional: no stubs needed
    except ImportError:
        raise ImportError(f"ctxsim: the example database {url!r} is a Redis server, and the redis package is not "
                          f"installed: pip install redis") from None
    from hypothesis.extra.redis import RedisExampleDatabase

    client: Any = redis.Redis.from_url(url)
    return RedisExampleDatabase(client)
