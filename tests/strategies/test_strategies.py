"""ctxsim.strategies: knobs, realistic content, scenario printing that round-trips, shrinking, and the reference
tracker on generated faulted streams."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import subprocess
import sys
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage
from hypothesis import HealthCheck, Phase, find, given, settings, strategies as st
from hypothesis.errors import InvalidArgument

from ctxsim import faults as F, strategies
from ctxsim.check import run_tracker, run_tracker_parsed
from ctxsim.reference import ContextTracker
from ctxsim.scenario import parse_scenario
from ctxsim.strategies import MessageStream, _faults, fault_plans, message_streams, scenario_text, sessions
from ctxsim.wire import render
from ctxsim.world import CHARS_PER_TOKEN, Compaction, Session, SessionBuilder, SubagentStart, ToolResult, ToolUse
from ctxsim.world._content import _corpora

_NO_EXPLAIN = (Phase.generate, Phase.shrink)
"""``find`` without the explain phase, which costs more than the shrinking it explains."""
FAST = settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("module", ["_sessions", "_streams", "_profiles", "_faults"])
def test_all_lists_exactly_the_public_names(module: str) -> None:
    source = importlib.import_module(f"ctxsim.strategies.{module}")
    public = {name for name, value in vars(source).items()
              if not name.startswith("_") and (inspect.isfunction(value) or inspect.isclass(value))
              and value.__module__ == source.__name__}
    assert public and public <= set(dir(strategies))


def test_profiles_are_registered_on_request_only() -> None:
    code = ("from hypothesis import settings; import ctxsim.strategies as s\n"
            "names = ('ctx-fast', 'ctx-ci', 'ctx-fuzz')\n"
            "def known(n):\n"
            "    try:\n"
            "        settings.get_profile(n)\n"
            "        return True\n"
            "    except Exception:\n"
            "        return False\n"
            "print([known(n) for n in names]); s.register_profiles(); print([known(n) for n in names])\n"
            "ci, fuzz = settings.get_profile('ctx-ci'), settings.get_profile('ctx-fuzz')\n"
            "print(ci.derandomize, ci.database, ci.deadline, fuzz.max_examples)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:3] == ["[False, False, False]", "[True, True, True]", "True None None 10000"]


def test_knobs_are_checked() -> None:
    with pytest.raises(InvalidArgument, match=r"ctxsim: sessions\(calls=0\)"):
        sessions(calls=0)
    with pytest.raises(InvalidArgument, match=r"ctxsim: sessions\(window=50000\): expected an integer >= 100000"):
        sessions(window=50_000)
    with pytest.raises(InvalidArgument, match=r"ctxsim: fault_plans\(faults=\.\.\.\): no fault 'nope'"):
        fault_plans(faults=["nope"])
    with pytest.raises(InvalidArgument, match=r"ctxsim: sessions\(calls=\.\.\.\) drew 0"):
        find(sessions(calls=st.just(0)), lambda s: True)
    with pytest.raises(InvalidArgument, match="scenario_text\\(\\) takes a session or stream drawn from"):
        scenario_text(SessionBuilder().call().build())


# --- sessions ---------------------------------------------------------------------------------------------------


@FAST
# Claude Code's default settings: a drawn autocompact window (100,000) lowers the point so far that four calls pass
# it, and the session autocompacts whatever the knob says (the knob asks for compactions beyond those)
@given(sessions(calls=4, queries=2, subagents=1, compactions=0, cache_expiries=0, resets=0, settings=False))
def test_sessions_follow_the_knobs(session: Session) -> None:
    assert len(session.queries) == 2
    assert sum(isinstance(s, SubagentStart) for q in session.queries for s in q.steps) == 1
    assert len(session.main_calls) == 4 + 1  # the subagent is started by a main call of its own
    assert not any(isinstance(s, Compaction) for q in session.queries for s in q.steps)
    for query in session.queries:
        assert not any(isinstance(b, ToolUse) for b in query.main_calls[-1].blocks)  # each query ends in text
    assert all(c.prompt <= session.window for c in session.calls)


@FAST
@given(sessions(calls=(15, 20), window=st.sampled_from([200_000, 1_000_000])))
def test_long_sessions_compact_before_the_window_is_full(session: Session) -> None:
    for index, query in enumerate(session.queries):  # against the point of the model in force (/model moves it)
        point = session.threshold_of(session.window_of(session.model_at(index)))
        assert all(c.prompt <= point for c in query.main_calls), (index, point)
    assert len(session.main_calls) - sum(isinstance(s, SubagentStart) for q in session.queries
                                                for s in q.steps) >= 15


@FAST
@given(sessions(calls=(3, 6)))
def test_content_is_faker_text_of_the_true_size(session: Session) -> None:
    tools = {b.id: b.name for c in session.calls for b in c.blocks if isinstance(b, ToolUse)}
    kinds = {"Bash": "log", "Read": "code", "Edit": "code", "Grep": "grep", "Agent": "prose"}
    corpora = {k: v * 2 for k, v in _corpora().items()}
    for query in session.queries:
        for step in query.steps:
            if isinstance(step, ToolResult):
                assert len(step.content) == step.tokens * CHARS_PER_TOKEN
                if len(step.content) < len(corpora[kinds[tools[step.tool_use_id]]]) // 2:
                    assert step.content in corpora[kinds[tools[step.tool_use_id]]]
    assert all(query.prompt in _prompts() for query in session.queries)


def _prompts() -> tuple[str, ...]:
    from ctxsim.world._content import prompts

    return prompts()


# --- printing as a scenario -------------------------------------------------------------------------------------


def _calls(session: Session) -> list[tuple[Any, ...]]:
    return [(c.input_tokens, c.cache_creation_input_tokens, c.cache_read_input_tokens, c.output_tokens,
             c.message_id, c.request_id, c.parent_tool_use_id, len(c.blocks)) for c in session.calls]


_TEXT_KEYS = frozenset({"text", "thinking", "content", "stdout", "result", "prompt"})


def _without_text(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: ("" if k in _TEXT_KEYS and isinstance(v, str) else _without_text(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_text(v) for v in value]
    return value


def _frames(scripts: Any) -> list[tuple[str, Any]]:
    """Each frame without its text, as JSON (garbage faults write NaN, which never equals itself)."""
    return [(json.dumps(_without_text(f.data)), f.observation) for s in scripts for f in s.frames]


@FAST
@given(message_streams())
def test_a_drawn_stream_prints_as_a_scenario_that_replays_it(stream: MessageStream) -> None:
    text = repr(stream)
    assert text == scenario_text(stream)
    loaded = parse_scenario(text)
    assert _calls(loaded.session) == _calls(stream.session)
    assert [t for _, _, t in loaded.session.timeline()] == [t for _, _, t in stream.session.timeline()]
    assert [q.prompt for q in loaded.session.queries] == [q.prompt for q in stream.session.queries]
    assert loaded.partial == stream.partial and loaded.session.seed == stream.plan.seed == stream.session.seed
    assert [f.name for f in loaded.faults] == list(stream.plan.names)
    # the same frames, ids, uuids and points; only the text differs (filler instead of faker, same length)
    assert _frames(loaded.scripts()) == _frames(stream.scripts)


@settings(max_examples=2, deadline=None, database=None)
@given(sessions(calls=3, subagents=1, compactions=1, cache_expiries=1, resets=0))
def test_a_drawn_session_prints_as_its_scenario(session: Session) -> None:
    text = repr(session)
    assert "stream:" not in text and "faults:" not in text
    assert text.count("- call:") == 3 and "- subagent:" in text and "- compact:" in text
    assert _calls(parse_scenario(text).session) == _calls(session)
    changed = dataclasses.replace(session, window=session.window + 1)
    assert repr(changed).startswith("_GeneratedSession(session_id=")  # no longer described: the plain repr


def test_a_falsifying_example_prints_the_scenario() -> None:
    @settings(max_examples=5, database=None, deadline=None, phases=[Phase.generate])
    @given(message_streams(faults=F.FaultPlan((F.DuplicateBlocks(),))))
    def always_fails(stream: MessageStream) -> None:
        raise AssertionError("planted")

    with pytest.raises(AssertionError, match="planted") as failure:
        always_fails()
    notes = "\n".join(getattr(failure.value, "__notes__", []))
    assert "\nqueries:\n" in notes and "\nfaults:\n  - duplicate_blocks: {rate: 0.5, copies: 1}\n" in notes
    assert "\nworld: {model: claude-sonnet-4-5, window: 200000" in notes


@settings(max_examples=1, deadline=None, database=None)
@given(message_streams(session=SessionBuilder(name="by-hand").call().build(), faults=F.FaultPlan(), partial=False))
def test_a_stream_of_a_hand_built_session_still_prints(stream: MessageStream) -> None:
    assert repr(stream) == "MessageStream(session='by-hand', partial=False, faults=[])"


# --- shrinking --------------------------------------------------------------------------------------------------


def test_sessions_shrink_to_a_few_calls() -> None:
    def compacts(session: Session) -> bool:
        return any(isinstance(s, Compaction) for q in session.queries for s in q.steps)

    found = find(sessions(calls=(1, 6)), compacts,
                 settings=settings(database=None, max_examples=500, phases=_NO_EXPLAIN))
    assert len(found.main_calls) <= 2 and len(found.queries) == 1
    assert repr(found).count("- call:") == len(found.main_calls)


class _HighestCacheRead:
    """A planted bug (Bugs in the wild, B14): keeps the highest cache read seen, so it overcounts after a cache miss."""

    def __init__(self) -> None:
        self.read = 0
        self.tokens: int | None = None

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None and message.usage:
            usage = message.usage
            self.read = max(self.read, usage["cache_read_input_tokens"])
            self.tokens = usage["input_tokens"] + usage["cache_creation_input_tokens"] + self.read

    def context_tokens(self) -> int | None:
        return self.tokens


def test_a_planted_bug_shrinks_to_a_readable_scenario() -> None:
    def caught(stream: MessageStream) -> bool:
        return not run_tracker_parsed(_HighestCacheRead(), stream.session, stream.scripts).ok

    found = find(message_streams(session=sessions(calls=(1, 6)), faults=F.FaultPlan(), partial=False), caught,
                 settings=settings(database=None, max_examples=500, phases=_NO_EXPLAIN))
    text = repr(found)
    assert 2 <= text.count("- call:") <= 3 and "subagent" not in text and "faults:" not in text
    assert "- expire_cache:" in text or "- compact:" in text or "- reset:" in text
    assert not run_tracker_parsed(_HighestCacheRead(), *_replayed(text)).ok  # the printed scenario still fails


def _replayed(text: str) -> tuple[Session, list[Any]]:
    loaded = parse_scenario(text)
    return loaded.session, loaded.scripts()


# --- the reference tracker on generated streams -----------------------------------------------------------------


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_streams(faults=fault_plans(size=st.integers(0, len(F.REGISTRY)))))
def test_the_reference_never_raises_on_any_fault(stream: MessageStream) -> None:
    report = run_tracker_parsed(ContextTracker(), stream.session, stream.scripts)
    assert report.crash is None, report.crash


@settings(max_examples=6, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_streams(session=sessions(calls=(1, 8)), faults=fault_plans(size=st.integers(1, 4))))
def test_the_reference_never_raises_through_the_client(stream: MessageStream) -> None:
    report = run_tracker(ContextTracker(), stream.session, scripts=stream.scripts)
    assert report.crash is None, report.crash
    assert report.messages > 0


# Every truth-keeping fault but the shapes the reference mishandles today (see the xfail tests of test_faults.py):
# reused message ids, and huge output counts.
_KINDS = ("negative", "text", "numeric_string", "float", "nan", "null", "bool")
_TRACKABLE = [name for name in F.REGISTRY if name not in ("reused_message_ids", "garbage_values")] + [
    st.builds(F.GarbageValues, rate=st.sampled_from((0.3, 1.0)),
              kinds=st.lists(st.sampled_from(_KINDS), min_size=1, unique=True).map(tuple))]


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(message_streams(faults=fault_plans(faults=_TRACKABLE, truth_keeping=True, size=st.integers(1, 5))))
def test_the_reference_tracks_every_truth_keeping_stream(stream: MessageStream) -> None:
    assert stream.plan.keeps_truth
    report = run_tracker_parsed(ContextTracker(), stream.session, stream.scripts)
    assert report.ok, str(report)


# --- fault plans ------------------------------------------------------------------------------------------------


def test_fault_plans_vary_every_parameter_of_every_fault() -> None:
    for name, cls in F.REGISTRY.items():
        drawn = _faults._fault_params(name, keep=False)
        assert drawn is not None
        for param in dataclasses.fields(cls):
            fault = find(drawn, lambda f, p=param: getattr(f, p.name) != p.default,  # type: ignore[misc]
                         settings=settings(database=None, phases=_NO_EXPLAIN, max_examples=200))
            assert isinstance(fault, cls)
    assert _faults._fault_params("model_switch", keep=True) is None


@FAST
@given(fault_plans(truth_keeping=True, size=4))
def test_truth_keeping_plans_keep_the_truth(plan: F.FaultPlan) -> None:
    assert plan.keeps_truth and len(plan.faults) == 4 and len(set(plan.names)) == 4


@FAST
@given(fault_plans(faults=["missing_result", F.CacheReadDrop, F.MissingUsage(scope="whole_call"),
                           st.just(F.TruncatedStream(at=0.3))], size=st.integers(0, 4), seed=7))
def test_plans_draw_from_what_they_are_given(plan: F.FaultPlan) -> None:
    assert set(plan.names) <= {"missing_result", "cache_read_drop", "missing_usage", "truncated_stream"}
    assert plan.seed == 7
    assert F.MissingUsage(scope="whole_call") in plan.faults or "missing_usage" not in plan.names


@settings(max_examples=2, deadline=None, database=None)
@given(message_streams(faults=fault_plans(size=2, seed=99)))
def test_streams_apply_their_plan_with_the_session_seed(stream: MessageStream) -> None:
    assert stream.plan.seed == stream.session.seed
    assert len(stream.plan.faults) == 2
    replayed = F.apply(stream.plan, render(stream.session, include_partial_messages=stream.partial))
    # compared as JSON text: a garbage-values fault may write NaN, which is never equal to itself
    assert json.dumps([f.data for s in stream.scripts for f in s.frames]) == json.dumps(
        [f.data for s in replayed for f in s.frames])


@settings(max_examples=100, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(message_streams(faults=fault_plans(reads=frozenset({"sdk"}))))
def test_a_compaction_never_reads_as_growing_the_context(stream: MessageStream) -> None:
    # what a compaction leaves is at most what the stream last showed: a shrunk counterexample of a stale gauge
    # (over the truth after a compaction) cannot turn into one under it
    shown = None
    for script in stream.scripts:
        for frame in script.frames:
            point = frame.observation
            if point is None or not point.truth.knowable:
                continue
            if point.kind == "compaction" and shown is not None:
                assert point.truth.prompt <= shown, (point.label, point.truth.prompt, shown)
            if point.kind in ("call", "compaction", "reset"):
                shown = point.truth.next_request
