"""What a fault is and what it edits: :class:`Fault`, and the :class:`FaultStream` of units it transforms.

Write a fault of your own by subclassing :class:`Fault` (a frozen dataclass of parameters) and implementing
:meth:`Fault.transform`, which edits a :class:`FaultStream` in place: rendered scripts cut into units
(``Unit``: a call, a tool result, a result...) by reading the frames' data alone, so
faults can duplicate, move, drop or edit whole API calls, and work the same on rendered and recorded streams.
Frames are new :class:`~ctxsim.wire.Frame` objects sharing the input's dicts until :meth:`FaultStream.own`
deep-copies one for editing, so the input is never mutated. :meth:`FaultStream.to_scripts` puts the scripts back
together, re-derives the truth at dependent points (subagent calls and results carry the main chain's truth) when
a fault moved or changed an anchor point, and numbers the points 1, 2, ...
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar

from ..wire import Frame, Observation, Script
from ..world import Truth, system_prefix
from ._units import (
    ANCHOR_KINDS,
    USAGE_KEYS,
    Unit,
    cache_read_of,
    clone,
    is_count,
    message_of,
    prompt_of,
    readable_prompt,
    segment,
    usage_of,
)

__all__ = ["Fault", "FaultStream", "ScriptUnits"]

_CAMEL = {"input_tokens": "inputTokens", "cache_creation_input_tokens": "cacheCreationInputTokens",
          "cache_read_input_tokens": "cacheReadInputTokens", "output_tokens": "outputTokens"}


# --- the stream -------------------------------------------------------------------------------------------------


@dataclass
class ScriptUnits:
    """One script, cut into units."""

    query_index: int
    prompt: str
    units: list[Unit]


@dataclass
class FaultStream:
    """Scripts as units, for faults to edit in place; never mutates the scripts it was built from."""

    scripts: list[ScriptUnits]
    retruth: bool = False
    """Set by a fault that moved, added or changed an anchor point: dependent points are re-derived."""
    _owned: dict[int, Frame] = field(default_factory=dict, repr=False)
    """The frames whose data is this stream's own copy, by ``id`` (held, so that no id is reused)."""

    @classmethod
    def of(cls, scripts: Sequence[Script]) -> FaultStream:
        """Cut ``scripts`` into units."""
        out: list[ScriptUnits] = []
        seen: dict[tuple[str, str | None, int], Unit] = {}
        for script in scripts:
            units = list(segment([Frame(f.data, f.observation) for f in script.frames]))
            for unit in units:
                if unit.kind != "call" or unit.message_id is None:
                    continue
                prompt = prompt_of(unit.first_usage())
                if prompt is None:
                    continue
                key = (unit.message_id, unit.parent, prompt)
                if key in seen:
                    unit.kind = "replay"
                    seen[key].copies.append(unit)
                else:
                    seen[key] = unit
            out.append(ScriptUnits(script.query_index, script.prompt, units))
        return cls(out)

    # editing ---------------------------------------------------------------------------------------------------

    def own(self, frame: Frame) -> dict[str, Any]:
        """``frame``'s data, deep-copied the first time so it may be edited."""
        if id(frame) not in self._owned:
            frame.data = clone(frame.data)
            self._owned[id(frame)] = frame
        return frame.data

    def copy(self, frame: Frame, rng: random.Random | None = None) -> Frame:
        """A new frame with a deep copy of ``frame``'s data and no observation; a new uuid drawn from ``rng``."""
        new = Frame(clone(frame.data))
        self._owned[id(new)] = new
        if rng is not None:
            new.data["uuid"] = self.new_uuid(rng)
        return new

    def new(self, data: dict[str, Any], observation: Observation | None = None) -> Frame:
        """A new frame for freshly built ``data``."""
        frame = Frame(data, observation)
        self._owned[id(frame)] = frame
        return frame

    def message(self, frame: Frame) -> dict[str, Any] | None:
        """The editable API message of an assistant frame or a ``message_start`` event (None if malformed)."""
        return message_of(self.own(frame))

    def edit_usage(self, unit: Unit, edit: Callable[[dict[str, Any]], dict[str, Any] | None],
                   frames: Sequence[Frame] | None = None) -> None:
        """Replace the usage dict of each of ``frames`` by ``edit``'s (default: every usage carrier of ``unit``, and
        the lines of its replays that agree with it, so that they keep agreeing)."""
        if frames is None:
            first = unit.first_usage() or {}
            frames = unit.usage_frames() + [f for u in unit.copies for f in u.usage_frames()
                                            if _agrees(usage_of(f), first)]
        for frame in frames:
            message = self.message(frame)
            if message is not None and isinstance(message.get("usage"), dict):
                message["usage"] = edit(message["usage"])

    def adjust_totals(self, si: int, ui: int, unit: Unit, delta: dict[str, int]) -> None:
        """Keep results consistent after the usage of call ``unit`` (unit ``ui`` of script ``si``) moved by ``delta``.

        ``delta`` is by API usage key. The query's result ``usage`` (for a main call, unless a reset comes between)
        and the cumulative ``modelUsage`` entry of the call's model (every result until a reset) move with it.
        Error results and values that are not counts are left alone; costs are left as rendered.
        """
        model = unit.model
        camel = {_CAMEL[k]: v for k, v in delta.items()}
        for sj in range(si, len(self.scripts)):
            units = self.scripts[sj].units
            for uj in range(ui + 1 if sj == si else 0, len(units)):
                other = units[uj]
                if other.kind == "reset":
                    return
                if other.kind != "result" or other.frames[0].data.get("is_error") is not False:
                    continue
                data = self.own(other.frames[0])
                if sj == si and unit.main:
                    _shift(data.get("usage"), delta)
                entries = data.get("modelUsage")
                if isinstance(entries, dict) and model is not None:
                    _shift(entries.get(model), camel)

    # reading ---------------------------------------------------------------------------------------------------

    def units(self, *kinds: str) -> Iterator[tuple[int, int, Unit]]:
        """``(script index, unit index, unit)`` of every unit of the given kinds (all when none), in order."""
        for si, script in enumerate(self.scripts):
            for ui, unit in enumerate(script.units):
                if not kinds or unit.kind in kinds:
                    yield si, ui, unit

    def calls(self, *, main_only: bool = False,
              where: Callable[[Unit], bool] = lambda u: True) -> list[tuple[int, int, Unit]]:
        """The call units (of the main chain only, if asked) that ``where`` accepts, in order."""
        return [(si, ui, u) for si, ui, u in self.units("call") if (u.main or not main_only) and where(u)]

    @staticmethod
    def pick(rng: random.Random, items: list[Any], rate: float) -> list[Any]:
        """Each of ``items`` with probability ``rate``, and at least one when there are any, in order."""
        chosen = [item for item in items if rng.random() < rate]
        if not chosen and items:
            chosen = [rng.choice(items)]
        return chosen

    def session_id(self, si: int) -> str:
        """The session id the frames of script ``si`` (or the nearest script before it) carry."""
        for sj in range(si, -1, -1):
            for unit in self.scripts[sj].units:
                for frame in unit.frames:
                    sid = frame.data.get("session_id")
                    if isinstance(sid, str):
                        return sid
        return ""

    @staticmethod
    def new_uuid(rng: random.Random) -> str:
        """A uuid4 drawn from ``rng``."""
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))

    # observations ----------------------------------------------------------------------------------------------

    def set_truth(self, unit: Unit, truth: Truth) -> None:
        """Give the anchor point of ``unit`` a new truth (the dependent points after it follow)."""
        for frame in unit.frames:
            if frame.observation is not None:
                frame.observation = replace(frame.observation, truth=truth)
        self.retruth = True

    def _mark_unseen_calls(self) -> None:
        """Give an unknowable main call that reuses an earlier main call's message id the band last told.

        Without a readable usage such a call looks like a replay of the earlier one: no stream shows that it is
        a new call, so a tracker may keep what it last knew (:attr:`ctxsim.world.Truth.unseen`)."""
        ids: set[str] = set()
        anchor: Observation | None = None
        for _, _, unit in self.units():
            if not (unit.main or unit.kind in ("compaction", "reset")):
                continue  # the only units whose points are anchors
            obs = unit.observation
            if unit.main and obs is not None and not obs.truth.knowable and unit.message_id in ids and (
                    anchor is not None and (anchor.truth.knowable or anchor.truth.unseen)):
                band = anchor.truth.unseen or (anchor.truth.prompt, anchor.truth.next_request)
                self.set_truth(unit, replace(obs.truth, unseen=band))
                obs = unit.observation
            if unit.main and unit.message_id is not None:
                ids.add(unit.message_id)
            if obs is not None and obs.kind in ANCHOR_KINDS:
                anchor = obs

    def _estimate_compactions(self) -> None:
        """Give each compaction the estimates its stream allows: the boundary's post size plus the system prefix
        as the session's first readable main call shows it (:func:`ctxsim.world.system_prefix`), which a fault may
        have changed (a cache read moved to creation, usage made unreadable); not knowable where no readable call
        comes before it, and not knowable with those estimates as its band where that call's counts are typed
        otherwise than the SDK types them (``'9'``: a tracker may read them or not)."""
        first: tuple[int, int] | None = None
        retyped = False
        for _, _, unit in self.units():
            seen = unit.observation
            if unit.main and first is None and (seen is None or seen.truth.knowable or seen.truth.unseen):
                for frame in unit.usage_frames():  # a call the stream tells (perhaps in strings)
                    usage = usage_of(frame)
                    prompt = readable_prompt(usage)
                    if usage is not None and prompt:
                        first = (cache_read_of(usage), prompt)
                        retyped = seen is not None and not seen.truth.knowable
                        break
            obs = unit.observation
            if unit.kind != "compaction" or obs is None or not obs.truth.knowable:
                continue
            if first is None:  # every call before it is unreadable: the stream shows nothing of the prefix
                self.set_truth(unit, replace(obs.truth, knowable=False, estimated=None))
                continue
            meta = unit.frames[0].data.get("compact_metadata") or unit.frames[0].data.get("compactMetadata")
            post = meta.get("post_tokens", meta.get("postTokens")) if isinstance(meta, dict) else None
            if isinstance(post, int) and is_count(post):
                shown = post + system_prefix(first)
                context = obs.truth.prompt
                estimated = (min(context, shown), max(context, shown))
                if retyped:
                    self.set_truth(unit, replace(obs.truth, knowable=False, unseen=estimated, estimated=None))
                elif estimated != obs.truth.estimated:
                    self.set_truth(unit, replace(obs.truth, estimated=estimated))

    def to_scripts(self) -> list[Script]:
        """The scripts again, dependent points re-derived (when a fault asked) and points numbered 1, 2, ..."""
        self._mark_unseen_calls()  # after every fault: the one that makes a call unreadable may come before the reuse
        self._estimate_compactions()
        current: Truth | None = None
        index = 0
        out = []
        for script in self.scripts:
            frames = [f for u in script.units for f in u.frames]
            for frame in frames:
                obs = frame.observation
                if obs is None:
                    continue
                if obs.kind in ANCHOR_KINDS:
                    current = obs.truth
                elif self.retruth:
                    if current is None:
                        frame.observation = None
                        continue
                    if obs.truth is not current:  # the anchor's whole truth: equal truths may allow other estimates
                        obs = replace(obs, truth=current)
                index += 1
                frame.observation = obs if obs.index == index else replace(obs, index=index)
            out.append(Script(script.query_index, script.prompt, frames))
        return out


