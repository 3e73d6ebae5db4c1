"""ctxsim.strategies.task_scenarios: generated task scenarios read back as the file they print, keep the generator's
documented invariants (checked here from the document's own numbers, never from a loop's run), and the reference
loop keeps every invariant on them without any task being filtered out."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, seed as seed_of, settings
from hypothesis.errors import InvalidArgument

from ctxsim.agent import DEGRADATIONS, LOSSLESS
from ctxsim.reference import PressurePolicy
from ctxsim.runner import run_task
from ctxsim.scenario import TaskScenario, parse_scenario
from ctxsim.strategies import GeneratedTask, task_scenarios

_FAST = settings(max_examples=60, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _numbers(task: GeneratedTask) -> dict[str, Any]:
    """The document's sizes and the arithmetic the module docstring states, computed here from the file."""
    doc = task.document
    t, world = doc["task"], doc["world"]
    steps = [s if isinstance(s, int) else s["tokens"] for s in t["steps"]]
    per_turn = t.get("steps_per_turn", 1)
    p = t["policy"]
    graduated = "zones" in p
    fraction = p["zones"]["wind_down"] if graduated else p["threshold"]
    effective = world["window"] - p.get("reserve", 0)
    threshold = math.ceil(Fraction(str(fraction)) * effective)
    growth = t["prompt_tokens"] + per_turn * (t["output_tokens"] + max(steps)) + t["output_tokens"]
    return {"steps": steps, "threshold": threshold, "growth": growth, "grace": 1 if graduated else 0,
            "window": world["window"], "baseline": world["baseline"], "prompt": t["prompt_tokens"],
            "output": t["output_tokens"]}


@_FAST
@given(task_scenarios())
def test_a_drawn_task_reads_back_as_the_file_it_prints(task: GeneratedTask) -> None:
    text = repr(task)
    again = parse_scenario(text)
    assert isinstance(again, TaskScenario) and text == task.text()
    doc = task.document
    assert again.task.task.window == doc["world"]["window"]
    assert len(again.task.task.steps) == len(doc["task"]["steps"])
    assert again.task.max_restarts == doc["task"]["max_restarts"]
    assert again.task.policy.threshold_tokens(window=again.task.task.window) == _numbers(task)["threshold"]


@_FAST
@given(task_scenarios())
def test_the_generator_keeps_its_invariants(task: GeneratedTask) -> None:
    n = _numbers(task)
    t = task.document["task"]
    # 1. progress: a fresh session's first turn ends below the threshold, and a compacted session's too
    assert n["baseline"] + n["growth"] < n["threshold"]
    assert n["baseline"] + t["summary_tokens"] + n["growth"] < n["threshold"]
    # 2. nothing a correct loop sends reaches the window
    assert n["threshold"] + (n["grace"] + 1) * n["growth"] + n["prompt"] + 3 * n["output"] <= n["window"]
    # 3. garbled usage only where the truth is surely below the threshold
    cleared = {(c["session"], c["turn"]): c["tokens"] for c in t.get("clear_tool_results", [])}
    safe = (n["threshold"] - n["baseline"] - 1) // n["growth"]
    for at in t.get("unreadable_usage", []):
        where = (at["session"], at["turn"])
        assert at["turn"] <= safe or cleared.get(where, 0) >= (n["grace"] + 2) * n["growth"], where
    # 4. a reply losing untraced work is planned for every restart only when every step is traced
    plan = t.get("checkpoints", [])
    traced = all(isinstance(s, int) for s in t["steps"])
    if isinstance(plan, str):
        assert plan in LOSSLESS or traced
    # 5. restarts enough for every planned checkpoint
    assert t["max_restarts"] >= (1 if isinstance(plan, str) else len(plan))


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(task_scenarios())
def test_the_reference_loop_keeps_every_invariant_on_every_drawn_task(task: GeneratedTask) -> None:
    run = run_task(task.scenario)
    assert run.report.ok, f"{run.report}\n{run.summary()}\n{run.timeline()}\n{task.text()}"


def test_every_shape_is_drawn() -> None:
    seen: dict[str, set[Any]] = {"windows": set(), "plans": set(), "events": set()}

    @settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(task_scenarios())
    def draw(task: GeneratedTask) -> None:
        t = task.document["task"]
        seen["windows"].add(task.document["world"]["window"])
        plan = t.get("checkpoints", [])
        seen["plans"].update([plan] if isinstance(plan, str) else plan)
        seen["events"].update(k for k in ("autocompact_at", "unreadable_usage", "clear_tool_results",
                                          "steps_per_turn") if k in t)
        seen["events"].update(f"policy.{k}" for k in t["policy"])
        if any(not isinstance(s, int) for s in t["steps"]):
            seen["events"].add("untraced")

    draw()
    assert seen["windows"] == {200_000, 1_000_000}
    assert seen["plans"] >= set(DEGRADATIONS) - {"well_formed"}
    assert seen["events"] >= {"autocompact_at", "unreadable_usage", "clear_tool_results", "steps_per_turn",
                              "policy.threshold", "policy.zones", "policy.reserve", "policy.max_tool_calls",
                              "untraced"}


@_FAST
@given(task_scenarios(policy=PressurePolicy(restart_at=0.8)))
def test_a_given_policy_is_the_one_written(task: GeneratedTask) -> None:
    assert task.document["task"]["policy"] == {"threshold": 0.8}


def _drawn(seed: int) -> list[str]:
    texts: list[str] = []

    @seed_of(seed)
    @settings(max_examples=10, deadline=None, database=None)
    @given(task_scenarios())
    def collect(task: GeneratedTask) -> None:
        texts.append(task.text())

    collect()
    return texts


def test_the_same_seed_draws_the_same_text() -> None:
    first = _drawn(7)
    assert first == _drawn(7) and len(first) == 10 and first != _drawn(8)


@pytest.mark.parametrize("knobs", [{"windows": (128_000,)}, {"max_steps": 0}, {"degradations": ("sulk",)},
                                   {"policy": 0.9}])
def test_bad_knobs_are_refused(knobs: dict[str, Any]) -> None:
    with pytest.raises(InvalidArgument, match="ctxsim: task_scenarios"):
        task_scenarios(**knobs)


def test_a_policy_a_file_cannot_state_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="hysteresis"):
        task_scenarios(policy=PressurePolicy(hysteresis=0.1))
