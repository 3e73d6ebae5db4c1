"""Corpus adequacy, held out: trackers and restart loops written here from scratch (not from the reference, not
from ``ctxsim.trackers.catalogue.mutants`` or ``ctxsim.loops.mutants``), each with one bug of a class the mutation
benchmark covers, are caught by the corpus alone, as ``pytest --ctx-scenarios scenarios --ctx-tracker=...`` (or
``--ctx-loop=...``) would run them; the same tracker or loop without a bug passes every scenario.
``benchmarks/bench_adequacy.py`` measures the mutants of the reference; this checks the claim does not hold only
for one-line edits of the reference. Every non-equivalent loop mutant is also run here, until a scenario kills it
(the tracker mutants' run is the benchmark's: it takes longer).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeSDKClient,
    ConversationResetMessage,
    ResultMessage,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
)

from ctxsim.agent import LoopPrompts
from ctxsim.loops import LoopRig
from ctxsim.loops._resolve import LoopSpec, resolve_loop
from ctxsim.loops.mutants import MUTANTS as LOOP_MUTANTS
from ctxsim.reference._prompts import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUATION_TEMPLATE,
    CONTINUE_PROMPT,
    DONE_MARKER,
    MINIMAL_CONTINUATION_PROMPT,
    WIND_DOWN_PROMPT,
)
from ctxsim.runner._scenario import corpus_verdicts
from ctxsim.runner._task import corpus_loop_verdicts
from ctxsim.scenario import SessionScenario, TaskScenario, load_scenario
from ctxsim.trackers.catalogue.mutants import MUTANTS

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


@cache
def corpus() -> tuple[SessionScenario, ...]:
    loaded = [load_scenario(p) for p in sorted(SCENARIOS.glob("*.yaml"))]
    return tuple(s for s in loaded if isinstance(s, SessionScenario))


def number(value: Any) -> int | None:
    """A token count, or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0 or value != int(value):
            return None
        value = int(value)
    return value if isinstance(value, int) and 0 <= value < 10**8 else None


class HeldOut:
    """A context tracker written for this test from the documented rules (the truth band, the wire, compaction)."""

    def __init__(self, inclusive: bool = False) -> None:
        self.inclusive = inclusive
        self.size: int | None = None
        self.out: int | None = None
        self.call: str | None = None
        self.calls: dict[str, set[int]] = {}
        self.first: tuple[int, int] | None = None
        self.session: str | None = None

    # reading usage ----------------------------------------------------------------------------------------------

    def iteration(self, usage: dict[str, Any]) -> dict[str, Any]:
        its = usage.get("iterations")
        if isinstance(its, list):
            kept = [i for i in its if isinstance(i, dict) and i.get("type", "message") == "message"]
            return kept[-1] if kept else usage
        return usage

    def created(self, usage: dict[str, Any]) -> int | None:
        top = usage.get("cache_creation_input_tokens")
        if top:
            return number(top)
        nested = usage.get("cache_creation")
        if isinstance(nested, dict) and any(number(v) for v in nested.values()):
            return sum(number(v) or 0 for v in nested.values())
        return 0 if top is None or number(top) == 0 else None

    def size_of(self, usage: Any) -> tuple[str, int]:
        """``("ok", size)``, ``("bad", 0)`` (a prompt count that is not a count), ``("none", 0)``."""
        if not isinstance(usage, dict):
            return "none", 0
        usage = self.iteration(usage)
        if self.inclusive:
            if "input_tokens" not in usage:
                return "none", 0
            n = number(usage["input_tokens"])
            return ("bad", 0) if n is None else ("ok", n) if n else ("none", 0)
        keys = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        if not any(k in usage for k in keys):
            return "none", 0
        parts = []
        for key in keys:
            raw = usage.get(key)
            value = self.created(usage) if key == "cache_creation_input_tokens" else (
                0 if raw is None and key != "input_tokens" else number(raw))
            if value is None:
                return "bad", 0
            parts.append(value)
        return ("ok", sum(parts)) if sum(parts) else ("none", 0)

    def cached(self, usage: Any) -> int:
        return number(self.iteration(usage).get("cache_read_input_tokens")) or 0 if isinstance(usage, dict) else 0

    # events ------------------------------------------------------------------------------------------------------

    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        kind, size = self.size_of(usage)
        key = ident if isinstance(ident, str) and ident else None
        if kind == "none":
            return
        if kind == "bad":
            if key is not None and key not in self.calls:
                self.calls[key] = set()
                self.call, self.size, self.out = key, None, None
            return
        if key is not None and key != self.call and size in self.calls.get(key, set()):
            return  # a copy of an earlier call
        if key != self.call or size != self.size:
            self.out = None
        if key is not None:
            self.calls.setdefault(key, set()).add(size)
        self.call, self.size = key, size
        if self.first is None:
            self.first = (self.cached(usage), size)

    def prefix(self) -> int | None:
        if self.first is None:
            return None
        cached, whole = self.first
        return min(cached or whole, 30_000)

    def compacted(self, data: dict[str, Any]) -> None:
        meta = data.get("compact_metadata") or data.get("compactMetadata") or {}
        post = number(meta.get("post_tokens", meta.get("postTokens"))) if isinstance(meta, dict) else None
        prefix = self.prefix()
        self.call, self.out = None, None
        self.size = None if post is None or prefix is None else post + prefix

    def forget(self) -> None:
        self.call, self.size, self.out = None, None, None

    def delta(self, usage: Any) -> None:
        if isinstance(usage, dict) and self.size is not None:
            out = number(usage.get("output_tokens"))
            if out is not None and out <= 1_000_000:
                self.out = out

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage):
            if message.parent_tool_use_id is None and message.model != "<synthetic>":
                self.main_call(message.message_id, message.usage, message.model)
        elif isinstance(message, StreamEvent) and message.parent_tool_use_id is None:
            event = message.event if isinstance(message.event, dict) else {}
            if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
                start = event["message"]
                self.main_call(start.get("id"), start.get("usage"), start.get("model"))
            elif event.get("type") == "message_delta":
                self.delta(event.get("usage"))
        elif isinstance(message, SystemMessage):
            data = message.data if isinstance(message.data, dict) else {}
            if message.subtype == "compact_boundary":
                self.compacted(data)
            elif message.subtype == "init" and isinstance(data.get("session_id"), str):
                if self.session is not None and data["session_id"] != self.session:
                    self.forget()
                self.session = data["session_id"]
        elif isinstance(message, ConversationResetMessage):
            self.forget()

    def context_tokens(self) -> int | None:
        if self.size is None:
            return None
        return self.size + (self.out or 0)


