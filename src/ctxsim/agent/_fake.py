"""A reactive fake agent: it works through a task behind :class:`~ctxsim.sdk.FakeTransport`, across restarts.

:class:`FakeAgent` answers every prompt a restart loop sends through the real ``ClaudeSDKClient`` the way a
model working on a :class:`Task` of N steps would, and builds each answer with :mod:`ctxsim.world` so that the
true context is known at every point and the wire is what Claude Code writes:

- **What a prompt is** comes from what the loop under test declares (:class:`LoopPrompts`: its checkpoint
  request, its continuation prompt, its "go on" prompts; design 003's by default) and from what the agent knows, never
  from its words alone: a prompt matching the declared checkpoint request is one; a prompt matching the declared
  continuation is one; the first prompt of a new session that carries a checkpoint (a ``<checkpoint>`` tag or the
  ``## Completed Work`` / ``## Remaining Tasks`` / ``## Do Not Redo`` sections) is a continuation, else one that
  contains the task prompt starts the task; a later prompt matching the declared "go on" prompts is a work turn.
  A prompt starting with ``/compact`` is Claude Code's own command, which needs no declaration (below). Anything
  else raises :class:`UnclassifiedPromptError` quoting the prompt and saying how to declare it.
- **Work turns** (the task prompt, a continuation prompt, a "go on" prompt): it performs the next
  ``steps_per_turn`` steps of its queue, each one tool call whose result adds the step's ``tokens`` to the
  context, then ends the turn with a text reply (the declared ``done_marker``, ``TASK COMPLETE``, once its queue
  is empty). A session that was never given the task or a continuation has nothing to work on: it says so, does
  no step and never claims the task complete.
- **Checkpoint requests**: a checkpoint in design 003's format listing the completed and remaining steps, well
  formed or degraded as the plan says (:data:`DEGRADATIONS`).
- **Continuations**: it resumes from what the
  prompt says is left: the step ids under ``## Remaining Tasks``; without that section, every step not listed
  under ``## Completed Work`` or ``## Do Not Redo``; with neither, the whole task from the start (a model given no
  state cannot know what was done: a refusal's, an error's or empty tags' words passed on as "the state" give it
  nothing, and it starts over). A continuation the loop declares as one that tells it to **inspect the work
  first** (:attr:`LoopPrompts.inspect`: by default the minimal continuation prompt, sent when no state could be
  saved, and any continuation carrying the note that its checkpoint was cut off) makes it look in the workspace
  before going on: every step done so far, in any session, whose work is there (:attr:`TaskStep.traced`, an
  edited file) counts as done, with the steps the checkpoint lists; it does the others, in task order. A step
  that leaves no trace (``traced=False``: a deploy, a message sent) is found only in a checkpoint, so inspecting
  redoes it. The assumption, stated: a model told its state is missing or incomplete checks the work before going
  on and finds what the workspace shows; a model given a state (complete or not, as far as it is told) trusts
  it. So a degraded checkpoint leads to redone or skipped steps, measurably, unless the loop says what it lacks.
- **Autocompact** (:attr:`Task.autocompact_at`): a request whose prompt would reach it is preceded by a
  compaction, as Claude Code compacts before a request: a ``compact_boundary`` reporting the summary
  (:attr:`Task.summary_tokens`) as its ``post_tokens``; the context is then the baseline plus the summary, plus what
  the turn added since its last call. The agent's own state (steps done and left) survives it, as a summary keeps it.
- **The loop's** ``/compact`` (instructions after it change nothing here): through the SDK only the loop sends
  prompts, so a compaction between queries is the loop's act. The agent answers as Claude Code runs the command: no
  request, no step; a ``compact_boundary`` with trigger ``manual``, ``pre_tokens`` the context before (the last
  call's prompt and output, with anything added since) and ``post_tokens`` the summary
  (:attr:`Task.summary_tokens`), the summary that now opens the conversation, the command's replayed output and a
  result of no turn. The context is then the baseline plus the summary, as after an autocompaction; the agent's
  state (steps done and left) and the way it reads the next prompt are untouched. It is recorded as a turn of kind
  ``compact`` (``compacted``; its context the one the compaction left). On a session with nothing to compact (no
  request answered yet) the CLI compacts nothing: a ``<synthetic>`` reply ``Error: No messages to compact`` and a
  successful result (what Claude Code 2.1.332 wrote for ``/compact`` as a session's first prompt); the context does
  not change. A prompt with whitespace before the slash is no command (the CLI sends it to the model as text).
- **Unreadable usage** (:attr:`Task.unreadable`): the calls of the work turns it names carry a garbage prompt count
  (``"n/a"``, as a broken gateway sends), so no tracker knows the context at the end of those turns.
- **Cleared tool results** (:attr:`Task.cleared`): before the first call of the work turns it names, old tool
  results are cleared from the context (at most down to the baseline) with no ``compact_boundary``, as Claude
  Code's microcompaction and the API's context editing do: the context falls, the cached prefix with it, and the
  agent's own state is untouched (the work is in the workspace, not in the cleared results).
- **Prompt too long**: a request that would exceed the window is rejected as the API rejects it: a synthetic
  ``Prompt is too long`` assistant message and an error result, and the context does not change.

Every connection is a session with its own id (``options.resume`` / ``continue_conversation`` continue an
earlier one, as the CLI does). The agent records every step it performs (:class:`StepRecord`) and every turn of
every connection (:class:`ConnectionRecord`), with the true context each turn reached::

    agent = FakeAgent(Task.uniform(40, tokens=7_400, window=100_000, baseline=10_000))
    with patch_sdk(agent.transport):        # every ClaudeSDKClient(options) now talks to the agent
        anyio.run(my_restart_loop, agent.task.prompt)
    assert agent.counts() == {step: 1 for step in agent.task.ids}
"""

