"""The ground truth: agent sessions whose true context size is known at every point.

A :class:`Session` is what really happened in one Claude Code session: the user's queries and, inside each, the
API calls of the main chain and of subagents, the tool results, compactions and conversation resets, in order.
Every :class:`Call` carries its true prompt split into uncached input, cache creation and cache read (disjoint,
as the Messages API reports them), its final output tokens and its content blocks.

The truth a tracker is judged against is :class:`Truth`: after a main-chain call *k* the context is
``prompt_k`` (what ``/context`` shows), and the next request will carry ``prompt_k + output_k``; subagent calls
never change it; a compaction sets it to the post-compaction size.

Sessions are plain frozen data. Build them by hand, with :class:`SessionBuilder` (which derives realistic cache
splits and ids deterministically from a seed), or from a scenario file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ._settings import ClaudeSettings, window_for

__all__ = [
    "CHARS_PER_TOKEN",
    "DEFAULT_MODEL",
    "MAX_SYSTEM_PREFIX",
    "Call",
    "Compaction",
    "ConversationReset",
    "DeltaUsage",
    "Entrypoint",
    "Quantity",
    "Query",
    "Session",
    "Step",
    "SubagentCompaction",
    "SubagentStart",
    "TaskNotification",
    "Text",
    "Thinking",
    "ToolResult",
    "ToolUse",
    "Truth",
    "UsageConvention",
    "auto_compact_threshold",
    "compaction_band",
    "compaction_truth",
    "keeps_segment",
    "model_window",
    "system_prefix",
]

DEFAULT_MODEL = "claude-sonnet-4-5"
"""The model ctxsim's captures of the CLI were recorded with (a 200k window)."""

CHARS_PER_TOKEN = 4
"""How many characters of generated content stand for one token (the usual English-text ratio)."""


MAX_SYSTEM_PREFIX = 30_000
"""The most a stream-reading tracker should take the system prompt, tools and skills to be. Claude Code's measure
10,429 + 1,552 tokens (2.1.330, the capture of that release) and a 21,460-token cached prefix (an older CLI, in real
recordings); a
first call reading more than this from cache started mid-conversation, and its cache read is not the prefix."""


def model_window(model: str, *, disable_1m_context: bool = False) -> int:
    """The context window Claude Code gives ``model``: 1,000,000 for an id with the ``[1m]`` suffix
    (``claude-sonnet-4-5[1m]``) unless ``CLAUDE_CODE_DISABLE_1M_CONTEXT`` is set (``disable_1m_context``), else
    200,000. Recorded with the REPL of Claude Code 2.1.330-2.1.332: ``context_window_size`` 1000000 for
    ``claude-sonnet-4-5[1m]``, 200000 with the variable set (the model id and its ``(1M context)`` display name
    unchanged)."""
    return window_for(model, disable_1m_context=disable_1m_context)


Entrypoint = Literal["sdk", "repl"]
"""How the session was run, which decides the transcript's shape: ``sdk``, through the Agent SDK (``entrypoint:
sdk-py``, queue operations, ``promptSource: sdk``), or ``repl``, Claude Code's interactive REPL, what statusline
tools read (``entrypoint: cli``, ``system/turn_duration`` rows, mode and permission-mode lines, attachments
re-injected after a compaction)."""

Quantity = Literal["tokens", "percent_of_window", "percent_until_autocompact", "tokens_left"]
"""What a gauge's number means: ``tokens`` in the context; ``percent_of_window``, the share of the raw window used
(Claude Code's ``used_percentage``, rounded); ``percent_until_autocompact``, the share of the way to the
autocompact point still left (Claude Code's "Context left until auto-compact"), ``100 * (threshold - tokens) /
threshold``; ``tokens_left``, the window less the tokens in the context."""


def auto_compact_threshold(window: int, max_output_tokens: int) -> int:
    """Claude Code's autocompact trigger: ``window - min(max_output, 20k) - 13k`` (167,000 for 200k/32k)."""
    return window - min(max_output_tokens, 20_000) - 13_000


# --- content blocks -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Thinking:
    """A thinking block of an assistant response."""

    text: str
    signature: str = "sig"


@dataclass(frozen=True, slots=True)
class Text:
    """A text block of an assistant response."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A tool call requested by an assistant response; its result arrives as a :class:`ToolResult` step."""

    id: str
    name: str
    input: dict[str, object]


