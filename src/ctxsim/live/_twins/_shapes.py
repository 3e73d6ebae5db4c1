"""What ``ctxsim serve`` steers the live CLI into, so that it plays a scenario's shape: its compactions, its window,
the turns that end on a tool call, and, where the CLI never makes the scenario's shape, its live twin.

The live CLI decides its compactions itself; serve steers it. A compaction the client asks for (``trigger: manual``,
a query whose prompt is ``/compact`` and which does nothing else) needs nothing: the CLI sends its summary request,
serve answers it. A compaction the CLI makes on its own (``trigger: auto``, as a query's first step, or mid-turn
after a tool call's results) happens before a request when the last request's prompt passes the CLI's autocompact
point, which ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` moves: the point is that window less :data:`AUTOCOMPACT_RESERVE`
(the captures of every recorded release: 100,000 gives 67,000). :func:`autocompact_window` picks the window whose
point lies just under the smallest prompt that must compact (a third of the reserve under it, so that prompt stays
inside the window), above the largest one that must not; a scenario where no such point exists is refused, saying
why. Measured on the live CLI: it compacts on its own only once two or more calls came before, and not on a prompt
over its window. The truth does not move: every call after the compaction is served with the scenario's usage, so
the context it implies is the scenario's; only the boundary's ``pre_tokens`` and ``post_tokens`` are the CLI's own.

:func:`client_model` is the model id and settings that give the scenario's window; :class:`TurnEnds` the hook that
ends a turn on a tool call; :func:`live_twin` the scenario in the CLI's shapes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...world import Call, Compaction, ConversationReset, Query, Session, Step, Text, ToolResult
from ._recorded import recorded_twin

if TYPE_CHECKING:
    from ...scenario import SessionScenario

ONE_MILLION = 1_000_000
"""The larger of the two windows the live CLI gives a model."""

ONE_M = "[1m]"
"""The model id's suffix that gives the CLI a 1,000,000 window (``CLAUDE_CODE_DISABLE_1M_CONTEXT`` takes it back)."""

__all__ = ["AUTOCOMPACT_RESERVE", "COMPACT_PROMPT", "GO_ON", "STOP_REASON", "TurnEnds", "autocompact_window",
           "client_model", "compaction_reason", "is_model_query", "live_twin", "twin_changes", "window_reason"]

AUTOCOMPACT_RESERVE = 33_000
"""The CLI's autocompact point lies this far under its window: 20,000 kept for the summary's output and a 13,000
buffer (``autoCompactThreshold`` 67,000 for ``CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000`` in every capture)."""

MARGIN = 2_000
"""Tokens the point keeps from a prompt on either side (the CLI adds the new prompt and its attachments)."""

COMPACT_PROMPT = "/compact"
"""The prompt that makes the CLI compact when the client asks."""


def _prompts(session: Session) -> tuple[list[int], list[int]]:
    """The prompts of the main chain's calls the CLI measures before a request: those it must not compact after
    (every call but one an automatic compaction follows) and those it must (the call right before one)."""
    calm: list[int] = []
    compacting: list[int] = []
    last: int | None = None
    for query in session.queries:
        for step in query.steps:
            if isinstance(step, Compaction):
                if step.trigger == "auto" and last is not None:
                    compacting.append(last)
                    calm.remove(last)
                last = None
            elif isinstance(step, Call) and step.is_main:
                last = step.input_tokens + step.cache_creation_input_tokens + step.cache_read_input_tokens
                calm.append(last)
    return calm, compacting


