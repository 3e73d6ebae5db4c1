"""ctxsim.faults: what each fault changes and what it keeps (numbers from the world), and the reference surviving
every fault that keeps the truth, through the real SDK client."""

from __future__ import annotations

import dataclasses
import json
import math
import random
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage

from ctxsim import faults as F
from ctxsim.check import run_tracker, run_tracker_parsed
from ctxsim.reference import ContextTracker
from ctxsim.sdk import parse_message
from ctxsim.wire import Observation, Script, render
from ctxsim.world import Call, Compaction, Session, SessionBuilder, Truth

# --- the session every test faults ------------------------------------------------------------------------------


def build() -> Session:
    b = SessionBuilder(seed=11, name="faults")
    b.query("Fix the parser", prompt_tokens=40)
    b.call(blocks=("thinking", "text", "tool_use", "tool_use"), results=(1_500, 300), output=410)
    b.call(results=(2_000,), output=95)
    b.start_subagent("explore", prompt_tokens=300)
    b.call(results=(800,), output=60).call(results=(400,), output=70).call(blocks=("text",), output=30)
    b.end_subagent(result_tokens=500)
    b.call(output=300)
    b.query("Run everything", prompt_tokens=20)
    b.call(results=(5_000,), output=130)
    b.expire_cache(keep_prefix=0)
    b.call(results=(100,), output=40)
    b.compact(20_000)
    b.call(output=75)
    b.query("Again", prompt_tokens=10)
    b.call(results=(300,), output=64)
    b.reset()
    b.call(output=33)
    return b.build()


SESSION = build()
MAIN = SESSION.main_calls
CALLS = {c.message_id: c for c in SESSION.calls}
RENDERED = {partial: render(SESSION, include_partial_messages=partial) for partial in (False, True)}


def dump(scripts: list[Script]) -> str:
    return json.dumps([[f.data for f in s.frames] for s in scripts])


def frames(scripts: list[Script]) -> Iterator[Any]:
    for script in scripts:
        yield from script.frames


def assistants(scripts: list[Script], message_id: str | None = None) -> list[dict[str, Any]]:
    return [f.data for f in frames(scripts) if f.data["type"] == "assistant"
            and (message_id is None or f.data["message"]["id"] == message_id)]


def points(scripts: list[Script]) -> list[Observation]:
    return [f.observation for f in frames(scripts) if f.observation is not None]


def results(scripts: list[Script]) -> list[dict[str, Any]]:
    return [f.data for f in frames(scripts) if f.data["type"] == "result"]


def prompt(usage: dict[str, Any]) -> int:
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]


def run(fault: F.Fault, *, partial: bool = False, seed: int = 1) -> list[Script]:
    return F.apply(F.FaultPlan((fault,), seed), RENDERED[partial])


def labels(scripts: list[Script]) -> list[tuple[str, Truth, int]]:
    return [(o.label, o.truth, o.window) for o in points(scripts)]


# --- the contract every fault keeps -----------------------------------------------------------------------------


def every_fault() -> list[F.Fault]:
    out = []
    for cls in F.REGISTRY.values():
        out.append(cls(**({"rate": 1.0} if "rate" in {f.name for f in dataclasses.fields(cls)} else {})))
    return out


@pytest.mark.parametrize("fault", every_fault(), ids=lambda f: f.name)
@pytest.mark.parametrize("partial", [False, True], ids=["plain", "partial"])
def test_a_fault_never_mutates_its_input_and_is_deterministic(fault: F.Fault, partial: bool) -> None:
    before = dump(RENDERED[partial])
    once, again = run(fault, partial=partial, seed=5), run(fault, partial=partial, seed=5)
    assert dump(RENDERED[partial]) == before
    assert dump(once) == dump(again)
    assert [f.observation for f in frames(once)] == [f.observation for f in frames(again)]
    assert [o.index for o in points(once)] == list(range(1, len(points(once)) + 1))
    for data in (f.data for f in frames(once)):
        parse_message(data)  # the SDK's own parser accepts every frame a fault writes


