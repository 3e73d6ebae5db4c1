"""The oracle: truth bands, readable failure tables, crashes, adapters, and the catalogue's design trackers."""

from __future__ import annotations

import asyncio
import os

import pytest
from claude_agent_sdk import AssistantMessage

import ctxsim
from ctxsim.check import (
    FromRatio,
    RawDicts,
    ResultsOnly,
    TrackingError,
    assert_tracks,
    run_tracker,
    run_tracker_parsed,
)
from ctxsim.reference import ContextTracker
from ctxsim.trackers.catalogue import CATALOGUE, make
from ctxsim.world import MAX_SYSTEM_PREFIX, SessionBuilder


def compaction_session():
    # Bugs in the wild, B16: (3, 2000, 148000), compacted 150,000 -> 20,000
    b = SessionBuilder(seed=1, name="b16")
    b.query("work").call(input=3, cache_creation=2000, cache_read=148_000, output=200)
    b.compact(20_000, pre_tokens=150_000).query("more").call()
    return b.build()


class KeepsMaximum:
    """A deliberately broken tracker: the largest prompt ever seen (stale after compaction)."""

    def __init__(self) -> None:
        self.top = 0

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.usage:
            u = message.usage
            self.top = max(self.top, u["input_tokens"] + u["cache_creation_input_tokens"]
                           + u["cache_read_input_tokens"])

    def context_tokens(self) -> int:
        return self.top


def test_broken_tracker_fails_with_a_table_a_person_can_read() -> None:
    session = compaction_session()
    with pytest.raises(TrackingError) as caught:
        assert_tracks(KeepsMaximum(), session)
    text = str(caught.value)
    lines = text.splitlines()
    assert lines[0] == ("ctxsim: KeepsMaximum is off on 4 of 5 points of session 'b16' "
                        "(tolerance ±0 tokens, window 200,000)")
    assert lines[1].split() == ["#", "point", "truth", "estimate", "error"]
    compaction_row = next(line for line in lines if "compaction" in line)
    assert compaction_row.startswith(">")
    # after it the context holds the 20,000-token summary and the 12,000-token system prefix
    assert "32,000" in compaction_row and "150,003" in compaction_row and "+118,003 (+59.0%)" in compaction_row
    assert caught.value.report.failures[0].observation.label == "q1 compaction"


def test_truth_band_and_tolerance() -> None:
    session = compaction_session()
    call = session.main_calls[0]
    report = assert_tracks(ContextTracker(), session, include_partial_messages=True)
    first = report.points[0]
    assert (first.low, first.high) == (call.prompt, call.prompt + call.output_tokens)
    assert first.estimate == call.prompt + call.output_tokens  # the reference adds the known output
    # 3 tokens short of the band passes with a tolerance of 3, not 2
    class Short(ContextTracker):
        def context_tokens(self):
            value = super().context_tokens()
            return None if value is None else value - 3
    assert run_tracker(Short(), session, tolerance=3).ok
    assert not run_tracker(Short(), session, tolerance=2).ok


def test_a_tracker_that_raises_is_named_with_the_message_index() -> None:
    class Explodes(ContextTracker):
        def observe(self, message):
            if isinstance(message, AssistantMessage) and message.message_id:
                raise ValueError("bad usage")
            super().observe(message)

    report = run_tracker(Explodes(), compaction_session())
    assert not report.ok
    assert report.crash is not None
    assert report.crash.startswith("ctxsim: tracker Explodes raised ValueError: bad usage on message #2 "
                                   "(AssistantMessage msg_")
    assert report.crash.endswith(", q1 call 1)")


def test_unknown_estimate_fails_where_the_truth_is_knowable_and_passes_after_a_reset() -> None:
    class Silent:
        def observe(self, message): pass
        def context_tokens(self): return None

    b = SessionBuilder(seed=4, name="reset")
    b.query("a").call().reset()
    report = run_tracker(Silent(), b.build())
    # the call (knowable), the reset and the result after it (the new conversation has no call yet)
    assert [p.ok for p in report.points] == [False, True, True]
    assert "unknown" in report.table()


def test_adapters_feed_raw_dicts_results_and_ratios() -> None:
    session = compaction_session()

    class RawReference:
        def __init__(self): self.last, self.prefix = None, None
        def observe(self, data: dict):
            assert isinstance(data, dict)
            if data["type"] == "assistant" and data["parent_tool_use_id"] is None:
                u = data["message"]["usage"]
                self.last = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
                if self.prefix is None:  # the system prefix, as far as the first call's cache read shows it
                    self.prefix = min(u["cache_read_input_tokens"], MAX_SYSTEM_PREFIX)
            if data.get("subtype") == "compact_boundary":
                self.last = data["compact_metadata"]["post_tokens"] + self.prefix
        def context_tokens(self): return self.last

    assert run_tracker(RawDicts(RawReference()), session).ok

    class ResultCounter:
        def __init__(self): self.results = 0
        def take(self, message): self.results += 1
        def context_tokens(self): return self.results

    counter = ResultCounter()
    run_tracker(ResultsOnly(counter, feed=ResultCounter.take), session)
    assert counter.results == len(session.queries)

    class Ratio(ContextTracker):
        def pressure_ratio(self):
            value = self.context_tokens()
            return None if value is None else value / 200_000

    assert run_tracker(FromRatio(Ratio(), 200_000), session).ok


