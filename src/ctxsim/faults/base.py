"""The base of every fault: a frozen dataclass of parameters that transforms scripts, drawing from a generator."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from ..wire import Script
from .stream import FaultStream

__all__ = ["Fault"]


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
