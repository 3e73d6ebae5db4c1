"""Conformance checks for context trackers: numbered contracts with plain asserts, no pytest needed.

Each :class:`Contract` isolates one fact of Claude Code's stream (or one fault seen in the wild) in the smallest
session that shows it, and checks a tracker against the truth there through the real SDK client
(:func:`ctxsim.check.arun_tracker`). :func:`run_tracker_conformance` asserts them all, the way
``claude_agent_sdk.testing.run_session_store_conformance`` does for session stores::

    from ctxsim.testing import run_tracker_conformance

    def test_my_tracker_conforms():
        run_tracker_conformance(MyTracker, skip={"conversation-reset"})

:func:`check_tracker_conformance` returns every contract's report instead of stopping at the first failure.
:func:`tracker_state_machine` gives a Hypothesis ``RuleBasedStateMachine`` that drives a tracker event by event
(emit call, duplicate, drop cache read, strip usage, compact, subagent, restart) and checks it after each.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from .. import faults as F
from .._sync import run_blocking
from ..check import Report, arun_tracker
from ..trackers import Tracker, TrackerFactory, make_tracker
from ..wire import Script, render
from ..world import Session, SessionBuilder
from . import _denominators as D

if TYPE_CHECKING:
    from hypothesis.stateful import RuleBasedStateMachine

__all__ = [
    "CONTRACTS",
    "PROBES",
    "ConformanceResult",
    "Contract",
    "MakeTracker",
    "check_tracker_conformance",
    "conformance_table",
    "declaration_differences",
    "run_tracker_conformance",
    "tracker_state_machine",
]

ScriptsMaker = Callable[[Session], list[Script]]

MakeTracker = Callable[[], "Tracker | Awaitable[Tracker]"]
"""Makes a fresh tracker for each contract: a tracker class, a function, or an async function."""


@dataclass(frozen=True)
class Contract:
    """One checked fact: a minimal session, how it is delivered, and what a tracker must get right on it."""

    number: int
    name: str
    """A short stable name, used to skip it or to list the contracts a tracker breaks."""
    fact: str
    """The fact, in one sentence."""
    session: Callable[[], Session]
    """Builds the session (deterministically)."""
    scripts: ScriptsMaker | None = None
    """Renders (and perhaps faults) the session; default: :func:`ctxsim.wire.render`."""
    partial: bool = False
    """Render with partial messages (``stream_event`` frames)."""
    tolerance: int = 0
    optional: bool = False
    """May be skipped by name: it checks a behaviour some trackers leave to their caller by design."""


@dataclass
class ConformanceResult:
    """Every contract's report for one tracker factory."""

    reports: dict[str, Report] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()

    @property
    def failed(self) -> list[str]:
        """The contracts the tracker failed, in contract order: off the truth, raised, or never judged."""
        return [name for name, report in self.reports.items() if _verdict(report) != "."]

    @property
    def ways(self) -> dict[str, str]:
        """How each failed contract failed (:attr:`ctxsim.check.Report.how`): ``over``, ``under`` or ``none`` at
        its first point off the truth, ``crash``, ``stall`` or ``nowhere``."""
        return {name: report.how for name, report in self.reports.items() if report.how is not None}

    @property
    def unjudged(self) -> list[str]:
        """The contracts where the tracker was judged at no point (e.g. a results-only tracker, no result)."""
        return [name for name, report in self.reports.items() if _verdict(report) == "-"]


def _verdict(report: Report) -> str:
    """``.`` met, ``X`` off the truth, ``!`` raised or returned a non-count (or the run stalled), ``-`` judged at
    no point."""
    if report.crash or report.stall:
        return "!"
    if report.failures:
        return "X"
    return "." if report.points else "-"


def _builder(name: str, **kwargs: Any) -> SessionBuilder:
    return SessionBuilder(seed=0, name=name, **kwargs)


def _single_call() -> Session:
    return _builder("single-call").query("go").call(input=3, cache_creation=1_500, cache_read=40_000,
                                                     output=200).build()


