"""The drift between two runs of one scripted session: a capture and a live run, or two live runs.

:func:`drift` compares a capture with a live run of the same scripted session (typically under a newer CLI): which
fields changed, which numbers moved (the CLI's own prompt grew or shrank), and which frame kinds and keys appeared
or vanished. Not all of that is the release's: some fields move between two live runs of the same CLI on the same
machine (timings, a race between two chains). :func:`noise_between` names those fields from two live runs, and a
:class:`Drift` that carries them (:attr:`Drift.noise`) splits itself into :attr:`Drift.noisy` and
:attr:`Drift.release`. ``ctxsim fidelity`` measures the noise (see :func:`~ctxsim.lab.check_release`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .._projection import Difference, Projection, StepProjection, compare, compare_keys, compare_raw

__all__ = ["Drift", "Run", "drift", "noise_between"]


class Run(Protocol):
    """What :func:`drift` reads of a run: a shipped capture or a live run of the same scripted session."""

    @property
    def cli_version(self) -> str: ...
    @property
    def initial(self) -> Projection: ...
    @property
    def steps(self) -> Sequence[StepProjection]: ...
    @property
    def raw(self) -> Mapping[str, Sequence[Any]]: ...
    @property
    def frame_keys(self) -> Mapping[str, Sequence[str]]: ...


def _numeric(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class Drift:
    """How a live run differs from the capture of the same scripted session, and which of that is noise."""

    captured: str
    """The captured CLI version."""
    live: str
    """The live CLI version."""
    changed: list[Difference]
    """Fields whose value changed kind or text (message kinds, block kinds, triggers, subtypes, ids by shape), and
    steps or messages that appeared or vanished."""
    numbers: list[Difference]
    """Fields whose number moved: the CLI's own measurements (its prompt and tools in every cache count, the cost,
    compaction sizes), which move whenever a release rewords its system prompt."""
    keys: list[Difference]
    """Frame kinds and key paths that appeared or vanished (``tracked`` where trackers read them)."""
    noise: frozenset[tuple[str, str]] | None = None
    """The fields (``(kind, field)``) that moved between two live runs of this session on this CLI: this machine's
    run-to-run noise (:func:`noise_between`); None where it was not measured."""

    @property
    def every(self) -> list[Difference]:
        """Every difference: changed, numbers, keys."""
        return [*self.changed, *self.numbers, *self.keys]

    def is_noise(self, d: Difference) -> bool:
        """Whether ``d``'s field moves run to run on this CLI (never, where the noise was not measured)."""
        return self.noise is not None and (d.kind, d.field) in self.noise

    @property
    def release(self) -> list[Difference]:
        """The release's change: every difference but the noise."""
        return [d for d in self.every if not self.is_noise(d)]

    @property
    def noisy(self) -> list[Difference]:
        """The differences in fields that move run to run."""
        return [d for d in self.every if self.is_noise(d)]

    def summary(self, name: str) -> str:
        """One line for a report: the versions, what the release changed (each number by its field), and how many
        differences were noise."""
        parts = []
        release = self.release
        keys = [d for d in release if d in self.keys]
        for label, side in (("appeared", "left"), ("vanished", "right")):
            named = [f"{d.kind.removeprefix('frames ')} {d.field.removeprefix('keys: ')}" for d in keys
                     if getattr(d, side) == "<absent>"]
            if named:
                parts.append(f"{label}: {', '.join(named)}")
        changed = [d for d in release if d in self.changed]
        if changed:
            parts.append(f"{len(changed)} field(s) changed ({', '.join(sorted({d.field for d in changed}))})")
        numbers = [d for d in release if d in self.numbers]
        if numbers:
            parts.append(f"{len(numbers)} number(s) moved ({', '.join(sorted({d.field for d in numbers}))})")
        text = f"{name}: Claude Code {self.live} against the capture of {self.captured}: "
        text += "; ".join(parts) if parts else "nothing changed"
        if self.noisy:
            text += (f" (and {len(self.noisy)} difference(s) in fields that move between two runs of the same CLI: "
                     f"{', '.join(sorted({d.field for d in self.noisy}))})")
        return text


_NUMBERED_ID = re.compile(r"(?:msg|toolu|req)_ctxsim(\d+)(?:_\d+)?")
"""The ids the fake API draws from a request's number: message, tool use and request ids."""


def _renumbered(value: Any, numbers: Mapping[str, str], seen: list[str]) -> Any:
    """``value`` with the request number of each numbered id renumbered by ``numbers``; each number met is added to
    ``seen`` (in order of first appearance)."""
    if isinstance(value, str) and (match := _NUMBERED_ID.fullmatch(value)):
        seen.extend(() if match[1] in seen else (match[1],))
        return value[:match.start(1)] + numbers.get(match[1], match[1]) + value[match.end(1):]
    if isinstance(value, Mapping):
        return {k: _renumbered(v, numbers, seen) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_renumbered(v, numbers, seen) for v in value)
    return value


def drift(capture: Run, live: Run) -> Drift:
    """How the live run ``live`` differs from ``capture`` of the same scripted session.

    The fake API numbers its message, tool use and request ids by when each request reaches it; two chains at once
    (a background subagent beside the main chain) can reach it in either order, a race of the harness, not a change
    of the CLI. So where the live run's ids carry the capture's request numbers in another order of first
    appearance, they are renumbered to the capture's by that order first; a number more or fewer renumbers none."""
    theirs: list[str] = []
    ours: list[str] = []
    _renumbered([[(s.messages, s.context_usage, s.hooks) for s in capture.steps], sorted(capture.raw.items())], {},
                theirs)
    live_steps = [(s.messages, s.context_usage, s.hooks) for s in live.steps]
    _renumbered([live_steps, sorted(live.raw.items())], {}, ours)
    renumber = dict(zip(ours, theirs)) if sorted(ours) == sorted(theirs) else {}
    steps = [StepProjection(s.prompt, *_renumbered(kept, renumber, [])) for s, kept in zip(live.steps, live_steps)]
    raw = _renumbered(live.raw, renumber, [])
    differences = compare(capture.steps, steps, initial=(capture.initial, live.initial))
    differences += compare_raw(capture.raw, raw)
    numbers = [d for d in differences if _numeric(d.left) and _numeric(d.right)]
    return Drift(capture.cli_version, live.cli_version, [d for d in differences if d not in numbers], numbers,
                 compare_keys(capture.frame_keys, live.frame_keys))


def noise_between(first: Run, second: Run) -> frozenset[tuple[str, str]]:
    """The fields (``(kind, field)``) that differ between two live runs of one scripted session on one CLI, the
    fake API's request numbering aside (as :func:`drift` does)."""
    return frozenset((d.kind, d.field) for d in drift(first, second).every)
