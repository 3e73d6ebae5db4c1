"""What a tracker's number is made of: a :class:`Reading` names the fields a formula reads off the stream (which
message, which usage keys, summed or last, main chain or every message, what it does at a compaction, which window
it clamps to), and says it in the user's words.

Readings are how a failure's likely cause is named (:func:`ctxsim.check.diagnose` fits the tracker's numbers
against every reading of :func:`every_reading`), and what a catalogue entry, a port of a real tracker or a mutant
declares its formula to be (:attr:`ctxsim.trackers.catalogue.Entry.reading`): a declaration checked against a run of the
entry itself, never taken on trust.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Literal

__all__ = ["AUTOCOMPACT_SHARE", "KEYS", "Reading", "every_reading"]

KEYS = ("in", "cc", "cr", "out")
"""The usage keys a reading adds up, in the order they are named: input, cache writes, cache reads, output."""

_KEY_WORDS = {"in": "input", "cc": "cache writes", "cr": "cache reads", "out": "output"}

Source = Literal["call", "row", "finished", "both-ids", "result", "text"]
"""Which messages a reading reads: ``call``, assistant messages once per message id (a replay of an earlier call
skipped); ``row``, every assistant row (a call written as several rows, a streamed partial, a replay);
``finished``, the rows with a ``stop_reason`` (and the last partial of a call without one); ``both-ids``, rows
deduplicated by message id and request id only where both are present; ``result``, the result message of each
query (Claude Code's sum over the query's calls); ``text``, no usage at all: characters / 4 of every tool result's
text (times :attr:`Reading.overhead`), an estimate blind to the system prompt, the tools, output and cache."""

AfterCompaction = Literal["keep", "unknown", "post-or-zero"]
"""What a ``last`` reading shows from a compaction to the next call: the value before it, nothing (None), or the
boundary's ``post_tokens`` alone (0 where the boundary has none)."""

Cap = Literal["none", "200k", "reported"]
"""Where a reading is clamped: nowhere, at 200,000, or at the window the latest result reports."""

AUTOCOMPACT_SHARE = (200_000, 167_000)
"""A gauge dividing by the autocompact threshold instead of the window reads its tokens times
``window / threshold``: 200,000 / 167,000 on the window such gauges assume (``per="autocompact"``)."""


