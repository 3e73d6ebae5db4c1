"""Hypothesis strategies for task scenarios: generated tasks, faults and checkpoint replies for a restart loop.

:func:`task_scenarios` draws a :class:`GeneratedTask`: a task scenario (:class:`ctxsim.scenario.TaskScenario`) as the
document of a scenario file, which prints as that file (``repr``, and Hypothesis' falsifying-example output) and
whose :attr:`GeneratedTask.scenario` is read back from that text, so what a loop was judged on is what the file
says. It draws:

- a window of 200,000 or 1,000,000 tokens (``claude-sonnet-4-5``, ``claude-opus-4-6``), a baseline of 8k to 30k
  (system prompt and tools), every prompt's size and every call's output;
- 1 to ``max_steps`` steps of 1 to 3 a turn, each with its size, traced (an edited file) or untraced (a deploy);
  mostly one to three sessions' worth (a restart or more), one task in eight ending before any crossing;
- a policy: one threshold or graduated zones (wind down, then restart; an optional masking zone), the reserve of
  Claude Code's autocompact buffer (0, 13k, 33k or 45k) and the tool-call fallback, unless one is given;
- Claude Code's autocompaction (at its own default trigger, or at a configured one near the threshold), old tool
  results cleared without a compaction (microcompaction, the API's context editing), garbled usage on chosen turns;
  every task states the summary a compaction leaves (``summary_tokens``), an autocompaction's or the one a
  ``/compact`` the loop sends leaves (through the SDK only the loop sends prompts, so a ``/compact`` is the loop's
  act, which the fake agent answers as Claude Code does);
- how the agent answers each checkpoint request: every way :data:`ctxsim.agent.DEGRADATIONS` names (a refusal, an
  empty block, a reply cut off, the template echoed, the block fenced or elsewhere in the reply, the request
  rejected as prompt too long), one for every restart or a list for the first ones.

**How often.** A bug that shows in one combination must not wait for a rare draw, so the draws follow swarm
testing (each task stresses a few things, not everything at once): two tasks in three plan a degraded checkpoint,
its first way drawn evenly from all of them, with the steps traced when the way leaves no usable state (so every
step is counted) and mostly untraced when it is lossless (so a loop that drops it loses work); at the first
session's crossing there is nothing, a compaction or cleared and garbled turns, one at a time, so one event does
not hide another.

**Only shapes Claude Code and a model produce, and only tasks a correct loop can finish.** The generator keeps
these invariants, so every counterexample is a bug of the loop, never of the task (the reference loop,
:func:`ctxsim.reference.run_with_restarts`, keeps every invariant on every task drawn; ``tests/strategies`` and
``benchmarks/bench_loop_fuzz.py`` check it without ever filtering a task by it):

1. **Progress.** A fresh session's first turn ends below the threshold: the baseline plus one turn's most
   (its prompt, per step a tool call and its result, the closing reply) stays under it, so every session does
   work before a restart is owed; so does a session just compacted (the baseline, the summary and one turn).
2. **Nothing reaches the window.** A correct loop's largest context is below the threshold before the turn that
   crosses it, plus that turn, the wind-down turn of a graduated policy and the checkpoint request: that stays
   within the window, so no request of a correct loop is rejected (a rejected checkpoint request is drawn as the
   ``prompt_too_long`` reply, where the checks know what it costs).
3. **Garbled usage never hides a crossing.** Usage is unreadable only on a turn whose truth is surely below the
   threshold, for any loop: a turn of a fresh session within the turns the baseline and the most a turn adds
   cannot cross, or a turn whose cleared tool results take the context from anything a correct loop reaches
   back below it. No tracker can see a crossing in garbage, so no loop may be blamed for missing one.
4. **No livelock.** A reply that leaves no usable state (refusal, empty block, cut off, prompt too long) costs a
   correct loop only the untraced steps; it is drawn for every restart only when every step is traced, else for
   the first restart only, so the task always ends.
5. **Enough restarts.** ``max_restarts`` is at least what a correct loop can need: the steps, done again once per
   degraded checkpoint that loses work, over the steps every session surely does.
6. **Sizes are exact.** Every prompt takes ``prompt_tokens``; one draw in two lands a turn of the first session
   exactly on the threshold (the boundary ``>=`` decides); events are drawn at the first session's crossing or
   the turns after it as well as elsewhere.

Draws shrink towards the fewest steps that still cross once, the first session's shape, no event and well-formed
checkpoints.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from ..agent import DEGRADATIONS, LOSSLESS
from ..reference import PressurePolicy
from ..scenario import TaskScenario, parse_scenario, task_yaml

__all__ = ["WINDOWS", "GeneratedTask", "task_scenarios"]

WINDOWS: dict[int, str] = {200_000: "claude-sonnet-4-5", 1_000_000: "claude-opus-4-6"}
"""The windows tasks are drawn in, and the model each is written with."""

_RESERVES = (0, 13_000, 33_000, 45_000)
"""Claude Code's autocompact buffers: none, and the buffers of its releases (research notes, ``/context``)."""
_THRESHOLDS = (0.9, 0.75, 0.8, 0.85, 0.95)
_MASKS = (None, 0.5, 0.7)
_MAX_OUTPUT = 32_000
_COMPACT_BUFFER = 13_000  # Claude Code's autocompact trigger: window - min(max_output, 20k) - 13k
_COSTLY_FIRST = ("refusal", "empty_block", "truncated", "prompt_too_long", "several_blocks", "template_echo",
                 "unclosed", "no_tags")