def _blocks(request_ids: bool) -> Callable[[], Session]:
    def build() -> Session:
        kw: dict[str, Any] = {} if request_ids else {"request_id": False}
        b = _builder("blocks" if request_ids else "blocks-without-request-ids")
        return b.query("go").call(input=3, cache_creation=6_728, cache_read=16_945, output=159,
                                  blocks=("thinking", "text", "tool_use", "tool_use"), results=[500, 300],
                                  **kw).build()
    return build


def _latest_not_sum() -> Session:
    b = _builder("latest-not-sum").query("go")
    b.call(input=3, cache_creation=6_728, cache_read=16_945, output=7, results=[500])
    b.call(input=1, cache_creation=553, cache_read=23_673, output=38, results=[300])
    return b.call(output=120).build()


def _queries() -> Session:
    b = _builder("several-queries")
    for q in range(3):
        b.query(f"query {q}").call(results=[2_000]).call(results=[1_000]).call()
    return b.build()


def _subagent() -> Session:
    b = _builder("subagent", baseline=30_000).query("go").call(results=[500])
    b.start_subagent("explore").call(results=[30_000], blocks=("tool_use",))
    b.call(results=[30_000], blocks=("tool_use",)).call(blocks=("tool_use",), results=[100])
    return b.end_subagent(result_tokens=800).call().build()


def _cache_expiry() -> Session:
    b = _builder("cache-expiry").query("go").call(input=6, cache_creation=1_344, cache_read=172_301)
    return b.query("after an idle hour").call(input=6, cache_creation=174_210, cache_read=0).build()


def _compaction() -> Session:
    b = _builder("compaction").query("go").call(input=3, cache_creation=2_000, cache_read=148_000, output=300)
    return b.compact(20_000, pre_tokens=150_300).query("more").call(results=[1_000]).call().build()


def _reset() -> Session:
    b = _builder("conversation-reset").query("go").call(input=3, cache_creation=900, cache_read=120_000)
    return b.reset().query("after /clear").call().build()


def _partial_output() -> Session:
    return _builder("partial-output").query("go").call(results=[3_000], output=4_000).call(output=2_500).build()


CONTRACTS: tuple[Contract, ...] = (
    Contract(1, "single-call", "a call's prompt is input + cache creation + cache read", _single_call),
    Contract(2, "per-block-dedupe",
             "the per-block messages of one call (same message id, same usage) count once", _blocks(True)),
    Contract(3, "missing-request-id", "per-block messages without a request id still count once", _blocks(False)),
    Contract(4, "latest-not-sum", "the context is the latest main call's prompt, not a sum over calls",
             _latest_not_sum),
    Contract(5, "result-is-spend",
             "a ResultMessage's usage sums the query's calls: spend, not the context", _queries),
    Contract(6, "subagent-ignored", "subagent calls (parent_tool_use_id) never move the main context", _subagent),
    Contract(7, "cache-expiry",
             "a cache expiry moves tokens from cache read to cache creation; the context stays", _cache_expiry),
    Contract(8, "compaction", "a compact_boundary sets the context to its post-compaction size", _compaction),
    Contract(9, "conversation-reset", "after /clear the old context no longer counts", _reset, optional=True),
    Contract(10, "partial-messages", "with partial messages the stream carries extra stream_event frames; "
             "the context is unchanged by them", _partial_output, partial=True),
)


def _plain() -> Session:
    """Three queries of multi-block calls with tool results: what most faults act on, and nothing else."""
    b = _builder("plain", baseline=20_000)
    b.query("start").call(blocks=("thinking", "text", "tool_use", "tool_use"), results=[6_000, 2_000], output=400)
    b.call(results=[9_000], output=300).call(output=200)
    b.query("next").call(results=[15_000]).call(results=[4_000]).call(output=150)
    return b.query("last").call(results=[2_000]).call().build()


def _with_subagent() -> Session:
    b = _builder("with-subagent", baseline=20_000).query("start").call(results=[3_000])
    b.start_subagent("explore").call(results=[30_000], blocks=("tool_use",)).call(blocks=("tool_use",), results=[500])
    return b.end_subagent(result_tokens=900).call(results=[1_000]).call().build()


