"""The ``expect`` section of a scenario: which trackers must track or fail it, tolerance and thresholds; for a
task, the restarts, checkpoints and steps the reference loop must show and the catalogued loops to run.

Which keys apply to which kind of scenario is the schema's ``scope``: a session key in a
task scenario, or a task key without a task, is an error naming the key.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, get_args

from ...reference import Fallback
from .._schema import SECTIONS, SESSION, TASK, keys
from .._yaml import Map, Reader, join_path

__all__ = [
    "CTX_TRACKER_CHOICES",
    "DIRECTIONS",
    "Expectations",
    "ExpectedFailure",
    "LoopExpectations",
    "StepCounts",
    "ThresholdSpec",
    "read_expect",
]

CTX_TRACKER_CHOICES = ("pass", "fail", "skip")
DIRECTIONS = ("over", "under", "none")
"""Where an estimate lies at a failing point: above the truth band, below it, or absent (None)."""


@dataclass(frozen=True)
class ExpectedFailure:
    """How a tracker of ``expect.fail`` must fail: each field given must hold of the run (None: not stated).

    A crash, a stall, a run judged nowhere or one with no estimate at any point never meets it."""

    tracker: str
    first: str | None = None
    """The label of the first failing point (``q1 call 3``)."""
    direction: str | None = None
    """``over``, ``under`` or ``none`` (no estimate where the truth is knowable), at ``first``."""
    range: tuple[int, int] | None = None
    """The estimate at the first failing point lies within ``[low, high]``."""
    line: int = 0

    @property
    def pinned(self) -> bool:
        """True when the failure is named: at least its first point and direction."""
        return self.first is not None and self.direction is not None

    def describe(self) -> str:
        """``first failing point q1 result, over, estimate in 1,430,000..1,440,000``; ``any failure`` unstated."""
        parts = []
        if self.first is not None:
            parts.append(f"first failing point {self.first}")
        if self.direction is not None:
            parts.append({"over": "over the truth", "under": "under the truth",
                          "none": "no estimate where the truth is knowable"}[self.direction])
        if self.range is not None:
            parts.append(f"estimate in {self.range[0]:,}..{self.range[1]:,}")
        return ", ".join(parts) or "any failure (not a crash, not silence)"



@dataclass(frozen=True)
class ThresholdSpec:
    """A ratio threshold of ``expect.threshold`` and where the file says the truth crosses it."""

    at: float
    """The threshold, a fraction of the window."""
    fires: tuple[str, ...] | None = None
    """The labels of the points where the truth crosses, as the file states them (None: not stated)."""
    line: int = 0
    """The line of the threshold's mapping."""
    fires_line: int = 0
    """The line of ``fires``, when given."""


@dataclass(frozen=True)
class StepCounts:
    """``expect.steps``: what the author says happens to the task's steps (None: not stated)."""

    done_once: int | None = None
    redone: int | None = None
    skipped: int | None = None
    per_session: tuple[int, ...] | None = None


@dataclass(frozen=True)
class LoopExpectations:
    """What a task scenario expects of restart loops (every field None or empty when not stated)."""

    restarts: int | None = None
    checkpoint: tuple[str, ...] | None = None
    """The fallback taken at each restart, in order."""
    steps: StepCounts | None = None
    must_fail: tuple[str, ...] = ()
    """Catalogued loops the loop checks must catch."""
    must_pass: tuple[str, ...] = ()
    """Catalogued loops that must keep every invariant."""
    lines: dict[str, int] = field(default_factory=dict)
    """``expect.<key>`` and ``expect.steps.<key>`` lines, and ``loop:<name>`` for each listed loop."""

    @property
    def stated(self) -> bool:
        """True when any expectation about the reference loop's run is given."""
        return self.restarts is not None or self.checkpoint is not None or self.steps is not None


@dataclass(frozen=True)
class Expectations:
    """Everything ``expect`` says, with defaults filled in."""

    tolerance: int = 0
    reference: bool = True
    must_fail: tuple[str, ...] = ()
    must_pass: tuple[str, ...] = ()
    ctx_tracker: str = "pass"
    failures: dict[str, ExpectedFailure] = field(default_factory=dict)
    """How each tracker of ``must_fail`` must fail, by name."""
    thresholds: tuple[ThresholdSpec, ...] = ()
    lines: dict[str, int] = field(default_factory=dict)
    """``expect``/``expect.<key>`` lines, and ``tracker:<name>`` for each listed tracker."""
    loop: LoopExpectations = field(default_factory=LoopExpectations)
    """What a task scenario expects of restart loops."""