def autocompact_window(session: Session) -> int | None:
    """The ``CLAUDE_CODE_AUTO_COMPACT_WINDOW`` that makes the CLI compact on its own exactly where ``session``
    does: the session's own where it states one, else one placed between its prompts (None: the CLI's default;
    see :func:`compaction_reason` for a session where no window can)."""
    calm, compacting = _prompts(session)
    if not compacting:
        return session.auto_compact_window
    if session.auto_compact_window is not None:
        return session.auto_compact_window
    # Just under the smallest compacting prompt, so that prompt stays under the window itself (the CLI measured
    # does not compact on a prompt over its window); halfway down to the largest calm one where they are close.
    point = max(min(compacting) - AUTOCOMPACT_RESERVE // 3, (max(calm, default=0) + min(compacting)) // 2)
    return point + AUTOCOMPACT_RESERVE


def _calls_before(session: Session, target: Compaction) -> tuple[int, Call | None]:
    """The main-chain calls since the conversation began or was last compacted, before ``target``, and the last."""
    calls, last = 0, None
    for query in session.queries:
        for step in query.steps:
            if step is target:
                return calls, last
            if isinstance(step, Compaction):
                calls, last = 0, None
            elif isinstance(step, Call) and step.is_main:
                calls, last = calls + 1, step
    return calls, last


def compaction_reason(session: Session) -> str | None:
    """Why the live CLI cannot be made to compact where ``session`` does, or None when it can."""
    for number, query in enumerate(session.queries, 1):
        steps = query.steps
        for at, step in enumerate(steps):
            if not isinstance(step, Compaction):
                continue
            if step.trigger == "manual":
                if query.prompt.strip() != COMPACT_PROMPT or len(steps) != 1:
                    return (f"query {number} compacts by hand: live, that is a query of its own whose prompt is "
                            f"{COMPACT_PROMPT}")
                continue
            calls, last = _calls_before(session, step)
            if at != 0 and (last is None or last.stop_reason != "tool_use" or steps.index(last) > at):
                return (f"query {number} compacts on its own mid-turn, but not after a tool call: the live CLI "
                        f"compacts before a request, at a query's start or after a tool's result")
            if calls < 2:
                return (f"query {number} compacts on its own after a single call: the live CLI (measured) compacts "
                        f"on its own only once two or more calls came before")
    calm, compacting = _prompts(session)
    if compacting and session.auto_compact_window is not None:
        point = session.auto_compact_window - AUTOCOMPACT_RESERVE
        if max(calm, default=0) + MARGIN > point or min(compacting) - MARGIN < point:
            return (f"its autocompact point is {point:,} (auto_compact_window {session.auto_compact_window:,}), "
                    f"where the live CLI compacts once a prompt passes it; the scenario compacts after "
                    f"{min(compacting):,} (and not after {max(calm, default=0):,})")
    if compacting and max(calm, default=0) + MARGIN >= min(compacting) - MARGIN:
        return (f"no autocompact point lies between the largest prompt that must not compact "
                f"({max(calm):,}) and the smallest that must ({min(compacting):,})")
    if compacting and min(compacting) > session.window:
        return f"it compacts after a prompt of {min(compacting):,}, over the window {session.window:,}"
    return None


def client_model(session: Session) -> tuple[str, dict[str, str]]:
    """The model id and the variables that make the live CLI give ``session``'s model its window (measured on the
    live CLI: an id with :data:`ONE_M` gets 1,000,000, with ``CLAUDE_CODE_DISABLE_1M_CONTEXT=1`` 200,000; any other
    id 200,000). See :func:`window_reason` for windows it never gives."""
    base = session.model.removesuffix(ONE_M)
    if session.window == ONE_MILLION:
        return base + ONE_M, {}
    if session.model.endswith(ONE_M):
        return session.model, {"CLAUDE_CODE_DISABLE_1M_CONTEXT": "1"}
    return session.model, {}


def window_reason(session: Session) -> str | None:
    """Why the live CLI cannot be given ``session``'s window, or None when it can."""
    if session.window not in (200_000, ONE_MILLION):
        return (f"the live CLI gives a model 200,000 tokens, or 1,000,000 with the {ONE_M} suffix; the scenario's "
                f"window is {session.window:,}")
    return None


STOP_REASON = "ctxsim: the scenario's turn ends here"
"""What the ``PostToolUse`` hook says when it ends a turn on a tool call."""


class TurnEnds:
    """Where ``session``'s queries end their turns on a tool call (the CLI would call again), for the hook serve
    gives the CLI: after the tools of such a query's last call ran, a ``PostToolUse`` (or ``PostToolUseFailure``)
    hook answers ``continue: false`` and the CLI ends the turn there, writing nothing the in-process stream does not
    have. :meth:`answer` is the hook's answer, given how many main-chain calls were served. (A query that goes on
    after a main-chain answer is not played: a ``Stop`` hook that blocks would keep the CLI going, but it adds its
    feedback to the conversation, a user message the scenario does not have.)"""

    def __init__(self, session: Session) -> None:
        self.last: list[bool] = []
        """For each main-chain call, in order: whether it is its query's last."""
        for query in session.queries:
            main = query.main_calls
            self.last += [at == len(main) - 1 for at in range(len(main))]

    @staticmethod
    def needed(session: Session) -> bool:
        """Whether ``session`` has a query that ends on a main-chain tool call."""
        return any(q.main_calls and q.main_calls[-1].stop_reason == "tool_use" for q in session.queries)

    def answer(self, event: str, served: int) -> dict[str, object]:
        """The hook output for ``event`` after ``served`` main-chain calls."""
        if event in HOOK_EVENTS and 0 < served <= len(self.last) and self.last[served - 1]:
            return {"continue": False, "stopReason": STOP_REASON}
        return {}

    @staticmethod
    def settings(command: str) -> dict[str, object]:
        """The CLI settings that run ``command`` as the hook of :data:`HOOK_EVENTS`."""
        return {"hooks": {event: [{"matcher": "*", "hooks": [{"type": "command", "command": command, "timeout": 30}]}]
                          for event in HOOK_EVENTS}}


HOOK_EVENTS = ("PostToolUse", "PostToolUseFailure")
"""The hook events after a tool ran (it succeeded, it failed), where serve ends a turn."""


GO_ON = "Go on."
"""The prompt of each query :func:`live_twin` adds."""


def live_twin(scenario: SessionScenario) -> SessionScenario | None:
    """``scenario`` in the shape the live CLI plays, where it is not: a query with a main-chain call that ends the
    turn before the query's last (the CLI ends the query there) is split after every such call, the next part a
    query of its own whose prompt is :data:`GO_ON`; a subagent whose last call calls a tool (its CLI would call
    again) gets a closing answer (:func:`_close_subagents`); a reset inside a query is a ``/clear`` query of its
    own (:data:`CLEAR_PROMPT`), the query's prompt sent again after it. The main chain's calls, their usage and so
    the truth at every main-chain point are the scenario's; an automatic compaction at a query's start after a
    single call (the CLI compacts on its own only after two or more) is asked for, a :data:`COMPACT_PROMPT` query
    of its own (:func:`_asked_compactions`); a switch of model is a :data:`MODEL_PROMPT` query the client sends,
    whose own points are still under the model before it (:func:`_model_queries`). The twin has a result where each
    added query ends, a point of its own. A recorded stream's twin is built from what it shows first
    (:func:`recorded_twin`). None: the scenario is in the CLI's shape already."""
    return twin_changes(scenario)[0]


def twin_changes(scenario: SessionScenario) -> tuple[SessionScenario | None, list[str]]:
    """:func:`live_twin` of ``scenario``, and what it changed for this scenario: one phrase a change, naming the
    query (the scenario's number) and the step, as each change was made (empty when there is no twin)."""
    built = recorded_twin(scenario)  # a recorded stream: the session it shows, built
    changes: list[str] = []
    if built is not None:
        clears = sum(q.prompt == CLEAR_PROMPT for q in built.session.queries)
        changes.append(f"the recorded stream served as the session it shows, its {len(built.session.queries)} "
                       f"queries built from their recorded calls and usage"
                       + ("" if not clears else f", the one that only starts a new session a {CLEAR_PROMPT} query"
                          if clears == 1 else f", each of the {clears} that only start a new session a {CLEAR_PROMPT} "
                          f"query"))
    scenario = built or scenario
    queries: list[Query] = []
    asked = _model_queries(_asked_compactions(scenario.session, changes), scenario.session.model, changes)
    closed = [(number, part) for number, q in asked
              for part in _clear_queries(_close_subagents(q, number, changes), number, changes)]
    for number, query in closed:
        ends = {id(c) for c in query.main_calls[:-1] if c.stop_reason != "tool_use"}
        if ends:
            at = [str(n) for n, c in enumerate(query.main_calls, 1) if id(c) in ends]
            which = (f"its call {at[0]}, which ends" if len(at) == 1 else
                     f"each of its calls {', '.join(at)}, which end" if len(at) <= 4 else
                     f"each of its calls {at[0]}, {at[1]}, ... {at[-1]} ({len(at)} calls), which end")
            changes.append(f"query {number} split after {which} the turn (no tool call) before its last: each part "
                           f"after the first a query of its own prompted {GO_ON!r}")
        prompt, part = query.prompt, []
        for step in query.steps:
            part.append(step)
            if id(step) in ends:
                queries.append(replace(query, prompt=prompt, steps=tuple(part)))
                prompt, part = GO_ON, []
        queries.append(replace(query, prompt=prompt, steps=tuple(part)))
    if queries == list(scenario.session.queries) and built is None:
        return None, []
    twin = replace(scenario, session=replace(scenario.session, queries=tuple(queries)))
    return twin, changes or ["each query's model set as the live CLI shows a switch of model"]


SUBAGENT_CLOSE_OUTPUT = 20
"""The output tokens of the closing answer :func:`_close_subagents` gives a subagent."""


def _close_subagents(query: Query, number: int, changes: list[str]) -> Query:
    """``query`` (the scenario's query ``number``) with a closing answer after each subagent chain whose last call
    calls a tool: a text call of the same subagent and model, after its tool results, whose prompt is the last
    call's plus its output and results; each said in ``changes``."""
    steps = list(query.steps)
    chains: dict[str, list[int]] = {}
    for at, step in enumerate(steps):
        if isinstance(step, Call) and not step.is_main:
            chains.setdefault(str(step.parent_tool_use_id), []).append(at)
    inserts: list[tuple[int, Call]] = []
    for parent, ats in chains.items():
        last = steps[ats[-1]]
        assert isinstance(last, Call)
        if last.stop_reason != "tool_use":
            continue
        after = ats[-1] + 1
        results = 0
        while after < len(steps):
            result = steps[after]
            if not isinstance(result, ToolResult) or result.parent_tool_use_id != parent:
                break
            results += result.tokens
            after += 1
        grown = last.output_tokens + results  # cached up to the last call, its output and results written now
        changes.append(f"query {number}: the subagent of {parent}, whose last call {last.message_id} calls a tool, "
                       f"closed with an answer of its own")
        inserts.append((after, Call(min(3, grown), max(0, grown - 3), last.prompt, SUBAGENT_CLOSE_OUTPUT,
                                    (Text("Done."),), f"{last.message_id}_end", model=last.model,
                                    parent_tool_use_id=last.parent_tool_use_id)))
    for at, call in sorted(inserts, key=lambda item: item[0], reverse=True):
        steps.insert(at, call)
    return replace(query, steps=tuple(steps)) if inserts else query


CLEAR_PROMPT = "/clear"
"""The prompt that makes the CLI reset the conversation."""


def _clear_queries(query: Query, number: int, changes: list[str]) -> list[Query]:
    """``query`` (the scenario's query ``number``) as the live CLI plays its resets: each a ``/clear`` query of its
    own, the steps before it the query's first part, those after it a query with the same prompt; said in
    ``changes``."""
    if query.prompt.strip() == CLEAR_PROMPT or not any(isinstance(s, ConversationReset) for s in query.steps):
        return [query]
    resets = sum(isinstance(s, ConversationReset) for s in query.steps)
    changes.append(f"query {number}: its {'reset' if resets == 1 else f'{resets} resets'} a {CLEAR_PROMPT} query of "
                   f"its own, the query's prompt sent again after it")
    out: list[Query] = []
    part: list[Step] = []
    for step in query.steps:
        if isinstance(step, ConversationReset):
            if part:
                out.append(replace(query, steps=tuple(part)))
            out.append(replace(query, prompt=CLEAR_PROMPT, steps=(step,)))
            part = []
        else:
            part.append(step)
    if part:
        out.append(replace(query, steps=tuple(part)))
    return out


def _asked_compactions(session: Session, changes: list[str]) -> list[tuple[int, Query]]:
    """``session``'s queries, each that starts with an automatic compaction the live CLI would not make on its own
    (a single main-chain call before it, :func:`_calls_before`) split in two: a :data:`COMPACT_PROMPT` query holding
    the compaction as the client asks for it (``trigger: manual``, its sizes the scenario's) and the query's other
    steps, under its own prompt. The context before and after the compaction, and so the truth, is the same. Each
    query with the scenario's number; each split said in ``changes``."""
    out: list[tuple[int, Query]] = []
    for number, query in enumerate(session.queries, 1):
        first = query.steps[0] if query.steps else None
        if (isinstance(first, Compaction) and first.trigger == "auto" and len(query.steps) > 1
                and _calls_before(session, first)[0] == 1):
            changes.append(f"query {number}'s automatic compaction, after a single call, asked for: a "
                           f"{COMPACT_PROMPT} query of its own before the query's other steps")
            out.append((number, replace(query, prompt=COMPACT_PROMPT, steps=(replace(first, trigger="manual"),))))
            out.append((number, replace(query, steps=query.steps[1:])))
        else:
            out.append((number, query))
    return out


MODEL_PROMPT = "/model"
"""The prompt (with the model id after it) that switches the CLI's model for the session."""


def is_model_query(query: Query) -> bool:
    """Whether ``query`` only switches the model: a :data:`MODEL_PROMPT` prompt, no steps."""
    return not query.steps and query.prompt.split(maxsplit=1)[:1] == [MODEL_PROMPT]


def _model_queries(queries: list[tuple[int, Query]], model: str,
                   changes: list[str]) -> list[tuple[int, Query]]:
    """``queries`` with each switch of model as the live CLI shows one to an SDK client: a :data:`MODEL_PROMPT`
    query whose own init and result still carry the model before it (the CLI writes its init before the command
    runs; the next query's says the new model), the next query on the new one; a query the scenario runs on
    another model without such a query gets one before it (said in ``changes``). The main chain's calls are
    untouched."""
    out: list[tuple[int, Query]] = []
    in_force, switched = model, None
    for number, query in queries:
        if is_model_query(query):
            switched = query.model or query.prompt.split(maxsplit=1)[1].strip()
            if query.model is not None and query.model != in_force:
                changes.append(f"query {number} ({query.prompt!r}): its own init and result under the model before "
                               f"it, {in_force}, as the CLI writes them; the next query's on {switched}")
            out.append((number, replace(query, model=None)))
            continue
        wanted = query.model or switched
        if wanted is not None and wanted != in_force and switched is None:
            changes.append(f"a '{MODEL_PROMPT} {wanted}' query added before query {number}, which runs on {wanted}")
            out.append((number, Query(f"{MODEL_PROMPT} {wanted}", ())))
        in_force = wanted or in_force
        out.append((number, replace(query, model=wanted) if wanted is not None and wanted != query.model else query))
        switched = None
    return out