def _with_compaction() -> Session:
    b = _builder("with-compaction", baseline=20_000).query("start").call(results=[60_000]).call(results=[40_000])
    return b.compact(30_000).call(results=[2_000]).query("next").call().build()


def _model_switch() -> Session:
    """Three calls on a 200k model, then a query whose calls pass 200k (the fault moves it to a 1M model)."""
    b = _builder("model-switch", baseline=20_000).query("start").call(results=[60_000]).call(results=[40_000]).call()
    return b.query("bigger").call(results=[70_000]).call(results=[60_000]).call().build()


def _one_million() -> Session:
    """A session on a 1M window whose context passes 200k in its second query."""
    b = _builder("one-million", baseline=20_000, window=1_000_000).query("start").call(results=[90_000])
    b.call(results=[80_000]).call()
    return b.query("more").call(results=[120_000]).call(results=[50_000]).call().build()


def _faulted(fault: F.Fault, *, partial: bool = False) -> ScriptsMaker:
    def scripts(session: Session) -> list[Script]:
        return F.apply(F.FaultPlan((fault,), seed=0), render(session, include_partial_messages=partial))
    return scripts


def _fault_contract(number: int, name: str, fact: str, fault: F.Fault, *, partial: bool = False,
                    session: Callable[[], Session] = _plain) -> Contract:
    return Contract(number, name, fact, session, _faulted(fault, partial=partial), partial=partial)


CONTRACTS += (
    _fault_contract(11, "duplicated-blocks", "per-block messages written twice, byte for byte, count once",
                    F.DuplicateBlocks(rate=1.0)),
    _fault_contract(12, "replayed-messages", "a call's messages emitted again with new uuids count once",
                    F.ReplayedMessages(rate=1.0)),
    _fault_contract(13, "streaming-partials", "streaming placeholders before the final record are not a new call",
                    F.StreamingPartials(rate=1.0)),
    _fault_contract(14, "stale-output-tokens", "stale and growing per-block output_tokens do not move the prompt",
                    F.StaleOutputTokens(rate=1.0)),
    _fault_contract(15, "repeated-message-delta", "several cumulative message_delta frames are assigned, not added",
                    F.RepeatedMessageDelta(rate=1.0), partial=True),
    _fault_contract(16, "synthetic-errors", "synthetic error messages (<synthetic>, zero usage) are not calls",
                    F.SyntheticErrorMessages(rate=1.0)),
    _fault_contract(17, "reused-message-ids", "distinct calls that reuse a message id are still distinct calls",
                    F.ReusedMessageIds(rate=1.0)),
    _fault_contract(18, "missing-request-ids", "messages without a request id are deduplicated all the same",
                    F.MissingRequestIds(rate=1.0)),
    _fault_contract(19, "cache-read-drop", "cache reads moved into cache creation leave the context unchanged",
                    F.CacheReadDrop(rate=1.0)),
    _fault_contract(20, "nested-cache-creation", "cache writes reported only in the nested breakdown count",
                    F.NestedCacheCreationOnly(rate=1.0)),
    _fault_contract(21, "uncached-gateway-usage", "a gateway reporting the whole prompt as input_tokens is read right",
                    F.UncachedGatewayUsage(rate=1.0)),
    _fault_contract(22, "usage-iterations", "with usage.iterations the last message iteration is the context",
                    F.AdvisorIterations(rate=1.0)),
    _fault_contract(23, "missing-usage", "a message without usage leaves the context as it was",
                    F.MissingUsage(rate=1.0)),
    _fault_contract(24, "garbage-values", "garbage (negative, strings, NaN, huge) in the counts a context tracker "
                    "does not need (output, result usage, cost, modelUsage) never crashes it nor moves the context",
                    F.GarbageValues(rate=1.0)),
    _fault_contract(25, "interleaved-subagents", "subagent calls arriving after later main calls change nothing",
                    F.InterleavedSubagents(rate=1.0), session=_with_subagent),
    _fault_contract(26, "missing-result", "a query whose stream ends without a result leaves the context right",
                    F.MissingResult(rate=1.0)),
    _fault_contract(27, "zeroed-error-result", "an error result with zeroed usage does not zero the context",
                    F.ZeroedErrorResult(rate=1.0)),
    _fault_contract(28, "compaction-without-post-size", "after a compaction that states no size the old context "
                    "no longer counts", F.CompactionMetadata(mode="no_post"), session=_with_compaction),
    _fault_contract(29, "truncated-stream", "a stream cut short leaves what was seen tracked",
                    F.TruncatedStream(at=0.6)),
    _fault_contract(30, "inserted-compaction", "a compaction in a running session sets the context to its stated "
                    "size until the next call", F.InsertedCompaction(rate=0.3)),
    _fault_contract(31, "model-switch", "a switch to a model with another window changes the window, not the "
                    "tokens: the context carries on past the old window", F.ModelSwitch(to_window=1_000_000, at=0.5),
                    session=_model_switch),
    _fault_contract(32, "wrong-context-window", "results reporting the wrong contextWindow (200k on a 1M session) "
                    "do not cap the context", F.WrongContextWindow(reported=200_000), session=_one_million),
    _fault_contract(33, "garbage-prompt-values", "garbage in a call's prompt counts never crashes the tracker; "
                    "the context is unknown until a readable call", F.GarbageValues(rate=1.0, fields="prompt")),
    # the denominator: what a gauge divides by or counts to, told the session's world
    Contract(34, "one-million-window", "a [1m] model of any family runs in 1,000,000", D.one_million),
    Contract(35, "disabled-1m-window", "CLAUDE_CODE_DISABLE_1M_CONTEXT runs a [1m] model in 200,000",
             D.disabled_1m),
    Contract(36, "model-switch-window", "after /model the window is the new model's", D.model_switch_window),
    Contract(37, "autocompact-window", "CLAUDE_CODE_AUTO_COMPACT_WINDOW moves the autocompact point, not the "
             "window", D.autocompact_window),
    Contract(38, "autocompact-off", "with auto-compact off, the point is the window less the output reserve",
             D.autocompact_off),
    Contract(39, "output-reserve", "the output reserve is the max output up to 20,000", D.output_reserve),
    Contract(40, "autocompact-window-off", "with auto-compact off, CLAUDE_CODE_AUTO_COMPACT_WINDOW moves nothing",
             D.autocompact_window_off),
    Contract(41, "autocompact-window-percent", "from Claude Code 2.1.337 on, a share of the window counts against "
             "CLAUDE_CODE_AUTO_COMPACT_WINDOW, as the statusline's used_percentage does", D.autocompact_window_percent),
)
"""The contracts, in order: the facts of Claude Code's stream, then one per fault seen in the wild, then the
denominator's (a gauge told the session's world, judged on the quantity it declares)."""