from __future__ import annotations

import random
import re
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions

from ..faults import FaultPlan, GarbageValues, apply
from ..sdk import FakeTransport
from ..wire import Script, prompt_text
from ..world import Query, Session, SessionBuilder, Truth
from ._prompts import LoopPrompts, UnclassifiedPromptError
from ._task import (
    DEGRADATIONS,
    LOSSLESS,
    RECOVERABLE,
    ConnectionRecord,
    StepRecord,
    Task,
    TurnKind,
    TurnRecord,
)
from ._turns import (
    NO_WORK_REPLY,
    NOTHING_TO_COMPACT,
    PROMPT_TOO_LONG,
    Planned,
    Renderings,
    checkpoint_reply,
    is_compact,
    mark_stopped,
    nothing_to_compact,
    parse_sections,
    reject_as_too_long,
    with_content,
)

__all__ = ["AgentBoundError", "FakeAgent", "UnclassifiedPromptError"]

_CARRIES_CHECKPOINT = re.compile(r"<\s*checkpoint\s*>|^[ \t]*#{1,6}[ \t]*(completed work|remaining tasks|do not redo)"
                                 r"[ \t]*$", re.IGNORECASE | re.MULTILINE)
NO_TASK_REPLY = ("I have no task in this session: nobody has told me what to work on, so there is nothing to "
                 "continue.")
"""The answer to a "go on" prompt on a session that was never given the task or a continuation."""


class AgentBoundError(RuntimeError):
    """The loop under test went past a bound the agent enforces (prompts or connections): it does not terminate."""


# --- the agent ------------------------------------------------------------------------------------------------


@dataclass
class _Conversation:
    """One session's world and the agent's state in it."""

    builder: SessionBuilder
    session: Session
    queries: list[Query] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    """Steps the agent knows are complete (told by a continuation prompt, or done here)."""
    queue: list[str] = field(default_factory=list)
    context: int = 0
    """``prompt + output`` of the last call (the baseline before the first)."""
    pending: int = 0
    """Tokens added since the last call (prompts, tool results)."""
    truth: Truth | None = None
    turns: int = 0
    started: bool = False
    """The session was given the task or a continuation (it knows what to work on)."""
    renderings: Renderings = field(default_factory=Renderings)
    number: int = 0
    """1-based, in the order the agent started its sessions."""