# --- one bug each -----------------------------------------------------------------------------------------------


class CountsSubagents(HeldOut):
    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is not None:
            self.main_call(message.message_id, message.usage, message.model)
        else:
            super().observe(message)


class TakesSyntheticMessages(HeldOut):
    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.model == "<synthetic>":
            self.call, self.size, self.out = message.message_id, self.size_of(message.usage)[1] or None, None
        else:
            super().observe(message)


class RunningTotal(HeldOut):
    total = 0

    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        before = self.call
        super().main_call(ident, usage, model)
        if self.call != before and self.size is not None:
            self.total += self.size
            self.size = self.total


class NoCopyCheck(HeldOut):
    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        self.calls = {}
        super().main_call(ident, usage, model)


class OneSizePerId(HeldOut):
    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        if isinstance(ident, str) and ident in self.calls and self.size_of(usage)[1] not in self.calls[ident]:
            return
        super().main_call(ident, usage, model)


class TopLevelCacheWritesOnly(HeldOut):
    def created(self, usage: dict[str, Any]) -> int | None:
        return number(usage.get("cache_creation_input_tokens") or 0)


class NoCacheWrites(HeldOut):
    def created(self, usage: dict[str, Any]) -> int | None:
        return 0


class TopLevelOfIterations(HeldOut):
    def iteration(self, usage: dict[str, Any]) -> dict[str, Any]:
        return usage


class AlwaysAdditive(HeldOut):
    def __init__(self, inclusive: bool = False) -> None:
        super().__init__(False)


class GarbageIsZero(HeldOut):
    def size_of(self, usage: Any) -> tuple[str, int]:
        if isinstance(usage, dict):
            usage = {k: (number(v) or 0) if k.endswith("_tokens") else v for k, v in usage.items()}
        return super().size_of(usage)


class GarbageKeepsLast(HeldOut):
    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        if self.size_of(usage)[0] == "ok":
            super().main_call(ident, usage, model)


class NoUsageIsUnknown(HeldOut):
    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        if usage is None:
            self.forget()
        else:
            super().main_call(ident, usage, model)


class BlockOutput(HeldOut):
    """Trusts every per-block output_tokens as the call's output (a placeholder never exceeds the final count, so
    the corpus catches this where a gateway spoils that field)."""

    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        super().main_call(ident, usage, model)
        out = usage.get("output_tokens") if isinstance(usage, dict) else None
        if isinstance(out, int) and self.size is not None:
            self.out = out


