"""The ``task`` section of a scenario: a task for the fake agent, the pressure policy and the checkpoint plan.

:func:`read_task` validates the section against :mod:`ctxsim.scenario` with the positions the YAML loader
kept and builds what a run needs: a :class:`ctxsim.agent.Task`, a :class:`ctxsim.reference.PressurePolicy` and the
agent's checkpoint plan. :func:`check_task_expectations` then refuses expectations no run of that task could
meet (more restarts than the bound, counts that do not add up to the task's steps).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ...agent import DEGRADATIONS, Task, TaskStep
from ...reference import PressurePolicy
from .._schema import keys
from .._yaml import Map, Reader, Seq, describe, join_path
from ._expect import LoopExpectations
from ._steps import MAX_TEXT_TOKENS

__all__ = ["MAX_TASK_STEPS", "TaskSpec", "check_task_expectations", "read_task"]

MAX_TASK_STEPS = 1_000
"""The most steps a scenario's task may have (a run takes about 2 ms a step)."""

_STEPS_PATH = "task.steps"


@dataclass(frozen=True)
class TaskSpec:
    """A scenario's task, and how the restart loop is set up to work through it."""

    task: Task
    policy: PressurePolicy
    """The setting the loop is told to use; its window is the task's."""
    checkpoints: str | tuple[str, ...] | Mapping[int, str] = "well_formed"
    """How the fake agent answers the n-th checkpoint request (:class:`ctxsim.agent.FakeAgent`)."""
    max_restarts: int = 10
    partial: bool = False
    """The loop's clients ask for ``include_partial_messages``."""

    def degradation(self, restart: int) -> str:
        """How the agent answers the checkpoint request of ``restart`` (1-based)."""
        plan = self.checkpoints
        if isinstance(plan, str):
            return plan
        if isinstance(plan, Mapping):
            return plan.get(restart, "well_formed")
        return plan[restart - 1] if restart <= len(plan) else "well_formed"