PROBES: dict[str, tuple[str, ...]] = {
    "single-call": ("no-cache-creation",),
    "per-block-dedupe": ("every-row-totals",),
    "missing-request-id": ("ccusage-both-ids-totals",),
    "latest-not-sum": ("sums-calls",),
    "result-is-spend": ("result-usage-as-context",),
    "subagent-ignored": ("subagents-as-main",),
    "cache-expiry": ("cache-read-only",),
    "compaction": ("ignores-compaction", "compaction-summary-only", "compaction-unknown"),
    "conversation-reset": ("ignores-reset",),
    "partial-messages": ("ccstatusline-totals",),
    "duplicated-blocks": ("every-row-totals",),
    "replayed-messages": ("arbiter-uuid",),
    "streaming-partials": ("every-row-totals", "sums-row-outputs"),
    "stale-output-tokens": ("sums-row-outputs",),
    "repeated-message-delta": ("sums-message-delta",),
    "synthetic-errors": ("ccusage-fallback",),
    "reused-message-ids": ("id-only-dedupe",),
    "missing-request-ids": ("ccusage-both-ids-totals",),
    "cache-read-drop": ("cache-read-only",),
    "nested-cache-creation": ("no-nested-cache-creation",),
    "uncached-gateway-usage": ("cache-read-only",),
    "usage-iterations": ("no-iterations",),
    "missing-usage": ("missing-usage-unknown",),
    "garbage-values": ("placeholder-output",),
    "interleaved-subagents": ("subagents-as-main",),
    "missing-result": ("result-usage-as-context",),
    "zeroed-error-result": ("result-usage-as-context",),
    "compaction-without-post-size": ("ignores-compaction",),
    "truncated-stream": ("result-usage-as-context",),
    "inserted-compaction": ("ignores-compaction", "compaction-summary-only"),
    "model-switch": ("pegged-reported-window",),
    "wrong-context-window": ("pegged-reported-window",),
    "garbage-prompt-values": ("unreadable-as-zero", "unreadable-keeps-last"),
    "one-million-window": ("fixed-200k-gauge", "lost-1m-pegged-gauge"),
    "disabled-1m-window": ("model-name-window-gauge",),
    "model-switch-window": ("old-model-window-gauge",),
    "autocompact-window": ("model-window-autocompact-gauge",),
    "autocompact-off": ("buffer-when-autocompact-off-gauge",),
    "output-reserve": ("hard-coded-buffer-gauge",),
    "autocompact-window-off": ("compact-window-when-off-gauge",),
    "autocompact-window-percent": ("fixed-200k-gauge",),
}
"""For each contract, the probes that break it: trackers with the bug the contract is about, each a mutant of the
reference (:data:`ctxsim.trackers.catalogue.mutants.MUTANTS`) or a catalogue entry
(:data:`ctxsim.trackers.catalogue.CATALOGUE`) by name. A contract is kept only while a probe shows it can fail
(``tests/trackers/test_catalogue.py`` runs them): a contract no probe can break would be a check that cannot fail, and
is removed, not declared."""