class RowOutputs(HeldOut):
    """Adds up the output of every distinct row of a call (stale placeholders and the final count)."""

    rows: tuple[Any, list[int]] = (None, [])

    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        super().main_call(ident, usage, model)
        out = number(usage.get("output_tokens")) if isinstance(usage, dict) else None
        if out is None or self.size is None:
            return
        if self.rows[0] != self.call:
            self.rows = (self.call, [])
        if out not in self.rows[1]:
            self.rows[1].append(out)
        self.out = sum(self.rows[1])


class AddsDeltas(HeldOut):
    def delta(self, usage: Any) -> None:
        before = self.out or 0
        super().delta(usage)
        if self.out is not None:
            self.out += before


class OutputOutlivesCall(HeldOut):
    def main_call(self, ident: Any, usage: Any, model: Any) -> None:
        out = self.out
        super().main_call(ident, usage, model)
        self.out = self.out if self.out is not None else out


class NoOutputBound(HeldOut):
    def delta(self, usage: Any) -> None:
        if isinstance(usage, dict) and self.size is not None and usage.get("output_tokens") is not None:
            self.out = int(float(usage["output_tokens"])) if str(usage["output_tokens"]).isdigit() else self.out


class IgnoresCompaction(HeldOut):
    def compacted(self, data: dict[str, Any]) -> None:
        pass


class SummaryOnly(HeldOut):
    def prefix(self) -> int | None:
        return 0


class UnknownAfterCompaction(HeldOut):
    def compacted(self, data: dict[str, Any]) -> None:
        self.forget()


class KeepsAcrossClear(HeldOut):
    def forget(self) -> None:
        pass


class PrefixIsFirstPrompt(HeldOut):
    def prefix(self) -> int | None:
        return None if self.first is None else self.first[1]


BUGGY = {
    "subagents-as-main": CountsSubagents, "keeps-synthetic": TakesSyntheticMessages, "sums-calls": RunningTotal,
    "no-replay-filter": NoCopyCheck, "id-only-dedupe": OneSizePerId,
    "no-nested-cache-creation": TopLevelCacheWritesOnly, "no-cache-creation": NoCacheWrites,
    "no-iterations": TopLevelOfIterations, "no-inclusive": AlwaysAdditive,
    "unreadable-as-zero": GarbageIsZero, "unreadable-keeps-last": GarbageKeepsLast,
    "missing-usage-unknown": NoUsageIsUnknown, "placeholder-output": BlockOutput, "sums-row-outputs": RowOutputs,
    "sums-message-delta": AddsDeltas,
    "keeps-output-on-new-call": OutputOutlivesCall, "no-output-cap": NoOutputBound,
    "ignores-compaction": IgnoresCompaction, "compaction-summary-only": SummaryOnly,
    "compaction-unknown": UnknownAfterCompaction, "ignores-reset": KeepsAcrossClear,
    "ignores-new-session": KeepsAcrossClear, "prefix-from-whole-first-prompt": PrefixIsFirstPrompt,
}
"""A held-out tracker per non-equivalent mutant of the benchmark (by the mutant's name: the same bug class)."""


def verdicts(cls: type[HeldOut]) -> dict[str, tuple[bool, str]]:
    return corpus_verdicts(corpus(), lambda s: cls(inclusive=s.session.usage == "inclusive"), name=cls.__name__)


def test_every_non_equivalent_mutant_has_a_held_out_twin() -> None:
    assert set(BUGGY) == {name for name, m in MUTANTS.items() if not m.equivalent}


def test_the_held_out_tracker_without_a_bug_passes_the_corpus() -> None:
    assert [f"{name}: {does}" for name, (met, does) in verdicts(HeldOut).items() if not met] == []


@pytest.mark.parametrize("name", sorted(BUGGY))
def test_each_held_out_bug_is_caught_by_the_corpus_alone(name: str) -> None:
    caught = [scenario for scenario, (met, _) in verdicts(BUGGY[name]).items() if not met]
    assert caught, f"{BUGGY[name].__name__} ({MUTANTS[name].bug}) passes every scenario of the corpus"


# --- restart loops ------------------------------------------------------------------------------------------------
# A restart loop written here from the seed designs (003: restart at the threshold, checkpoint on the old session,
# continue from it; 002: the tool-call fallback; 004: graduated zones), sharing no code with ctxsim.reference but
# its words (the declared prompts); each bug below is one class of ctxsim.loops.mutants, written independently.

CHECKPOINT_TAG = re.compile(r"<\s*(/?)\s*checkpoint\b[^>]*>", re.IGNORECASE)
SORRY = re.compile(r"^\W*(i'?m sorry|sorry|i can(no|')t|i cannot|i am unable)", re.IGNORECASE)


