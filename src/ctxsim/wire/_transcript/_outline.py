"""The outline of a transcript file: what a tracker walks of it, with every link made a position.

Two renderings of one session (the CLI's and ctxsim's) never share a uuid, an id or a hash; they match where their
outlines do. :func:`transcript_outline` reduces a file to its structure: its chain (the rows with a ``uuid``) by kind,
every link as the position in the chain of the row it names, the request lines the REPL writes and how they join,
and the other kinds of line it holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["TIMED_LINES", "transcript_outline"]

TIMED_LINES = ("last-prompt", "mode", "permission-mode", "atis-latch", "tools-used")
"""Lines the CLI appends again on a timer (the session's metadata, kept near the file's end): where, and how
often, they land is the timer's, so an outline names whether a file has them, not where."""


def _position(chain: Sequence[Mapping[str, Any]]) -> Callable[[Any], Any]:
    """Where in a file's chain a uuid is: None for none, ``elsewhere`` if not in it."""
    at = {r["uuid"]: n for n, r in enumerate(chain)}
    return lambda uid: None if uid is None else at.get(uid, "elsewhere")


def _requests(rows: Sequence[Mapping[str, Any]]) -> tuple[list[tuple[Any, ...]], dict[Any, int]]:
    """Each ``api-request`` line in order: whether a shape was written since the request before, how many blobs,
    whether it extends the request before (``base``), ``keep``, how many hashes its ``tail`` adds, its keys; and
    each request's position by its id."""
    requests: list[tuple[Any, ...]] = []
    ids: dict[Any, int] = {}
    shape, blobs = False, 0
    for row in rows:
        kind = row.get("type")
        if kind == "api-request-shape":
            shape = True
        elif kind == "api-request-blob":
            blobs += 1
        elif kind == "api-request":
            extends = row.get("base") is not None and ids.get(row.get("base")) == len(ids) - 1
            requests.append((shape, blobs, extends, row.get("keep"), len(row.get("tail") or ()), tuple(sorted(row))))
            ids[row.get("id")] = len(ids)
            shape, blobs = False, 0
    return requests, ids


def transcript_outline(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What a tracker walks of one transcript file, each link the position in the file's chain (its rows with a
    ``uuid``) of the row it names, by name:

    - ``chain rows``: the chain's kinds in order (``user/``, ``attachment/date``, ``system/turn_duration``...);
    - ``chain parents``: each row's ``parentUuid`` and ``logicalParentUuid``;
    - ``kept rows``: each boundary's ``preservedSegment`` and ``preservedMessages``;
    - ``snapshot messageIds``: the row each ``file-history-snapshot`` names;
    - ``turn_duration messageCounts``: whether each ``messageCount`` is the number of chain rows before it (the
      chain's length back through each boundary's ``logicalParentUuid``; after a mid-turn autocompaction those
      links circle, and the CLI counts each row once);
    - ``request lines``: each request's lines (a shape written before it, its blobs, whether it extends the request
      before, ``keep``, how many hashes its ``tail`` adds, its keys); ``requestRef joins``: the request each reply
      names;
    - ``line kinds``: the kinds of the other lines (but :data:`TIMED_LINES`).
    """
    chain = [r for r in rows if r.get("uuid")]
    to = _position(chain)
    requests, ids = _requests(rows)
    metas = [r.get("compactMetadata") or {} for r in chain if r.get("subtype") == "compact_boundary"]
    return {
        "chain rows": [f"{r.get('type')}/{r.get('subtype') or (r.get('attachment') or {}).get('type') or ''}"
                       for r in chain],
        "chain parents": [(to(r.get("parentUuid")), to(r.get("logicalParentUuid"))) for r in chain],
        "kept rows": [({k: to(v) for k, v in (m.get("preservedSegment") or {}).items()},
                       [to(u) for u in (m.get("preservedMessages") or {}).get("uuids") or ()]) for m in metas],
        "snapshot messageIds": [to(r.get("messageId")) for r in rows if r.get("type") == "file-history-snapshot"],
        "turn_duration messageCounts": [r.get("messageCount") == n for n, r in enumerate(chain)
                                        if r.get("subtype") == "turn_duration"],
        "request lines": requests,
        "requestRef joins": [ids.get(r.get("requestRef"), r.get("requestRef")) for r in chain
                             if r.get("type") == "assistant"],
        "line kinds": sorted({str(r.get("type")) for r in rows if not r.get("uuid")} - set(TIMED_LINES)),
    }
