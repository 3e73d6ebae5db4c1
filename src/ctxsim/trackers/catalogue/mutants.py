"""Behavioural mutants of the reference tracker: one per bug class, to measure whether a corpus catches each.

Each :class:`Mutant` is :class:`~ctxsim.reference.ContextTracker` with one guarantee broken, the way a tracker in
the wild breaks it: every event the reference handles (per-block and stream-event calls, compaction, init,
reset, results), every field it reads (the three prompt counts, the nested cache creation, ``iterations``,
``parent_tool_use_id``, ``model``, the message id, ``output_tokens``, ``post_tokens``, ``session_id``) and every
fault kind of :mod:`ctxsim.faults` it survives. ``benchmarks/bench_adequacy.py`` runs the corpus alone against each
and prints how many it kills; a mutant no session can tell from the reference says why in :attr:`Mutant.equivalent`.

These are not catalogue entries (no report describes them one by one); the held-out trackers of
``tests/loops/test_adequacy.py``, written independently of this module, check that the corpus catches the same bug
classes in code that is not a one-line edit of the reference.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from claude_agent_sdk import AssistantMessage, ConversationResetMessage, ResultMessage

from ...reference import MAX_OUTPUT_TOKENS, ContextTracker, prompt_tokens, token_count
from ...world import UsageConvention
from .._readings import Reading

__all__ = ["MUTANTS", "Mutant"]

E = TypeVar("E")


@dataclass(frozen=True)
class Mutant(Generic[E]):
    """One bug class, as a minimal edit of a reference: of the reference tracker (here, ``Mutant[factory]``) or of
    the reference restart loop (:mod:`ctxsim.loops.mutants`, ``Mutant[loop function]``); one class for both."""

    name: str
    bug: str
    """The guarantee it breaks, in one line."""
    edit: E
    """The edited reference: here a factory making a fresh mutant told the session's usage convention (as the
    reference is told); for a loop, the loop function taking a :class:`~ctxsim.loops.LoopRig`."""
    equivalent: str = ""
    """Why no run the checks judge can tell it from the reference (empty: it is not equivalent)."""
    spec: str = ""
    """How a command line names it, ``module:function`` (``--ctx-loop=ctxsim.loops.mutants:<function>``); empty
    where none can (a tracker mutant's factory takes a usage convention, which ``--ctx-tracker`` does not give)."""
    cause: tuple[str, ...] = ()
    """The catalogue entries (:data:`ctxsim.trackers.catalogue.CATALOGUE`) whose bug this one is: a likely
    cause naming any other entry for it is wrong (``benchmarks/bench_causes.py`` counts them). Empty: no entry
    carries this bug."""
    reading: Reading | None = None
    """What a tracker mutant's numbers are where it fails, when a reading says it and no :attr:`cause` does (a
    likely cause must name it); None: no reading does."""




class _SubagentsAsMain(ContextTracker):
    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is not None:
            self._call(message.message_id, message.usage, message.model)
            return
        super().observe(message)


class _KeepsSynthetic(ContextTracker):
    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.model == "<synthetic>":
            self._call(message.message_id, message.usage, message.model)
            return
        super().observe(message)


class _UnreadableAsZero(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        if isinstance(usage, dict) and prompt_tokens(usage, inclusive=self.usage == "inclusive") is None:
            usage = {k: (token_count(v) or 0) if k.endswith("tokens") else v for k, v in usage.items()}
        super()._call(message_id, usage, model)


class _IgnoresNewSession(ContextTracker):
    def _system(self, subtype: str, data: dict[str, Any]) -> None:
        if subtype != "init":
            super()._system(subtype, data)


class _SumsMessageDelta(ContextTracker):
    def _stream_event(self, event: dict[str, Any]) -> None:
        before = self._output
        super()._stream_event(event)
        if event.get("type") == "message_delta" and before is not None and self._output is not None:
            self._output += before


class _KeepsOutputOnNewCall(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        output = self._output
        super()._call(message_id, usage, model)
        if self._prompt is not None and output is not None:
            self._output = output


class _SumsRowOutputs(ContextTracker):
    def reset(self) -> None:
        super().reset()
        self._rows: set[int] = set()

    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        latest = self._latest
        super()._call(message_id, usage, model)
        if self._latest != latest:
            self._rows = set()
        output = token_count(usage.get("output_tokens")) if isinstance(usage, dict) else None
        if self._prompt is not None and output is not None and output <= MAX_OUTPUT_TOKENS:
            self._rows.add(output)
            self._output = sum(self._rows)  # each distinct row's output counted: stale copies add up


class _NoOutputCap(ContextTracker):
    def _stream_event(self, event: dict[str, Any]) -> None:
        super()._stream_event(event)
        usage = event.get("usage") if event.get("type") == "message_delta" else None
        output = token_count(usage.get("output_tokens")) if isinstance(usage, dict) else None
        if output is not None and output > MAX_OUTPUT_TOKENS and self._prompt is not None:
            self._output = output


class _PlaceholderOutput(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        super()._call(message_id, usage, model)
        output = token_count(usage.get("output_tokens")) if isinstance(usage, dict) else None
        if self._prompt is not None and output is not None:
            self._output = output


class _SumsCalls(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        before, latest = self._prompt, self._latest
        super()._call(message_id, usage, model)
        if before is not None and self._prompt is not None and self._latest != latest:
            self._prompt += before


class _NoReplayFilter(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        self._seen.clear()
        super()._call(message_id, usage, model)


class _IdOnlyDedupe(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        prompt = prompt_tokens(usage, inclusive=self.usage == "inclusive")
        if isinstance(message_id, str) and message_id in self._ids and (message_id, prompt) not in self._seen:
            return  # a known id is a copy of that call, whatever it reports
        super()._call(message_id, usage, model)


def _fields(*, created: bool = True, nested: bool = True, iterations: bool = True,
            inclusive: bool = True) -> type[ContextTracker]:
    """The reference reading a call's prompt with one of the API's usage rules left out."""

    class Reader(ContextTracker):
        def _call(self, message_id: Any, usage: Any, model: Any) -> None:
            if isinstance(usage, dict):
                usage = dict(usage)
                if not iterations:
                    usage.pop("iterations", None)
                if not nested:
                    usage.pop("cache_creation", None)
                if not created:
                    usage.pop("cache_creation", None)
                    usage["cache_creation_input_tokens"] = 0
            if not inclusive:
                self.usage = "additive"
            super()._call(message_id, usage, model)

    return Reader


class _KeepsContextOverCompaction(ContextTracker):
    def _system(self, subtype: str, data: dict[str, Any]) -> None:
        if subtype != "compact_boundary":
            super()._system(subtype, data)


class _CompactionSummaryOnly(ContextTracker):
    def system_prefix(self) -> int | None:
        return 0


class _CompactionUnknown(ContextTracker):
    def _system(self, subtype: str, data: dict[str, Any]) -> None:
        super()._system(subtype, data)
        if subtype == "compact_boundary":
            self._prompt = None


class _IgnoresReset(ContextTracker):
    def observe(self, message: object) -> None:
        if not isinstance(message, ConversationResetMessage):
            super().observe(message)


class _MissingUsageUnknown(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        if usage is None and model != "<synthetic>":
            self._prompt, self._output = None, None
            return
        super()._call(message_id, usage, model)


class _UnreadableKeepsLast(ContextTracker):
    def _call(self, message_id: Any, usage: Any, model: Any) -> None:
        if prompt_tokens(usage, inclusive=self.usage == "inclusive") is None:
            return
        super()._call(message_id, usage, model)


class _IgnoresStreamEvents(ContextTracker):
    def _stream_event(self, event: dict[str, Any]) -> None:
        return


class _IgnoresResults(ContextTracker):
    def observe(self, message: object) -> None:
        if not isinstance(message, ResultMessage):
            super().observe(message)


class _IgnoresMessageStart(ContextTracker):
    def _stream_event(self, event: dict[str, Any]) -> None:
        if event.get("type") != "message_start":
            super()._stream_event(event)


class _PrefixFromWholeFirstPrompt(ContextTracker):
    def system_prefix(self) -> int | None:
        if self.prefix_tokens is None and self._first is not None:
            return self._first[1]
        return super().system_prefix()


def _make(cls: type[ContextTracker]) -> Callable[[UsageConvention], ContextTracker]:
    return lambda usage: cls(usage=usage)


MUTANTS: dict[str, Mutant[Callable[[UsageConvention], ContextTracker]]] = {m.name: m for m in (
    # which messages are main-chain calls
    Mutant("subagents-as-main", "parent_tool_use_id ignored: a subagent's call becomes the main context",
           _make(_SubagentsAsMain), cause=("ccusage-fallback",)),
    Mutant("keeps-synthetic", "<synthetic> error messages taken as calls", _make(_KeepsSynthetic),
           cause=("ccusage-fallback",)),
    Mutant("sums-calls", "each new call's prompt added to the last: a sum over calls, not a snapshot",
           _make(_SumsCalls), cause=("cumulative-statusline-totals",)),
    Mutant("no-replay-filter", "a replayed call (same id, same prompt, after others) counts again",
           _make(_NoReplayFilter), reading=Reading("row")),
    Mutant("id-only-dedupe", "a message id seen before is a replay even with another prompt (proxies reuse ids)",
           _make(_IdOnlyDedupe)),
    # the fields of usage
    Mutant("no-cache-creation", "cache_creation_input_tokens (and its breakdown) left out of the prompt",
           _make(_fields(created=False)), cause=("cache-creation-ignored",), reading=Reading(keys=("in", "cr"))),
    Mutant("no-nested-cache-creation", "the nested cache_creation breakdown ignored when the top-level count is 0",
           _make(_fields(nested=False)), reading=Reading()),
    Mutant("no-iterations", "usage.iterations ignored: the summed top level read as the context",
           _make(_fields(iterations=False)), reading=Reading()),
    Mutant("no-inclusive", "the provider's usage convention ignored: an inclusive gateway's cache counted twice",
           _make(_fields(inclusive=False)), reading=Reading()),
    Mutant("unreadable-as-zero", "a garbage count read as 0 instead of making the call unknown",
           _make(_UnreadableAsZero)),
    Mutant("unreadable-keeps-last", "a new call whose usage is unreadable leaves the previous call's size",
           _make(_UnreadableKeepsLast)),
    Mutant("missing-usage-unknown", "a message without usage makes the context unknown", _make(_MissingUsageUnknown)),
    # output
    # a placeholder never exceeds the final count, so prompt + placeholder lies in the truth band: the bug shows where
    # the per-block count is garbage (a gateway's), which a tracker trusting that field takes as output
    Mutant("placeholder-output", "the per-block output_tokens placeholder taken as the call's output",
           _make(_PlaceholderOutput), reading=Reading("row", keys=("in", "cc", "cr", "out"))),
    Mutant("sums-row-outputs", "the per-block rows of a call whose output_tokens differ (stale, then final) each "
                               "add their output", _make(_SumsRowOutputs)),
    Mutant("sums-message-delta", "cumulative message_delta output counts added instead of assigned",
           _make(_SumsMessageDelta)),
    Mutant("keeps-output-on-new-call", "the previous call's output kept when a new call starts",
           _make(_KeepsOutputOnNewCall)),
    Mutant("no-output-cap", "a garbage (huge) message_delta output count accepted", _make(_NoOutputCap)),
    # events
    Mutant("ignores-compaction", "compact_boundary ignored: the pre-compaction size kept",
           _make(_KeepsContextOverCompaction), cause=("ccusage-fallback", "pegged-reported-window"),
           reading=Reading()),
    Mutant("compaction-summary-only", "after a compaction, post_tokens alone (the system prefix left out)",
           _make(_CompactionSummaryOnly), cause=("ccstatusline",)),
    Mutant("compaction-unknown", "after a compaction, unknown although the boundary states a size",
           _make(_CompactionUnknown), cause=("claude-code-statusline",)),
    Mutant("ignores-reset", "ConversationResetMessage (/clear) ignored: the old context kept", _make(_IgnoresReset),
           reading=Reading(at_reset="keep")),
    Mutant("ignores-new-session", "a new session id in system/init ignored: the old context kept",
           _make(_IgnoresNewSession)),
    Mutant("ignores-stream-events", "stream events ignored: the final output (message_delta) never known",
           _make(_IgnoresStreamEvents),
           equivalent="without the final output the estimate is the prompt, the low end of the truth band "
                      "(prompt .. prompt + output), which a tracker may report; every call's prompt also arrives in "
                      "its AssistantMessages, and the deltas' cumulative prompt counts repeat it"),
    Mutant("ignores-message-start", "message_start stream events ignored", _make(_IgnoresMessageStart),
           equivalent="every message_start is followed, within the same call and before the call's observation "
                      "point, by the call's AssistantMessages carrying the same usage: the call is read from them"),
    Mutant("ignores-results", "ResultMessages ignored (their model_usage contextWindow)", _make(_IgnoresResults),
           equivalent="the reference reads only the window from results, and context_tokens() (what the oracle "
                      "judges) never depends on the window"),
    Mutant("prefix-from-whole-first-prompt", "the system prefix read as the whole first prompt, not its cache read",
           _make(_PrefixFromWholeFirstPrompt)),
)}
"""Every mutant, by name."""