@pytest.mark.parametrize("cls", list(F.REGISTRY.values()), ids=lambda c: c.name)
def test_a_fault_exposes_name_source_params_and_truth(cls: type[F.Fault]) -> None:
    fault = cls()
    assert F.REGISTRY[fault.name] is cls
    assert fault.source and cls.__doc__ and ("truth" in cls.__doc__)
    assert set(fault.params) == {f.name for f in dataclasses.fields(cls)}
    assert fault.spec() == {fault.name: fault.params}
    assert F.fault_from_spec(fault.spec()) == fault
    assert isinstance(fault.keeps_truth, bool)


def test_the_seed_decides_what_is_chosen() -> None:
    fault = F.DuplicateBlocks(rate=0.5)
    dumps = {dump(run(fault, seed=seed)) for seed in range(6)}
    assert len(dumps) > 1


def test_plans_compose_in_order_from_one_generator() -> None:
    plan = F.FaultPlan((F.CacheReadDrop(rate=1.0), F.DuplicateBlocks(rate=1.0)), seed=3)
    assert plan.names == ("cache_read_drop", "duplicate_blocks") and plan.keeps_truth
    assert F.FaultPlan.from_spec(plan.spec(), 3) == plan
    rng = random.Random("ctxsim.faults:3")
    by_hand = F.DuplicateBlocks(rate=1.0)(F.CacheReadDrop(rate=1.0)(RENDERED[False], rng), rng)
    assert dump(F.apply(plan, RENDERED[False])) == dump(by_hand)


def test_bad_specs_and_parameters_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"ctxsim: no fault 'nope'; known: .*duplicate_blocks"):
        F.fault_from_spec("nope")
    with pytest.raises(ValueError, match=r"ctxsim: fault duplicate_blocks: unknown parameter colour \(known: rate"):
        F.fault_from_spec({"duplicate_blocks": {"colour": 1}})
    with pytest.raises(ValueError, match=r"ctxsim: fault duplicate_blocks: rate must be a number in \(0, 1\]"):
        F.DuplicateBlocks(rate=0)
    with pytest.raises(ValueError, match=r"mode must be one of camel_case, no_post, no_metadata; got 'x'"):
        F.CompactionMetadata(mode="x")
    with pytest.raises(TypeError, match="ctxsim: a FaultPlan holds faults"):
        F.FaultPlan(("duplicate_blocks",))  # type: ignore[arg-type]


# --- each fault: what it changes, what it keeps -----------------------------------------------------------------


def test_duplicate_blocks_repeat_lines_byte_for_byte() -> None:
    out = run(F.DuplicateBlocks(rate=1.0, copies=2))
    before, after = assistants(RENDERED[False]), assistants(out)
    assert len(after) > len(before)
    assert {a["uuid"] for a in after} == {a["uuid"] for a in before}  # copies keep the uuid
    for line in after:
        assert line == next(b for b in before if b["uuid"] == line["uuid"])
    assert labels(out) == labels(RENDERED[False])


def test_replayed_messages_are_old_calls_with_new_uuids_before_a_later_result() -> None:
    out = run(F.ReplayedMessages(rate=1.0, where="later"))
    original = {a["uuid"] for a in assistants(RENDERED[False])}
    replays = [f for f in frames(out) if f.data["type"] == "assistant" and f.data["uuid"] not in original]
    assert replays
    for frame in replays:
        call = CALLS[frame.data["message"]["id"]]
        assert prompt(frame.data["message"]["usage"]) == call.prompt  # the call's own usage, unchanged
        assert frame.observation is None
    assert labels(out) == labels(RENDERED[False])


@pytest.mark.parametrize("partial", [False, True], ids=["plain", "partial"])
def test_streaming_partials_end_with_the_final_record(partial: bool) -> None:
    out = run(F.StreamingPartials(rate=1.0, partials=2), partial=partial)
    for call in MAIN:
        lines = assistants(out, call.message_id)
        assert len(lines) == 3 * len(call.blocks)  # two partials before each per-block message
        *stale, final = lines
        assert all(line["message"]["stop_reason"] is None for line in stale)
        assert len({line["message"]["usage"]["output_tokens"] for line in stale}) == 1
        assert stale[0]["message"]["usage"]["output_tokens"] in range(1, 10)
        assert final["message"]["usage"]["output_tokens"] == call.output_tokens
        assert final["message"]["stop_reason"] == call.stop_reason
        assert {prompt(line["message"]["usage"]) for line in lines} == {call.prompt}
    assert labels(out) == labels(RENDERED[partial])