def _contracts(skip: Collection[str], only: Collection[str] | None,
               extra: tuple[Contract, ...]) -> tuple[list[Contract], tuple[str, ...]]:
    contracts = list(CONTRACTS) + list(extra)
    names = {c.name for c in contracts}
    unknown = sorted((set(skip) | set(only or ())) - names)
    assert not unknown, f"ctxsim: unknown contracts {unknown}; known: {sorted(names)}"
    not_optional = sorted(name for name in skip if not next(c for c in contracts if c.name == name).optional)
    assert not not_optional, f"ctxsim: contracts {not_optional} are not optional and cannot be skipped"
    chosen = [c for c in contracts if c.name not in skip and (only is None or c.name in only)]
    return chosen, tuple(sorted(skip))


async def _make(factory: MakeTracker, session: Session) -> Tracker:
    """A fresh tracker, told ``session``'s world where its factory takes one (:func:`ctxsim.trackers.make_tracker`)."""
    made = make_tracker(factory, session)
    tracker: Tracker = await made if inspect.isawaitable(made) else made
    return tracker


async def _acheck(factory: MakeTracker, contracts: list[Contract]) -> dict[str, Report]:
    reports: dict[str, Report] = {}
    for contract in contracts:
        session = contract.session()
        scripts = contract.scripts(session) if contract.scripts else None
        reports[contract.name] = await arun_tracker(
            await _make(factory, session), session, tolerance=contract.tolerance,
            include_partial_messages=contract.partial, scripts=scripts)
    return reports


def check_tracker_conformance(make_tracker: MakeTracker, *, skip: Collection[str] = (),
                              only: Collection[str] | None = None, async_backend: str = "asyncio",
                              extra: tuple[Contract, ...] = ()) -> ConformanceResult:
    """Run every contract (but ``skip``, or only ``only``) on fresh trackers from ``make_tracker``.

    ``make_tracker`` is called once per contract and may be sync or async (return an awaitable). Unknown
    contract names, and skipping a contract that is not optional, are errors.
    """
    contracts, skipped = _contracts(skip, only, extra)
    reports = run_blocking(partial(_acheck, make_tracker, contracts), backend=async_backend)
    return ConformanceResult(reports, skipped)


