"""What the fake agent works on, and what it records: a :class:`Task` of steps, and the records of each turn.

No SDK here: scenario files and loop checks read tasks and records without loading the client. How the agent
answers a checkpoint request is one of :data:`DEGRADATIONS`; :data:`LOSSLESS` are those a correct loop loses
nothing to, :data:`RECOVERABLE` those it loses nothing to when every step leaves its work in the workspace.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from ..reference import DONE_MARKER
from ..world import DEFAULT_MODEL

__all__ = [
    "DEGRADATIONS",
    "LOSSLESS",
    "RECOVERABLE",
    "ConnectionRecord",
    "Degradation",
    "StepRecord",
    "Task",
    "TaskStep",
    "TurnKind",
    "TurnRecord",
]

Degradation = Literal["well_formed", "fenced_xml", "fenced_markdown", "fenced_bare", "no_tags", "several_blocks",
                      "template_echo", "unclosed", "empty_block", "tag_case", "refusal", "truncated",
                      "prompt_too_long"]

DEGRADATIONS: dict[str, str] = {
    "well_formed": "one <checkpoint> block: nothing lost",
    "fenced_xml": "the block inside a ```xml fence: nothing lost",
    "fenced_markdown": "the block inside a ```markdown fence: nothing lost",
    "fenced_bare": "the block inside a bare ``` fence: nothing lost",
    "no_tags": "the sections without tags, after a line of prose: nothing lost (whole-reply fallback)",
    "several_blocks": "a stale draft block (last step still remaining), then the corrected block: nothing lost "
                      "if the last block is taken, one step redone if the first is",
    "template_echo": "the block, then the request's <checkpoint> template echoed back unfilled in a block of its "
                     "own (a request without one gets the block alone): nothing lost if the echo is skipped, every "
                     "remaining step skipped if it is taken",
    "unclosed": "the block without its closing tag: nothing lost",
    "empty_block": "an empty block and nothing else: no state; a loop that says so (the minimal continuation "
                   "prompt: inspect the work first) loses only the untraced steps, which are redone; one that "
                   "passes the empty tags on as the state gets every completed step redone",
    "tag_case": "tags as < Checkpoint > ... </CHECKPOINT >: nothing lost",
    "refusal": "a refusal, no state; a loop that says so (the minimal continuation prompt: inspect the work first) "
               "loses only the untraced steps, which are redone; one that passes the refusal on as the state gets "
               "every completed step redone",
    "truncated": "cut off by max_tokens halfway through 'Completed Work' (stop_reason max_tokens): a loop that "
                 "notes it (inspect the work first) loses only the untraced steps after the cut, which are redone; "
                 "one that passes it as complete gets the steps after the cut, len(done) - len(done) // 2 of them, "
                 "redone",
    "prompt_too_long": "the checkpoint request rejected as prompt too long: no state; a loop that says so (the "
                       "minimal continuation prompt) loses only the untraced steps, which are redone; one that "
                       "passes the error on as the state gets every completed step redone",
}
"""Every way the agent can answer a checkpoint request, and what it costs a correct loop."""

LOSSLESS = frozenset({"well_formed", "fenced_xml", "fenced_markdown", "fenced_bare", "no_tags", "several_blocks",
                      "template_echo", "unclosed", "tag_case"})
"""The degradations a correct loop loses nothing to, whatever the task: with only these, every step must be done
exactly once."""

RECOVERABLE = frozenset({"empty_block", "refusal", "truncated", "prompt_too_long"})
"""The degradations that leave no usable or no complete state, which a correct loop says (it tells the agent to
inspect the work first): lost nothing when every step of the task is traced (:attr:`TaskStep.traced`), since the
agent finds the work done in the workspace."""

# --- the task -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskStep:
    """One step of a task: a tool call whose result adds ``tokens`` to the context."""

    id: str
    tokens: int
    traced: bool = True
    """The step leaves its work in the workspace (an edited file), where an agent told to inspect the work finds
    it; False for a step that leaves no trace there (a deploy, a message sent): only a checkpoint can tell a new
    session it was done."""


@dataclass(frozen=True)
class Task:
    """A task of N steps, and the sizes that make its context grow by known amounts.

    A work turn of one step grows the context by ``prompt + 2 x output_tokens + step.tokens``: the prompt, the
    call that asks for the tool, the tool's result and the reply that closes the turn. After n one-step turns of
    a fresh session the last call's prompt is ``baseline + n x prompt + (2n - 1) x output_tokens + the n steps'
    tokens``.
    """

    steps: tuple[TaskStep, ...]
    name: str = "task"
    window: int = 200_000
    baseline: int = 12_000
    """System prompt and tools: the context of a fresh session before its first prompt."""
    prompt_tokens: int | None = None
    """Context each user prompt takes; None: its length / 4."""
    output_tokens: int = 100
    """Output of each work call (the tool call, the closing reply)."""
    steps_per_turn: int = 1
    max_output_tokens: int = 32_000
    model: str = DEFAULT_MODEL
    seed: int = 0
    autocompact_at: int | None = None
    """Claude Code's autocompact: a request whose prompt would reach this many tokens is preceded by a compaction
    (None: the session never compacts)."""
    summary_tokens: int = 3_000
    """What a compaction's summary takes: the boundary's ``post_tokens``; the context after it is the baseline plus
    this, plus what the turn added since its last call."""
    unreadable: frozenset[tuple[int, int]] = frozenset()
    """``(session, work turn)`` pairs, both 1-based, whose calls carry unreadable usage (a gateway's garbage prompt
    counts, :class:`ctxsim.faults.GarbageValues`): no tracker can know the context at the end of those turns. Work
    turns are numbered as :attr:`ConnectionRecord.work_turns` counts them (a loop's ``/compact`` takes a number; it
    makes no call, so nothing planned for it happens)."""
    cleared: tuple[tuple[int, int, int], ...] = ()
    """``(session, work turn, tokens)``: before the first call of that work turn (both 1-based) old tool results
    worth ``tokens`` are cleared from the context, with no ``compact_boundary``: Claude Code's microcompaction and
    the API's context editing (``clear_tool_uses``) shrink the prompt so (the cached prefix is lost with them)."""

    def __post_init__(self) -> None:
        ids = [s.id for s in self.steps]
        if not ids:
            raise ValueError(f"ctxsim: Task {self.name!r} has no steps")
        if len(set(ids)) != len(ids):
            raise ValueError(f"ctxsim: Task {self.name!r} repeats step ids: "
                             f"{sorted(i for i, n in Counter(ids).items() if n > 1)}")
        if any(not re.fullmatch(r"[\w.-]+", i) for i in ids):
            raise ValueError(f"ctxsim: Task {self.name!r}: step ids are words ([A-Za-z0-9_.-]), got {ids!r}")
        if self.autocompact_at is not None and not self.baseline + self.summary_tokens < self.autocompact_at:
            raise ValueError(f"ctxsim: Task {self.name!r}: autocompact_at ({self.autocompact_at:,}) must be above the "
                             f"baseline + summary_tokens ({self.baseline + self.summary_tokens:,})")
        if any(tokens < 1 for _, _, tokens in self.cleared):
            raise ValueError(f"ctxsim: Task {self.name!r}: cleared tool results are 1 token or more")
        if any(s.tokens < 0 for s in self.steps) or self.output_tokens < 1 or self.steps_per_turn < 1:
            raise ValueError(f"ctxsim: Task {self.name!r}: step tokens must be >= 0, output_tokens and "
                             f"steps_per_turn >= 1")

    def cleared_at(self, session: int, turn: int) -> int:
        """Tokens of old tool results cleared before work turn ``turn`` of session ``session`` (0: none)."""
        return sum(tokens for s, t, tokens in self.cleared if (s, t) == (session, turn))

    @classmethod
    def uniform(cls, n: int, tokens: int, **settings: Any) -> Task:
        """``n`` steps ``s01``, ``s02``, ... each adding ``tokens``; ``settings`` are the other fields."""
        width = max(2, len(str(n)))
        return cls(tuple(TaskStep(f"s{i:0{width}d}", tokens) for i in range(1, n + 1)), **settings)

    @property
    def traced(self) -> bool:
        """Every step leaves its work in the workspace (:attr:`TaskStep.traced`)."""
        return all(s.traced for s in self.steps)

    @property
    def ids(self) -> tuple[str, ...]:
        """The step ids, in order."""
        return tuple(s.id for s in self.steps)

    @property
    def prompt(self) -> str:
        """The prompt that starts the task."""
        return self.prompt_for(DONE_MARKER)

    def prompt_for(self, done_marker: str) -> str:
        """The prompt that starts the task, asking for ``done_marker`` when every step is done."""
        return (f"Work through task {self.name!r}: {len(self.steps)} steps, in this order: "
                f"{', '.join(self.ids)}. Do each step exactly once. Reply {done_marker} when every step is done.")

    def tokens_of(self, prompt: str) -> int:
        """The context a user prompt takes."""
        return self.prompt_tokens if self.prompt_tokens is not None else max(1, len(prompt) // 4)


# --- records --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepRecord:
    """One step performed: which, on which connection and session, in which turn."""

    step: str
    connection: int
    session_id: str
    turn: int


TurnKind = Literal["task", "continuation", "continue", "checkpoint", "compact"]
"""What a prompt was to the agent: the task, a continuation, a "go on" prompt, a checkpoint request, or the loop's
``/compact`` (Claude Code's own command: a manual compaction, no step worked)."""


@dataclass
class TurnRecord:
    """One prompt the agent answered, and what it did."""

    index: int
    """1-based position among the connection's turns."""
    kind: TurnKind
    prompt: str
    steps: list[str] = field(default_factory=list)
    """The steps performed in this turn."""
    peak_prompt: int = 0
    """The largest true prompt of this turn's main calls (for a rejected request: the size it would have had)."""
    peak_next: int = 0
    """The largest ``prompt + output`` of this turn's main calls."""
    rejected: bool = False
    """A request of this turn was rejected as prompt too long."""
    unreadable: bool = False
    """This turn's calls carried unreadable usage (:attr:`Task.unreadable`)."""
    cleared: int = 0
    """Tokens of old tool results cleared from the context before this turn's first call, without a compaction
    (:attr:`Task.cleared`); ``peak_prompt`` and ``peak_next`` then count what is left."""
    compacted: bool = False
    """The session was compacted during this turn: by Claude Code before a request (:attr:`Task.autocompact_at`),
    when ``peak_prompt`` and ``peak_next`` count the calls after the compaction only; or by the loop's ``/compact``
    (kind ``compact``), which makes no call, when both are the context the compaction left (the baseline plus
    :attr:`Task.summary_tokens`)."""
    reply: str = ""
    """The turn's final text."""
    degradation: str | None = None
    """For a checkpoint turn, how the checkpoint was written."""
    message_session_id: str | None = None
    """The ``session_id`` field the SDK put on the user message."""


@dataclass
class ConnectionRecord:
    """One client connection: the session it played and every turn of it."""

    index: int
    """1-based, in connection order."""
    session_id: str
    resumed: str | None
    """The session this connection continued (``options.resume`` / ``continue_conversation``), else None."""
    turns: list[TurnRecord] = field(default_factory=list)

    @property
    def work_turns(self) -> list[TurnRecord]:
        """Every turn but checkpoint requests: the turns the loop spent on the session's work, a ``/compact`` it
        sent included (it does no step, but it is a turn the loop chose to send, and the context falls in it)."""
        return [t for t in self.turns if t.kind != "checkpoint"]

    @property
    def checkpoint_turns(self) -> list[TurnRecord]:
        """The checkpoint requests answered on this connection."""
        return [t for t in self.turns if t.kind == "checkpoint"]