def _check_scope(r: Reader, expect: Map, task: bool) -> None:
    for key in SECTIONS["expect"].keys:
        if key.name not in expect:
            continue
        where = (expect.key_lines[key.name], f"expect.{key.name}")
        if key.scope == TASK and not task:
            raise r.error(*where, "applies to a task scenario (a restart loop working through a task); this "
                                  "scenario has no task")
        if key.scope == SESSION and task:
            raise r.error(*where, "applies to a simulated or recorded session, not to a task: a task scenario "
                                  "states expect.restarts, expect.checkpoint, expect.steps and expect.loop")


def read_expect(r: Reader, value: Any, line: int, known: Collection[str], *, task: bool = False,
                loops: Mapping[str, str] | None = None) -> Expectations:
    """Validate ``expect`` (``value`` at ``line``); ``known`` are the catalogued tracker names, ``loops`` the
    catalogued loops (name: the invariant it breaks, empty for a correct loop); ``task`` says whether the scenario
    is a task scenario."""
    expect = r.mapping(value, line, "expect", keys("expect"), empty_ok=True)
    lines = {f"expect.{key}": expect.key_lines[key] for key in expect}
    _check_scope(r, expect, task)
    tolerance = r.get(expect, "tolerance", "expect", r.count, 0)
    reference = r.get(expect, "reference", "expect", r.choice(("pass", "fail")), "pass")
    ctx_tracker = r.get(expect, "ctx_tracker", "expect", r.choice(CTX_TRACKER_CHOICES),
                        "pass" if reference == "pass" else "skip")
    failures: dict[str, ExpectedFailure] = {}
    lists = _name_lists(r, expect, "expect", known, "tracker", lines, failures)
    thresholds = _thresholds(r, expect) if "threshold" in expect else ()
    loop = _loop_expectations(r, expect, loops or {}) if task else LoopExpectations()
    return Expectations(tolerance, reference == "pass", lists["fail"], lists["pass"], ctx_tracker, failures,
                        thresholds, lines, loop)


def _name_lists(r: Reader, m: Map, path: str, known: Collection[str], what: str, lines: dict[str, int],
                failures: dict[str, ExpectedFailure] | None = None) -> dict[str, tuple[str, ...]]:
    """``m``'s ``fail`` and ``pass`` lists of catalogued ``what`` names (a name in one list only); each name's line
    goes into ``lines`` as ``<what>:<name>``. With ``failures``, an item of ``fail`` may also be ``NAME: {first,
    direction, range}`` (how it fails), read into ``failures``; every name of ``fail`` gets an entry there."""
    lists: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for key in ("fail", "pass"):
        if key not in m:
            lists[key] = ()
            continue
        key_path = join_path(path, key)
        seq = r.sequence(m[key], m.value_lines[key], key_path)
        names = []
        for i, item in enumerate(seq):
            where = (seq.item_lines[i], f"{key_path}[{i}]")
            signature = None
            if failures is not None and key == "fail" and isinstance(item, Map):
                if len(item) != 1:
                    raise r.error(*where, "an expected failure is a tracker name, or one mapping "
                                          "NAME: {first, direction, range}")
                item, signature = next(iter(item.items()))
            name = r.string(item, *where)
            if name == "reference":
                raise r.error(*where, "use expect.reference for the reference " + ("loop" if what == "loop" else
                                                                                   "tracker"))
            if name in seen:
                raise r.error(*where, f"{name!r} is already listed in {join_path(path, seen[name])}")
            if name not in known:
                hint = difflib.get_close_matches(name, list(known), n=1)
                suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise r.error(*where, f"no {what} {name!r} in the catalogue{suggestion}; known: "
                                      f"{', '.join(sorted(known))}")
            seen[name] = key
            names.append(name)
            if failures is not None and key == "fail":
                failures[name] = _expected_failure(r, name, signature, *where)
            lines[f"{what}:{name}"] = seq.item_lines[i]
        lists[key] = tuple(names)
    return lists


