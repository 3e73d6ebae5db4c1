"""Where the REPL's session-title requests fall in a session (rule ``repl-session-title``; the facts:
:mod:`ctxsim.world`'s ``title_asks``): the formats that count them (the statusline payload's cost, ``cost-state``)
ask :func:`title_calls`."""

from __future__ import annotations

from ..world import Call, ConversationReset, Session, holds, title_asks, title_call

__all__ = ["title_calls"]


def title_calls(session: Session, version: str) -> dict[int, Call]:
    """The title request of each query of ``session`` that sends one, by query index (0-based), as Claude Code
    ``version``'s REPL sends them: none for a session run through the SDK, nor where the rule does not hold; else
    as :func:`~ctxsim.world.title_asks` says, conversation by conversation (``/clear`` starts another). A query
    with no main-chain call (a command) asks nothing."""
    if session.entrypoint != "repl" or not holds("repl-session-title", version):
        return {}
    conversations: list[list[int]] = [[]]
    for index, query in enumerate(session.queries):
        if any(isinstance(step, ConversationReset) for step in query.steps):
            conversations.append([])  # /clear: a new session id, asked again
        if query.main_calls or query.prompt.strip().startswith("/"):
            conversations[-1].append(index)
    out: dict[int, Call] = {}
    for indexes in conversations:
        asks = title_asks([session.queries[i].prompt for i in indexes])
        for index, asked in zip(indexes, asks):
            if asked:
                out[index] = title_call(session.model_at(index), len(out) + 1)
    return out
