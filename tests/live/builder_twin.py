"""A recorded session as a user builds it: what :class:`~ctxsim.world.SessionBuilder` derives, nothing else stated.

A capture's world states everything the CLI reported (each compaction's ``preTokens``, what ``/context`` showed
after it and after ``/clear``). :func:`builder_twin` rebuilds it through the public builder the way a user would:
each call with its usage and its blocks stated (``call(input=, cache_creation=, cache_read=, output=, blocks=,
results=)``: the blocks as the world holds them, what the model said and the tools and inputs it asked for), each
compaction with what the boundary reported after it (``post``), its trigger, the summary request the API answered
and any it refused (``compact(post, trigger=, summary=, rejected=)``), each ``/clear`` as ``reset()``, each ``/model``
as ``switch_model(model)`` before the command's query; the compaction's ``preTokens``, the context after it, whether
it kept a segment, and the context after ``/clear`` are the builder's to derive. The calls and tool results the
builder made are then swapped for the recorded ones (the same usage; the ids and texts the API drew), so a comparison
with the capture tests the derivations alone.
"""

from __future__ import annotations

import dataclasses

from ctxsim.world import (
    Call,
    Compaction,
    ConversationReset,
    Query,
    Session,
    SessionBuilder,
    SubagentStart,
    ToolResult,
    ToolUse,
)

__all__ = ["builder_twin", "twin_ready"]


def twin_ready(session: Session) -> bool:
    """Whether :func:`builder_twin` can rebuild ``session``: no subagent (the builder draws its own ``Agent`` call
    around a subagent, which a recording cannot state)."""
    return not any(isinstance(s, SubagentStart) or (isinstance(s, Call) and not s.is_main)
                   for q in session.queries for s in q.steps)


def builder_twin(session: Session) -> Session:
    """``session`` rebuilt through :class:`SessionBuilder` (see the module's docstring)."""
    builder = SessionBuilder(seed=session.seed, model=session.model, window=session.window,
                             baseline=session.baseline, max_output_tokens=session.max_output_tokens,
                             name=session.name, session_id=session.session_id,
                             auto_compact_window=session.auto_compact_window, settings=session.settings,
                             cli=session.cli)
    for query in session.queries:
        if query.model is not None:
            builder.switch_model(query.model)
        builder.query(query.prompt)
        steps = query.steps
        for index, step in enumerate(steps):
            if isinstance(step, Call):
                results = [s.tokens for s in steps[index + 1:index + 1 + len(step.blocks)]
                           if isinstance(s, ToolResult)][:sum(isinstance(b, ToolUse) for b in step.blocks)]
                builder.call(input=step.input_tokens, cache_creation=step.cache_creation_input_tokens,
                             cache_read=step.cache_read_input_tokens, output=step.output_tokens,
                             blocks=step.blocks, results=results,
                             message_id=step.message_id, request_id=step.request_id or False)
            elif isinstance(step, Compaction):
                builder.compact(step.post_tokens, trigger=step.trigger, summary=step.summary,
                                rejected=step.rejected)
            elif isinstance(step, ConversationReset):
                builder.reset()
    built = builder.build()
    queries = []
    for recorded, twin in zip(session.queries, built.queries, strict=True):
        assert len(recorded.steps) == len(twin.steps), (recorded.prompt, recorded.steps, twin.steps)
        queries.append(Query(twin.prompt, tuple(
            mine if isinstance(mine, (Compaction, ConversationReset)) else theirs
            for theirs, mine in zip(recorded.steps, twin.steps, strict=True)), twin.model))
    session_id = built.session_id
    return dataclasses.replace(built, queries=tuple(queries), session_id=session_id,
                               auto_compact_at=session.auto_compact_at, delta_usage=session.delta_usage)