@dataclass(frozen=True)
class Reading:
    """One formula over the stream's usage fields: the keys ``keys`` of the messages ``source`` (main-chain only,
    or every message: ``chain``), the latest one's (``aggregate="last"``) or summed over them (``"sum"``), plus the
    largest value so far of the keys ``peak``; at a compaction, ``after_compaction``; clamped at ``cap``. A ``last``
    reading forgets its value at a ``/clear`` (ConversationResetMessage); a sum keeps counting."""

    source: Source = "call"
    aggregate: Literal["last", "sum"] = "last"
    keys: tuple[str, ...] = ("in", "cc", "cr")
    peak: tuple[str, ...] = ()
    chain: Literal["main", "all"] = "main"
    """``main``: the main chain only (a subagent's message, a ``<synthetic>`` one and a ``last`` reading's
    all-zero one skipped); ``all``: every assistant message."""
    after_compaction: AfterCompaction = "keep"
    at_reset: Literal["forget", "keep"] = "forget"
    """What a ``last`` reading does at a ``/clear``: forget its value (None until the next call), or keep it."""
    cap: Cap = "none"
    overhead: float = 1.0
    """A ``text`` reading's factor on its characters / 4 (1.3: an allowance for reasoning)."""
    per: Literal["window", "autocompact"] = "window"
    """``autocompact``: the value divided by the autocompact threshold rather than the window (times
    :data:`AUTOCOMPACT_SHARE`), as a gauge whose ratio is taken against the threshold reads."""

    @property
    def complexity(self) -> int:
        """How far this reading is from the plain latest main-chain call's input + cache writes + cache reads:
        among readings a stream cannot tell apart, the simplest is named."""
        return ((self.source != "call") + (self.aggregate != "last") + (self.chain != "main") + bool(self.peak)
                + (self.after_compaction != "keep") + (self.cap != "none") + (self.at_reset != "forget")
                + (self.per != "window")
                + len(set(self.keys) ^ {"in", "cc", "cr"}))

    def formula(self) -> str:
        """The keys in words: ``input + cache reads``, ``the largest cache read so far + input + output``."""
        parts = [_KEY_WORDS[k] for k in KEYS if k in self.keys]
        peak = [f"the largest {_KEY_WORDS[k].rstrip('s')} so far" for k in KEYS if k in self.peak]
        return " + ".join(peak + parts) or "nothing"

    def describe(self, *, compaction: bool = True, reset: bool = True) -> str:
        """The reading in the user's words: ``the result message's usage: input + cache reads summed over the
        query``. ``compaction``, ``reset``: the stream has a compaction, a ``/clear`` (what the reading does
        there is then said)."""
        formula = self.formula()
        chain = "main-chain " if self.chain == "main" else ""
        every = "" if self.chain == "main" else " (subagents' and error messages' included)"
        if self.source == "text":
            times = f", times {self.overhead:g}" if self.overhead != 1 else ""
            return (f"an estimate from the text of every tool result (characters / 4{times}), not from usage: "
                    f"blind to the system prompt, the tools, the output and the cache")
        if self.source == "result":
            what = ("the latest result message's usage" if self.aggregate == "last"
                    else "a running total of every result message's usage")
            text = f"{what}: {formula}, which Claude Code sums over the query's calls"
        elif self.aggregate == "last":
            what = (f"the latest {chain}call's usage" if self.source == "call"
                    else f"the latest {chain}assistant row's usage, a replayed row included")
            text = f"{what}{every}: {formula}"
        else:
            counted = {"call": "each call once, by message id",
                       "row": "every row, so a call written as several rows counts once per row",
                       "finished": "every row with a stop_reason, so per-block rows of one call each count",
                       "both-ids": "deduplicated by message id + request id only where both are present"}[self.source]
            text = f"a running total over every {chain}assistant message{every} ({counted}): {formula}"
            if self.peak and not self.keys:
                text = f"the largest {chain}assistant message's {formula.removeprefix('the largest ')}"
        if self.aggregate == "last" and compaction and self.source != "result":
            text += {"keep": "; kept across a compaction until the next call",
                     "unknown": "; unknown from a compaction until the next call",
                     "post-or-zero": "; from a compaction until the next call, the boundary's post_tokens alone "
                                     "(0 where it has none)"}[self.after_compaction]
        if self.aggregate == "last" and reset and self.source != "result":
            text += "; kept across a /clear" if self.at_reset == "keep" else "; forgotten at a /clear"
        if self.per == "autocompact":
            text += (f", divided by the autocompact threshold ({AUTOCOMPACT_SHARE[1]:,} of a "
                     f"{AUTOCOMPACT_SHARE[0]:,} window) instead of the window")
        if self.cap != "none":
            text += "; clamped at " + ("200,000" if self.cap == "200k" else "the window the latest result reports")
        return text


def _key_sets() -> list[tuple[str, ...]]:
    return [combo for n in range(1, 5) for combo in combinations(KEYS, n)]


_SOURCES: tuple[Source, ...] = ("call", "row")
_CHAINS: tuple[Literal["main", "all"], ...] = ("main", "all")
_AFTER: tuple[AfterCompaction, ...] = ("keep", "unknown", "post-or-zero")
_RESETS: tuple[Literal["forget", "keep"], ...] = ("forget", "keep")
_CAPS: tuple[Cap, ...] = ("none", "200k", "reported")


def every_reading() -> list[Reading]:
    """Every reading a likely cause is fitted against, simplest first (:attr:`Reading.complexity`): each key set
    of the latest call or row (main chain or every message; kept, unknown or post_tokens after a compaction), of
    the latest result, and of running totals over calls, rows, finished rows, rows by both ids and results;
    running totals with the largest cache read so far (the Arbiter formula); each unclamped, at 200,000 or at the
    reported window; the latest call's prompt over the autocompact threshold; characters / 4 of the tool results."""
    out: list[Reading] = []
    for keys in _key_sets():
        for cap in _CAPS:
            for source in _SOURCES:
                for chain in _CHAINS:
                    for after in _AFTER:
                        for reset in _RESETS:
                            out.append(Reading(source, "last", keys, chain=chain, after_compaction=after,
                                               at_reset=reset, cap=cap))
                    sums: tuple[Source, ...] = (source, "finished", "both-ids") if source == "row" else (source,)
                    for src in sums:
                        out.append(Reading(src, "sum", keys, chain=chain, cap=cap))
            out += [Reading("result", "last", keys, cap=cap), Reading("result", "sum", keys, cap=cap)]
    for source in _SOURCES:
        for after in _AFTER:
            out.append(Reading(source, after_compaction=after, per="autocompact"))
    out += [Reading("text", "sum", (), chain="all", overhead=factor) for factor in (1.0, 1.3)]
    for n in range(0, 4):
        for keys in combinations(("in", "cc", "out"), n):
            for source in _SOURCES:
                for chain in _CHAINS:
                    out.append(Reading(source, "sum", keys, peak=("cr",), chain=chain))
    return sorted(out, key=lambda r: r.complexity)