def test_every_catalogued_design_tracker_is_caught_and_the_reference_is_not() -> None:
    b = SessionBuilder(seed=8, name="everything")
    b.query("a").call(blocks=("thinking", "text", "tool_use"), results=[4000]).call(results=[30_000])
    b.start_subagent().call(results=[60_000]).call(results=[20_000]).end_subagent()
    b.call().expire_cache().call().compact(25_000).query("b").call()
    session = b.build()
    names = [name for name, entry in CATALOGUE.items() if entry.family in ("reference", "design")]
    assert len(names) == 8
    outcomes = {name: run_tracker(make(name), session, tolerance=1000).ok for name in names}
    assert outcomes == {name: name == "reference" for name in names}
    with pytest.raises(KeyError, match="ctxsim: no tracker 'nope' in the catalogue"):
        make("nope")


# --- diagnosis: ratios, FromRatio's method, a tracker's own traceback, async trackers ------------------------------

class RatioTracker(ContextTracker):
    """The reference's numbers as a share of the 200,000-token window, from both methods."""

    def context_tokens(self):
        value = super().context_tokens()
        return None if value is None else value / 200_000

    def usage_fraction(self):
        return self.context_tokens()


def test_a_ratio_from_context_tokens_gets_a_hint_to_from_ratio() -> None:
    session = compaction_session()
    with pytest.raises(TrackingError) as caught:
        assert_tracks(RatioTracker(), session, tolerance=1000)
    hint = str(caught.value).splitlines()[-1]
    # the first call's prompt: 3 + 2,000 + 148,000
    assert hint.startswith("hint: RatioTracker returned 0.75")
    assert "at q1 call 1, where the truth is 150,003 tokens: a ratio?" in hint
    assert "FromRatio(tracker, window=200000, method='context_tokens')" in hint
    # followed, it tracks; a tracker off in tokens gets no such hint
    assert_tracks(FromRatio(RatioTracker(), 200_000, method="context_tokens"), session, tolerance=1000)
    assert_tracks(FromRatio(RatioTracker(), 200_000, method="usage_fraction"), session, tolerance=1000)
    with pytest.raises(TrackingError) as caught:
        assert_tracks(KeepsMaximum(), session)
    assert "hint" not in str(caught.value)


def test_from_ratio_names_the_method_it_cannot_find() -> None:
    with pytest.raises(TypeError, match=r"^ctxsim: FromRatio: ContextTracker has no pressure_ratio\(\) method; name "
                                        r"the method that returns its ratio: FromRatio\(tracker, 200000, "
                                        r"method='...'\)"):
        FromRatio(ContextTracker(), 200_000)


def failing_helper(usage: dict) -> int:
    return usage["no_such_key"]


class RaisesInAHelper(ContextTracker):
    def observe(self, message):
        if isinstance(message, AssistantMessage):
            failing_helper(message.usage)
        super().observe(message)


def test_a_tracker_that_raises_shows_its_own_frames_only() -> None:
    report = run_tracker(RaisesInAHelper(), compaction_session())
    assert report.crash is not None and report.crash.startswith(
        "ctxsim: tracker RaisesInAHelper raised KeyError: 'no_such_key' on message #2")
    assert report.traceback is not None
    lines = report.traceback.splitlines()
    assert lines[0] == "Traceback (most recent call last; ctxsim's and the SDK's frames left out):"
    files = [line.strip() for line in lines if line.strip().startswith("File ")]
    assert [f.rpartition(", in ")[2] for f in files] == ["observe", "failing_helper"]
    assert all(__file__ in f for f in files)
    assert lines[-1] == "KeyError: 'no_such_key'"
    text = str(report)
    assert report.traceback in text and os.path.dirname(ctxsim.__file__) not in text and "claude_agent_sdk" not in text


class AsyncReference:
    """The reference behind async methods."""

    def __init__(self) -> None:
        self.inner = ContextTracker()

    async def observe(self, message: object) -> None:
        self.inner.observe(message)

    async def context_tokens(self) -> int | None:
        return self.inner.context_tokens()


def test_async_trackers_are_awaited_on_every_path() -> None:
    from ctxsim.wire import render

    session = compaction_session()
    assert run_tracker(AsyncReference(), session).ok
    assert run_tracker(AsyncReference(), session, async_backend="trio").ok

    class AsyncObserveRatio(AsyncReference):
        def pressure_ratio(self) -> float | None:
            value = self.inner.context_tokens()
            return None if value is None else value / 200_000

    assert run_tracker(FromRatio(AsyncObserveRatio(), 200_000), session).ok  # the adapter hands the await over
    assert run_tracker_parsed(AsyncReference(), session, render(session)).ok

    class Sleeps(AsyncReference):
        async def observe(self, message: object) -> None:
            await asyncio.sleep(0)  # gives the loop a turn
            self.inner.observe(message)

    assert run_tracker(Sleeps(), session).ok
    report = run_tracker_parsed(Sleeps(), session, render(session))
    assert report.crash is not None and report.crash.startswith("ctxsim: tracker Sleeps waits on an event loop on "
                                                                "message #1")
    assert report.crash.endswith("run_tracker_parsed has none: run it with run_tracker or arun_tracker")