"""The order of the degraded checkpoint replies, which a shrunk counterexample moves towards (Hypothesis shrinks a
choice towards the first): those that leave no usable or no complete state, then those with the state elsewhere
than in one closed block; the fences and odd tags after. Drawing is even over all of them."""


@dataclass(frozen=True, repr=False)
class GeneratedTask:
    """A drawn task scenario: the document of its file (``name``, ``source``, ``world``, ``task``, ``expect``)."""

    document: dict[str, Any]
    comment: str = ""
    """Lines written above the file's keys (how the task was drawn, in words)."""
    threshold: int = 0
    """The drawn policy's restart threshold in tokens (for the comment and for tests)."""
    first_crossing: int | None = None
    """The work turn in which the first session crosses the threshold by the task's arithmetic (no events, the
    drawn policy), None when it never does."""

    def text(self, *, name: str | None = None, source: str | None = None, comment: str | None = None) -> str:
        """The scenario file's text (``name``, ``source``, ``comment`` replaced when given)."""
        doc = self.document
        return task_yaml(name=name or doc["name"], source=source or doc["source"], world=doc["world"],
                         task=doc["task"], expect=doc["expect"], description=doc.get("description", ""),
                         comment=self.comment if comment is None else comment)

    @cached_property
    def scenario(self) -> TaskScenario:
        """The scenario read back from :meth:`text`, as ``pytest --ctx-scenarios`` reads the file."""
        read = parse_scenario(self.text(), file=f"<{self.document['name']}>")
        assert isinstance(read, TaskScenario), "ctxsim: a generated task reads back as a task scenario"
        return read

    def __repr__(self) -> str:
        return self.text()

    def __reduce__(self) -> tuple[Any, ...]:  # the read-back scenario stays behind (it is rebuilt from the text)
        return (GeneratedTask, (self.document, self.comment, self.threshold, self.first_crossing))

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self.text())


def _policy_document(policy: PressurePolicy) -> dict[str, Any]:
    """``policy`` as a scenario's ``task.policy`` mapping."""
    if policy.hysteresis != PressurePolicy.hysteresis:
        raise InvalidArgument(f"ctxsim: task_scenarios(policy=...): a task scenario cannot state hysteresis "
                              f"{policy.hysteresis!r} (only the default {PressurePolicy.hysteresis!r})")
    doc: dict[str, Any]
    if policy.wind_down:
        zones: dict[str, Any] = {"wind_down": policy.restart_at}
        if policy.mask_at is not None:
            zones["mask"] = policy.mask_at
        doc = {"zones": zones}
    else:
        doc = {"threshold": policy.restart_at}
    if policy.reserve:
        doc["reserve"] = policy.reserve
    if policy.max_tool_calls is not None:
        doc["max_tool_calls"] = policy.max_tool_calls
    return doc


@st.composite
def _policies(draw: Any) -> PressurePolicy:
    fraction = draw(st.sampled_from(_THRESHOLDS))
    graduated = draw(st.booleans())
    mask = draw(st.sampled_from(_MASKS)) if graduated else None
    return PressurePolicy(restart_at=fraction, wind_down=graduated,
                          mask_at=mask if mask is not None and mask < fraction else None,
                          reserve=draw(st.sampled_from(_RESERVES)))