Block = Thinking | Text | ToolUse


# --- steps ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One API call: the true usage the Messages API reported for it, and what it answered."""

    input_tokens: int
    """Uncached input: the tokens after the last cache breakpoint."""
    cache_creation_input_tokens: int
    """Tokens written to the prompt cache by this call."""
    cache_read_input_tokens: int
    """Tokens read from the prompt cache by this call."""
    output_tokens: int
    """The final output count (``message_delta``), not the ``message_start`` placeholder."""
    blocks: tuple[Block, ...]
    """Content blocks, in order; Claude Code emits one assistant message per block."""
    message_id: str
    """The API's ``message.id``, shared by every per-block message of this call."""
    model: str = DEFAULT_MODEL
    request_id: str | None = None
    """The API request id, or None where the gateway sent none."""
    parent_tool_use_id: str | None = None
    """None for the main chain; for a subagent call, the id of the ``Agent`` tool use that started it."""

    @property
    def prompt(self) -> int:
        """The whole prompt of this call: input + cache creation + cache read."""
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    @property
    def is_main(self) -> bool:
        """True for a main-chain call, False for a subagent's."""
        return self.parent_tool_use_id is None

    @property
    def stop_reason(self) -> str:
        """``tool_use`` when the call asked for a tool, else ``end_turn``."""
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A tool's result, delivered to the model as a user message (it grows the next prompt by ``tokens``)."""

    tool_use_id: str
    content: str
    tokens: int
    is_error: bool = False
    parent_tool_use_id: str | None = None


@dataclass(frozen=True)
class SubagentStart:
    """A subagent (``Agent``/``Task`` tool) starting; its calls carry ``parent_tool_use_id=tool_use_id``."""

    tool_use_id: str
    task_id: str
    description: str
    prompt: str
    background: bool = False
    """Run in the background (the ``Agent`` tool's ``run_in_background``): the tool's result is the launch, at
    once, the main turn goes on and ends, and the subagent's end reaches the main chain later as a
    :class:`TaskNotification`, which starts a turn of its own (Claude Code 2.1.330-2.1.332, recorded)."""


@dataclass(frozen=True)
class TaskNotification:
    """A background subagent ended: the CLI hands the main chain a ``<task-notification>`` user message (it grows
    the next main-chain prompt by ``tokens``) and answers it in a turn of its own, closed by a result of its own.
    The subagent's calls were never main context; only this message (and the launch result) is."""

    tool_use_id: str
    """The ``Agent`` tool use that started the subagent."""
    task_id: str
    summary: str
    tokens: int
    status: Literal["completed", "failed", "killed"] = "completed"


@dataclass(frozen=True)
class Compaction:
    """Claude Code compacted the conversation: the context shrinks from ``pre_tokens`` to ``context_tokens``.

    Two numbers, as the real CLI shows them (the 2.1.330 capture; docs/explanation/compaction.md: a boundary saying post
    2,672 and ``/context`` saying 14,756 right after): ``post_tokens`` is what the ``compact_boundary`` reports, the
    summary alone; the context then holds the system prompt, tools and skills as well, which is what ``/context`` shows
    and what the truth is.
    """

    pre_tokens: int
    """The context before, as the boundary reports it."""
    post_tokens: int
    """The boundary's ``post_tokens``: the summary (and kept messages) that replaced the conversation."""
    trigger: Literal["auto", "manual"] = "auto"
    context_tokens: int | None = None
    """What the context holds after (system prompt, tools, skills and the summary: what ``/context`` shows);
    None: the session's baseline plus ``post_tokens``."""
    summary: Call | None = None
    """The summary request Claude Code made: its usage counts in the results' cumulative ``modelUsage`` and
    ``total_cost_usd`` and in no other frame (``ctxsim.live`` measured it)."""
    preserved: bool | None = None
    """Whether the compaction kept the conversation's last reply verbatim after the summary (the CLI's
    ``compactMetadata.preservedSegment``); None: as the CLI decides, :func:`keeps_segment`."""
    rejected: tuple[Call, ...] = ()
    """Summary requests Claude Code made before ``summary`` and refused, their reply holding no ``<summary>`` (a
    failed compaction, asked again; recorded from 2.1.330-2.1.332): each counts in ``modelUsage`` and
    ``total_cost_usd`` as ``summary`` does, and ends with a ``SubagentStop`` hook of its own. A request the API
    refused (an error) is not one: the CLI counts nothing of it."""

    @property
    def summary_requests(self) -> tuple[Call, ...]:
        """Every summary request the compaction made, in order: the refused ones, then ``summary``."""
        return (*self.rejected, *(() if self.summary is None else (self.summary,)))