@pytest.mark.parametrize("mode", ["stale", "growing"])
def test_stale_output_tokens(mode: str) -> None:
    out = run(F.StaleOutputTokens(rate=1.0, mode=mode))
    for call in MAIN:
        outs = [line["message"]["usage"]["output_tokens"] for line in assistants(out, call.message_id)]
        assert all(o in range(1, 10) for o in outs[:-1]) and len(set(outs[:-1])) <= 1
        assert outs[-1] == (max(call.output_tokens, outs[0]) if mode == "growing" else outs[0])


def test_repeated_message_delta_is_cumulative_and_ends_with_the_final_count() -> None:
    out = run(F.RepeatedMessageDelta(rate=1.0, deltas=3, with_prompt=True), partial=True)
    deltas: dict[str, list[dict[str, Any]]] = {}
    current = None
    for frame in frames(out):
        event = frame.data.get("event", {})
        if event.get("type") == "message_start":
            current = event["message"]["id"]
        elif event.get("type") == "message_delta":
            deltas.setdefault(current, []).append(event["usage"])  # type: ignore[arg-type]
    assert set(deltas) == {c.message_id for c in MAIN}
    for call in MAIN:
        usages = deltas[call.message_id]
        assert [u["output_tokens"] for u in usages] == [call.output_tokens * n // 3 for n in (1, 2, 3)]
        assert {prompt(u) for u in usages} == {call.prompt}
    assert dump(run(F.RepeatedMessageDelta(rate=1.0))) == dump(RENDERED[False])  # no stream events: no change


@pytest.mark.parametrize("usage", ["zero", "none"])
def test_synthetic_errors_come_before_results_with_zero_usage(usage: str) -> None:
    out = run(F.SyntheticErrorMessages(rate=1.0, usage=usage))
    for script in out:
        *_, synthetic, result = script.frames
        message = parse_message(synthetic.data)
        assert isinstance(message, AssistantMessage) and message.model == "<synthetic>"
        assert message.error == "server_error"
        assert message.usage is None if usage == "none" else not any(
            v for k, v in message.usage.items() if k.endswith("tokens"))  # type: ignore[union-attr]
        assert result.data["type"] == "result"
    assert labels(out) == labels(RENDERED[False])


@pytest.mark.parametrize("reuse", ["previous", "first"])
def test_reused_message_ids_join_distinct_calls(reuse: str) -> None:
    out = run(F.ReusedMessageIds(rate=1.0, reuse=reuse))
    seen: dict[str, set[int]] = {}
    ids = []
    for call in MAIN:
        line = next(a for a in assistants(out) if a.get("request_id") == call.request_id)
        ids.append(line["message"]["id"])
        assert prompt(line["message"]["usage"]) == call.prompt
        seen.setdefault(line["message"]["id"], set()).add(call.prompt)
    assert len(set(ids)) < len(MAIN)
    if reuse == "first":
        assert ids.count(MAIN[0].message_id) > 1
    # never the same id and prompt twice: that would be a replay
    assert sum(len(p) for p in seen.values()) == len(MAIN)


@pytest.mark.parametrize("mode", ["absent", "empty"])
def test_missing_request_ids(mode: str) -> None:
    out = run(F.MissingRequestIds(rate=1.0, mode=mode))
    lines = assistants(out)
    assert all(("request_id" not in line) if mode == "absent" else line["request_id"] == "" for line in lines)


@pytest.mark.parametrize("keep", [0, 12_000])
def test_cache_read_drop_moves_reads_into_writes_and_keeps_results_consistent(keep: int) -> None:
    out = run(F.CacheReadDrop(rate=1.0, keep_prefix=keep))
    dropped = [c for c in MAIN if c.cache_read_input_tokens > keep]
    assert dropped
    for call in dropped:
        usages = [line["message"]["usage"] for line in assistants(out, call.message_id)]
        assert all(u == usages[0] for u in usages)  # every per-block message agrees
        assert usages[0]["cache_read_input_tokens"] == keep
        assert usages[0]["cache_creation_input_tokens"] == call.prompt - call.input_tokens - keep
    for script in out:  # each result still sums its query's main calls (after the last reset)
        unique: dict[str, dict[str, int]] = {}
        for frame in script.frames:
            data = frame.data
            if data["type"] == "conversation_reset":
                unique.clear()
            elif data["type"] == "assistant" and data["parent_tool_use_id"] is None:
                unique[data["message"]["id"]] = data["message"]["usage"]
            elif data["type"] == "result":
                for key in ("cache_read_input_tokens", "cache_creation_input_tokens"):
                    assert data["usage"][key] == sum(u[key] for u in unique.values())
    first_two = [s for q in SESSION.queries[:2] for s in q.steps if isinstance(s, Call)]
    moved = sum(c.cache_read_input_tokens - keep for c in first_two if c in dropped)
    # the compaction summary requests, which no frame shows and no fault reaches, count too
    first_two += [s.summary for q in SESSION.queries[:2] for s in q.steps if isinstance(s, Compaction) and s.summary]
    cumulative = results(out)[1]["modelUsage"][SESSION.model]  # q2's result: q1 and q2, subagents included
    assert cumulative["cacheReadInputTokens"] == sum(c.cache_read_input_tokens for c in first_two) - moved
    assert cumulative["cacheCreationInputTokens"] == sum(c.cache_creation_input_tokens for c in first_two) + moved
    assert labels(out) == labels(RENDERED[False])


def test_nested_cache_creation_hides_the_write_in_the_breakdown() -> None:
    out = run(F.NestedCacheCreationOnly(rate=1.0))
    for call in (c for c in SESSION.calls if c.cache_creation_input_tokens and assistants(out, c.message_id)):
        for line in assistants(out, call.message_id):
            usage = line["message"]["usage"]
            assert usage["cache_creation_input_tokens"] == 0
            assert sum(usage["cache_creation"].values()) == call.cache_creation_input_tokens


def test_uncached_gateway_usage_reports_the_whole_prompt_as_input() -> None:
    out = run(F.UncachedGatewayUsage())
    for call in MAIN:
        for line in assistants(out, call.message_id):
            assert line["message"]["usage"] == {"input_tokens": call.prompt, "output_tokens": 1}
    q1 = list(SESSION.queries[0].main_calls)
    assert results(out)[0]["usage"]["input_tokens"] == sum(c.prompt for c in q1)
    assert results(out)[0]["usage"]["cache_read_input_tokens"] == 0


def test_usage_iterations_sum_at_top_level_and_end_with_the_call() -> None:
    out = run(F.AdvisorIterations(rate=1.0))
    for call in MAIN:
        usage = assistants(out, call.message_id)[0]["message"]["usage"]
        messages = [i for i in usage["iterations"] if i["type"] == "message"]
        assert prompt(messages[-1]) == call.prompt
        assert prompt(usage) == sum(prompt(i) for i in messages) > call.prompt
        assert [i["type"] for i in usage["iterations"]] == ["message", "advisor_message", "message"]


def test_missing_usage_on_some_blocks_leaves_one_whole_message_per_call() -> None:
    out = run(F.MissingUsage(rate=1.0, shape="empty", scope="some_blocks"))
    stripped = 0
    for call in MAIN:
        lines = assistants(out, call.message_id)
        whole = [line for line in lines if line["message"]["usage"]]
        stripped += len(lines) - len(whole)
        assert whole and all(prompt(line["message"]["usage"]) == call.prompt for line in whole)
    assert stripped
    assert labels(out) == labels(RENDERED[False])
    assert F.MissingUsage().keeps_truth and not F.MissingUsage(scope="whole_call").keeps_truth


@pytest.mark.parametrize("partial", [False, True], ids=["plain", "partial"])
def test_missing_usage_on_a_whole_call_makes_its_points_not_knowable(partial: bool) -> None:
    out = run(F.MissingUsage(rate=1.0, shape="none", scope="whole_call"), partial=partial)
    assert all(line["message"]["usage"] is None for line in assistants(out))
    # no point is knowable, the compaction included: its boundary states the summary, and no readable call shows
    # the system prefix the context also holds; the numbers stay
    expected = [(label, replace(t, knowable=False), w) for label, t, w in labels(RENDERED[partial])]
    assert labels(out) == expected


def test_garbage_values_spoil_bystanders_only_by_default() -> None:
    out = run(F.GarbageValues(rate=1.0, kinds=("text",)))
    for call in MAIN:
        for line in assistants(out, call.message_id):
            assert prompt(line["message"]["usage"]) == call.prompt
            assert line["message"]["usage"]["output_tokens"] == "n/a"
    assert results(out)[0]["usage"]["input_tokens"] == "n/a" and results(out)[0]["total_cost_usd"] == "n/a"
    assert labels(out) == labels(RENDERED[False])


def test_garbage_in_a_prompt_field_keeps_the_number_or_makes_the_point_not_knowable() -> None:
    lenient = run(F.GarbageValues(rate=1.0, kinds=("numeric_string",), fields="prompt"))
    for call in MAIN:
        usage = assistants(lenient, call.message_id)[0]["message"]["usage"]
        assert sum(int(usage[k]) for k in ("input_tokens", "cache_creation_input_tokens",
                                           "cache_read_input_tokens")) == call.prompt
    # the SDK types a count as an integer: a tracker may read the number or give no estimate (its band)
    for (label, truth, _), (_, was, _) in zip(labels(lenient), labels(RENDERED[False])):
        if was.knowable and "call" in label and "subagent" not in label:
            assert not truth.knowable and truth.unseen == (was.prompt, was.next_request), label
    junk = run(F.GarbageValues(rate=1.0, kinds=("nan",), fields="prompt"))
    assert any(isinstance(v, float) and math.isnan(v)
               for v in assistants(junk, MAIN[0].message_id)[0]["message"]["usage"].values())
    # every call is unreadable, and the compaction's boundary states only the summary: no readable call shows the
    # system prefix the context also holds, so no point is knowable
    assert [label for label, truth, _ in labels(junk) if truth.knowable] == []
    assert not F.GarbageValues(fields="prompt").keeps_truth
    assert not F.GarbageValues(fields="prompt", kinds=("float", "numeric_string")).keeps_truth


def test_interleaved_subagents_arrive_after_the_next_main_call() -> None:
    out = run(F.InterleavedSubagents(rate=1.0))
    order = [f.observation.label for f in frames(out) if f.observation is not None]
    assert order[:6] == ["q1 call 1", "q1 call 2", "q1 call 3", "q1 call 4", "q1 subagent call 1",
                         "q1 subagent call 2"]
    by_label = {label: truth for label, truth, _ in labels(out)}
    after = MAIN[3]  # the main call the subagent's lines now follow
    assert by_label["q1 subagent call 1"] == by_label["q1 subagent call 2"] == Truth(after.prompt, after.output_tokens)


def test_missing_result_drops_results_and_their_points_only() -> None:
    out = run(F.MissingResult(rate=1.0))
    assert results(out) == []
    assert labels(out) == [p for p in labels(RENDERED[False]) if not p[0].endswith("result")]


def test_zeroed_error_result() -> None:
    out = run(F.ZeroedErrorResult(rate=1.0))
    for result in results(out):
        assert result["subtype"] == "error_during_execution" and result["is_error"] is True
        assert result["total_cost_usd"] == 0 and result["usage"]["cache_read_input_tokens"] == 0
        entry = result["modelUsage"][SESSION.model]
        assert entry["inputTokens"] == entry["costUSD"] == 0 and entry["contextWindow"] == SESSION.window
    assert labels(out) == labels(RENDERED[False])


def test_compaction_metadata_shapes() -> None:
    camel = run(F.CompactionMetadata(mode="camel_case"))
    boundary = next(f.data for f in frames(camel) if f.data.get("subtype") == "compact_boundary")
    assert boundary["compactMetadata"]["postTokens"] == 20_000 and "compact_metadata" not in boundary
    assert labels(camel) == labels(RENDERED[False])
    no_post = run(F.CompactionMetadata(mode="no_post"))
    boundary = next(f for f in frames(no_post) if f.data.get("subtype") == "compact_boundary")
    assert "post_tokens" not in boundary.data["compact_metadata"]
    truth = {label: t for label, t, _ in labels(RENDERED[False])}["q2 compaction"]
    assert truth.prompt == SESSION.baseline + 20_000  # the boundary's 20,000 and the system prefix
    assert boundary.observation.truth == replace(truth, knowable=False)  # type: ignore[union-attr]
    changed = [label for (label, t, _), (_, t0, _) in zip(labels(no_post), labels(RENDERED[False])) if t != t0]
    assert changed == ["q2 compaction"]  # the next point is a call: knowable again


def test_inserted_compaction_sets_the_truth_until_the_next_call() -> None:
    out = run(F.InsertedCompaction(rate=1.0, post_ratio=0.25, with_post=True))
    checked = 0
    for frame in frames(out):
        data = frame.data
        if data.get("subtype") != "compact_boundary" or data["compact_metadata"]["post_tokens"] == 20_000:
            continue
        post = data["compact_metadata"]["post_tokens"]
        cached = MAIN[0].cache_read_input_tokens
        # a summary of the conversation beyond the system prefix: the context never grows by compacting
        assert post == max(1, round((data["compact_metadata"]["pre_tokens"] - cached) * 0.25))
        assert post + cached <= data["compact_metadata"]["pre_tokens"]
        # the summary, and the system prefix the session's first call read from cache (a /clear keeps it): that
        # cache read is also what the stream shows of the prefix, so the estimate is exact
        truth = frame.observation.truth  # type: ignore[union-attr]
        assert truth == Truth(post + cached, 0) and truth.estimated == (post + cached, post + cached)
        checked += 1
    assert checked
    ordered = list(frames(out))
    for frame in ordered:
        if frame.data.get("subtype") == "compact_boundary" and frame.data["compact_metadata"]["post_tokens"] != 20_000:
            before = next(f.observation for f in reversed(ordered[: ordered.index(frame)])
                          if f.observation is not None and f.observation.kind in ("call", "compaction", "reset"))
            assert frame.data["compact_metadata"]["pre_tokens"] == before.truth.next_request
    post = round((MAIN[3].prompt + MAIN[3].output_tokens - MAIN[0].cache_read_input_tokens) * 0.25)
    assert {label: t for label, t, _ in labels(out)}["q1 result"].prompt == post + MAIN[0].cache_read_input_tokens
    assert not F.InsertedCompaction().keeps_truth


def test_an_inserted_compaction_after_model_carries_the_window_of_the_model_in_force() -> None:
    # /model between the queries: a compaction at the start of the next query is judged on the new model's window
    b = SessionBuilder(seed=3, name="switched", model="claude-sonnet-4-5[1m]", window=1_000_000)
    b.query("Fix the parser", prompt_tokens=40).call(results=(1_500,), output=410).call(output=95)
    b.switch_model("claude-sonnet-4-5").query("Again", prompt_tokens=10).call(output=64).call(output=33)
    out = F.apply(F.FaultPlan((F.InsertedCompaction(rate=1.0),), 1), render(b.build()))
    points = [(label, w) for label, _, w in labels(out)]
    first = points.index(next(p for p in points if p[0] == "q2 compaction"))
    assert points[first - 1] == ("q1 result", 1_000_000) and points[first + 1] == ("q2 call 1", 200_000)
    assert points[first] == ("q2 compaction", 200_000)


def test_model_switch_changes_model_window_and_model_usage() -> None:
    out = run(F.ModelSwitch(to_model="claude-opus-4-6", at=0.5))
    switch = MAIN[len(MAIN) // 2]
    assert switch is SESSION.queries[1].main_calls[0]  # the switch falls on q2's first call
    windows = {label: w for label, _, w in labels(out)}
    assert windows["q1 result"] == 200_000 and windows["q2 call 1"] == windows["q3 result"] == 1_000_000
    inits = [f.data["model"] for f in frames(out) if f.data.get("subtype") == "init"]
    assert inits == [SESSION.model, "claude-opus-4-6", "claude-opus-4-6"]
    assert {line["message"]["model"] for line in assistants(out, switch.message_id)} == {"claude-opus-4-6"}
    q2 = results(out)[1]["modelUsage"]
    moved = SESSION.queries[1].main_calls
    assert q2["claude-opus-4-6"]["cacheReadInputTokens"] == sum(c.cache_read_input_tokens for c in moved)
    assert q2["claude-opus-4-6"]["contextWindow"] == 1_000_000
    assert [t for _, t, _ in labels(out)] == [t for _, t, _ in labels(RENDERED[False])]  # tokens unchanged


def test_wrong_context_window_reports_the_other_window() -> None:
    out = run(F.WrongContextWindow())
    assert {r["modelUsage"][SESSION.model]["contextWindow"] for r in results(out)} == {1_000_000}
    assert labels(out) == labels(RENDERED[False])


def test_truncated_stream_keeps_a_prefix() -> None:
    total = sum(len(s.frames) for s in RENDERED[False])
    out = run(F.TruncatedStream(at=0.4))
    kept = list(frames(out))
    assert len(kept) == int(0.4 * total)
    assert [f.data for f in kept] == [f.data for f in frames(RENDERED[False])][: len(kept)]
    assert len(out) < len(SESSION.queries)
    assert labels(out) == labels(RENDERED[False])[: len(labels(out))]


# --- the reference tracker through the real client --------------------------------------------------------------


KEEPING = [
    F.DuplicateBlocks(rate=1.0, copies=2), F.ReplayedMessages(rate=1.0, where="later"),
    F.ReplayedMessages(rate=1.0, where="after"), F.StreamingPartials(rate=1.0), F.StaleOutputTokens(mode="stale"),
    F.StaleOutputTokens(mode="growing"), F.RepeatedMessageDelta(rate=1.0, with_prompt=True),
    F.SyntheticErrorMessages(rate=1.0), F.SyntheticErrorMessages(rate=1.0, usage="none"),
    F.ReusedMessageIds(rate=1.0), F.ReusedMessageIds(rate=1.0, reuse="first"), F.MissingRequestIds(rate=1.0),
    F.MissingRequestIds(rate=1.0, mode="empty"), F.CacheReadDrop(rate=1.0), F.CacheReadDrop(keep_prefix=12_000),
    F.NestedCacheCreationOnly(rate=1.0), F.UncachedGatewayUsage(), F.AdvisorIterations(rate=1.0),
    F.MissingUsage(rate=1.0), F.MissingUsage(rate=1.0, shape="output_only"),
    F.GarbageValues(rate=1.0, kinds=("negative", "text", "numeric_string", "float", "nan", "null", "bool")),
    F.InterleavedSubagents(rate=1.0), F.MissingResult(rate=1.0), F.ZeroedErrorResult(rate=1.0),
    F.CompactionMetadata(mode="camel_case"), F.WrongContextWindow(), F.TruncatedStream(at=0.6),
]


def test_the_truth_keeping_list_covers_every_fault_that_can_keep_it() -> None:
    assert all(f.keeps_truth for f in KEEPING)
    never = {"inserted_compaction", "model_switch"}
    assert {f.name for f in KEEPING} == set(F.REGISTRY) - never
    assert not any(cls().keeps_truth for name, cls in F.REGISTRY.items() if name in never)


def fault_id(fault: F.Fault) -> str:
    return f"{fault.name}[{','.join(f'{k}={v}' for k, v in fault.params.items() if k != 'kinds')}]"


@pytest.mark.parametrize("fault", KEEPING, ids=fault_id)
@pytest.mark.parametrize("partial", [False, True], ids=["plain", "partial"])
def test_the_reference_survives_every_truth_keeping_fault_through_the_client(fault: F.Fault, partial: bool) -> None:
    scripts = run(fault, partial=partial)
    report = run_tracker(ContextTracker(), SESSION, scripts=scripts)
    assert report.ok, str(report)
    assert len(report.points) == len(points(scripts))


def test_the_reference_survives_truth_keeping_faults_together() -> None:
    plan = F.FaultPlan((F.NestedCacheCreationOnly(rate=1.0), F.CacheReadDrop(rate=1.0), F.AdvisorIterations(),
                        F.UncachedGatewayUsage(rate=0.5), F.StreamingPartials(), F.ReplayedMessages(rate=1.0),
                        F.DuplicateBlocks(), F.InterleavedSubagents(), F.MissingRequestIds(),
                        F.SyntheticErrorMessages(), F.ZeroedErrorResult()), seed=9)
    for partial in (False, True):
        scripts = F.apply(plan, RENDERED[partial])
        report = run_tracker(ContextTracker(), SESSION, scripts=scripts)
        assert report.ok, str(report)


# Faults that keep the truth and that the reference once got wrong: kept as regression tests.


def _reference_ok(plan: F.FaultPlan, session: Session, *, partial: bool) -> bool:
    return run_tracker_parsed(ContextTracker(), session, F.apply(plan, render(
        session, include_partial_messages=partial))).ok


def test_reference_ignores_replays_when_ids_are_reused() -> None:
    b = SessionBuilder(seed=2)
    b.query("go").call(results=(4_000,)).call(results=(3_000,)).call()
    # stream: c1(A) c2(A) c3(B) ... replays c1(A) c2(A) c3(B) before the result
    plan = F.FaultPlan((F.ReplayedMessages(rate=1.0, where="later"), F.ReusedMessageIds(rate=1.0)), seed=0)
    assert _reference_ok(plan, b.build(), partial=False)


def test_reference_drops_the_previous_output_when_an_id_is_reused() -> None:
    b = SessionBuilder(seed=2)
    b.query("go").call(results=(4_000,), output=900).call(output=50)
    session = b.build()
    plan = F.FaultPlan((F.ReusedMessageIds(rate=1.0), F.GarbageValues(rate=0.5, kinds=("text",))), seed=4)
    scripts = F.apply(plan, render(session, include_partial_messages=True))
    ids = {a["message"]["id"] for a in assistants(scripts)}
    deltas = [f.data["event"]["usage"]["output_tokens"] for f in frames(scripts)
              if f.data.get("event", {}).get("type") == "message_delta"]
    assert len(ids) == 1 and deltas == [900, "n/a"]  # the stream this seed makes: one id, the second output spoilt
    assert _reference_ok(plan, session, partial=True)


def test_reference_ignores_a_huge_output_count() -> None:
    b = SessionBuilder(seed=2)
    b.query("go").call(output=900)
    assert _reference_ok(F.FaultPlan((F.GarbageValues(rate=1.0, kinds=("huge",)),)), b.build(), partial=True)


def test_truth_changing_faults_say_so() -> None:
    changing = [F.MissingUsage(scope="whole_call"), F.GarbageValues(fields="prompt"), F.CompactionMetadata(),
                F.CompactionMetadata(mode="no_metadata"), F.InsertedCompaction(), F.ModelSwitch()]
    assert not any(f.keeps_truth for f in changing)
    assert not F.FaultPlan((F.DuplicateBlocks(), F.ModelSwitch())).keeps_truth


class KeepsLast(ContextTracker):
    """Keeps the last readable prompt through any unreadable call (what a tracker can do when it sees no new call)."""

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.usage is None:
            return
        super().observe(message)


def test_an_unreadable_call_reusing_an_earlier_id_may_keep_what_the_stream_last_told() -> None:
    b = SessionBuilder(seed=3, name="unseen").query("go")
    b.call(input=3, cache_creation=2_000, cache_read=20_000).call(results=[5_000]).call(results=[3_000])
    session = b.call().build()
    plan = F.FaultPlan((F.ReusedMessageIds(rate=1.0), F.MissingUsage(rate=0.3, scope="whole_call")), seed=2)
    scripts = F.apply(plan, render(session))
    points = [f.observation for s in scripts for f in s.frames if f.observation is not None]
    unseen = [o for o in points if o.kind == "call" and not o.truth.knowable and o.truth.unseen is not None]
    assert unseen, "no call both reuses an id and lost its usage"
    for obs in unseen:  # the band is the point before it, as the truth of the session states it
        before = next(o for o in reversed(points[:points.index(obs)]) if o.kind == "call")
        assert obs.truth.unseen == (before.truth.prompt, before.truth.next_request) or not before.truth.knowable
    assert run_tracker_parsed(ContextTracker(), session, scripts).ok       # unknown or kept: both pass
    assert run_tracker_parsed(KeepsLast(), session, scripts).ok
    assert not run_tracker_parsed(KeepsLast(), session, F.apply(   # a call with a new id and no usage is not unseen
        F.FaultPlan((F.MissingUsage(rate=0.3, scope="whole_call"),), seed=2), render(session))).ok
