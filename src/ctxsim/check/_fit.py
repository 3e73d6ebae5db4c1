"""Fitting a tracker's numbers against what it could have read: every :class:`~ctxsim.trackers.Reading` of the
stream evaluated at each observation point (:class:`Readings`, one pass over the frames), and the readings that
give the tracker's own numbers at its failing points (:func:`diagnose`).

A fit is exact (a difference of at most 2 tokens or 0.01%, what a ratio's rounding leaves; a gauge's band holds
the value), never a near miss: two formulas 1% apart are two formulas. Of the readings that give every failing
number, those that agree with the tracker at the most of all its points are named, the simplest first, and the
rest of that tie is said to be what the stream cannot tell apart. A reading that gives only some of the failing
numbers is named as a partial fit, with how many it explains.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..trackers import AUTOCOMPACT_SHARE, KEYS, Reading, every_reading

if TYPE_CHECKING:
    from ..wire import Script
    from ._report import Point, Report

__all__ = ["Diagnosis", "Readings", "agrees", "diagnose"]

_LANES = [(s, c) for s in ("call", "row", "finished", "both-ids") for c in ("main", "all")]


def _count(value: Any) -> int:
    """A usage field as a reading adds it: an int, a whole float, else 0."""
    if type(value) is int:
        return value
    if isinstance(value, float) and value == value and abs(value) != float("inf"):
        return int(value)
    return 0


def _fields(usage: Mapping[str, Any]) -> dict[str, int]:
    names = {"in": "input_tokens", "cc": "cache_creation_input_tokens", "cr": "cache_read_input_tokens",
             "out": "output_tokens"}
    return {k: _count(usage.get(names[k])) for k in KEYS}


_Snap = tuple[dict[str, int] | None, dict[str, int], dict[str, int], bool, int, bool]
"""A lane at one point: the latest message's fields, the totals, the peaks, whether a compaction came after the
latest message (and its post_tokens), whether a /clear did."""


@dataclass
class _Lane:
    """What every reading of one source and chain knows so far."""

    last: dict[str, int] | None = None
    total: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KEYS, 0))
    peak: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KEYS, 0))
    compacted: bool = False
    post: int = 0
    cleared: bool = False
    seen: set[Any] = field(default_factory=set)
    current: Any = None
    pending: dict[Any, dict[str, int]] = field(default_factory=dict)

    def snapshot(self) -> _Snap:
        return (self.last, dict(self.total), dict(self.peak), self.compacted, self.post, self.cleared)

    def add(self, values: Mapping[str, int], sign: int = 1) -> None:
        for k in KEYS:
            self.total[k] += sign * values[k]

    def row(self, source: str, chain: str, data: Mapping[str, Any], message: Mapping[str, Any],
            values: dict[str, int]) -> None:
        ident = message.get("id")
        if source == "call" and ident in self.seen and ident != self.current:
            return  # a replay of an earlier call
        prompt = values["in"] + values["cc"] + values["cr"]
        if (chain == "all" or prompt) and source in ("call", "row"):
            self.last, self.compacted, self.cleared, self.current = values, False, False, ident
        if source == "call":
            if ident not in self.seen or ident is None:
                self.add(values)
                self._peak(values)
        elif source == "row":
            self.add(values)
            self._peak(values)
        elif source == "both-ids":
            request = data.get("request_id")
            key = f"{ident}:{request}" if ident and request else None
            if key is None or key not in self.seen:
                self.seen.add(key)
                self.add(values)
        else:  # finished rows: the last partial of an unfinished call counts until a finished row replaces it
            if message.get("stop_reason"):
                self.seen.add(ident)
                self.add(values)
                self.add(self.pending.pop(ident, dict.fromkeys(KEYS, 0)), -1)
            elif ident not in self.seen:
                self.add(values)
                self.add(self.pending.get(ident, dict.fromkeys(KEYS, 0)), -1)
                self.pending[ident] = values
        if source == "call":
            self.seen.add(ident)

    def _peak(self, values: Mapping[str, int]) -> None:
        for k in KEYS:
            self.peak[k] = max(self.peak[k], values[k])


class Readings:
    """Every reading of one stream (:func:`ctxsim.trackers.every_reading`), at each of its observation points:
    :meth:`value` of a reading at a point. Built in one pass over the frames; each reading's values are computed
    when first asked."""

    def __init__(self, scripts: Iterable[Script]) -> None:
        self.points: dict[int, dict[tuple[str, str], _Snap]] = {}
        self.reported: dict[int, int] = {}
        self.compaction = False
        self.reset = False
        self.quirks: set[str] = set()
        """What the stream's usage holds that its top-level fields do not say: ``iterations`` (a usage listing
        several inference iterations, whose top level sums them), ``nested`` (cache writes only in the nested
        breakdown)."""
        sessions: set[Any] = set()
        self.text: dict[int, int] = {}
        """Characters / 4 of the tool results so far (each block's rounded down), by observation point."""
        chars = 0
        self._memo: dict[tuple[Reading, int], int | None] = {}
        lanes = {lane: _Lane() for lane in (*_LANES, ("result", "main"))}
        window, model = 200_000, None
        for script in scripts:
            for frame in script.frames:
                data = frame.data
                kind = data.get("type") if isinstance(data, dict) else None
                if kind == "assistant":
                    message = data.get("message")
                    usage = message.get("usage") if isinstance(message, dict) else None
                    if isinstance(message, dict) and isinstance(usage, dict) and usage:
                        values = _fields(usage)
                        self._quirks(usage)
                        side = data.get("parent_tool_use_id") is not None or message.get("model") == "<synthetic>"
                        if not side:
                            model = message.get("model")
                        for (source, chain), lane in lanes.items():
                            if source != "result" and (chain == "all" or not side):
                                lane.row(source, chain, data, message, values)
                elif kind == "user":
                    chars += _tool_result_chars(data.get("message"))
                elif kind == "system" and data.get("subtype") == "compact_boundary":
                    self.compaction = True
                    meta = data.get("compact_metadata")
                    post = _count(meta.get("post_tokens")) if isinstance(meta, dict) else 0
                    for lane in lanes.values():
                        lane.compacted, lane.post = True, post
                elif kind == "system" and data.get("subtype") == "init":
                    sessions.add(data.get("session_id"))
                    self.reset |= len(sessions) > 1
                elif kind == "conversation_reset":  # a latest message's reading forgets; a result's keeps
                    self.reset = True
                    for (source, _), lane in lanes.items():
                        if source != "result":
                            lane.cleared = True
                elif kind == "result":
                    usage = data.get("usage")
                    if isinstance(usage, dict):
                        values = _fields(usage)
                        lane = lanes["result", "main"]
                        lane.last, lane.compacted = values, False
                        lane.add(values)
                    entries = data.get("modelUsage")
                    if isinstance(entries, dict) and entries:
                        entry = entries.get(model) if model in entries else next(iter(entries.values()))
                        reported = entry.get("contextWindow") if isinstance(entry, dict) else None
                        window = reported if type(reported) is int and reported > 0 else window
                observation = frame.observation
                if observation is not None and observation.index not in self.points:
                    self.points[observation.index] = {k: lane.snapshot() for k, lane in lanes.items()}
                    self.reported[observation.index] = window
                    self.text[observation.index] = chars

    def _quirks(self, usage: Mapping[str, Any]) -> None:
        iterations = usage.get("iterations")
        if isinstance(iterations, list) and len(iterations) > 1:
            self.quirks.add("iterations")
        nested = usage.get("cache_creation")
        if not usage.get("cache_creation_input_tokens") and isinstance(nested, dict) and any(
                _count(v) for v in nested.values()):
            self.quirks.add("nested")

    def value(self, reading: Reading, index: int) -> int | None:
        """What ``reading`` gives at observation point ``index`` (None: nothing to read yet, or unknown)."""
        key = (reading, index)
        if key in self._memo:
            return self._memo[key]
        value: int | None
        if reading.source == "text":
            value = int(self.text[index] * reading.overhead)
            self._memo[key] = value
            return value
        last, total, peak, compacted, post, cleared = self.points[index][reading.source, reading.chain]
        if reading.aggregate == "last":
            if cleared and reading.at_reset == "forget":
                value = None
            elif compacted and reading.source != "result" and reading.after_compaction != "keep":
                value = post if reading.after_compaction == "post-or-zero" else None
            else:
                value = None if last is None else sum(last[k] for k in reading.keys)
            if value is not None and reading.per == "autocompact":
                value = round(value * AUTOCOMPACT_SHARE[0] / AUTOCOMPACT_SHARE[1])
        else:
            value = sum(total[k] for k in reading.keys) + sum(peak[k] for k in reading.peak)
        if value is not None and reading.cap != "none":
            value = min(value, 200_000 if reading.cap == "200k" else self.reported[index])
        self._memo[key] = value
        return value


def _tool_result_chars(message: Any) -> int:
    """Characters / 4 of the tool results of a user message, each block's rounded down (a block's content as the
    SDK hands it over: its text, or the string of what it holds)."""
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return 0
    out = 0
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            inner = block.get("content")
            out += len(inner if isinstance(inner, str) else str(inner or "")) // 4
    return out


def agrees(point: Point, value: int | None) -> bool:
    """The tracker's estimate at ``point`` is ``value``: both unknown, within a gauge's band, both 0, or at most 2
    tokens or 0.01% apart."""
    if value is None or point.estimate is None:
        return value is None and point.estimate is None
    if point.band is not None:
        return point.band[0] - 2 <= value <= point.band[1] + 2
    if not point.estimate or not value:
        return point.estimate == value  # rounding never makes a count 0, nor 0 a count
    return abs(point.estimate - value) <= max(2, abs(value) // 10_000)


@dataclass(frozen=True)
class Diagnosis:
    """What a failing tracker's numbers are: the readings that give them (:attr:`ties`, simplest first; the first
    is named), at which failing points (:attr:`explained` of :attr:`failing`), and the catalogue entries whose
    formula it is (:attr:`examples`)."""

    ties: tuple[Reading, ...]
    """Every reading that fits as well as the first, simplest first: the stream cannot tell them apart."""
    explained: frozenset[int]
    """The failing observation points the readings give the tracker's number at."""
    failing: frozenset[int]
    """Every failing (knowable) observation point."""
    examples: tuple[str, ...] = ()
    """Catalogue entries (:data:`ctxsim.trackers.catalogue.CATALOGUE`) whose declared reading is among :attr:`ties`."""
    compaction: bool = False
    """The stream has a compaction (the text then says what the reading does there)."""
    reset: bool = False
    """The stream has a ``/clear`` or a new session (the text then says what the reading does there)."""
    quirks: frozenset[str] = frozenset()
    """Where the named reading is the plain one: what the stream's usage holds that its top-level fields do not
    say (:attr:`Readings.quirks`, and ``inclusive`` for a gateway's usage)."""

    @property
    def reading(self) -> Reading:
        """The reading named: the simplest of :attr:`ties`."""
        return self.ties[0]

    @property
    def partial(self) -> bool:
        """The reading gives the tracker's number at some failing points only."""
        return self.explained != self.failing

    def text(self) -> str:
        """The likely cause in the user's words: ``your number is the latest result message's usage: ...``, the
        catalogue entries that share it, what the stream cannot tell apart, and how much of the failure it
        explains."""
        plain = self.reading.complexity == 0
        text = f"your number is {self.reading.describe(compaction=self.compaction, reset=self.reset)}"
        if plain:
            text += _AS_TOP_LEVEL + "; ".join(_QUIRKS[q] for q in sorted(self.quirks)) if self.quirks else ""
        elif self.examples:
            text += f" (as in {', '.join(self.examples[:3])})"
        if len(self.ties) > 1 and not plain:
            other = self.ties[1].describe(compaction=self.compaction, reset=self.reset)
            more = f" and {len(self.ties) - 2} more" if len(self.ties) > 2 else ""
            text += f"; this stream cannot tell it from: {other}{more}"
        if self.partial:
            text += f"; this explains {len(self.explained)} of the {len(self.failing)} failing points"
        return text


_AS_TOP_LEVEL = ", read off the top-level usage fields as they stand: "
_QUIRKS = {
    "iterations": "where usage.iterations lists several inference iterations the top level sums them, and the "
                  "context is the last message iteration's",
    "nested": "where cache_creation_input_tokens is 0 the cache writes are in the nested cache_creation breakdown",
    "inclusive": "this provider's input_tokens already holds the cache counts (an inclusive gateway), so adding "
                 "them counts them twice",
}


def diagnose(report: Report, readings: Readings, *, exclude: Iterable[int] = (),
             declared: Mapping[str, Reading] | None = None) -> Diagnosis | None:
    """The readings of ``readings`` (the stream ``report`` was run over) that give ``report``'s failing numbers,
    or None when none gives any (or the tracker crashed, stalled or could not be read). ``exclude``: failing points
    explained otherwise (not knowable, Claude Code's own payload wrong). ``declared``: the readings catalogue
    entries declare, by name, for :attr:`Diagnosis.examples` (default :data:`ctxsim.trackers.catalogue.CATALOGUE`'s)."""
    if report.crash is not None or report.stall is not None or report.error is not None:
        return None
    skip = set(exclude)
    failing = [p for p in report.failures if p.observation.truth.knowable and p.observation.index not in skip]
    points = [p for p in report.points if p.observation.index in readings.points]
    if not failing or any(p.observation.index not in readings.points for p in failing):
        return None
    best, ties = _best(readings, failing, points, blank=False)
    if not ties:  # only readings agreeing where both say nothing or 0: named only where one or two do
        best, ties = _best(readings, failing, points, blank=True)
        ties = ties if len(ties) <= _BLANK_TIES else []
    if not ties or not _enough(best[0], len(failing)):
        return None
    named = tuple(r for r, _ in ties)
    if declared is None:
        from ..trackers.catalogue import CATALOGUE

        declared = {name: e.reading for name, e in CATALOGUE.items() if e.reading is not None}
    examples = tuple(name for name, reading in declared.items() if reading in named)
    quirks = frozenset(readings.quirks | ({"inclusive"} if report.session.usage == "inclusive" else set()))
    return Diagnosis(named, ties[0][1], frozenset(p.observation.index for p in failing), examples,
                     readings.compaction, readings.reset, quirks)


_BLANK_TIES = 2
"""A tracker whose numbers agree with readings only where both say nothing or 0 is named only when at most this
many readings do: more, and nothing in the stream tells its formula."""


def _best(readings: Readings, failing: list[Point], points: list[Point], *,
          blank: bool) -> tuple[tuple[int, int], list[tuple[Reading, frozenset[int]]]]:
    """The readings that give the most failing numbers, then agree at the most points, with that score;
    ``blank``: those that agree only where both say nothing or 0 (else those are left out)."""
    best: tuple[int, int] = (0, 0)
    ties: list[tuple[Reading, frozenset[int]]] = []
    for reading in _candidates():
        explained = frozenset(p.observation.index for p in failing
                              if agrees(p, readings.value(reading, p.observation.index)))
        if not explained or len(explained) < best[0]:
            continue
        agreeing = [p for p in points if agrees(p, readings.value(reading, p.observation.index))]
        if all(not p.estimate for p in agreeing) != blank:
            continue
        score = (len(explained), len(agreeing))
        if score > best:
            best, ties = score, [(reading, explained)]
        elif score == best:
            ties.append((reading, explained))
    return best, ties


def _enough(explained: int, failing: int) -> bool:
    """A partial fit is named when it gives at least half the failing numbers, and two or more of them."""
    return explained == failing or (explained >= 2 and 2 * explained >= failing)


_EVERY: list[Reading] = []


def _candidates() -> Sequence[Reading]:
    if not _EVERY:
        _EVERY.extend(every_reading())
    return _EVERY
