"""When a restart loop owes a restart: the crossings the loop checks (:mod:`ctxsim.loops`) compute from the
fake agent's record of a session, never from the loop."""

from __future__ import annotations

from ..agent import ConnectionRecord, TurnRecord

__all__ = ["crosses", "deadline", "fell", "last_fall", "restarted_at_first_reach", "tool_limit"]


def fell(turn: TurnRecord) -> bool:
    """The context fell in the turn: a compaction, or old tool results cleared without one."""
    return turn.compacted or turn.cleared > 0


def last_fall(connection: ConnectionRecord) -> int:
    """The index (among work turns) of the last turn in which the context fell, 0 when it never did: what a
    session's context reached before it no longer counts after it."""
    return max((n for n, t in enumerate(connection.work_turns) if fell(t)), default=0)


def crosses(turn: TurnRecord, threshold: int) -> bool:
    """The turn's truth reached ``threshold`` (or a request of it was rejected as too long)."""
    return turn.rejected or turn.peak_prompt >= threshold


def tool_limit(connection: ConnectionRecord, max_tool_calls: int | None) -> int | None:
    """The index (among work turns) of the turn in which the session's tool calls (one a step) reached
    ``max_tool_calls``, the policy's fallback; None when they never did or there is no fallback."""
    if max_tool_calls is None:
        return None
    calls = 0
    for n, turn in enumerate(connection.work_turns):
        calls += len(turn.steps)
        if calls >= max_tool_calls:
            return n
    return None


def deadline(connection: ConnectionRecord, threshold: int, grace: int, marker: str,
             max_tool_calls: int | None = None) -> tuple[int, str] | None:
    """The index (among work turns) of the last turn a loop may send before it owes a restart, and what was reached
    there: the first turn whose truth reached the threshold plus ``grace`` turns (a wind-down), or the turn whose
    tool calls reached ``max_tool_calls``, whichever comes first. A compaction or cleared tool results by then (in
    that turn or before it) discharge a threshold crossing: the context fell before the loop had to act, and the
    crossings are counted again after it. None when no restart is owed: nothing was reached, or the task was done
    by then."""
    turns = connection.work_turns
    start = 0
    while True:
        owed: list[tuple[int, str]] = []
        token = next((n for n, turn in enumerate(turns) if n >= start and crosses(turn, threshold)), None)
        if token is not None:
            owed.append((token + grace, f"crossed the threshold in work turn {token + 1}"))
        tool = tool_limit(connection, max_tool_calls)
        if tool is not None:
            owed.append((tool, f"reached max_tool_calls={max_tool_calls} (the tool-call fallback) in work turn "
                               f"{tool + 1}"))
        if not owed:
            return None
        last, reached = min(owed)
        if token is not None and last == token + grace:
            compaction = next((n for n in range(token + 1, min(last + 1, len(turns))) if fell(turns[n])), None)
            if compaction is not None:
                start = compaction  # the context fell before the loop had to act: the crossing is discharged
                continue
        return None if any(t.reply.startswith(marker) for t in turns[:last + 1]) else (last, reached)


def restarted_at_first_reach(connection: ConnectionRecord, threshold: int, max_tool_calls: int | None) -> bool:
    """The session's last work turn is the first (since the last compaction) whose context (``prompt + output``,
    the most a tracker can read at the turn's result) reached ``threshold``, it was not rejected and the tool-call
    fallback was not reached: a graduated loop restarted without winding down. Only a compaction counts here (it
    re-arms the wind-down, as a fresh session does); tool results cleared without one do not."""
    turns = connection.work_turns
    start = max((n for n, t in enumerate(turns) if t.compacted), default=0)  # the context fell there
    first = next((n for n, t in enumerate(turns) if n >= start and (t.peak_next >= threshold or t.rejected)), None)
    tool = tool_limit(connection, max_tool_calls)
    return (first is not None and first == len(turns) - 1 and not turns[first].rejected
            and (tool is None or tool > first))