def _fraction(r: Reader, value: Any, line: int, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise r.error(line, path, f"expected a fraction of the effective window, a number > 0 (0.9 is 90%), "
                                  f"got {describe(value)}")
    return float(value)


def _steps(r: Reader, m: Map) -> list[tuple[str | None, int, int, bool]]:
    """``(id or None, tokens, line, traced)`` for every step, in order."""
    value, line = m["steps"], m.value_lines["steps"]
    if isinstance(value, int) and not isinstance(value, bool):
        n = r.integer(value, line, _STEPS_PATH, minimum=1, maximum=MAX_TASK_STEPS)
        if "tokens_per_step" not in m:
            raise r.error(m.key_lines["steps"], "task.tokens_per_step",
                          "required key is missing: give the tokens of each step when steps is a number")
        tokens = r.get(m, "tokens_per_step", "task", r.count)
        _check_text(r, tokens * n, line, _STEPS_PATH)
        return [(None, tokens, line, True)] * n
    if not isinstance(value, Seq):
        raise r.error(line, _STEPS_PATH, f"expected a number of steps or a list of steps, got {describe(value)}")
    seq = r.sequence(value, line, _STEPS_PATH, non_empty=True)
    if "tokens_per_step" in m:
        raise r.error(m.key_lines["tokens_per_step"], "task.tokens_per_step",
                      "give tokens_per_step with a number of steps, not with a list (each item has its tokens)")
    out: list[tuple[str | None, int, int, bool]] = []
    for i, item in enumerate(seq):
        where, path = seq.item_lines[i], f"{_STEPS_PATH}[{i}]"
        if isinstance(item, int) and not isinstance(item, bool):
            out.append((None, r.count(item, where, path), where, True))
        else:
            s = r.mapping(item, where, path, keys("task.steps[]"), required=("tokens",))
            tokens = r.get(s, "tokens", path, r.count)
            times = r.get(s, "times", path, lambda v, ln, p: r.integer(v, ln, p, minimum=1,
                                                                       maximum=MAX_TASK_STEPS), 1)
            ident = r.get(s, "id", path, r.string)
            if ident is not None and "times" in s:
                raise r.error(s.key_lines["id"], join_path(path, "id"), "an id names one step: not with times")
            traced = r.get(s, "traced", path, r.boolean, True)
            out += [(ident, tokens, where, traced)] * times
        if len(out) > MAX_TASK_STEPS:
            raise r.error(where, path, f"more than {MAX_TASK_STEPS:,} steps in one task")
        _check_text(r, sum(step[1] for step in out), where, path)
    return out


def _check_text(r: Reader, tokens: int, line: int, path: str) -> None:
    """The task's steps may make at most :data:`~._steps.MAX_TEXT_TOKENS` of text (each step's tool results)."""
    if tokens > MAX_TEXT_TOKENS:
        raise r.error(line, path, f"the task's steps make {tokens:,} tokens of text, more than "
                                  f"{MAX_TEXT_TOKENS:,}: a scenario holds at most that much")


def _policy(r: Reader, m: Map, window: int) -> PressurePolicy:
    path = "task.policy"
    p = r.mapping(m.get("policy"), m.value_lines.get("policy", m.line), path, keys(path), empty_ok=True)
    if "threshold" in p and "zones" in p:
        raise r.error(p.key_lines["zones"], join_path(path, "zones"),
                      "give either threshold (one restart threshold) or zones (graduated), not both")
    settings: dict[str, Any] = {"window": window, "reserve": r.get(p, "reserve", path, r.count, 0),
                                "max_tool_calls": r.get(p, "max_tool_calls", path, r.positive)}
    if "zones" in p:
        zpath = join_path(path, "zones")
        z = r.mapping(p["zones"], p.value_lines["zones"], zpath, keys("task.policy.zones"), required=("wind_down",))
        settings["restart_at"] = r.get(z, "wind_down", zpath, lambda v, ln, q: _fraction(r, v, ln, q))
        settings["mask_at"] = r.get(z, "mask", zpath, lambda v, ln, q: _fraction(r, v, ln, q))
        settings["wind_down"] = True
        if settings["mask_at"] is not None and settings["mask_at"] >= settings["restart_at"]:
            raise r.error(z.value_lines["mask"], join_path(zpath, "mask"),
                          f"the masking zone starts below wind_down ({settings['restart_at']!r}), got "
                          f"{settings['mask_at']!r}")
    else:
        settings["restart_at"] = r.get(p, "threshold", path, lambda v, ln, q: _fraction(r, v, ln, q), 0.9)
    if settings["reserve"] >= window:
        raise r.error(p.value_lines["reserve"], join_path(path, "reserve"),
                      f"a reserve of {settings['reserve']:,} tokens leaves nothing of the window ({window:,})")
    try:
        return PressurePolicy(**settings)
    except ValueError as exc:  # every rule is checked above; this names anything the policy adds later
        raise r.error(p.line, path, str(exc).removeprefix("ctxsim: ")) from None


def _unreadable(r: Reader, m: Map) -> frozenset[tuple[int, int]]:
    path = "task.unreadable_usage"
    seq = r.sequence(m["unreadable_usage"], m.value_lines["unreadable_usage"], path)
    out: set[tuple[int, int]] = set()
    for i, item in enumerate(seq):
        where, item_path = seq.item_lines[i], f"{path}[{i}]"
        turn = r.mapping(item, where, item_path, keys("task.unreadable_usage[]"), required=("session", "turn"))
        out.add((r.get(turn, "session", item_path, r.positive), r.get(turn, "turn", item_path, r.positive)))
    return frozenset(out)


def _cleared(r: Reader, m: Map) -> tuple[tuple[int, int, int], ...]:
    path = "task.clear_tool_results"
    seq = r.sequence(m["clear_tool_results"], m.value_lines["clear_tool_results"], path)
    out: list[tuple[int, int, int]] = []
    for i, item in enumerate(seq):
        where, item_path = seq.item_lines[i], f"{path}[{i}]"
        turn = r.mapping(item, where, item_path, keys("task.clear_tool_results[]"),
                         required=("session", "turn", "tokens"))
        at = (r.get(turn, "session", item_path, r.positive), r.get(turn, "turn", item_path, r.positive))
        if any(at == (s, t) for s, t, _ in out):
            raise r.error(where, item_path, f"session {at[0]}, turn {at[1]} is cleared twice: give one item a turn")
        out.append((*at, r.get(turn, "tokens", item_path, r.positive)))
    return tuple(out)


def _degradation(r: Reader, known: Mapping[str, str]) -> Callable[[Any, int, str], str]:
    def check(value: Any, line: int, path: str) -> str:
        if not isinstance(value, str) or value not in known:
            hint = difflib.get_close_matches(str(value), list(known), n=1) if isinstance(value, str) else []
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise r.error(line, path, f"no checkpoint degradation {describe(value)}{suggestion}; known: "
                                      f"{', '.join(known)}")
        return str(value)
    return check


def _checkpoints(r: Reader, m: Map, max_restarts: int) -> str | tuple[str, ...] | Mapping[int, str]:
    path, value = "task.checkpoints", m["checkpoints"]
    line = m.value_lines["checkpoints"]
    check = _degradation(r, DEGRADATIONS)
    if isinstance(value, Seq):
        seq = r.sequence(value, line, path, non_empty=True)
        if len(seq) > max_restarts:
            raise r.error(line, path, f"{len(seq)} checkpoints planned, but the loop makes at most "
                                      f"max_restarts={max_restarts} restarts")
        return tuple(check(v, seq.item_lines[i], f"{path}[{i}]") for i, v in enumerate(seq))
    if isinstance(value, Map):
        plan = r.mapping(value, line, path, tuple(value))
        out: dict[int, str] = {}
        for restart, name in plan.items():
            where, item = plan.key_lines[restart], join_path(path, restart)
            if isinstance(restart, bool) or not isinstance(restart, int) or not 1 <= restart <= max_restarts:
                raise r.error(where, item, f"a restart number is 1..max_restarts ({max_restarts}), got "
                                           f"{describe(restart)}")
            out[restart] = check(name, plan.value_lines[restart], item)
        return out
    return check(value, line, path)


def read_task(r: Reader, value: Any, line: int, world: Mapping[str, Any], *, name: str,
              partial: bool) -> TaskSpec:
    """Validate ``task`` (``value`` at ``line``) and build the task, policy and plan.

    ``world`` holds the checked world settings (``window``, ``baseline``, ``model``, ``seed``, ``max_output``);
    ``name`` names the task (the scenario's name); ``partial`` is ``stream.partial``.
    """
    m = r.mapping(value, line, "task", keys("task"), required=("steps",))
    steps = _steps(r, m)
    width = max(2, len(str(len(steps))))
    ids = [ident or f"s{n:0{width}d}" for n, (ident, _, _, _) in enumerate(steps, 1)]
    seen: dict[str, int] = {}
    for ident, (_, _, where, _) in zip(ids, steps):
        if ident in seen:
            raise r.error(where, _STEPS_PATH, f"step id {ident!r} is used twice (also on line {seen[ident]})")
        seen[ident] = where
    settings = {
        "steps_per_turn": r.get(m, "steps_per_turn", "task", r.positive, 1),
        "prompt_tokens": r.get(m, "prompt_tokens", "task", r.count),
        "output_tokens": r.get(m, "output_tokens", "task", r.positive, 100),
        "autocompact_at": r.get(m, "autocompact_at", "task", r.positive),
        "summary_tokens": r.get(m, "summary_tokens", "task", r.count, 3_000),
    }
    if "unreadable_usage" in m:
        settings["unreadable"] = _unreadable(r, m)
    if "clear_tool_results" in m:
        settings["cleared"] = _cleared(r, m)
    floor = world["baseline"] + settings["summary_tokens"]
    if settings["autocompact_at"] is not None and not floor < settings["autocompact_at"] <= world["window"]:
        raise r.error(m.value_lines["autocompact_at"], "task.autocompact_at",
                      f"expected more than the baseline + summary_tokens ({floor:,}) and at most the window "
                      f"({world['window']:,}), got {settings['autocompact_at']:,}")
    max_restarts = r.get(m, "max_restarts", "task", r.count, 10)
    try:
        task = Task(tuple(TaskStep(i, tokens, traced) for i, (_, tokens, _, traced) in zip(ids, steps)), name=name,
                    window=world["window"], baseline=world["baseline"], model=world["model"], seed=world["seed"],
                    max_output_tokens=world["max_output"], **settings)
    except ValueError as exc:
        raise r.error(m.value_lines["steps"], _STEPS_PATH, str(exc).removeprefix("ctxsim: ")) from None
    plan = _checkpoints(r, m, max_restarts) if "checkpoints" in m else "well_formed"
    return TaskSpec(task, _policy(r, m, world["window"]), plan, max_restarts, partial)


def check_task_expectations(r: Reader, spec: TaskSpec, expect: LoopExpectations) -> None:
    """Refuse expectations no run of ``spec``'s task can meet; each error names the expectation's line."""
    lines, n = expect.lines, len(spec.task.steps)

    def fail(key: str, message: str) -> Exception:
        return r.error(lines.get(f"expect.{key}", 1), f"expect.{key}", message)

    if expect.restarts is not None and expect.restarts > spec.max_restarts:
        raise fail("restarts", f"{expect.restarts} restarts, but the loop stops at task.max_restarts="
                               f"{spec.max_restarts}")
    if expect.checkpoint is not None and expect.restarts is not None and len(expect.checkpoint) != expect.restarts:
        count = len(expect.checkpoint)
        raise fail("checkpoint", f"{count} checkpoint{'' if count == 1 else 's'} for expect.restarts: "
                                 f"{expect.restarts} (one checkpoint per restart)")
    steps = expect.steps
    if steps is None:
        return
    for key in ("done_once", "skipped"):
        value = getattr(steps, key)
        if value is not None and value > n:
            raise fail(f"steps.{key}", f"{value} steps, but the task has {n}")
    if steps.done_once is not None and steps.skipped is not None:
        if steps.done_once + steps.skipped > n:
            raise fail("steps.done_once", f"{steps.done_once} done once and {steps.skipped} skipped: more than the "
                                          f"task's {n} steps")
        if steps.redone == 0 and steps.done_once + steps.skipped != n:
            raise fail("steps.done_once", f"with nothing redone, the task's {n} steps are done once or skipped: "
                                          f"{steps.done_once} + {steps.skipped} != {n}")
    per = steps.per_session
    if per is None:
        return
    if expect.restarts is not None and len(per) != expect.restarts + 1:
        raise fail("steps.per_session", f"{len(per)} sessions for expect.restarts: {expect.restarts} (one entry "
                                        f"per session: restarts + 1)")
    if steps.redone is not None and steps.skipped is not None and sum(per) != n - steps.skipped + steps.redone:
        raise fail("steps.per_session", f"the sessions perform {sum(per)} steps in all, but {n} steps - "
                                        f"{steps.skipped} skipped + {steps.redone} redone = "
                                        f"{n - steps.skipped + steps.redone}")
