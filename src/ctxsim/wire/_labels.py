"""The labels of a session's observation points where a query holds several subagents: each subagent's calls
carry its place (``q1 subagent 2 call 1``), so that no two points of a session share a label; the stream-json
rendering labels its points so, and a stream read back is relabelled so."""

from __future__ import annotations

import dataclasses

from ..world import Call, Query
from ._frames import Frame

__all__ = ["number_subagents", "query_subagents", "subagent_label"]


def query_subagents(query: Query) -> dict[str, int]:
    """The place (1, 2, ...) of each subagent whose calls ``query`` holds, by ``parent_tool_use_id`` in the order of
    their first call, when there are two or more; empty when there is one or none (its labels need no number)."""
    order: dict[str, int] = {}
    for step in query.steps:
        if isinstance(step, Call) and not step.is_main:
            order.setdefault(step.parent_tool_use_id or "", len(order) + 1)
    return order if len(order) > 1 else {}


def subagent_label(q: str, subagent: int | None, call: int) -> str:
    """The label of a subagent's ``call``-th call in query ``q`` (``q1``): ``q1 subagent call 2`` where the query
    has one subagent, ``q1 subagent 2 call 1`` (``subagent``: its place) where it has several, so that no two points
    of a session share a label."""
    return f"{q} subagent call {call}" if subagent is None else f"{q} subagent {subagent} call {call}"


def number_subagents(q: str, frames: list[Frame], parents: list[str]) -> dict[str, str]:
    """Relabel the subagent points among ``frames`` (query ``q`` read back from a stream, whose subagents are
    ``parents`` in order) with each one's place, as :func:`subagent_label` labels them; the old label to the new."""
    calls: dict[str, int] = {}
    out: dict[str, str] = {}
    for frame in frames:
        o = frame.observation
        if o is not None and o.kind == "subagent":
            parent = str(frame.data.get("parent_tool_use_id"))
            calls[parent] = calls.get(parent, 0) + 1
            place = parents.index(parent) + 1 if parent in parents else None
            out[o.label] = subagent_label(q, place, calls[parent])
            frame.observation = dataclasses.replace(o, label=out[o.label])
    return out
