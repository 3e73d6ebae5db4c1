"""Building sessions step by step: :class:`SessionBuilder`, which derives what a real session would show.

Part of :mod:`ctxsim.world`'s public surface (import it from there).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from ._chains import Chain, compact_subagent, end_subagent, start_subagent, within_subagent_window
from ._compaction import (
    CLEAR_COMMAND_TOKENS,
    compacted_context,
    later_blocks_tokens,
    summary_call,
)
from ._filler import TOOL_INPUTS, filler_text
from ._session import (
    CHARS_PER_TOKEN,
    DEFAULT_MODEL,
    Block,
    Call,
    Compaction,
    ConversationReset,
    Entrypoint,
    Quantity,
    Query,
    Session,
    Step,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    UsageConvention,
)
from ._settings import ClaudeSettings

__all__ = ["SessionBuilder"]

IDLE_SUMMARY_TOKENS = 3_000
"""The summary an idle compaction writes by default (the boundary's ``post_tokens``; any size a summary takes)."""


@dataclass
class SessionBuilder:
    """Builds a :class:`Session` step by step, deriving what a real session would show.

    Cache splits follow what real transcripts show (published transcripts; docs/explanation/caches.md): each call reads
    from cache what the previous call of its chain read or wrote (``cr[n+1] = cr[n] + cc[n]``), writes the rest except a
    small uncached tail, and a cache expiry moves the whole read into creation. Ids, uuids and filler content come from
    ``seed``: the same calls with the same seed build the same session.
    """

    seed: int = 0
    model: str = DEFAULT_MODEL
    window: int = 0
    """The model's raw context window; 0 (the default): the window Claude Code gives ``model`` under ``settings``
    (:func:`~ctxsim.world.window_for`: 1,000,000 for a ``[1m]`` id, else 200,000), as a scenario's ``world`` does;
    a window given wins."""
    baseline: int = 12_000
    max_output_tokens: int = 32_000
    name: str = ""
    session_id: str | None = None
    uncached_tail: int = 3
    """Uncached ``input_tokens`` of a derived call (real sessions show 1 to 10)."""
    usage: UsageConvention = "additive"
    """How the provider reports usage (:data:`~ctxsim.world.UsageConvention`)."""
    auto_compact_window: int | None = None
    """``CLAUDE_CODE_AUTO_COMPACT_WINDOW``: the window Claude Code compacts against, when not the model's."""
    entrypoint: Entrypoint = "sdk"
    """How the session ran: the shape of its transcript (:data:`~ctxsim.world.Entrypoint`)."""
    quantity: Quantity = "tokens"
    """What the gauge under test is asked to show (:data:`~ctxsim.world.Quantity`)."""
    settings: ClaudeSettings = field(default_factory=ClaudeSettings)
    """The settings that move the denominator (:class:`~ctxsim.world.ClaudeSettings`)."""
    cli: str | None = None
    """The Claude Code release the session renders as: a version or a range (:attr:`Session.cli`); None: the CLI
    in use."""
    _first_model: str = field(init=False, repr=False, default="")
    _switch: str | None = field(init=False, repr=False, default=None)
    _rng: random.Random = field(init=False, repr=False)
    _queries: list[Query] = field(init=False, repr=False, default_factory=list)
    _steps: list[Step] | None = field(init=False, repr=False, default=None)
    _prompt: str = field(init=False, repr=False, default="")
    _chains: dict[str | None, Chain] = field(init=False, repr=False, default_factory=dict)
    _subagent: str | None = field(init=False, repr=False, default=None)
    _background: dict[str, str] = field(init=False, repr=False, default_factory=dict)
    _ids: int = field(init=False, repr=False, default=0)
    _idle_post: int | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)
        self._first_model = self.model
        if not self.window:
            self.window = self.settings.window_for(self.model)
        if self.session_id is None:
            self.session_id = self.new_uuid()

    # ids -------------------------------------------------------------------------------------------------------

    def new_uuid(self) -> str:
        """A uuid4 drawn from this builder's seed."""
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _new_id(self, prefix: str) -> str:
        self._ids += 1
        return f"{prefix}_{self._rng.getrandbits(64):016x}{self._ids:04d}"

    # structure -------------------------------------------------------------------------------------------------

    def query(self, prompt: str = "Continue with the task.", *, prompt_tokens: int | None = None) -> SessionBuilder:
        """Start a new user query; its text grows the next main-chain prompt by ``prompt_tokens`` (by default
        about a token per four characters; nothing for a local command such as ``/compact``, which the model never
        sees)."""
        self._close_query()
        self._steps = []
        self._prompt = prompt
        if self._idle_post is not None:  # compacted while idle: the conversation the prompt meets is the summary
            post, self._idle_post = self._idle_post, None
            self.compact(post, pre_tokens=self._chain(None).pre_tokens(self.baseline, auto=False), trigger="auto")
        if prompt_tokens is not None:
            tokens = prompt_tokens
        else:
            tokens = 0 if prompt.startswith("/") else max(1, len(prompt) // CHARS_PER_TOKEN)
        self._chain(None).pending_growth += tokens
        return self

    def switch_model(self, model: str) -> SessionBuilder:
        """``/model``: the next query and every call after it run on ``model`` (the window follows it, as
        :meth:`~ctxsim.world.Session.window_of` says). Between queries: it closes the query being built."""
        self._close_query()
        self.model = model
        self._switch = model
        return self

    def idle(self, *, post_tokens: int = IDLE_SUMMARY_TOKENS) -> SessionBuilder:
        """The conversation is left idle between queries past its prompt cache's lifetime. Claude Code compacts it
        while idle (trigger ``auto``; the boundary reports ``post_tokens``) in the interactive REPL only
        (``entrypoint="repl"``), with idle compaction and auto-compact on and the main context at least the idle
        minimum (:meth:`~ctxsim.world.ClaudeSettings.idle_compacts`): the next query starts with that compaction.
        Otherwise the cache expires, and the next main call re-creates what it read. Between queries: it closes
        the query being built."""
        self._close_query()
        chain = self._chain(None)
        if self.entrypoint == "repl" and self.settings.idle_compacts(self.main_context()):
            self._idle_post = post_tokens
        else:
            chain.expired, chain.keep_prefix = True, 0
        return self

    def _close_query(self) -> None:
        if self._steps is not None:
            self._queries.append(Query(self._prompt, tuple(self._steps), self._switch))
            self._steps = None
            self._switch = None

    def _current_steps(self) -> list[Step]:
        if self._steps is None:
            self.query()
        assert self._steps is not None
        return self._steps

    def _chain(self, key: str | None) -> Chain:
        if key not in self._chains:
            self._chains[key] = Chain()
        return self._chains[key]

    @property
    def pending(self) -> tuple[Step, ...]:
        """The steps of the query being built, so far (for building a session step by step)."""
        return tuple(self._steps or ())

    def add(self, step: Step) -> SessionBuilder:
        """Append a step exactly as given (no derivation)."""
        self._current_steps().append(step)
        return self

    # calls -----------------------------------------------------------------------------------------------------

    def call(
        self,
        *,
        input: int | None = None,
        cache_creation: int | None = None,
        cache_read: int | None = None,
        prompt: int | None = None,
        output: int = 120,
        blocks: Sequence[str | Block] | None = None,
        results: tuple[int, ...] | list[int] = (),
        model: str | None = None,
        message_id: str | None = None,
        request_id: str | Literal[False] | None = None,
        text: str | None = None,
    ) -> SessionBuilder:
        """Add an API call to the current chain (the main chain, or the open subagent).

        Give all of ``input``/``cache_creation``/``cache_read`` to state the usage exactly; otherwise the prompt
        is ``prompt`` or, by default, the previous prompt plus its output plus everything added since, split as a
        real cache would split it. ``results`` adds one tool use per entry whose result carries that many tokens.
        ``blocks`` names the block kinds (``thinking``, ``text``, ``tool_use``), or gives a block itself (a
        :class:`~ctxsim.world.Text`, :class:`~ctxsim.world.Thinking` or :class:`~ctxsim.world.ToolUse`, kept as
        given: what the model said, or the tool and input it asked for, matters to a later compaction's
        ``preTokens``, :func:`~ctxsim.world.later_blocks_tokens`); ``request_id=False`` omits it.
        ``text`` is what the model says: the call's text blocks carry it (the first one; the others stay filler),
        so an agent that branches on the reply (``TASK COMPLETE``, a ``<checkpoint>`` block) can be scripted. The
        usage stays what is stated or derived.
        """
        parent = self._subagent
        chain = self._chain(parent)
        if parent is not None and self.settings.subagent_compact_window is not None:
            within_subagent_window(self, chain)
        stated = (input is not None) + (cache_creation is not None) + (cache_read is not None)
        if input is not None and cache_creation is not None and cache_read is not None:
            usage = (int(input), int(cache_creation), int(cache_read))
        elif stated:
            raise ValueError("ctxsim: give all of input, cache_creation and cache_read, or none of them")
        else:
            usage = self._derive_split(chain, prompt)
        kinds = tuple(blocks) if blocks is not None else ("text",) + ("tool_use",) * len(results)
        if text is not None and "text" not in kinds:
            raise ValueError(f"ctxsim: text={text[:40]!r} needs a text block named \"text\", but blocks are "
                             f"{list(kinds)}")
        n_tools = sum(k == "tool_use" or isinstance(k, ToolUse) for k in kinds)
        if results and len(results) != n_tools:
            raise ValueError(f"ctxsim: {len(results)} results for {n_tools} tool_use blocks")
        result_tokens = list(results) if results else [200] * n_tools
        rng = self._rng
        built: list[Block] = []
        tool_uses: list[ToolUse] = []
        said = text
        for kind in kinds:
            if isinstance(kind, (Text, Thinking, ToolUse)):
                built.append(kind)
                if isinstance(kind, ToolUse):
                    tool_uses.append(kind)
            elif kind == "thinking":
                built.append(Thinking(filler_text(rng, 12)))
            elif kind == "text":
                built.append(Text(said if said is not None else filler_text(rng, 10)))
                said = None  # the first text block says it; the others stay filler
            elif kind == "tool_use":
                name, make_input = rng.choice(TOOL_INPUTS)
                tool = ToolUse(self._new_id("toolu"), name, make_input(rng))
                built.append(tool)
                tool_uses.append(tool)
            else:
                raise ValueError(f"ctxsim: unknown block kind {kind!r} (thinking, text or tool_use, or a Text, "
                                 f"Thinking or ToolUse block)")
        rid: str | None
        if request_id is False:
            rid = None
        else:
            rid = request_id if request_id is not None else self._new_id("req")
        made = Call(
            input_tokens=usage[0],
            cache_creation_input_tokens=usage[1],
            cache_read_input_tokens=usage[2],
            output_tokens=output,
            blocks=tuple(built),
            message_id=message_id or self._new_id("msg"),
            model=model or self.model,
            request_id=rid,
            parent_tool_use_id=parent,
        )
        steps = self._current_steps()
        steps.append(made)
        chain.cached_prefix = made.cache_read_input_tokens + made.cache_creation_input_tokens
        chain.last_prompt = made.prompt
        chain.last_output = output
        chain.later_blocks = later_blocks_tokens(made)
        chain.pending_growth = 0
        chain.expired = chain.compacted = False
        chain.calls += 1
        for tool, tokens in zip(tool_uses, result_tokens):
            steps.append(ToolResult(tool.id, filler_text(rng, tokens), tokens, parent_tool_use_id=parent))
            chain.pending_growth += tokens
        return self

    def _derive_split(self, chain: Chain, prompt: int | None) -> tuple[int, int, int]:
        if prompt is None:
            base = self.baseline if chain.last_prompt is None else chain.last_prompt + chain.last_output
            prompt = base + chain.pending_growth
        tail = min(self.uncached_tail, prompt)
        if chain.expired:
            cached = chain.keep_prefix
        elif chain.last_prompt is None:
            cached = self.baseline  # the system prefix is shared across sessions and usually cached
        else:
            cached = chain.cached_prefix
        cached = max(0, min(cached, prompt - tail))
        return tail, prompt - tail - cached, cached

    # events ----------------------------------------------------------------------------------------------------

    def expire_cache(self, *, keep_prefix: int = 0) -> SessionBuilder:
        """The prompt cache expired (TTL, resume, microcompaction): the next call re-creates what it read.

        ``keep_prefix`` keeps that many tokens readable (real misses fall to 0 or to the shared system prefix).
        """
        chain = self._chain(self._subagent)
        chain.expired = True
        chain.keep_prefix = keep_prefix
        return self

    def compact(self, post_tokens: int | None = None, *, context: int | None = None, pre_tokens: int | None = None,
                trigger: Literal["auto", "manual"] = "auto", preserved: bool | None = None,
                summary: Call | tuple[int, int, int, int] | None = None,
                rejected: Sequence[Call | tuple[int, int, int, int]] = ()) -> SessionBuilder:
        """Compact the main chain: its boundary reports ``post_tokens`` (the summary), after which the context
        holds ``context`` (the system prompt, tools and skills too: what ``/context`` shows).

        Give either: ``context`` defaults to the baseline plus ``post_tokens`` (plus, for ``/compact``, the
        command's own messages, :data:`~ctxsim.world.COMPACT_COMMAND_TOKENS`), ``post_tokens`` to ``context``
        less the baseline. ``pre_tokens`` defaults to the current context (:meth:`main_context`), plus what Claude
        Code's estimate counts again of the last reply's later blocks (:func:`~ctxsim.world.later_blocks_tokens`),
        plus the reminder an autocompaction counts (:data:`~ctxsim.world.AUTO_COMPACT_REMINDER_TOKENS`).
        ``preserved`` says whether the last reply is kept after the summary (None: as Claude Code decides,
        :func:`~ctxsim.world.keeps_segment`). ``summary`` is the summary request Claude Code made, counted in the
        cost and ``modelUsage``: a :class:`~ctxsim.world.Call`, or its ``(input, cache_creation, cache_read,
        output)``; None derives it (:func:`~ctxsim.world.summary_call`). ``rejected`` are summary requests made
        before it whose replies Claude Code refused (no ``<summary>``: it asked again), each given the same way and
        counted the same (:attr:`~ctxsim.world.Compaction.rejected`).

        Called while a subagent is open, it compacts that subagent as Claude Code does on its own, in its own
        context (a :class:`~ctxsim.world.SubagentCompaction`, trigger ``auto``; the main chain is unmoved): only
        after a call that is not the subagent's first, with the subagent past its autocompact point
        (:meth:`~ctxsim.world.ClaudeSettings.subagent_point`), as recorded; ``context`` is then what the subagent
        holds (default: the baseline, its system prefix, plus ``post_tokens``), and ``pre_tokens`` defaults to what
        it holds, counted as for the main chain.
        """
        if self._subagent is not None:
            if trigger != "auto" or preserved is not None or rejected:
                raise ValueError("ctxsim: a subagent compacts on its own only (trigger auto; no preserved or "
                                 "rejected): /compact compacts the main chain, after end_subagent()")
            compact_subagent(self, post_tokens, context, pre_tokens, summary)
            return self
        if post_tokens is None and context is None:
            raise ValueError("ctxsim: compact() needs post_tokens (what the boundary reports) or context (what "
                             "/context shows after)")
        if context is None:
            context = compacted_context(self.baseline, int(post_tokens or 0), trigger)
        if post_tokens is None:
            if context < self.baseline:
                raise ValueError(f"ctxsim: compact(context={context:,}) is below the baseline ({self.baseline:,}): "
                                 f"the system prompt and tools stay after a compaction")
            post_tokens = context - self.baseline
        chain = self._chain(None)
        if pre_tokens is None:
            pre_tokens = chain.pre_tokens(self.baseline, auto=trigger == "auto")
        refused = tuple(self._summary(r, pre_tokens, post_tokens, chain) for r in rejected)
        made = self._summary(summary, pre_tokens, post_tokens, chain)
        self._current_steps().append(Compaction(pre_tokens, post_tokens, trigger, context, made, preserved,
                                                refused))
        chain.last_prompt, chain.last_output, chain.pending_growth, chain.later_blocks = context, 0, 0, 0
        chain.expired, chain.keep_prefix = True, min(self.baseline, context)
        return self

    def _summary(self, summary: Call | tuple[int, int, int, int] | None, pre_tokens: int, post_tokens: int,
                 chain: Chain) -> Call:
        """The compaction's summary request: as given, or derived from the main chain's cache."""
        if isinstance(summary, Call):
            return summary
        message_id, request_id = self._new_id("msg"), self._new_id("req")
        if summary is None:
            cached = 0 if chain.expired else chain.cached_prefix
            return summary_call(pre_tokens, post_tokens, cached, message_id=message_id, request_id=request_id,
                                model=self.model, text=filler_text(self._rng, 12))
        if len(summary) != 4 or any(not isinstance(n, int) or n < 0 for n in summary):
            raise ValueError(f"ctxsim: compact(summary={summary!r}) needs (input, cache_creation, cache_read, "
                             f"output), counts of 0 or more")
        return Call(summary[0], summary[1], summary[2], summary[3], (Text(filler_text(self._rng, 12)),),
                    message_id, self.model, request_id)

    def main_context(self) -> int:
        """What the main chain's next request would carry now (the last prompt, its output and what was added since):
        a compaction's ``pre_tokens``, with what :meth:`compact` adds to it."""
        return self._chain(None).held(self.baseline)

    def shown_context(self) -> int:
        """What the stream last showed of the main chain: the last prompt and its output (the baseline before any
        call); :meth:`main_context` adds what was added since."""
        chain = self._chain(None)
        return (chain.last_prompt or self.baseline) + chain.last_output

    def reset(self) -> SessionBuilder:
        """``/clear``: a new session id; the main context starts again from the baseline, and ``/context`` shows
        the baseline plus the command's own messages (:data:`~ctxsim.world.CLEAR_COMMAND_TOKENS`)."""
        new_id = self.new_uuid()
        self._current_steps().append(ConversationReset(new_id, self.baseline + CLEAR_COMMAND_TOKENS))
        self._chains[None] = Chain()
        return self

    def start_subagent(self, description: str = "explore the code", *, prompt_tokens: int = 400,
                       output: int = 150, background: bool = False, launch_tokens: int = 260) -> SessionBuilder:
        """Add a main call that starts a subagent; following :meth:`call`\\ s run in it until :meth:`end_subagent`.

        ``background``: the ``Agent`` tool runs it in the background (``run_in_background: true``), as Claude Code
        does: the tool's result is the launch (``launch_tokens``), at once, and a main call answering it ends the
        main turn before the subagent's calls; :meth:`end_subagent` then hands the main chain its notification."""
        start_subagent(self, description, prompt_tokens, output, background, launch_tokens)
        return self

    def end_subagent(self, *, result_tokens: int = 600) -> SessionBuilder:
        """Close the open subagent: its final answer reaches the main chain as the Agent tool's result, or, run in
        the background, as its :class:`~ctxsim.world.TaskNotification` of ``result_tokens`` (then the calls that
        follow answer it, in a turn of their own)."""
        end_subagent(self, result_tokens)
        return self

    def take(self) -> tuple[Query, ...]:
        """The queries closed since the last :meth:`take`, handed over and forgotten (the one being built stays).

        For a session too long to hold: render and check each batch as it comes (``ctxsim.wire.render_stream``
        with ``queries=``, against :meth:`world`) instead of calling :meth:`build`, which returns only the queries
        not taken."""
        taken, self._queries = tuple(self._queries), []
        return taken

    def world(self) -> Session:
        """The session's world (id, model, window, baseline, seed...) with no queries: what a renderer needs
        besides the queries themselves."""
        return self._session(())

    def build(self) -> Session:
        """The finished session."""
        if self._subagent is not None:
            self.end_subagent()
        self._close_query()
        return self._session(tuple(self._queries))

    def _session(self, queries: tuple[Query, ...]) -> Session:
        assert self.session_id is not None
        return Session(
            session_id=self.session_id,
            queries=queries,
            model=self._first_model,
            window=self.window,
            baseline=self.baseline,
            max_output_tokens=self.max_output_tokens,
            seed=self.seed,
            name=self.name,
            usage=self.usage,
            auto_compact_window=self.auto_compact_window,
            entrypoint=self.entrypoint,
            quantity=self.quantity,
            settings=self.settings,
            cli=self.cli,
        )