def keeps_segment(compaction: Compaction, main_calls_before: int) -> bool:
    """Whether ``compaction`` keeps a trailing segment, given the main-chain calls since the conversation began (or
    the last compaction or reset): its :attr:`~Compaction.preserved` when stated, else what Claude Code 2.1.330 to
    2.1.332 did in every REPL recording: a segment (the last reply and its turn's end) is kept when two or more
    calls came before, none after a single call (nothing else to summarise). It decides the statusline right after
    the compaction: the CLI zeroes the usage of the kept reply, so ``current_usage`` is all zeros with a segment
    and null without one."""
    if compaction.preserved is not None:
        return compaction.preserved
    return main_calls_before >= 2


@dataclass(frozen=True)
class ConversationReset:
    """``/clear`` or another reset: a new session id, and the context is back to the system baseline."""

    new_session_id: str
    context_tokens: int | None = None
    """What ``/context`` shows right after: the baseline plus the ``/clear`` command's own messages (Claude Code
    2.1.330: 118 tokens more); None: the baseline."""


@dataclass(frozen=True)
class SubagentCompaction:
    """Claude Code compacted a subagent in its own context, before its next call (recorded, 2.1.332: past its own
    autocompact point after a call not its first). The main chain is unmoved: no truth changes, and the stream
    shows nothing of it; the subagent's transcript file gets the boundary and the summary."""

    tool_use_id: str
    """The ``Agent`` tool use that started the subagent (its calls' ``parent_tool_use_id``)."""
    pre_tokens: int
    """What the subagent held before, as its boundary reports it."""
    post_tokens: int
    """The boundary's ``postTokens``: the summary."""
    context_tokens: int
    """What the subagent holds after: its system prefix and the summary (its next call's prompt starts there)."""
    summary: Call | None = None
    """The summary request, asked with the subagent's system prompt: counted in ``modelUsage`` and
    ``total_cost_usd``, shown in no frame."""

    @property
    def trigger(self) -> Literal["auto"]:
        """Always ``auto``: Claude Code compacts a subagent on its own."""
        return "auto"


Step = Call | ToolResult | SubagentStart | TaskNotification | Compaction | SubagentCompaction | ConversationReset


@dataclass(frozen=True)
class Query:
    """One user query (one ``client.query()``), answered by its steps and closed by one result."""

    prompt: str
    steps: tuple[Step, ...]
    model: str | None = None
    """The model ``/model`` switched to before this query (its calls run on it, and the window follows); None:
    the model in force before."""

    @property
    def main_calls(self) -> tuple[Call, ...]:
        """The main-chain calls of this query, in order."""
        return tuple(s for s in self.steps if isinstance(s, Call) and s.is_main)


@dataclass(frozen=True)
class Truth:
    """The true main-chain context at one point of a session."""

    prompt: int
    """Tokens in the context as the last main-chain request saw it (after a compaction: what it holds then,
    as ``/context`` shows it)."""
    output: int
    """The output of that last call, which the next request will also carry (0 after a compaction)."""
    knowable: bool = True
    """False where no stream could tell the value (a conversation reset before its first call)."""
    unseen: tuple[int, int] | None = None
    """Where the value is not knowable, the band of answers a tracker may still give there (as may it say unknown):
    where the stream cannot even show that a new call happened (an unreadable call reusing an earlier call's message
    id looks like a replay of it), what the stream last told; after a compaction in a recording, what the stream
    bounds the context to."""
    first_call: tuple[int, int] | None = field(default=None, compare=False)
    """``(cache read, prompt)`` of the session's first main-chain call: what a stream shows of the system prompt,
    tools and skills every request carries (at least the cached part, at most the whole first prompt)."""
    estimated: tuple[int, int] | None = field(default=None, compare=False)
    """Where the stream shows the context only up to an estimate, the estimates that track it: after a
    compaction, anything between the context and the boundary's ``post_tokens`` plus the system prefix the stream
    shows (:func:`system_prefix`). What a stream allows, not the truth: equal truths may differ here."""
    why: str = field(default="", compare=False)
    """Where the value is not knowable, why (for the failure table); empty: the observation's kind says it."""

    @property
    def next_request(self) -> int:
        """What the next request carries before any new input: ``prompt + output``."""
        return self.prompt + self.output