def _expected_failure(r: Reader, name: str, value: Any, line: int, path: str) -> ExpectedFailure:
    """The failure ``expect.fail[i]`` names for tracker ``name`` (``value``: its mapping, or None)."""
    if value is None:
        return ExpectedFailure(name, line=line)
    path = join_path(path, name)
    m = r.mapping(value, line, path, keys("expect.fail[]"))
    first = r.get(m, "first", path, r.string)
    direction = r.get(m, "direction", path, r.choice(DIRECTIONS))
    bounds = None
    if "range" in m:
        seq = r.sequence(m["range"], m.value_lines["range"], join_path(path, "range"))
        if len(seq) != 2:
            raise r.error(m.value_lines["range"], join_path(path, "range"), f"expected [low, high], got {len(seq)} "
                                                                           f"items")
        # estimates, not tokens of the world: a broken tracker's may be far above MAX_TOKENS (digits stay bounded)
        low, high = (r.integer(v, seq.item_lines[i], f"{path}.range[{i}]") for i, v in enumerate(seq))
        if low > high:
            raise r.error(m.value_lines["range"], join_path(path, "range"), f"low {low:,} is above high {high:,}")
        bounds = (low, high)
    if direction == "none" and bounds is not None:
        raise r.error(m.value_lines["range"], join_path(path, "range"), "direction none means no estimate: a range "
                                                                       "cannot hold")
    return ExpectedFailure(name, first, direction, bounds, line)


def _loop_expectations(r: Reader, expect: Map, loops: Mapping[str, str]) -> LoopExpectations:
    lines = {f"expect.{key}": expect.key_lines[key] for key in expect}
    restarts = r.get(expect, "restarts", "expect", r.count)
    checkpoint = None
    if "checkpoint" in expect:
        seq = r.sequence(expect["checkpoint"], expect.value_lines["checkpoint"], "expect.checkpoint")
        fallbacks = r.choice(get_args(Fallback))
        checkpoint = tuple(fallbacks(v, seq.item_lines[i], f"expect.checkpoint[{i}]")
                           for i, v in enumerate(seq))
    steps = None
    if "steps" in expect:
        m = r.mapping(expect["steps"], expect.value_lines["steps"], "expect.steps", keys("expect.steps"))
        lines.update({f"expect.steps.{key}": m.key_lines[key] for key in m})
        per = None
        if "per_session" in m:
            seq = r.sequence(m["per_session"], m.value_lines["per_session"], "expect.steps.per_session",
                             non_empty=True)
            per = tuple(r.count(v, seq.item_lines[i], f"expect.steps.per_session[{i}]") for i, v in enumerate(seq))
        done_once, redone, skipped = (r.get(m, key, "expect.steps", r.count)
                                      for key in ("done_once", "redone", "skipped"))
        steps = StepCounts(done_once, redone, skipped, per_session=per)
    lists: dict[str, tuple[str, ...]] = {"fail": (), "pass": ()}
    if "loop" in expect:
        m = r.mapping(expect["loop"], expect.value_lines["loop"], "expect.loop", keys("expect.loop"))
        lists = _name_lists(r, m, "expect.loop", loops, "loop", lines)
        for i, name in enumerate(lists["fail"]):
            if not loops[name]:
                raise r.error(lines[f"loop:{name}"], f"expect.loop.fail[{i}]",
                              f"{name!r} is the correct loop of the catalogue (it breaks no invariant): list it "
                              f"under expect.loop.pass")
    return LoopExpectations(restarts, checkpoint, steps, lists["fail"], lists["pass"], lines)


def _thresholds(r: Reader, expect: Map) -> tuple[ThresholdSpec, ...]:
    value, line = expect["threshold"], expect.value_lines["threshold"]
    if isinstance(value, Map):
        items, lines, paths = [value], [line], ["expect.threshold"]
    else:
        seq = r.sequence(value, line, "expect.threshold", non_empty=True)
        items, lines, paths = list(seq), seq.item_lines, [f"expect.threshold[{i}]" for i in range(len(seq))]
    out = []
    for item, at_line, path in zip(items, lines, paths):
        m = r.mapping(item, at_line, path, keys("expect.threshold"), required=("at",))
        at = m["at"]
        if isinstance(at, bool) or not isinstance(at, (int, float)) or not 0 < at <= 1:
            raise r.error(m.value_lines["at"], join_path(path, "at"),
                          f"expected a fraction of the window, 0 < at <= 1 (0.9 is 90%), got {at!r}")
        fires = None
        if "fires" in m:
            seq = r.sequence(m["fires"], m.value_lines["fires"], join_path(path, "fires"))
            fires = tuple(r.string(v, seq.item_lines[i], f"{path}.fires[{i}]") for i, v in enumerate(seq))
        out.append(ThresholdSpec(float(at), fires, m.line, m.value_lines.get("fires", m.line)))
    return tuple(out)