CUT_OFF = "(The reply above was cut off: look at the work itself before trusting this list.)"
"""The held-out loop's own note after a cut-off checkpoint, declared as a prompt that tells the agent to inspect."""
PROMPTS = LoopPrompts(inspect=(MINIMAL_CONTINUATION_PROMPT, re.compile(re.escape(CUT_OFF))))


def take_state(text: str, stop_reason: str | None, failed: bool, bugs: frozenset[str]) -> str:
    """The state to continue from in a reply to the checkpoint request ('' for none)."""
    if failed:
        return text.strip() if "error-as-state" in bugs else ""
    blocks: list[str] = []
    start: int | None = None
    for tag in CHECKPOINT_TAG.finditer(text):
        if not tag.group(1):
            start = tag.end()
        elif start is not None:
            blocks.append(text[start:tag.start()].strip("`\n ").removeprefix("xml").removeprefix("markdown").strip())
            start = None
    blocks = [b for b in blocks if b]
    if "template-echo-taken" not in bugs:  # a block of nothing but headings and [placeholders] echoes the request
        blocks = [b for b in blocks if not all(line.startswith(("#", "[")) for line in b.splitlines() if line)]
    if blocks:
        return blocks[0] if "first-block" in bugs else blocks[-1]
    if start is not None:
        if "unclosed-dropped" in bugs and stop_reason != "max_tokens":
            return ""
        return text[start:].strip("`\n ")
    if CHECKPOINT_TAG.search(text):  # empty blocks only
        return text.strip() if "empty-block-as-state" in bugs else ""
    if stop_reason == "refusal" or (len(text) < 600 and SORRY.match(text.strip())):
        return text.strip() if "refusal-as-state" in bugs else ""
    return "" if "no-whole-reply" in bugs else text.strip()


@dataclass
class Turned:
    text: str = ""
    tools: int = 0
    failed: bool = False
    stop_reason: str | None = None
    result: str = ""
    compacted: bool = False


async def one_turn(client: ClaudeSDKClient, prompt: str, tracker: Any) -> Turned:
    turned, texts = Turned(), []
    await client.query(prompt)
    async for message in client.receive_response():
        if tracker is not None:
            tracker.observe(message)
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            texts += [b.text for b in message.content if isinstance(b, TextBlock)]
            turned.tools += sum(isinstance(b, ToolUseBlock) for b in message.content)
        elif isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            turned.compacted = True
        elif isinstance(message, ResultMessage):
            turned.failed, turned.stop_reason = bool(message.is_error), message.stop_reason
            turned.result = message.result if isinstance(message.result, str) else ""
    turned.text = "\n".join(texts)
    return turned


def held_out_loop(name: str, *bugs: str) -> LoopSpec:
    """The held-out loop with ``bugs`` (none: the loop as the seeds design it), as --ctx-loop would resolve it."""
    broken = frozenset(bugs)

    async def loop(rig: LoopRig) -> int:
        settings = rig.policy
        window = settings.window or rig.task.window
        effective = window if "reserve-ignored" in broken else window - settings.reserve
        limit = math.ceil(Fraction(str(settings.restart_at)) * effective)
        prompt, restarts, first_state, spent, calls_so_far = rig.prompt, 0, None, False, 0
        while True:
            lifecycle, tracker = rig.make_lifecycle(), rig.make_tracker()
            lifecycle.start()
            if "policy-across-sessions" not in broken:
                spent = False
            if "tool-calls-across-sessions" not in broken:
                calls_so_far = 0
            async with ClaudeSDKClient(rig.options) as client:
                ask, winding = prompt, False
                seen: int | None = None
                while True:
                    turned = await one_turn(client, ask, tracker)
                    if not turned.failed and DONE_MARKER in (turned.result or turned.text):
                        lifecycle.finish()
                        return restarts
                    if winding and "stops-at-wind-down" in broken:
                        lifecycle.finish()
                        return restarts
                    calls_so_far += turned.tools
                    if turned.compacted and "no-reset-on-compaction" not in broken:
                        spent = False  # the context fell: the next crossing winds down again
                    tokens = tracker.context_tokens()
                    if tokens is None and "unknown-as-over" in broken:
                        tokens = limit
                    if tokens is None and "unknown-keeps-last" in broken:
                        tokens = seen  # the count this session last read
                    seen = tokens if tokens is not None else seen
                    over = tokens is not None and (tokens > limit if "threshold-strict" in broken else tokens >= limit)
                    cap = settings.max_tool_calls
                    tooled = cap is not None and (calls_so_far > cap if "tool-calls-strict" in broken
                                                  else calls_so_far >= cap)
                    too_long = turned.failed and "prompt is too long" in f"{turned.text} {turned.result}".lower()
                    if too_long or tooled:
                        break
                    if over:
                        if settings.wind_down and not spent and "no-wind-down" not in broken:
                            spent = "winds-down-every-time" not in broken
                            ask, winding = WIND_DOWN_PROMPT, True
                            continue
                        if not settings.wind_down or spent or "no-wind-down" in broken:
                            break
                    ask, winding = CONTINUE_PROMPT, False
                lifecycle.checkpoint()
                reply = await one_turn(client, CHECKPOINT_REQUEST_PROMPT, None)
            lifecycle.finish()
            state = take_state(reply.text if not reply.failed else reply.result, reply.stop_reason, reply.failed,
                               broken)
            first_state = state if first_state is None else first_state
            if "first-checkpoint-always" in broken:
                state = first_state
            restarts += 1
            if restarts > rig.max_restarts:
                raise RuntimeError("held-out loop: too many restarts")
            if "checkpoint-not-carried" in broken:
                continue
            if state and reply.stop_reason == "max_tokens" and "cut-off-as-complete" not in broken:
                state = f"{state}\n\n{CUT_OFF}"
            prompt = CONTINUATION_TEMPLATE.format(checkpoint=state) if state else MINIMAL_CONTINUATION_PROMPT

    loop.__name__ = loop.__qualname__ = name
    return LoopSpec(f"test_adequacy:{name}", name, loop, prompts=PROMPTS)


