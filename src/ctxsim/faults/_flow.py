"""Faults on the flow of a stream: subagent order, results, compaction boundaries, model and window, truncation.

Each class is public through :mod:`ctxsim.faults`, where the catalogue is documented.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from ..wire import Observation
from ..world import compaction_truth, system_prefix
from ._base import Fault, FaultStream
from ._units import ANCHOR_KINDS, Unit, is_count

__all__ = [
    "CompactionMetadata",
    "InsertedCompaction",
    "InterleavedSubagents",
    "MissingResult",
    "ModelSwitch",
    "TruncatedStream",
    "WrongContextWindow",
    "ZeroedErrorResult",
]


def _other_window(window: int) -> int:
    return 200_000 if window >= 1_000_000 else 1_000_000


def _window_in_force(stream: FaultStream) -> int:
    for _, _, unit in stream.units():
        if unit.observation is not None:
            return unit.observation.window
    return 200_000


@dataclass(frozen=True)
class InterleavedSubagents(Fault):
    """Subagent calls that arrive after a later main-chain call (file order is not time order).

    Older Claude Code interleaved sidechain lines in the main file, after later-timestamped main lines (Bugs in
    the wild, B19: main 141,275, sidechain 19,833, main 144,227; tiann/hapi#1256, ccstatusline#70); background
    subagents interleave in the SDK stream the same way. A chosen subagent call moves right after the next main
    call of its query (never past a compaction or reset). Keeps the truth: the moved point is judged against the
    main context at its new place, which is the world's truth there.
    """

    name = "interleaved_subagents"
    source = "Bugs in the wild B19; tiann/hapi#1256; sirmalloc/ccstatusline#70"
    rate: float = 0.5
    """The share of the places it can act on that it acts on (at least one, when there is any)."""

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        chosen = {id(u) for _, _, u in stream.pick(rng, stream.calls(where=lambda u: not u.main), self.rate)}
        for script in stream.scripts:
            units = script.units
            for unit in [u for u in reversed(units) if id(u) in chosen]:
                at = units.index(unit)
                to = at + 1
                while to < len(units) and not units[to].main and units[to].kind not in ("compaction", "reset"):
                    to += 1
                if to >= len(units) or not units[to].main or units[to].observation is None:
                    continue  # no complete main call to move behind (the stream may end mid-call)
                units.insert(to + 1, unit)
                del units[at]
                stream.retruth = True


@dataclass(frozen=True)
class MissingResult(Fault):
    """A query whose stream ends without a ``ResultMessage``.

    anthropics/claude-agent-sdk-typescript#427 (hitting ``maxTurns`` produced no result at all); the Python SDK
    leaves costs unknown without one (claude-agent-sdk-python#277; Bugs in the wild B25). The result of chosen queries
    is dropped, and its observation point with it; every other point keeps its truth.
    """

    name = "missing_result"
    source = "anthropics/claude-agent-sdk-typescript#427; anthropics/claude-agent-sdk-python#277; Bugs in the wild B25"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for si, ui, _ in reversed(stream.pick(rng, list(stream.units("result")), self.rate)):
            del stream.scripts[si].units[ui]


_CONFIGURATION = frozenset({"contextWindow", "maxOutputTokens"})


def _zero(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _zero(v) for k, v in value.items()}
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    return 0.0 if isinstance(value, float) else 0


@dataclass(frozen=True)
class ZeroedErrorResult(Fault):
    """A query that ends in ``error_during_execution`` with zeroed usage, cost and ``modelUsage`` counts.

    The SDK docs on cost tracking: after a crash the error result may carry zeroed usage/cost/modelUsage
    (Bugs in the wild B25). ``subtype`` becomes ``error_during_execution``, ``is_error`` true, every count
    of ``usage`` and ``total_cost_usd`` 0, and every count of each ``modelUsage`` entry 0 except its configuration
    (``contextWindow``, ``maxOutputTokens``). Keeps the truth: the context did not change.
    """

    name = "zeroed_error_result"
    source = "code.claude.com/docs/en/agent-sdk/cost-tracking (Bugs in the wild B25)"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for _, _, unit in stream.pick(rng, list(stream.units("result")), self.rate):
            data = stream.own(unit.frames[0])
            data.update(subtype="error_during_execution", is_error=True, total_cost_usd=0.0,
                        errors=["ctxsim: simulated error during execution"], terminal_reason="error")
            data.pop("result", None)
            data["usage"] = _zero(data.get("usage"))
            entries = data.get("modelUsage")
            if isinstance(entries, dict):
                data["modelUsage"] = {m: {k: v if k in _CONFIGURATION else _zero(v) for k, v in e.items()}
                                      if isinstance(e, dict) else e for m, e in entries.items()}


@dataclass(frozen=True)
class CompactionMetadata(Fault):
    """Compaction boundaries in another shape: camelCase keys, no post-compaction size, or no metadata at all.

    ``postTokens`` is only written by newer Claude Code (Bugs in the wild; anthropics/claude-code#72600 shows
    ``preTokens 468102, postTokens 28759``); transcripts spell the keys in camelCase (``compactMetadata``). Trackers
    that keep the pre-compaction value are wrong until the next call (B16: ccstatusline#524, openclaw#72140,
    coder/mux#2303). ``mode="camel_case"`` keeps the truth. ``no_post`` and ``no_metadata`` change it on purpose:
    nothing tells the size after the compaction, so its point, and the dependent points after it until the next
    call, become not knowable.
    """

    name = "compaction_metadata"
    source = "anthropics/claude-code#72600; Bugs in the wild B16; sirmalloc/ccstatusline#524; openclaw#72140"
    rate: float = 1.0
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    mode: str = "no_post"
    """``camel_case``, ``no_post`` or ``no_metadata``."""

    choices: ClassVar = {"mode": ("camel_case", "no_post", "no_metadata")}

    @property
    def keeps_truth(self) -> bool:
        return self.mode == "camel_case"

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for _, _, unit in stream.pick(rng, list(stream.units("compaction")), self.rate):
            data = stream.own(unit.frames[0])
            meta = data.pop("compact_metadata", None)
            if self.mode == "camel_case" and isinstance(meta, dict):
                data["compactMetadata"] = {{"pre_tokens": "preTokens", "post_tokens": "postTokens"}.get(k, k): v
                                           for k, v in meta.items()}
            elif self.mode == "no_post" and isinstance(meta, dict):
                data["compact_metadata"] = {k: v for k, v in meta.items() if k != "post_tokens"}
            obs = unit.observation
            if self.mode != "camel_case" and obs is not None:
                stream.set_truth(unit, replace(obs.truth, knowable=False))


def _prefix(anchor: Observation) -> int:
    """The system prefix a compaction after ``anchor`` keeps, as the session's first call shows it."""
    first = anchor.truth.first_call
    return system_prefix(first) if first is not None else 0


def _conversation(anchor: Observation) -> int:
    """What a compaction after ``anchor`` has to summarize: the next request beyond the system prefix."""
    return anchor.truth.next_request - _prefix(anchor)


@dataclass(frozen=True)
class InsertedCompaction(Fault):
    """A compaction boundary inserted before a main call or a result, with or without its post-compaction size.

    For streams whose session has no compaction: tests the stale pre-compaction value (Bugs in the wild B16:
    ccstatusline#524, openclaw#72140 "Compacted (106k -> 36)" then "Context 76k/200k", coder/mux#2303). Changes
    the truth on purpose: from the boundary to the next main call the context is the system prefix (as the first
    call shows it, :func:`ctxsim.world.system_prefix`) plus a summary of ``post_ratio`` of the conversation the
    next request would have carried beyond that prefix, the boundary's ``post_tokens`` (not knowable with
    ``with_post: false``), so the context never grows by compacting, as Claude Code's never does; a boundary goes
    only where there is a conversation to summarize. The calls after it keep their usage, so the context jumps back
    at the next call; generate sessions with real compactions for the after-life.
    """

    name = "inserted_compaction"
    source = "Bugs in the wild B16; sirmalloc/ccstatusline#524; openclaw/openclaw#72140; coder/mux#2303"
    rate: float = 0.2
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    post_ratio: float = 0.15
    """The size after compaction, as a share of the size before."""
    with_post: bool = True
    """Whether the boundary carries ``post_tokens``."""

    def _validate(self) -> None:
        self._check(type(self.post_ratio) in (int, float) and 0 < self.post_ratio <= 1,
                    f"post_ratio must be a number in (0, 1], got {self.post_ratio!r}")

    @property
    def keeps_truth(self) -> bool:
        return False

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        spots = [(si, ui) for si, ui, unit in stream.units() if unit.main or unit.kind == "result"]
        chosen = set(stream.pick(rng, spots, self.rate))
        anchor: Observation | None = None
        for si, script in enumerate(stream.scripts):
            units, ui, offset = script.units, 0, 0
            while ui < len(units):
                unit = units[ui]
                if (si, ui - offset) in chosen and anchor is not None and anchor.truth.knowable and (
                        ui == 0 or units[ui - 1].kind != "compaction") and _conversation(anchor) > 0:
                    anchor = self._insert(stream, si, ui, anchor, rng)
                    ui, offset = ui + 1, offset + 1
                    stream.retruth = True
                for frame in unit.frames:
                    if frame.observation is not None and frame.observation.kind in ANCHOR_KINDS:
                        anchor = frame.observation
                ui += 1

    def _insert(self, stream: FaultStream, si: int, ui: int, anchor: Observation, rng: random.Random) -> Observation:
        pre = anchor.truth.next_request
        post = max(1, round(_conversation(anchor) * self.post_ratio))
        meta = {"trigger": "auto", "pre_tokens": pre, **({"post_tokens": post} if self.with_post else {})}
        label = f"q{stream.scripts[si].query_index + 1} compaction"
        first = anchor.truth.first_call
        context = post + _prefix(anchor)  # the system prefix stays
        truth = replace(compaction_truth(post, context, first), knowable=self.with_post)
        # the window in force where it is inserted: the next point's (a /model between the queries moved it)
        following = stream.scripts[si].units[ui].observation
        obs = Observation(0, label, "compaction", truth, (following or anchor).window)
        frame = stream.new({"type": "system", "subtype": "compact_boundary", "compact_metadata": meta,
                            "session_id": stream.session_id(si), "uuid": stream.new_uuid(rng)}, obs)
        stream.scripts[si].units.insert(ui, Unit("compaction", [frame]))
        return obs


_COUNTS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
_CAMEL = ("inputTokens", "cacheCreationInputTokens", "cacheReadInputTokens", "outputTokens")


@dataclass(frozen=True)
class ModelSwitch(Fault):
    """The model, and with it the window, changes mid-session (``set_model``, ``/model``, an auto-update).

    Window mistakes are the second bug source (Bugs in the wild B20): LifeOS#1358 (Opus -> Sonnet, 14% shown
    for 75%), anthropics/claude-code#76751 (a 1M session reported as 200k), graykode/abtop#109. From the main call
    at ``at`` (a share of the main calls) on, main calls run on ``to_model``, the ``system/init`` of the queries
    after the switch (and of its own, when it starts there) name it, ``modelUsage`` gets an entry for it
    (``contextWindow: to_window``) that the moved calls' counts go to (costs stay where rendered), and every
    observation point from there on carries ``to_window`` (default: 1M for a smaller window, else 200k). Changes
    the truth on purpose: the window in force, not the token counts.
    """

    name = "model_switch"
    source = "Bugs in the wild B20; danielmiessler/LifeOS#1358; anthropics/claude-code#76751; graykode/abtop#109"
    to_model: str = "claude-opus-4-6"
    """The model from the switch on."""
    to_window: int | None = None
    """Its window; None for the other of 200k and 1M."""
    at: float = 0.5
    """Where the switch happens, as a share of the main calls (0: from the first)."""

    def _validate(self) -> None:
        self._check(isinstance(self.to_model, str) and bool(self.to_model),
                    f"to_model must be a model name, got {self.to_model!r}")
        self._check(self.to_window is None or (type(self.to_window) is int and self.to_window > 0),
                    f"to_window must be a positive integer, got {self.to_window!r}")
        self._check(type(self.at) in (int, float) and 0 <= self.at < 1, f"at must be in [0, 1), got {self.at!r}")

    @property
    def keeps_truth(self) -> bool:
        return False

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        calls = stream.calls(main_only=True)
        if not calls:
            return
        window = self.to_window or _other_window(_window_in_force(stream))
        first = int(self.at * len(calls))
        start = calls[first][:2]
        if first == 0 or calls[first - 1][0] != start[0]:
            start = (start[0], 0)  # the query's first call: set_model came before it, and its init shows it
        moved: dict[str, dict[str, int]] = {}
        for si, ui, unit in stream.units():
            if (si, ui) < start:
                continue
            for frame in unit.frames:
                if frame.observation is not None:
                    frame.observation = replace(frame.observation, window=window)
            if unit.kind == "init":
                stream.own(unit.frames[0])["model"] = self.to_model
            elif unit.main:
                self._switch(stream, unit, moved)
            elif unit.kind == "reset":
                moved.clear()
            elif unit.kind == "result" and unit.frames[0].data.get("is_error") is False:
                self._move_totals(stream, unit, moved, window)

    def _switch(self, stream: FaultStream, unit: Unit, moved: dict[str, dict[str, int]]) -> None:
        old = unit.model
        usage = unit.first_usage()
        for frame in unit.usage_frames():
            message = stream.message(frame)
            if message is not None:
                message["model"] = self.to_model
        if old is None or old == self.to_model or usage is None:
            return
        read = [usage.get(k) for k in _COUNTS] + [unit.output_tokens]
        counts = [v for v in read if isinstance(v, int) and is_count(v)]
        if len(counts) == len(read):
            total = moved.setdefault(old, dict.fromkeys(_CAMEL, 0))
            for key, value in zip(_CAMEL, counts):
                total[key] += value

    def _move_totals(self, stream: FaultStream, unit: Unit, moved: dict[str, dict[str, int]], window: int) -> None:
        data = stream.own(unit.frames[0])
        entries = data.get("modelUsage")
        if not isinstance(entries, dict) or not moved:
            return
        for old, counts in moved.items():
            source = entries.get(old)
            if not isinstance(source, dict):
                continue
            target = entries.setdefault(self.to_model, {
                **dict.fromkeys(_CAMEL, 0), "webSearchRequests": 0, "costUSD": 0.0, "contextWindow": window,
                "maxOutputTokens": source.get("maxOutputTokens")})
            for key, value in counts.items():
                if is_count(source.get(key)) and is_count(target.get(key)):
                    source[key] = max(0, source[key] - value)
                    target[key] += value


@dataclass(frozen=True)
class WrongContextWindow(Fault):
    """Results whose ``modelUsage`` reports the wrong ``contextWindow`` (200k for a 1M session, or the reverse).

    anthropics/claude-code#76751 (``context_window_size: 200000`` on a 1M session, pegged at 100%), Claude Code
    2.1.208 (a false "100% context used" after an auto-update reset the window to 200k), 2.1.117 (Opus 4.7 against
    200K instead of 1M); Bugs in the wild B20. Every result's entries report ``reported`` (default: 1M for a smaller
    window, else 200k). Keeps the truth: the points keep the real window and token counts.
    """

    name = "wrong_context_window"
    source = "anthropics/claude-code#76751; Claude Code 2.1.208, 2.1.117 changelogs; Bugs in the wild B20"
    reported: int | None = None
    """The window the results report; None for the other of 200k and 1M."""

    def _validate(self) -> None:
        self._check(self.reported is None or (type(self.reported) is int and self.reported > 0),
                    f"reported must be a positive integer, got {self.reported!r}")

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        reported = self.reported or _other_window(_window_in_force(stream))
        for _, _, unit in stream.units("result"):
            entries = stream.own(unit.frames[0]).get("modelUsage")
            if isinstance(entries, dict):
                for entry in entries.values():
                    if isinstance(entry, dict):
                        entry["contextWindow"] = reported


@dataclass(frozen=True)
class TruncatedStream(Fault):
    """The stream stops at ``at`` (a share of all frames): the CLI died, the connection dropped, a budget ran out.

    anthropics/claude-agent-sdk-typescript#427 and Bugs in the wild B25 (no result); CC 2.1.29 sessions with no final
    line (anthropics/claude-code#22686). Everything after the cut is gone, including later queries (the session
    has fewer scripts than queries) and the observation points after the cut; the points before it keep their
    truth.
    """

    name = "truncated_stream"
    source = "anthropics/claude-agent-sdk-typescript#427; anthropics/claude-code#22686; Bugs in the wild B25"
    at: float = 0.5
    """Where the stream stops, as a share of all its frames."""

    def _validate(self) -> None:
        self._check(type(self.at) in (int, float) and 0 < self.at < 1, f"at must be in (0, 1), got {self.at!r}")

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        total = sum(len(u.frames) for _, _, u in stream.units())
        left = max(1, int(self.at * total))
        for si, script in enumerate(stream.scripts):
            for ui, unit in enumerate(script.units):
                if left <= len(unit.frames):
                    unit.frames = unit.frames[:left]
                    del script.units[ui + 1:]
                    del stream.scripts[si + 1:]
                    return
                left -= len(unit.frames)