def system_prefix(first_call: tuple[int, int]) -> int:
    """The system prompt, tools and skills, as far as a session's first main-chain call shows them
    (``(cache read, prompt)``): its cache read when it found the prefix cached, else its whole prompt (an upper
    bound: it holds the first user message too), at most :data:`MAX_SYSTEM_PREFIX` (a larger
    cache read means the stream began mid-conversation)."""
    cached, prompt = first_call
    return min(cached or prompt, MAX_SYSTEM_PREFIX)


UsageConvention = Literal["additive", "inclusive"]
"""How a provider reports usage. ``additive`` (the Anthropic API): ``input_tokens``, cache creation and cache read
are disjoint, and the prompt is their sum. ``inclusive`` (OpenAI-style gateways and proxies such as LiteLLM, oMLX):
``input_tokens`` is the whole prompt and the cache counts are parts of it (Aider-AI/aider#5516: input 17,111 with a
cache read of 17,102, a prompt of 17,111, not 34,213)."""

DeltaUsage = Literal["cumulative", "output"]
"""What a streamed call's ``message_delta`` usage carries: ``cumulative``, the input and cache counts with the
final output (the Messages API); ``output``, the output count alone (older gateways, and the fake API behind the
first captures)."""


def compaction_band(post_tokens: int, context: int, first_call: tuple[int, int]) -> tuple[int, int]:
    """What a stream allows a tracker to say after a compaction whose boundary reports ``post_tokens`` and after
    which the context holds ``context``, given the session's first main-chain call ``(cache read, prompt)``: the
    summary plus the system prefix as far as the stream bounds it, and the truth itself.

    Two-sided, from what the stream shows of the prefix: where the first call read the prefix from the cache, the
    prefix is that read (:func:`system_prefix`), and the band runs from the truth to the summary plus it; where it
    found nothing cached, the stream shows only an upper bound (the whole first prompt, which also holds the first
    user message), and the band runs from the summary alone to the summary plus that bound."""
    cached, _ = first_call
    high = post_tokens + system_prefix(first_call)
    low = high if cached else post_tokens
    return (min(context, low), max(context, high))


def compaction_truth(post_tokens: int, context: int, first_call: tuple[int, int] | None) -> Truth:
    """The truth after a compaction whose boundary reports ``post_tokens`` and after which the context holds
    ``context``: exactly that, and, as estimates that track it, :func:`compaction_band`: what a tracker reading the
    stream can know. Before any main-chain call (``first_call`` None) the stream shows nothing of that prefix: not
    knowable."""
    if first_call is None:  # no call yet: nothing in the stream shows the system prefix
        return Truth(context, 0, knowable=False)
    return Truth(context, 0, first_call=first_call, estimated=compaction_band(post_tokens, context, first_call))