LOOP_BUGS = {name: name for name in (
    "threshold-strict", "reserve-ignored", "winds-down-every-time", "no-wind-down", "tool-calls-strict",
    "policy-across-sessions", "tool-calls-across-sessions", "first-checkpoint-always", "checkpoint-not-carried",
    "stops-at-wind-down", "first-block", "unclosed-dropped", "no-whole-reply", "no-reset-on-compaction",
    "unknown-as-over", "template-echo-taken", "unknown-keeps-last", "refusal-as-state", "error-as-state",
    "empty-block-as-state", "cut-off-as-complete",
)}
"""A held-out bug per non-equivalent loop mutant (by the mutant's name: the same bug class)."""


@cache
def task_corpus() -> tuple[TaskScenario, ...]:
    loaded = [load_scenario(p) for p in sorted(SCENARIOS.glob("*.yaml"))]
    return tuple(s for s in loaded if isinstance(s, TaskScenario))


def first_kill(loop: LoopSpec) -> str | None:
    """The first task scenario (in file order) on which the loop breaks an invariant, as --ctx-loop judges it."""
    for scenario in task_corpus():
        kept, _ = corpus_loop_verdicts([scenario], loop)[scenario.name]
        if not kept:
            return scenario.name
    return None


def test_every_non_equivalent_loop_mutant_has_a_held_out_twin() -> None:
    assert set(LOOP_BUGS) == {name for name, m in LOOP_MUTANTS.items() if not m.equivalent}


def test_the_held_out_loop_without_a_bug_keeps_every_invariant_on_the_corpus() -> None:
    verdicts = corpus_loop_verdicts(task_corpus(), held_out_loop("held_out"))
    assert len(verdicts) == len(task_corpus())
    assert [f"{name}: {does}" for name, (kept, does) in verdicts.items() if not kept] == []


@pytest.mark.parametrize("name", sorted(LOOP_BUGS))
def test_each_held_out_loop_bug_is_caught_by_the_corpus_alone(name: str) -> None:
    assert first_kill(held_out_loop(name.replace("-", "_"), LOOP_BUGS[name])) is not None, (
        f"the held-out loop with {name} ({LOOP_MUTANTS[name].bug}) keeps every invariant on every task scenario")


@pytest.mark.parametrize("name", [n for n, m in sorted(LOOP_MUTANTS.items()) if not m.equivalent])
def test_each_non_equivalent_loop_mutant_is_killed_by_the_corpus_alone(name: str) -> None:
    mutant = LOOP_MUTANTS[name]
    assert first_kill(resolve_loop(mutant.spec)) is not None, (
        f"{mutant.spec} ({mutant.bug}) keeps every invariant on every task scenario")


def test_the_reference_loop_as_a_mutant_module_function_keeps_every_invariant() -> None:
    """The mutants' base (the reference loop built from the rig, resolved as --ctx-loop resolves a loop) passes, so
    a kill is the mutation's."""
    verdicts = corpus_loop_verdicts(task_corpus(), resolve_loop("ctxsim.loops.mutants:reference"))
    assert [f"{name}: {does}" for name, (kept, does) in verdicts.items() if not kept] == []
