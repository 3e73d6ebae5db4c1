"""The catalogue of context trackers: the reference, and faithful reproductions of trackers with known bugs.

Each entry reproduces a formula as its origin wrote it — the five seed designs and the trackers surveyed in the wild
(docs/explanation/bugs-in-the-wild.md has both, with their sources) — wired the way its origin wires it (fed
``ResultMessage``\\ s only, raw stream-json dicts, or every message), and says which bug it carries. ctxsim must
catch every one of them; the scenarios in ``scenarios/`` name the entry each reported bug is reproduced by.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...reference import ContextTracker
from ...world import Quantity, Session, auto_compact_threshold, autocompact_point, model_window
from .._base import FromRatio, RawDicts, ResultsOnly, Tracker, TrackerFactory, TrackerWorld, make_tracker
from .._readings import Reading
from ._designs import ArbiterTracker, ContextEstimator, NonAdditiveContextManager, mala
from ._gauge import Gauge
from ._survey import (
    DEFAULT_WINDOW,
    AutocompactGauge,
    LatestUsage,
    ResultUsage,
    SummedUsage,
)
from .mutants import MUTANTS

__all__ = ["CATALOGUE", "Breaks", "Entry", "make", "reference_for"]


@dataclass(frozen=True)
class Breaks:
    """The conformance contracts (:data:`ctxsim.testing.CONTRACTS`, by name) an entry fails, and how it fails each:
    ``names``, or with ``all_but`` every contract except ``names``; each failed ``way`` (``over`` or ``under`` the
    truth at the first point off, ``none`` for no estimate there, ``crash`` for an exception, ``nowhere`` for judged
    at no point) unless ``ways`` names another for it.

    Declared from the entry's formula, not measured: ``tests/trackers/test_catalogue.py`` checks the declaration against
    a run (which contracts, and how each fails, so a tracker that breaks every contract some other way, by raising or
    answering 0, does not pass for the entry), and ``ctxsim catalogue`` prints both. The catalogue does not import the
    contracts; :meth:`of` and :meth:`how` resolve a declaration against them."""

    names: frozenset[str] = frozenset()
    all_but: bool = False
    way: str = "under"
    """How a broken contract fails unless :attr:`ways` says otherwise."""
    ways: Mapping[str, str] = field(default_factory=dict)
    """How particular contracts fail (each one broken, also when ``all_but`` is False and it is not in ``names``)."""

    def of(self, contracts: Iterable[str]) -> frozenset[str]:
        """The names of the contracts broken, out of ``contracts`` (every contract's name)."""
        every = frozenset(contracts)
        return every - self.names if self.all_but else (self.names | frozenset(self.ways)) & every

    def how(self, contracts: Iterable[str]) -> dict[str, str]:
        """Each contract broken, out of ``contracts``, with how it fails (as
        :attr:`ctxsim.testing.ConformanceResult.ways` reports a run)."""
        names = list(contracts)
        broken = self.of(names)
        return {name: self.ways.get(name, self.way) for name in names if name in broken}


@dataclass(frozen=True)
class Entry:
    """One catalogued tracker."""

    name: str
    factory: TrackerFactory
    """Makes a fresh tracker, ready for :func:`ctxsim.check.run_tracker`."""
    bug: str
    """What it gets wrong, in one line (empty for the reference)."""
    source: str
    """Where its formula comes from."""
    breaks: Breaks = Breaks()
    """The conformance contracts it fails (it passes the others)."""
    about: frozenset[str] = frozenset()
    """What a stream must show for this bug to show (names of :data:`ctxsim.check.FEATURES`: ``compaction``,
    ``subagent``, ``several-calls``...; any one of them will do); empty: the formula misreads every call, so any
    stream shows it. (A likely cause is named by :attr:`reading`, fitted against the numbers, not by this.)"""
    variant_of: str = ""
    """The entry whose formula this one is, with one more bug: where that bug does not show, the other entry's
    cause is this one's too."""
    reading: Reading | None = None
    """The fields its number is made of (:class:`ctxsim.trackers.Reading`), where one reading says it; None for the
    reference (right), a gauge (its quantity is what is wrong) and a formula no reading expresses. Declared from the
    formula and checked against a run of the entry (``tests/trackers/test_readings.py``)."""

    @property
    def family(self) -> str:
        """``reference``, ``design`` (one of the five designs) or ``survey`` (a tracker in the wild)."""
        if self.name == "reference":
            return "reference"
        return "design" if self.source.startswith("design ") else "survey"


def _breaks(*names: str, way: str = "under", ways: Mapping[str, str] | None = None) -> Breaks:
    return Breaks(frozenset(names), way=way, ways=dict(ways or {}))


def _all_but(*names: str, way: str = "under", ways: Mapping[str, str] | None = None) -> Breaks:
    return Breaks(frozenset(names), all_but=True, way=way, ways=dict(ways or {}))


# A formula that misreads an ordinary call (prompt = input + cache creation + cache read, all non-zero) fails every
# contract (``_all_but()``), since every contract's session has such calls at points it is judged at, unless it
# reads input_tokens, and a gateway reports the whole prompt there (cache fields 0): then it is right.
_PROMPT_IN_INPUT = ("uncached-gateway-usage",)
# A running total equals the latest call's prompt only where there is one call; every other session has several.
# The denominator's contracts but the model switch are one call each.
_ONE_CALL_DENOMINATORS = ("one-million-window", "disabled-1m-window", "autocompact-window", "autocompact-off",
                          "output-reserve", "autocompact-window-off", "autocompact-window-percent")
_ONE_CALL_SESSIONS = ("single-call", "per-block-dedupe", "missing-request-id", *_ONE_CALL_DENOMINATORS)
# The latest call's top-level in+cc+cr, trusted as it comes: blind to a cache write reported only in the nested
# breakdown (under), over-counts the summed top level of usage.iterations (over), and raises on a garbage prompt
# field (a string added to a number).
_NAIVE_PROMPT = {"nested-cache-creation": "under", "usage-iterations": "over", "garbage-prompt-values": "crash"}
# Arithmetic on a count that is a string or a float raises where the formula reads that field.
_RAISES_ON_GARBAGE_PROMPT = {"garbage-prompt-values": "crash"}
# A formula fed ResultMessages only is judged at results; a stream without one judges it nowhere. Its arithmetic
# raises on the garbage counts of a result's usage.
_RESULTS_ONLY = {"missing-result": "nowhere", "garbage-values": "crash"}
# A formula that leaves out a part of the prompt, yet adds up usage.iterations' summed top level, reads over there.
_ITERATIONS_OVER = {"usage-iterations": "over", **_RAISES_ON_GARBAGE_PROMPT}


# A gauge is told the session's world, and follows /model; the stream of the model-switch fault switches to a model
# the world does not make 1M (no [1m] in its name) while the results say 1M: a gauge reads it five times over.
_SWITCH_FAULT = {"model-switch": "over"}


def _gauge_breaks(**ways: str) -> Breaks:
    """A gauge's broken contracts: the model-switch fault's, and ``ways`` (contract names with ``_`` for ``-``)."""
    return _breaks(ways={**_SWITCH_FAULT, **{name.replace("_", "-"): way for name, way in ways.items()}})


# A gauge dividing by 200,000 whatever the model reads every 1M window five times over, and, where Claude Code counts
# a share of the window against the autocompact window (2.1.337 on), a 100,000 one half over.
_DIVIDES_BY_200K = _gauge_breaks(wrong_context_window="over", one_million_window="over", model_switch_window="over",
                                 autocompact_window_percent="under")


def _latest(name: str, **kwargs: Any) -> Callable[[], LatestUsage]:
    return lambda: LatestUsage(name=name, **kwargs)


def _summed(name: str, **kwargs: Any) -> Callable[[], RawDicts]:
    return lambda: RawDicts(SummedUsage(name=name, **kwargs))


def _gauge(quantity: Quantity, *, shows: Quantity | None = None, cap: float | None = None,
           window_of: Callable[[TrackerWorld, str], int] | None = None,
           threshold_of: Callable[[TrackerWorld, int], int] | None = None,
           counts: str | None = None) -> Callable[..., Gauge]:
    """The reference shown as ``quantity`` of the window and autocompact point the world gives the model in force,
    but for one wrong idea: ``shows`` (the quantity it really computes), ``window_of`` (the window it takes for a
    model), ``threshold_of`` (the point it takes for a window), ``cap`` (pegged there), ``counts`` (the mutant of
    the reference whose tokens it shows, :data:`~ctxsim.trackers.catalogue.mutants.MUTANTS`)."""
    def make(world: TrackerWorld = TrackerWorld()) -> Gauge:  # noqa: B008  (a frozen default world)
        windows = None if window_of is None else (lambda model: window_of(world, model))
        points = None if threshold_of is None else (lambda window: threshold_of(world, window))
        window = windows(world.model) if windows is not None else world.window
        threshold = points(window) if points is not None else world.threshold_of(window)
        tokens = ContextTracker(usage=world.usage) if counts is None else MUTANTS[counts].edit(world.usage)
        return Gauge(tokens, quantity, window, threshold, world=world, shows=shows,
                     cap=cap, window_of=windows, threshold_of=points)
    return make


def _whatever_the_model(world: TrackerWorld, model: str) -> int:
    return DEFAULT_WINDOW


def _from_the_name(world: TrackerWorld, model: str) -> int:
    return model_window(model)


def _first_model(world: TrackerWorld, model: str) -> int:
    return world.window


def _model_point(world: TrackerWorld, window: int) -> int:
    return world.settings.point(window, world.max_output_tokens)


def _buffer_always(world: TrackerWorld, window: int) -> int:
    return dataclasses.replace(world.settings, auto_compact=True).point(world.auto_compact_window or window,
                                                                         world.max_output_tokens)


def _compact_window_always(world: TrackerWorld, window: int) -> int:
    return autocompact_point(world.auto_compact_window or window, world.max_output_tokens,
                             auto_compact=world.settings.auto_compact)


def _fixed_buffer(world: TrackerWorld, window: int) -> int:
    return window - HARD_CODED_BUFFER


def _natural_point(world: TrackerWorld, window: int) -> int:
    return auto_compact_threshold(window, 32_000)


HARD_CODED_BUFFER = 33_000
"""20,000 of output reserve and 13,000 of buffer, written as one constant."""


CATALOGUE: dict[str, Entry] = {e.name: e for e in (
    Entry("reference", ContextTracker, "",
          "ctxsim.reference.ContextTracker: latest main-chain call's in+cc+cr, deduped by message id"),
    # --- the designs ---
    Entry("mala-overwrite", mala(name="mala-overwrite"),
          "overwrites with each ResultMessage.usage (a per-query sum of spend) and leaves out cache reads, "
          "so the gauge shows the last turn's uncached tail: near 0% while the context fills",
          "design 003 (mala, 'Context Exhaustion Handling'), Task 2: context_usage.input_tokens = usage.input_tokens",
          breaks=_all_but(ways={
              # the query's summed input_tokens, where a gateway puts the whole prompt: each call's counted again
              "uncached-gateway-usage": "over", **_RESULTS_ONLY}),
          reading=Reading("result", "last", ("in", "out"))),
    Entry("mala-cache-read-pressure", mala(name="mala-cache-read-pressure", include_cache_read=True),
          "reads pressure from ResultMessage.usage with cache reads summed over the query's calls: "
          "719% reported when the context was ~3%",
          "design 000 (mala, 'Context Pressure Tracking Fix'), the behaviour it set out to fix",
          breaks=_all_but(way="over", ways={
              # cache reads summed over the query's calls read over; where a query has one call, or a cold cache,
              # the cache writes it leaves out weigh more than the repeated reads
              **dict.fromkeys(("single-call", "per-block-dedupe", "missing-request-id", "cache-expiry",
                               "conversation-reset", "cache-read-drop", "zeroed-error-result",
                               "wrong-context-window", "model-switch-window", *_ONE_CALL_DENOMINATORS), "under"),
              **_RESULTS_ONLY}),
          about=frozenset({"several-calls"}),
          reading=Reading("result", "last", ("in", "cr", "out"))),
    Entry("mala-accumulate", mala(name="mala-accumulate", accumulate=True),
          "sums input+output over results as if they were per-turn deltas and drops cache reads: "
          "counts spend, not occupancy, and misses the cached prefix",
          "design 000 (mala), add_turn() and pressure_ratio() after the fix",
          breaks=_all_but(ways={"uncached-gateway-usage": "over", **_RESULTS_ONLY}),
          reading=Reading("result", "sum", ("in", "out"))),
    Entry("arbiter-msgid", lambda: RawDicts(ArbiterTracker(name="arbiter-msgid")),
          "max(cache_read)+sum(input)+sum(output) over every assistant message: keeps the pre-compaction "
          "maximum, takes subagent cache reads as the main context, ignores cache creation",
          "design 001 (Arbiter handoff, 'Context Tracking Implementation'), deduped by message.id",
          breaks=_all_but(ways={
              # cache creation left out reads under; a gateway's whole-prompt input and iterations' top level add up
              "uncached-gateway-usage": "over", "usage-iterations": "over", "garbage-values": "crash",
              **_RAISES_ON_GARBAGE_PROMPT}),
          reading=Reading("call", "sum", ("in", "out"), peak=("cr",), chain="all")),
    Entry("arbiter-uuid", lambda: RawDicts(ArbiterTracker(dedupe_by="uuid", name="arbiter-uuid")),
          "the Arbiter formula deduped by uuid: every content block of a call is counted again (2-3x)",
          "design 001, the 'WRONG - overcounts by 2-3x' variant of Key Gotcha 1",
          breaks=_all_but(ways={
              # as arbiter-msgid, and every row of a streamed call adds its input and output again
              **dict.fromkeys(("streaming-partials", "stale-output-tokens", "uncached-gateway-usage",
                               "usage-iterations"), "over"), "garbage-values": "crash", **_RAISES_ON_GARBAGE_PROMPT}),
          about=frozenset({"per-block-rows"}), variant_of="arbiter-msgid",
          reading=Reading("row", "sum", ("in", "out"), peak=("cr",), chain="all")),
    Entry("debussy-chars", ContextEstimator,
          "estimates chars/4 x 1.3 of tool results and prompts: blind to the system prompt, tools, output "
          "and cache, and counts subagents' tool results",
          "design 002 (debussy, 'Context Monitoring Phase 1: Context Estimation')",
          breaks=_all_but(),  # blind to the system prompt and tools: under everywhere
          reading=Reading("text", "sum", (), chain="all", overhead=1.3)),
    Entry("nonadditive-prompt", NonAdditiveContextManager,
          "takes input_tokens as the whole context (Ollama's prompt_tokens semantics): on the Anthropic "
          "shape that is the uncached tail, ~0%",
          "design 004 (ContextManager, 'non-additive prompt_tokens' pattern)",
          breaks=_all_but(*_PROMPT_IN_INPUT, ways=_RAISES_ON_GARBAGE_PROMPT), variant_of="input-only",
          reading=Reading("row", keys=("in",), at_reset="keep")),
    # --- the survey ---
    Entry("claude-code-statusline", _latest("claude-code-statusline", after_compaction="unknown"),
          "current_usage is null from /compact until the next call although the boundary states the new size",
          "Claude Code statusline docs: used_percentage = latest call's in+cc+cr, current_usage null after "
          "/compact (Bugs in the wild B16 CC 2.1.218)",
          breaks=_breaks(ways={**_NAIVE_PROMPT, "compaction": "none", "inserted-compaction": "none"}),
          about=frozenset({"compaction"}),
          reading=Reading("row", after_compaction="unknown")),
    Entry("ccusage-fallback", _latest("ccusage-fallback", main_only=False, skip_synthetic=False),
          "the latest assistant line with no sidechain or synthetic filter, and no compaction handling: a "
          "subagent's line or a zero-usage error line becomes the context",
          "ryoppippi/ccusage context fallback (docs/explanation/bugs-in-the-wild.md; B19 tiann/hapi#1256, ccusage#504)",
          breaks=_breaks(ways={  # a subagent's or an error's line reads under, a pre-compaction line over
              **_NAIVE_PROMPT, **dict.fromkeys(("subagent-ignored", "interleaved-subagents", "synthetic-errors"),
                                               "under"),
              **dict.fromkeys(("compaction", "compaction-without-post-size", "inserted-compaction"), "over")}),
          about=frozenset({"subagent", "synthetic", "compaction"}),
          reading=Reading("row", chain="all")),
    Entry("ccstatusline", _latest("ccstatusline", after_compaction="post-or-zero"),
          "after a compact_boundary shows postTokens, the summary alone (the context also holds the system prompt "
          "and tools: 2,672 where /context said 14,756, captures fact 8), or 0 when the boundary has none",
          "sirmalloc/ccstatusline jsonl-metrics (#524)",
          # every boundary with a post size reads the baseline short, wherever a compaction is judged
          breaks=_breaks("compaction", "inserted-compaction", "compaction-without-post-size", ways=_NAIVE_PROMPT),
          about=frozenset({"compaction"}),
          reading=Reading("row", after_compaction="post-or-zero")),
    Entry("cumulative-statusline-totals", _summed("cumulative-statusline-totals"),
          "the session's cumulative input totals read as the context: 191%, 359%, '1000%+'",
          "Claude Code statusline total_input_tokens before 2.1.132 (B11: claude-code#13783, ccusage#823)",
          breaks=_all_but(*_ONE_CALL_SESSIONS, way="over", ways={
              # deduped by message id: a proxy's reused id drops the later calls
              "reused-message-ids": "under", **_RAISES_ON_GARBAGE_PROMPT}),
          about=frozenset({"several-calls"}),
          reading=Reading("call", "sum")),
    Entry("ccusage-both-ids-totals", _summed("ccusage-both-ids-totals", dedupe="both_ids", main_only=False),
          "a running total deduped by message.id:requestId only when both exist: without request ids every "
          "content block counts again (2.3x), and the total is spend, not occupancy",
          "ryoppippi/ccusage hash = msgId && reqId ? ... : null (B1: ccusage#976, TokenTracker#62)",
          breaks=_all_but("single-call", "per-block-dedupe", *_ONE_CALL_DENOMINATORS, way="over",
                          ways=_RAISES_ON_GARBAGE_PROMPT),
          about=frozenset({"several-calls", "per-block-rows"}),
          reading=Reading("both-ids", "sum", chain="all")),
    Entry("input-only", _latest("input-only", fields=("in",)),
          "input_tokens alone: only the uncached tail, ~0% (auto-compaction never fires)",
          "B12: openclaw#70592 (0% vs 44%), hermes-agent#1609, genkit#5412",
          breaks=_all_but(*_PROMPT_IN_INPUT, ways=_RAISES_ON_GARBAGE_PROMPT),
          reading=Reading("row", keys=("in",))),
    Entry("cache-creation-ignored", _latest("cache-creation-ignored", fields=("in", "cr")),
          "in+cr without cache creation: drops to ~1% on a cache miss, compaction one step late",
          "B13: charmbracelet/crush#3841; graykode/abtop#56",
          breaks=_all_but(*_PROMPT_IN_INPUT, ways=_ITERATIONS_OVER),
          reading=Reading("row", keys=("in", "cr"))),
    Entry("cache-read-only", _latest("cache-read-only", fields=("cr",)),
          "cache_read alone: collapses when a cache expires or a session resumes",
          "B14: claude-code#42338 (cr 172,301 then 0), #94177 (microcompaction)",
          breaks=_all_but(ways=_ITERATIONS_OVER),
          reading=Reading("row", keys=("cr",))),
    Entry("output-included-no-cache-write", _latest("output-included-no-cache-write", fields=("in", "cr", "out")),
          "input + cache read + output, leaving out cache writes: the gauge swings with output and misses "
          "freshly cached context",
          "anomalyco/opencode compaction isOverflow (docs/explanation/bugs-in-the-wild.md; B15 can1357/oh-my-pi#306)",
          # it adds output_tokens, which the garbage-values contract spoils (it raises on a string there)
          breaks=_all_but(*_PROMPT_IN_INPUT, ways={**_ITERATIONS_OVER, "garbage-values": "crash"}),
          reading=Reading("row", keys=("in", "cr", "out"))),
    Entry("result-usage-as-context", lambda: ResultsOnly(ResultUsage(name="result-usage-as-context"),
                                                         feed=ResultUsage.on_result),
          "ResultMessage.usage (the sum over the query's calls) read as the context: '14.8M/200k'",
          "B8: Mng-dev-ai/agentrove#298, RunMaestro/Maestro#280, rust-code-agent-sdks#250",
          breaks=_all_but(*_ONE_CALL_SESSIONS, "cache-expiry", "model-switch-window", way="over", ways={
              # the /clear query's result (and an error's) has all-zero usage
              "conversation-reset": "under", "zeroed-error-result": "under", **_RESULTS_ONLY}),
          about=frozenset({"several-calls"}),
          reading=Reading("result")),
    Entry("accumulated-cache-read-capped", _summed("accumulated-cache-read-capped", fields=("cr",), cap=200_000),
          "cache reads accumulated over calls and clamped to the window: always '200k/200k'",
          "B27: openclaw#13815, openclaw#51721 ('757.3k / 200k' vs 46k)",
          breaks=_all_but(ways=_ITERATIONS_OVER),
          about=frozenset({"several-calls"}),
          reading=Reading("call", "sum", ("cr",), cap="200k")),
    Entry("every-row-totals", _summed("every-row-totals", dedupe="none"),
          "a running total over every assistant row, streaming partials and per-block copies included: each "
          "call counts once per row (2.5x), and the total is spend, not occupancy",
          "B4: sirmalloc/ccstatusline#278 before its fix (54 rows for 21 calls: 2,427,587 vs 957,939), "
          "androidZzT/cc-statistics#3 (input +58%)",
          breaks=_all_but("single-call", *_ONE_CALL_DENOMINATORS, way="over", ways=_RAISES_ON_GARBAGE_PROMPT),
          about=frozenset({"several-calls", "per-block-rows"}),
          reading=Reading("row", "sum")),
    Entry("ccstatusline-totals", _summed("ccstatusline-totals", dedupe="finished"),
          "a running total over rows with a truthy stop_reason (plus the last partial of an unfinished call): "
          "per-block rows that each carry the final stop_reason all count (1.84-2.5x)",
          "B3: sirmalloc/ccstatusline#549, #462 (requestCount 114 -> 61), PR #595; the #278 policy",
          breaks=_all_but(*_ONE_CALL_SESSIONS, way="over", ways=_RAISES_ON_GARBAGE_PROMPT),
          about=frozenset({"several-calls", "per-block-rows"}),
          reading=Reading("finished", "sum")),
    Entry("pegged-reported-window", _latest("pegged-reported-window", peg_at_reported_window=True),
          "the latest call's in+cc+cr pegged at 100% of the window the latest result reports: a 1M session "
          "reported as 200k reads 200k from there on",
          "B20: anthropics/claude-code#76751 (context_window_size 200000 on a 1M session, pegs at 100%), #73399, "
          "Claude Code 2.1.208 changelog",
          breaks=_breaks(ways={
              **_NAIVE_PROMPT, "garbage-values": "crash",
              # no compaction handling: the pre-compaction size stays; pegged at a smaller reported window: under
              **dict.fromkeys(("compaction", "compaction-without-post-size", "inserted-compaction"), "over"),
              **dict.fromkeys(("model-switch", "wrong-context-window", "one-million-window"), "under")}),
          about=frozenset({"window-mismatch", "compaction"}),
          reading=Reading("row", cap="reported")),
    # --- gauges that show another quantity, or over another window, than the one asked ---
    Entry("window-percent-gauge", _gauge("percent_until_autocompact", shows="percent_of_window"),
          "declares the share of the way to autocompact left but shows the share of the window used: 61 where "
          "27 is meant (the two gauges read opposite ways)",
          "anthropics/claude-code#62210, #46428, #18944; sirmalloc/ccstatusline PR #319, Owloops/claude-powerline "
          "PR #64",
          # a share used read as a share left: a small context reads over, a context past half the autocompact
          # point under (where the first point off is a large one)
          breaks=_all_but(way="over", ways=dict.fromkeys(("cache-expiry", "compaction", "conversation-reset",
                                                          "disabled-1m-window", "output-reserve"), "under"))),
    Entry("fixed-200k-gauge", _gauge("percent_of_window", window_of=_whatever_the_model, threshold_of=_natural_point),
          "divides by 200,000 whatever the window: a 1M session shows five times its pressure (201% at 402,003)",
          "anthropics/claude-code#73399, #76751, #39467, #32014; sirmalloc/ccstatusline#233, #429; "
          "Haleclipse/CCometixLine#26",
          breaks=_DIVIDES_BY_200K),
    Entry("model-name-window-gauge", _gauge("percent_of_window", window_of=_from_the_name),
          "takes the window from the model's name ([1m]: 1,000,000) where CLAUDE_CODE_DISABLE_1M_CONTEXT left it "
          "at 200,000: a fifth of the pressure",
          "sirmalloc/ccstatusline dist/ccstatusline.js:50172-50197 (a [1m] tag in the model id), graykode/abtop#109",
          breaks=_gauge_breaks(wrong_context_window="over", disabled_1m_window="under",
                               autocompact_window_percent="under")),
    Entry("model-window-autocompact-gauge", _gauge("percent_until_autocompact", threshold_of=_model_point),
          "counts to the model window's autocompact point (167,000 of 200,000) where CLAUDE_CODE_AUTO_COMPACT_WINDOW "
          "moved it (67,000 of 100,000): shows room the session does not have",
          "anthropics/claude-code#62210; Claude Code's CLAUDE_CODE_AUTO_COMPACT_WINDOW (ctxsim's REPL recordings, "
          "autocompact.json)",
          breaks=_gauge_breaks(autocompact_window="under", autocompact_window_percent="under")),
    Entry("hard-coded-buffer-gauge", _gauge("percent_until_autocompact", threshold_of=_fixed_buffer),
          "counts to the window less a hard-coded 33,000 (167,000 of 200,000): wrong wherever the max output is "
          "under 20,000, an override or an autocompact window moves the point, or auto-compact is off",
          "anthropics/claude-code#31806 (window - min(max output, 20k) - 13k); Gitlawb/openclaude#746",
          breaks=_gauge_breaks(autocompact_window="under", autocompact_window_percent="under", autocompact_off="over",
                               output_reserve="over", autocompact_window_off="over")),
    Entry("buffer-when-autocompact-off-gauge", _gauge("percent_until_autocompact", threshold_of=_buffer_always),
          "subtracts the autocompact buffer when auto-compact is off: counts to 167,000 where nothing compacts "
          "before 180,000, so it shows the context fuller than it is",
          "open-gsd/gsd-core#4844",
          breaks=_gauge_breaks(autocompact_off="over", autocompact_window_off="over")),
    Entry("old-model-window-gauge", _gauge("percent_of_window", window_of=_first_model),
          "keeps the first model's window after /model: a switch to a [1m] model reads five times the pressure, a "
          "switch back a fifth",
          "danielmiessler/LifeOS#1358 (14% shown against 75%); anthropics/claude-code#74355 (88% in the statusline "
          "against 14% in /context after /clear and a switch to Haiku)",
          breaks=_gauge_breaks(model_switch_window="over", autocompact_window_percent="under")),
    Entry("compact-window-when-off-gauge", _gauge("percent_until_autocompact", threshold_of=_compact_window_always),
          "counts to CLAUDE_CODE_AUTO_COMPACT_WINDOW though auto-compact is off, where that window moves nothing: "
          "80,000 of a 100,000 window where nothing compacts before 180,000 (the context fuller than it is)",
          "openclaw/openclaw#111723 (a 100,000 autocompact window ignored with auto-compact off, the session grew to "
          "984K); Claude Code's REPL recorded (autocompact-window-disabled.json: no compaction at 80,003)",
          breaks=_gauge_breaks(autocompact_window_off="over")),
    Entry("subagent-as-session-gauge", _gauge("percent_of_window", counts="subagents-as-main"),
          "shows a subagent's context as the session's, against the main window: the bar jumps to a subagent's "
          "863K of 1M while the main chain is small, and back when the main chain replies (a subagent compacts "
          "against a window of its own, not the session's)",
          "anthropics/claude-code#90862 (subagents at 863K and 940K of a 1M window, asking for their own compaction "
          "window: an agent definition's autoCompactWindow), #16944 (a subagent compacts in its own transcript)",
          breaks=_gauge_breaks(subagent_ignored="over", interleaved_subagents="under"),
          about=frozenset({"subagent"})),
    Entry("lost-1m-pegged-gauge", _gauge("percent_of_window", window_of=_whatever_the_model, cap=100),
          "loses the [1m] suffix (the transcript's model name has none), divides by 200,000 and pegs the bar at "
          "100%: a 1M session past 200,000 is stuck at 100%",
          "sirmalloc/ccstatusline#171, #180, #193, #233; preset-io/agor#2167",
          breaks=_DIVIDES_BY_200K,
          variant_of="fixed-200k-gauge"),
    Entry("autocompact-denominator",
          lambda: FromRatio(AutocompactGauge(name="autocompact-denominator"), window=DEFAULT_WINDOW),
          "the latest call's in+cc+cr divided by the autocompact threshold (window - 20k - 13k), not by the window: "
          "reads 1.2x the context, so two gauges of one session disagree",
          "B22: anthropics/claude-code#18944, #21651, #18241; Gitlawb/openclaude#746 (percentLeft against the "
          "autocompact threshold)",
          breaks=_all_but(way="over", ways=_RAISES_ON_GARBAGE_PROMPT), reading=Reading("row", per="autocompact")),
)}
"""Every catalogued tracker by name."""


def reference_for(session: Session) -> ContextTracker | Gauge:
    """The reference, told what a tracker is told of ``session``'s world: how its provider reports usage; where
    the session asks a gauge for another quantity than tokens (:attr:`~ctxsim.world.Session.quantity`), the
    reference's tokens shown as that quantity of the session's window and autocompact point."""
    reference = ContextTracker(usage=session.usage)
    if session.quantity == "tokens":
        return reference
    return Gauge(reference, session.quantity, session.window, session.auto_compact_threshold,
                 world=TrackerWorld.of(session))


def make(name: str, session: Session | None = None) -> Tracker:
    """A fresh tracker of the catalogue entry ``name`` (told ``session``'s world where it takes one)."""
    try:
        tracker: Tracker = make_tracker(CATALOGUE[name].factory, session)
        return tracker
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise KeyError(f"ctxsim: no tracker {name!r} in the catalogue (known: {known})") from None