def _agrees(usage: dict[str, Any] | None, first: dict[str, Any]) -> bool:
    """``usage`` states the same prompt counts as ``first`` (its output may differ)."""
    return usage is not None and all(k in usage and usage[k] == first.get(k) for k in USAGE_KEYS)


def _shift(counts: Any, delta: dict[str, int]) -> None:
    if not isinstance(counts, dict):
        return
    for key, change in delta.items():
        if is_count(counts.get(key)):
            counts[key] = max(0, counts[key] + change)


# --- the fault ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    """A named, seeded transformation of rendered scripts, modelling one failure seen in the wild.

    Subclasses are frozen dataclasses whose fields are the fault's parameters (building one with a bad value
    raises ``ValueError``, an unknown parameter ``TypeError``); they set :attr:`name` and :attr:`source` and
    implement :meth:`transform`. A fault either keeps the truth (every observation point that remains has the
    truth it had, so a correct tracker must survive it) or changes it on purpose, as its docstring says.

    Calling a fault, ``fault(scripts, rng)``, returns new scripts and never mutates ``scripts``; every choice is
    drawn from ``rng``, so the same generator state gives the same bytes.
    """

    name: ClassVar[str] = ""
    """The fault's name in plans and scenario files (``duplicate_blocks``)."""
    source: ClassVar[str] = ""
    """The public reports it models."""
    choices: ClassVar[Mapping[str, tuple[Any, ...]]] = {}
    """The values each parameter of a closed set may take."""
    bounds: ClassVar[Mapping[str, tuple[int, int]]] = {}
    """The range of each integer parameter."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "rate":
                self._check(type(value) in (int, float) and 0 < value <= 1,
                            f"rate must be a number in (0, 1], got {value!r}")
            elif f.name in self.choices:
                self._check(value in self.choices[f.name],
                            f"{f.name} must be one of {', '.join(map(str, self.choices[f.name]))}; got {value!r}")
            elif f.name in self.bounds:
                low, high = self.bounds[f.name]
                self._check(type(value) is int and low <= value <= high,
                            f"{f.name} must be {low}..{high}, got {value!r}")
            elif isinstance(f.default, bool):
                self._check(isinstance(value, bool), f"{f.name} must be true or false, got {value!r}")
        self._validate()

    def _validate(self) -> None:
        """Checks of parameters beyond :attr:`choices` and :attr:`bounds` (``ValueError`` via :meth:`_check`)."""

    @property
    def keeps_truth(self) -> bool:
        """True when the truth at every remaining observation point is unchanged."""
        return True

    @property
    def params(self) -> dict[str, Any]:
        """The parameters, by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def spec(self) -> dict[str, dict[str, Any]]:
        """The scenario-file entry for this fault: ``{name: {param: value}}``."""
        return {self.name: self.params}

    def __call__(self, scripts: Sequence[Script], rng: random.Random) -> list[Script]:
        """``scripts`` with this fault applied."""
        stream = FaultStream.of(scripts)
        self.transform(stream, rng)
        return stream.to_scripts()

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        """Edit ``stream`` in place, drawing every choice from ``rng``."""
        raise NotImplementedError

    def _check(self, condition: bool, message: str) -> None:
        if not condition:
            raise ValueError(f"ctxsim: fault {self.name}: {message}")