@dataclass(frozen=True)
class Session:
    """One Claude Code session, as it really happened."""

    session_id: str
    queries: tuple[Query, ...]
    model: str = DEFAULT_MODEL
    window: int = 200_000
    """The model's context window (200k, or 1M with the ``[1m]`` variants)."""
    baseline: int = 12_000
    """The system prompt, tools and memory every request of a fresh conversation starts with."""
    max_output_tokens: int = 32_000
    seed: int = 0
    name: str = ""
    usage: UsageConvention = "additive"
    """How the provider reports a call's usage (:data:`UsageConvention`); the truth is the same either way."""
    delta_usage: DeltaUsage = "cumulative"
    """What the provider's ``message_delta`` event carries (:data:`DeltaUsage`); the CLI forwards it as it is."""
    auto_compact_window: int | None = None
    """The window Claude Code compacts against and reports in ``get_context_usage`` when it differs from the
    model's (``CLAUDE_CODE_AUTO_COMPACT_WINDOW``); ``modelUsage.contextWindow`` stays :attr:`window`."""
    auto_compact_at: int | None = None
    """Where the CLI said it autocompacts (``get_context_usage``'s ``autoCompactThreshold``), for a session taken
    from a live run; None: :func:`auto_compact_threshold` of the window."""
    entrypoint: Entrypoint = "sdk"
    """How the session ran (:data:`Entrypoint`): the shape of its transcript."""
    quantity: Quantity = "tokens"
    """What the gauge under test is asked to show (:data:`Quantity`): the gauge built for the scenario shows it; a
    tracker is judged on the quantity it declares (none: tokens)."""
    settings: ClaudeSettings = field(default_factory=ClaudeSettings)
    """The settings that move the denominator: auto-compact on or off, the percentage override, the max-context
    setting, ``CLAUDE_CODE_DISABLE_1M_CONTEXT``, subagent and idle compaction (:class:`ClaudeSettings`)."""
    cli: str | None = None
    """The Claude Code release it renders as (:data:`RULES`): a version or a range; None: the CLI in use."""

    def model_at(self, query_index: int) -> str:
        """The model in force for query ``query_index`` (0-based): the last ``/model`` switch before it, else
        :attr:`model`."""
        for query in reversed(self.queries[:query_index + 1]):
            if query.model is not None:
                return query.model
        return self.model

    def window_of(self, model: str) -> int:
        """The raw window ``model`` runs in (what the statusline divides by): :attr:`window` for the session's own
        model, else as the settings give it (:meth:`ClaudeSettings.window_for`)."""
        return self.window if model == self.model else self.settings.window_for(model)

    def threshold_of(self, window: int) -> int:
        """Where Claude Code autocompacts while the raw window is ``window`` (the point "until auto-compact"
        counts to): :attr:`auto_compact_at` where the CLI said so for the session's own window, else computed from
        the autocompact window where one is set and auto-compact is on, else from ``window``, under :attr:`settings`
        (:meth:`ClaudeSettings.point`)."""
        if self.auto_compact_at is not None and window == self.window:
            return self.auto_compact_at
        return self.settings.point(window, self.max_output_tokens, auto_compact_window=self.auto_compact_window)

    @property
    def calls(self) -> tuple[Call, ...]:
        """Every call, main chain and subagents, in order."""
        return tuple(s for q in self.queries for s in q.steps if isinstance(s, Call))

    @property
    def main_calls(self) -> tuple[Call, ...]:
        """Every main-chain call, in order."""
        return tuple(c for c in self.calls if c.is_main)

    @property
    def auto_compact_threshold(self) -> int:
        """Where Claude Code would autocompact this session's window (:attr:`auto_compact_at` where the CLI said)."""
        return self.threshold_of(self.window)

    @property
    def context_window(self) -> int:
        """The window ``get_context_usage`` reports and Claude Code compacts against."""
        return self.auto_compact_window or self.window

    def truth_after(self, step: Step, current: Truth | None) -> Truth | None:
        """The truth once ``step`` has happened, given the truth before it."""
        if isinstance(step, Call):
            if not step.is_main:
                return current
            first = current.first_call if current is not None else None
            return Truth(step.prompt, step.output_tokens,
                         first_call=first or (step.cache_read_input_tokens, step.prompt))
        if isinstance(step, Compaction):
            return compaction_truth(step.post_tokens, self.context_after(step),
                                    current.first_call if current is not None else None)
        if isinstance(step, ConversationReset):  # a new conversation, on the same system prefix
            context = step.context_tokens if step.context_tokens is not None else self.baseline
            return Truth(context, 0, knowable=False, first_call=current.first_call if current else None)
        return current

    def reported_input(self, call: Call) -> int:
        """The ``input_tokens`` the provider reports for ``call`` under the session's :attr:`usage` convention."""
        return call.prompt if self.usage == "inclusive" else call.input_tokens

    def context_after(self, compaction: Compaction) -> int:
        """What the context holds after ``compaction``: its ``context_tokens``, else baseline + ``post_tokens``."""
        if compaction.context_tokens is not None:
            return compaction.context_tokens
        return self.baseline + compaction.post_tokens

    def timeline(self) -> list[tuple[int, Step, Truth | None]]:
        """``(query index, step, truth after the step)`` for every step, in order."""
        out: list[tuple[int, Step, Truth | None]] = []
        truth: Truth | None = None
        for qi, q in enumerate(self.queries):
            for step in q.steps:
                truth = self.truth_after(step, truth)
                out.append((qi, step, truth))
        return out

    @property
    def final_truth(self) -> Truth | None:
        """The truth at the end of the session."""
        timeline = self.timeline()
        return timeline[-1][2] if timeline else None