@dataclass
class _Shape:
    """The sizes of a drawn task, and its arithmetic (module docstring)."""

    window: int
    baseline: int
    prompt: int
    output: int
    per_turn: int
    threshold: int
    grace: int
    sizes: list[int]
    largest: int
    turns: int
    """About the work turns a fresh session holds before it crosses."""

    @property
    def growth(self) -> int:
        """The most one work turn adds to the context."""
        return self.prompt + self.per_turn * (self.output + self.largest) + self.output

    @property
    def safe_turns(self) -> int:
        """Work turns of any fresh session whose context is surely below the threshold."""
        return max(0, (self.threshold - self.baseline - 1) // self.growth)

    def context_after(self, turn: int) -> int:
        """The last call's prompt at the end of work turn ``turn`` of the first session, with no event."""
        done = min(len(self.sizes), turn * self.per_turn)
        calls = min(turn * (self.per_turn + 1), done + turn)
        return self.baseline + turn * self.prompt + sum(self.sizes[:done]) + (calls - 1) * self.output

    def first_crossing(self) -> int | None:
        turns = math.ceil(len(self.sizes) / self.per_turn)
        return next((t for t in range(1, turns + 1) if self.context_after(t) >= self.threshold), None)


def _shape(draw: Any, window: int, policy: PressurePolicy, max_steps: int, *, again: bool = False) -> _Shape:
    """The sizes of a task; ``again``: work for a second crossing after the first (a compaction near the first
    crossing leaves the session going, and what a loop does at its next crossing is the point)."""
    threshold = policy.threshold_tokens(window=window)
    grace = 1 if policy.wind_down else 0
    cap = max(50, (window - threshold) // (16 * (grace + 1)))  # prompts and outputs leave room above the threshold
    baseline = draw(st.integers(8_000, 30_000))
    prompt = draw(st.integers(50, min(2_000, cap)))
    output = draw(st.integers(20, min(2_000, cap)))
    per_turn = draw(st.sampled_from((1, 1, 1, 2, 3)))
    # invariants 1 and 2: a turn's most keeps a fresh session's first turn below the threshold, and the crossing
    # turn, the wind-down turn and the checkpoint request within the window
    room = min((window - threshold - prompt - 3 * output) // (grace + 1), threshold - baseline - prompt - 1)
    # about the turns a fresh session holds before it crosses
    turns = draw(st.integers(2, max(2, min(6, max_steps // per_turn // 2))))
    largest = max(0, min((room - prompt - (per_turn + 1) * output) // per_turn,
                         (threshold - baseline) // (turns * per_turn)))
    most = min(max_steps, 5 * turns * per_turn)
    sizes = [largest - d for d in draw(st.lists(st.integers(0, largest // 2), min_size=most, max_size=most))]
    shape = _Shape(window, baseline, prompt, output, per_turn, threshold, grace, sizes, largest, turns)
    first = shape.first_crossing()
    # the work, in lengths of the first session up to its crossing: most tasks need a restart or more (one shrinks
    # to one crossing), one in eight ends before any
    crossings = draw(st.sampled_from((1, 2, 1, 3, 1, 2, 3, 0)))
    crossings = max(crossings, 2) if again else crossings
    if first is None:
        n = draw(st.integers(1, most))
    elif crossings == 0:
        n = draw(st.integers(1, max(1, (first - 1) * per_turn)))
    else:
        n = min(most, (crossings * first + (2 if again else 0)) * per_turn + draw(st.integers(0, first * per_turn)))
    shape.sizes = sizes = sizes[:n]
    first = shape.first_crossing()
    if first is not None and draw(st.booleans()):  # invariant 6: land the crossing exactly on the threshold
        last = min(n, first * per_turn) - 1
        need = threshold - (shape.context_after(first) - sizes[last])
        if 0 <= need <= largest:
            sizes[last] = need
    return shape


def _checkpoints(draw: Any, names: tuple[str, ...]) -> str | list[str]:
    """The checkpoint plan: one way for every restart, or a way for each of the first restarts; ``[]`` for well
    formed checkpoints only (what it shrinks to). Two tasks in three plan a degraded reply, its first way drawn
    evenly from ``names`` (swarm testing: a bug in one way is found as fast as in any other)."""
    order = {name: k for k, name in enumerate(_COSTLY_FIRST)}
    degraded = tuple(sorted((name for name in names if name != "well_formed"), key=lambda n: order.get(n, 99)))
    if not degraded or draw(st.integers(0, 2)) == 0:
        return []
    if draw(st.integers(0, 2)) == 0:  # one way for every restart
        one: str = draw(st.sampled_from(degraded))
        return one
    # the first restarts each a different way (a correct loop handles every one), the later ones well formed
    plan: list[str] = draw(st.permutations(degraded))[:draw(st.integers(1, len(degraded)))]
    return plan


def _traced(draw: Any, n: int, plan: str | list[str]) -> list[bool]:
    """Which steps leave their work in the workspace. A reply that leaves no usable state costs a correct loop
    nothing only when every step is traced (so the checks can count every step), and a lossless reply a buggy
    loop drops costs it only the untraced steps: three tasks in four are drawn accordingly."""
    first = plan if isinstance(plan, str) else plan[0] if plan else "well_formed"
    if first not in LOSSLESS:
        how = draw(st.sampled_from(("none", "none", "none", "some")))
    elif first != "well_formed":
        how = draw(st.sampled_from(("some", "none", "some", "all")))
    else:
        how = draw(st.sampled_from(("none", "none", "some", "all")))
    return ([True] * n if how == "none" else [False] * n if how == "all"
            else draw(st.lists(st.booleans(), min_size=n, max_size=n)))


def _compaction(draw: Any, task: dict[str, Any], shape: _Shape, first: int | None, *, near: bool) -> None:
    """Claude Code's autocompaction: ``near`` the first session's crossing (in the turn after it, or configured
    near the threshold, where the two race), else at its default trigger or never. Every task states the summary a
    compaction leaves, an autocompaction's or a ``/compact`` the loop sends: below the threshold by a turn's most
    (invariant 1 holds after a compaction too)."""
    summary = min(draw(st.integers(1_000, 20_000)), shape.threshold - shape.baseline - shape.growth - 1)
    task["summary_tokens"] = max(0, summary)
    how = draw(st.sampled_from(("after-crossing", "configured") if near else ("none", "none", "claude-code")))
    if how == "none":
        return
    if how == "claude-code":  # its default trigger
        at = shape.window - min(_MAX_OUTPUT, 20_000) - _COMPACT_BUFFER
    elif how == "after-crossing" and first is not None:  # configured to fire in the turn after the first crossing
        reached = shape.context_after(first)
        at = min(shape.window, reached + 1 + draw(st.integers(0, shape.growth - 1)))
    else:  # CLAUDE_AUTOCOMPACT_PCT_OVERRIDE: near the loop's threshold, where the two race
        at = min(shape.window, shape.threshold + draw(st.integers(0, shape.growth)))
    if shape.baseline + task["summary_tokens"] < at:
        task["autocompact_at"] = at


def _events(draw: Any, task: dict[str, Any], shape: _Shape, first: int | None, *, near: bool) -> None:
    """Cleared tool results and garbled usage (invariants 3 and 6): ``near`` the first session's crossing (at it or
    in the turns after it), and anywhere else."""
    spots: list[tuple[int, int]] = []
    if near and first is not None:
        spots.append((1, first + draw(st.sampled_from((1, 1, 0, 2)))))
    for _ in range(draw(st.integers(0, 2))):
        spots.append((draw(st.integers(1, 2)), draw(st.integers(1, 15))))
    unreadable: list[dict[str, int]] = []
    cleared: list[dict[str, int]] = []
    for session, turn in spots:
        kind = draw(st.sampled_from(("both", "both", "cleared", "unreadable")))
        at = {"session": session, "turn": turn}
        if kind in ("cleared", "both") and all((c["session"], c["turn"]) != (session, turn) for c in cleared):
            # garbled too: clear more than a correct loop's context can hold above the threshold (the crossing
            # turn, the wind-down turn) plus the turn itself, so the truth is surely below it
            low = (shape.grace + 2) * shape.growth if kind == "both" else 1_000
            cleared.append(at | {"tokens": draw(st.integers(low, max(low, shape.window // 2)))})
            if kind == "both":
                unreadable.append(at)
        elif kind == "unreadable" and turn <= shape.safe_turns:
            unreadable.append(at)
    if unreadable:
        task["unreadable_usage"] = unreadable
    if cleared:
        task["clear_tool_results"] = cleared


@st.composite
def _tasks(draw: Any, policy: PressurePolicy | None, windows: tuple[int, ...], max_steps: int,
           degradations: tuple[str, ...]) -> GeneratedTask:
    window = draw(st.sampled_from(windows))
    chosen = policy if policy is not None else draw(_policies())
    # what happens at the first session's crossing: nothing, a compaction or cleared and garbled turns, one at a
    # time (swarm testing: one event near the crossing does not hide another)
    near = draw(st.sampled_from(("nothing", "compaction", "events")))
    shape = _shape(draw, window, chosen, max_steps, again=near == "compaction")
    if policy is None and draw(st.integers(0, 2)) == 2:  # the tool-call fallback, reached before the threshold or not
        per_session = shape.turns * shape.per_turn
        chosen = replace(chosen, max_tool_calls=draw(st.integers(max(2, per_session // 2), 2 * per_session)))
    n = len(shape.sizes)
    plan = _checkpoints(draw, degradations)
    traced = _traced(draw, n, plan)
    if not all(traced) and isinstance(plan, str) and plan not in LOSSLESS:
        plan = [plan]  # invariant 4: a reply losing the untraced work at every restart could livelock any loop
    elif not all(traced) and isinstance(plan, list):  # the later restarts lose nothing: every step is counted
        plan = plan[:1] + [name for name in plan[1:] if name in LOSSLESS]
    task: dict[str, Any] = {"steps": [s if t else {"tokens": s, "traced": False} for s, t in zip(shape.sizes, traced)]}
    if shape.per_turn != 1:
        task["steps_per_turn"] = shape.per_turn
    task["prompt_tokens"], task["output_tokens"] = shape.prompt, shape.output
    task["policy"] = _policy_document(chosen)
    if plan:
        task["checkpoints"] = plan
    first = shape.first_crossing()
    near = near if first is not None else "nothing"
    _compaction(draw, task, shape, first, near=near == "compaction")
    _events(draw, task, shape, first, near=near == "events")
    # invariant 5: every session surely does this many new steps; each degraded reply may cost all done so far
    progress = max(1, min(max(1, shape.safe_turns) * shape.per_turn, chosen.max_tool_calls or n))
    planned = [plan] if isinstance(plan, str) else plan
    degraded = 0 if all(traced) else sum(1 for name in planned if name not in LOSSLESS)
    task["max_restarts"] = max(len(planned), math.ceil(n * (1 + degraded) / progress) + degraded + 1)
    seed = draw(st.integers(0, 999))
    effective = chosen.effective_window(window)
    comment = (f"Generated: {n} step(s) of up to {shape.largest:,} tokens, {shape.per_turn} a turn; a turn adds at "
               f"most {shape.growth:,} tokens; the threshold is {shape.threshold:,} tokens "
               f"({float(Fraction(shape.threshold, effective)):.2%} of the effective window {effective:,}); by the "
               f"sizes alone the first session crosses it in work turn {first}.")
    document = {"name": f"generated-task-{seed}", "source": "ctxsim.strategies.task_scenarios",
                "world": {"model": WINDOWS[window], "window": window, "baseline": shape.baseline, "seed": seed},
                "task": task, "expect": {"reference": "pass"}}
    return GeneratedTask(document, comment, shape.threshold, first)


def task_scenarios(*, policy: PressurePolicy | None = None, windows: tuple[int, ...] = tuple(WINDOWS),
                   max_steps: int = 30, degradations: tuple[str, ...] = tuple(DEGRADATIONS)
                   ) -> SearchStrategy[GeneratedTask]:
    """Task scenarios for a restart loop, within the invariants of the module docstring.

    ``policy``: the loop's own policy (a loop that declares one restarts by it, so the tasks are drawn for it); by
    default policies are drawn too. ``windows``: of :data:`WINDOWS`. ``max_steps``: 1 or more. ``degradations``:
    the checkpoint replies to draw from (:data:`ctxsim.agent.DEGRADATIONS`, ``well_formed`` first).
    """
    if not windows or any(w not in WINDOWS for w in windows):
        raise InvalidArgument(f"ctxsim: task_scenarios(windows={windows!r}): each of {tuple(WINDOWS)}")
    if type(max_steps) is not int or max_steps < 1:
        raise InvalidArgument(f"ctxsim: task_scenarios(max_steps={max_steps!r}): an integer >= 1")
    unknown = [d for d in degradations if d not in DEGRADATIONS]
    if not degradations or unknown:
        raise InvalidArgument(f"ctxsim: task_scenarios(degradations=...): unknown {unknown!r}; known: "
                              f"{', '.join(DEGRADATIONS)}")
    if policy is not None and not isinstance(policy, PressurePolicy):
        raise InvalidArgument(f"ctxsim: task_scenarios(policy={policy!r}): a PressurePolicy or None")
    if policy is not None:
        _policy_document(policy)  # refuses a policy a scenario file cannot state
    for window in windows:
        if policy is not None and policy.threshold_tokens(window=window) > 0.95 * window:
            raise InvalidArgument(f"ctxsim: task_scenarios(policy=...): its threshold of "
                                  f"{policy.threshold_tokens(window=window):,} tokens leaves less than 5% of a "
                                  f"{window:,} window above it: no task can cross it without overflowing the window")
    return _tasks(policy, tuple(windows), max_steps, tuple(degradations))