class FakeAgent:
    """The reactive fake agent (module docstring). Use :meth:`transport` as a ``patch_sdk`` factory.

    ``checkpoints`` plans how checkpoint requests are answered: one degradation for all, a sequence (the n-th
    request gets the n-th entry, later ones ``well_formed``) or a mapping from request number (1-based) to
    degradation. ``max_prompts`` and ``max_connections`` bound a loop that does not terminate: past them the
    agent raises :class:`AgentBoundError` into the SDK call. ``prompts`` declares what the loop says
    (:class:`LoopPrompts`, design 003's prompts by default).
    """

    def __init__(self, task: Task, *, checkpoints: str | Sequence[str] | Mapping[int, str] = "well_formed",
                 max_prompts: int | None = None, max_connections: int | None = None,
                 prompts: LoopPrompts | None = None) -> None:
        self.task = task
        self.prompts = prompts or LoopPrompts()
        """What the loop under test declared it says."""
        self.plan = checkpoints
        for name in self.degradations:
            if name not in DEGRADATIONS:
                raise ValueError(f"ctxsim: FakeAgent: unknown checkpoint degradation {name!r} "
                                 f"(known: {', '.join(DEGRADATIONS)})")
        self.max_prompts = max_prompts if max_prompts is not None else 4 * len(task.steps) + 40
        self.max_connections = max_connections
        self.steps: list[StepRecord] = []
        """Every step performed, in order."""
        self.connections: list[ConnectionRecord] = []
        """Every connection, in order."""
        self.bound_errors: list[str] = []
        """Every bound the loop went past (kept even if the loop swallowed the error)."""
        self.unclassified: list[str] = []
        """Every prompt the agent could not classify, as the error said it (kept even if the loop swallowed it)."""
        self._conversations: dict[str, _Conversation] = {}
        self._prompts = 0
        self._checkpoints = 0
        self._tokens = {s.id: s.tokens for s in task.steps}
        self._step_ids = re.compile(r"(?<![\w.-])(" + "|".join(
            re.escape(i) for i in sorted(task.ids, key=len, reverse=True)) + r")(?![\w-])")

    @property
    def degradations(self) -> list[str]:
        """Every degradation the plan names."""
        plan = self.plan
        return [plan] if isinstance(plan, str) else list(plan.values() if isinstance(plan, Mapping) else plan)

    @property
    def lossless(self) -> bool:
        """Every checkpoint the plan writes loses nothing to a correct loop, which must then do every step exactly
        once: each is :data:`LOSSLESS`, or :data:`RECOVERABLE` and every step of the task is traced."""
        return all(name in LOSSLESS or (name in RECOVERABLE and self.task.traced) for name in self.degradations)

    # results ---------------------------------------------------------------------------------------------------

    def counts(self) -> Counter[str]:
        """How many times each step was performed (every task step present, 0 if never)."""
        counts: Counter[str] = Counter(dict.fromkeys(self.task.ids, 0))
        counts.update(r.step for r in self.steps)
        return counts

    @property
    def redone(self) -> int:
        """Performances beyond the first, over all steps."""
        return sum(n - 1 for n in self.counts().values() if n > 1)

    @property
    def skipped(self) -> list[str]:
        """Steps never performed."""
        return [i for i, n in self.counts().items() if n == 0]

    @property
    def finished(self) -> bool:
        """The agent said the task is complete."""
        return any(t.reply.startswith(self.prompts.done_marker) for c in self.connections for t in c.turns)

    @property
    def task_prompt(self) -> str:
        """The prompt that starts the task, naming the declared done marker."""
        return self.task.prompt_for(self.prompts.done_marker)

    def _bound(self, message: str) -> None:
        self.bound_errors.append(message)
        raise AgentBoundError(message)

    # connections -----------------------------------------------------------------------------------------------

    def transport(self, options: ClaudeAgentOptions | None = None) -> FakeTransport:
        """A transport for one client connection (the ``patch_sdk`` factory signature)."""
        options = options or ClaudeAgentOptions()
        index = len(self.connections) + 1
        if self.max_connections is not None and index > self.max_connections:
            self._bound(f"ctxsim: FakeAgent: connection #{index} exceeds the bound of {self.max_connections} "
                        f"connections: the loop does not terminate")
        resumed: str | None = None
        if options.resume:
            resumed = options.resume
            if resumed not in self._conversations:
                raise RuntimeError(f"ctxsim: FakeAgent: options.resume names session {resumed!r}, which this "
                                   f"agent never started")
        elif options.continue_conversation and self.connections:
            resumed = self.connections[-1].session_id
        conversation = self._conversations[resumed] if resumed else self._new_conversation()
        record = ConnectionRecord(index, conversation.session.session_id, resumed)
        self.connections.append(record)
        transport = FakeTransport(conversation.session, responder=partial(
            self._respond, conversation, record, options.include_partial_messages), options=options)
        transport.truth = conversation.truth
        return transport

    def _new_conversation(self) -> _Conversation:
        task, n = self.task, len(self._conversations) + 1
        rng = random.Random(f"ctxsim.agent:{task.seed}:{task.name}:{n}")
        session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        builder = SessionBuilder(seed=task.seed * 10_007 + n, model=task.model, window=task.window,
                                 baseline=task.baseline, max_output_tokens=task.max_output_tokens,
                                 name=f"{task.name} session {n}", session_id=session_id)
        conversation = _Conversation(builder, builder.build(), context=task.baseline, number=n)
        self._conversations[session_id] = conversation
        return conversation

    # turns -----------------------------------------------------------------------------------------------------

    def _respond(self, conversation: _Conversation, record: ConnectionRecord, partial_messages: bool,
                 message: dict[str, Any]) -> Script:
        self._prompts += 1
        if self._prompts > self.max_prompts:
            self._bound(f"ctxsim: FakeAgent: prompt #{self._prompts} exceeds the bound of {self.max_prompts} "
                        f"prompts: the loop does not terminate")
        prompt = prompt_text((message.get("message") or {}).get("content"))
        turn = TurnRecord(len(record.turns) + 1, self._classify(prompt, conversation, record), prompt,
                          message_session_id=message.get("session_id"))
        record.turns.append(turn)
        if turn.kind == "compact":
            return self._compact(conversation, turn, partial_messages)
        conversation.turns += 1
        conversation.builder.query(prompt, prompt_tokens=self.task.tokens_of(prompt))
        conversation.pending += self.task.tokens_of(prompt)
        if turn.kind == "checkpoint":
            planned, stop_reason = self._checkpoint(conversation, turn)
        else:
            if turn.kind != "continue":
                self._resume(conversation, prompt, turn.kind)
            planned, stop_reason = self._work(conversation), None
        return self._play(conversation, record, turn, planned, stop_reason, partial_messages)

    def _classify(self, prompt: str, conversation: _Conversation, record: ConnectionRecord) -> TurnKind:
        """What ``prompt`` is (rules in the module docstring); raises :class:`UnclassifiedPromptError`."""
        if is_compact(prompt):  # Claude Code's own command: the agent knows it, no declaration needed
            return "compact"
        declared = self.prompts
        first = conversation.turns == 0
        request = declared.matches("checkpoint_request", prompt)
        continuation = declared.matches("continuation", prompt) or (first and declared.matches("inspect", prompt))
        carries = _CARRIES_CHECKPOINT.search(prompt) is not None
        if request and continuation:  # both declarations match: what the agent knows decides
            return "continuation" if first and carries else "checkpoint"
        if request:
            return "checkpoint"
        if continuation:
            return "continuation"
        if first and carries:
            return "continuation"
        if declared.matches("continue_prompt", prompt):
            return "continue"  # on a session that was never given the task, a "go on" with nothing to go on
        if self.task_prompt in prompt or self.task.prompt in prompt:
            return "task"
        where = "the first prompt of a new session" if first else f"prompt {conversation.turns + 1} of its session"
        shown = prompt if len(prompt) <= 400 else prompt[:400] + f"... ({len(prompt):,} characters)"
        message = (
            f"ctxsim: FakeAgent cannot classify {where} (connection {record.index}): {shown!r}. It is not the task "
            f"prompt{' and carries no checkpoint' if first else ''}, "
            f"and matches none of the prompts the loop declared: checkpoint_request "
            f"{declared.describe('checkpoint_request')}; continuation {declared.describe('continuation')}; "
            f"continue_prompt {declared.describe('continue_prompt')}. Declare what your loop says with "
            f"ctxsim.agent.LoopPrompts (a text with {{placeholders}}, a regex or a predicate), e.g. "
            f"my_loop.prompts = LoopPrompts(continuation='{{task}}\\n\\nResume from:\\n{{checkpoint}}'), or pass "
            f"prompts= to check_restart_loop / FakeAgent / the fake_agent fixture")
        self.unclassified.append(message)
        raise UnclassifiedPromptError(message)

    def _ids_in(self, text: str) -> list[str]:
        seen: dict[str, None] = {}
        for match in self._step_ids.finditer(text):
            seen.setdefault(match.group(1))
        return list(seen)

    def _resume(self, conversation: _Conversation, prompt: str, kind: TurnKind) -> None:
        """Set the queue from a task or continuation prompt (rules in the module docstring)."""
        order = {i: n for n, i in enumerate(self.task.ids)}
        conversation.started = True
        if kind == "task":
            listed = self._ids_in(prompt)
            conversation.queue = listed or list(self.task.ids)
            conversation.done = []
            return
        sections = parse_sections(prompt)
        done = [i for name, body in sections.items() if name in ("completed work", "do not redo")
                for i in self._ids_in(body)]
        if self.prompts.matches("inspect", prompt):  # it looks in the workspace first: the traced work is there
            traced = {s.id for s in self.task.steps if s.traced}
            found = set(done) | {r.step for r in self.steps if r.step in traced}
            conversation.done = sorted(found, key=order.__getitem__)
            conversation.queue = [i for i in self.task.ids if i not in found]
            return
        conversation.done = sorted(set(done), key=order.__getitem__)
        if "remaining tasks" in sections:
            conversation.queue = self._ids_in(sections["remaining tasks"])
        elif done:
            conversation.queue = [i for i in self.task.ids if i not in set(done)]
        else:
            conversation.queue, conversation.done = list(self.task.ids), []

    def _work(self, conversation: _Conversation) -> list[Planned]:
        if not conversation.started:
            return [Planned(text=NO_TASK_REPLY)]
        count = self.task.steps_per_turn
        planned = [Planned(step=i) for i in conversation.queue[:count]]
        left = len(conversation.queue) - len(planned)
        names = ", ".join(p.step or "" for p in planned)
        if left == 0:
            text = f"{self.prompts.done_marker}: every step is done."
        else:
            text = f"Done {names}. Next: {conversation.queue[len(planned)]} ({left} steps left)."
        return [*planned, Planned(text=text)]

    def _checkpoint(self, conversation: _Conversation, turn: TurnRecord) -> tuple[list[Planned], str | None]:
        self._checkpoints += 1
        plan = self.plan
        if isinstance(plan, str):
            degradation = plan
        elif isinstance(plan, Mapping):
            degradation = plan.get(self._checkpoints, "well_formed")
        else:
            degradation = plan[self._checkpoints - 1] if self._checkpoints <= len(plan) else "well_formed"
        turn.degradation = degradation
        if degradation == "prompt_too_long":
            return [Planned(text=PROMPT_TOO_LONG)], "reject"
        if conversation.turns == 1:  # this request is the session's first prompt: nothing to checkpoint
            turn.degradation = "no_work"
            return [Planned(text=NO_WORK_REPLY)], None
        reply = checkpoint_reply(self.task.name, len(self.task.steps), degradation, conversation.done,
                                 conversation.queue, turn.prompt)
        return [Planned(text=reply)], "max_tokens" if degradation == "truncated" else None

    # rendering -------------------------------------------------------------------------------------------------

    def _play(self, conversation: _Conversation, record: ConnectionRecord, turn: TurnRecord,
              planned: list[Planned], stop_reason: str | None, partial_messages: bool) -> Script:
        task, builder = self.task, conversation.builder
        made: list[Planned] = []
        work = sum(1 for t in record.turns if t.kind != "checkpoint")
        cleared = task.cleared_at(conversation.number, work) if turn.kind != "checkpoint" else 0
        if cleared:
            turn.cleared = min(cleared, max(0, conversation.context - task.baseline))
            conversation.context -= turn.cleared
            builder.expire_cache(keep_prefix=task.baseline)  # clearing old results breaks the cached prefix
        for call in planned:
            request = conversation.context + conversation.pending
            if task.autocompact_at is not None and request >= task.autocompact_at and stop_reason != "reject":
                builder.compact(task.summary_tokens)  # Claude Code compacts before sending the request
                conversation.context = task.baseline + task.summary_tokens
                request = conversation.context + conversation.pending
                turn.compacted, turn.peak_prompt, turn.peak_next = True, 0, 0  # what came before is summarised
            if stop_reason == "reject" or request > task.window:
                turn.rejected = True
                turn.peak_prompt = max(turn.peak_prompt, request)
                turn.peak_next = max(turn.peak_next, request)
                break
            output = task.output_tokens if call.step or turn.kind != "checkpoint" else max(1, len(call.text) // 4)
            step_tokens = self._tokens[call.step] if call.step else 0
            if call.step:
                builder.call(prompt=request, output=output, blocks=("tool_use",), results=(step_tokens,))
                conversation.queue.remove(call.step)
                conversation.done.append(call.step)
                turn.steps.append(call.step)
                self.steps.append(StepRecord(call.step, record.index, record.session_id, turn.index))
            else:
                builder.call(prompt=request, output=output, blocks=("text",))
                turn.reply = call.text
            conversation.context, conversation.pending = request + output, step_tokens
            conversation.truth = Truth(request, output)
            turn.peak_prompt, turn.peak_next = max(turn.peak_prompt, request), max(turn.peak_next, request + output)
            made.append(call)
        script = self._render(conversation, made, partial_messages)
        if turn.kind != "checkpoint" and (conversation.number, work) in task.unreadable and made:
            script = apply(FaultPlan((GarbageValues(rate=1.0, kinds=("text",), fields="prompt"),),
                                     seed=task.seed), [script])[0]
            turn.unreadable = True
        if turn.rejected:
            turn.reply = PROMPT_TOO_LONG
            reject_as_too_long(script, conversation.session, len(conversation.queries))
        elif stop_reason == "max_tokens":
            mark_stopped(script, "max_tokens")
        return script

    def _render(self, conversation: _Conversation, made: list[Planned], partial_messages: bool) -> Script:
        """Close the query being built (its calls saying what ``made`` says) and render it as the CLI writes it."""
        built = conversation.builder.build()
        conversation.queries.append(with_content(built.queries[-1], made))
        conversation.session = replace(built, queries=tuple(conversation.queries))
        return conversation.renderings.last(conversation.session, partial_messages)

    def _compact(self, conversation: _Conversation, turn: TurnRecord, partial_messages: bool) -> Script:
        """The loop's ``/compact``: a manual compaction between queries, as Claude Code runs the command (module
        docstring). The command's text never enters the conversation and it is no turn of the model's: the
        agent's classification of later prompts and its state (steps done and left) are as before it."""
        task = self.task
        conversation.builder.query(turn.prompt, prompt_tokens=0)
        if conversation.truth is None:  # no message in the session yet: the CLI has nothing to compact
            turn.peak_prompt = turn.peak_next = conversation.context + conversation.pending
            turn.reply = NOTHING_TO_COMPACT
            script = self._render(conversation, [], partial_messages)
            nothing_to_compact(script, conversation.session, len(conversation.queries))
            return script
        pre = conversation.context + conversation.pending
        conversation.context, conversation.pending = task.baseline + task.summary_tokens, 0
        conversation.builder.compact(task.summary_tokens, pre_tokens=pre, trigger="manual",
                                     context=conversation.context)  # the agent's context: the command takes none
        turn.compacted, turn.peak_prompt, turn.peak_next = True, conversation.context, conversation.context
        script = self._render(conversation, [], partial_messages)
        conversation.truth = conversation.session.final_truth
        return script