def run_tracker_conformance(make_tracker: MakeTracker, *, skip: Collection[str] = (),
                            only: Collection[str] | None = None, async_backend: str = "asyncio") -> ConformanceResult:
    """Assert that trackers from ``make_tracker`` meet every contract; the first failure says which and why."""
    result = check_tracker_conformance(make_tracker, skip=skip, only=only, async_backend=async_backend)
    by_name: Mapping[str, Contract] = {c.name: c for c in CONTRACTS}
    for name, report in result.reports.items():
        contract = by_name.get(name)
        title = f"ctxsim: contract {contract.number if contract else '?'} ({name})"
        assert report.ok, f"{title} failed: {contract.fact if contract else ''}\n{report}"
        assert report.points, (f"{title}: the tracker was judged at no point of session {report.session.name!r} "
                               f"(its judged_at leaves out every observation there), so it cannot be said to meet it")
    return result


def conformance_table(results: Mapping[str, ConformanceResult],
                      expected: Mapping[str, Collection[str] | Mapping[str, str]] | None = None) -> str:
    """The detection table: a row per tracker, a column per contract, and how many it failed.

    ``.`` met, ``X`` off the truth, ``!`` raised (or returned a non-count), ``-`` judged at no point (counts as
    failed). With ``expected`` (tracker name -> the contracts it should fail, or a mapping of each to how it should
    fail, as :attr:`ConformanceResult.ways` says it), a last column says, for each tracker named there, ``same`` or
    where it differs: ``+name`` failed unexpectedly, ``-name`` passed although expected to fail, ``~name:how``
    failed another way than expected (how it did).
    """
    numbers = {c.name: c.number for c in CONTRACTS}
    names = list(dict.fromkeys(name for result in results.values() for name in result.reports))
    width = max([len("tracker"), *map(len, results)])
    header = f"{'tracker':<{width}} " + "".join(f"{numbers.get(n, '?'):>3}" for n in names) + "  fails"
    lines = [header + ("  declared" if expected is not None else "")]
    for tracker, result in results.items():
        cells = "".join(f"{_verdict(result.reports[n]):>3}" if n in result.reports else "   " for n in names)
        line = f"{tracker:<{width}} {cells}{len(result.failed):>7}"
        if expected is not None and tracker in expected:
            line += "  " + (" ".join(declaration_differences(result, expected[tracker], names)) or "same")
        lines.append(line)
    legend = ["contracts:"]
    for item in (f"{c.number} {c.name}" for c in CONTRACTS if c.name in names):
        if len(legend[-1]) + len(item) + 2 > 116:
            legend[-1] += ","
            legend.append("          ")
        legend[-1] += (", " if legend[-1][-1] not in ": " else " ") + item
    return "\n".join([*lines, "", *legend, ". met  X off the truth  ! raised  - judged at no point (failed)"])


def declaration_differences(result: ConformanceResult, expected: Collection[str] | Mapping[str, str],
                            names: Collection[str] | None = None) -> list[str]:
    """Where ``result`` differs from ``expected`` (the contracts it should fail, or each with how it should fail),
    in contract order: ``+name`` failed unexpectedly, ``-name`` passed although expected to fail, ``~name:how``
    failed, but not the way expected (``how`` is how it did). Empty when it is as expected."""
    ways = result.ways
    order = list(names if names is not None else result.reports)
    out = [f"+{n}" for n in order if n in ways and n not in expected]
    out += [f"-{n}" for n in order if n in expected and n not in ways]
    if isinstance(expected, Mapping):
        out += [f"~{n}:{ways[n]}" for n in order if n in ways and n in expected and ways[n] != expected[n]]
    return out


def tracker_state_machine(make_tracker: TrackerFactory, *, tolerance: int = 0, window: int = 200_000,
                          baseline: int = 12_000) -> type[RuleBasedStateMachine]:
    """A Hypothesis ``RuleBasedStateMachine`` class that checks trackers from ``make_tracker`` after every rule.

    ``TestMyTracker = tracker_state_machine(MyTracker).TestCase``: each rule (call, duplicate, cache drop,
    stripped usage, compaction, subagent, end of query, restart) is checked within ``tolerance`` tokens, in a
    ``window`` whose sessions start at ``baseline``. Hypothesis is imported on the first call, not with this module.
    """
    from ._stateful import tracker_state_machine as build

    return build(make_tracker, tolerance=tolerance, window=window, baseline=baseline)
