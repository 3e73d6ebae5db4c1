"""The ``faults:`` list of a scenario: each entry checked with its file:line, built by :mod:`ctxsim.faults`.

The integration point with :mod:`ctxsim.faults`, all of it: names are looked up in ``faults.REGISTRY``, an entry is
built by ``faults.fault_from_spec`` (its ``ValueError`` becomes the scenario error), and the faults are played
by ``faults.apply`` as one ``FaultPlan`` seeded by ``world.seed``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .._yaml import Map, Reader, Seq, join_path

__all__ = ["FaultSpec", "apply", "not_judged", "plan", "read_faults", "surfaces"]


@dataclass(frozen=True)
class FaultSpec:
    """One fault as the scenario names it."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    line: int = 0
    """The line of the fault's entry in the scenario file."""
    fault: Any = field(default=None, compare=False, repr=False)
    """The :class:`ctxsim.faults.Fault` built from ``params``."""


if TYPE_CHECKING:
    from ...faults import FaultPlan


def plan(specs: Sequence[FaultSpec], seed: int) -> FaultPlan:
    """The faults of ``specs`` as one plan seeded by ``seed``."""
    from ...faults import FaultPlan

    return FaultPlan(tuple(spec.fault for spec in specs), seed)


def surfaces(specs: Sequence[FaultSpec]) -> frozenset[str]:
    """Where a scenario with the faults ``specs`` is real (:func:`ctxsim.surfaces.surfaces_of`)."""
    from ...surfaces import surfaces_of

    return surfaces_of(spec.name for spec in specs)


def not_judged(specs: Sequence[FaultSpec], reads: frozenset[str]) -> str | None:
    """Why a tracker reading the surfaces ``reads`` is not judged on a scenario with the faults ``specs``
    (:func:`ctxsim.surfaces.judged_on`), or None when it is."""
    from ...surfaces import judged_on

    return judged_on((spec.name for spec in specs), reads)


def apply(scripts: list[Any], specs: Sequence[FaultSpec], seed: int) -> list[Any]:
    """``scripts`` with every fault of ``specs`` applied in order, as one plan seeded by ``seed``."""
    from ...faults import apply as apply_plan

    return apply_plan(plan(specs, seed), scripts)


def _plain(value: Any) -> Any:
    """A YAML value without the line bookkeeping of :class:`Map`/:class:`Seq`."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def read_faults(r: Reader, value: Any, line: int, path: str = "faults") -> tuple[FaultSpec, ...]:
    """Validate the ``faults`` list and build each fault through the registry."""
    from ...faults import REGISTRY, fault_from_spec

    seq = r.sequence(value, line, path)
    out = []
    for i, item in enumerate(seq):
        where, item_path = seq.item_lines[i], f"{path}[{i}]"
        params: dict[str, Any] = {}
        if isinstance(item, Map):
            if len(item) != 1:
                raise r.error(where, item_path, "a fault is NAME or {NAME: {PARAM: VALUE}} (one key)")
            r.mapping(item, where, item_path, tuple(item))  # duplicate keys
            (name,) = item
            raw = item[name]
            if raw is not None:
                params = dict(_plain(r.mapping(raw, item.value_lines[name], join_path(item_path, name),
                                               tuple(raw) if isinstance(raw, Map) else ())))
        elif isinstance(item, str):
            name = item
        else:
            kind = "a list" if isinstance(item, Seq) else repr(item)
            raise r.error(where, item_path, f"a fault is NAME or {{NAME: {{PARAM: VALUE}}}}, got {kind}")
        if not isinstance(name, str):
            raise r.error(where, item_path, f"a fault's name is a string, got {name!r}")
        if name not in REGISTRY:
            hint = difflib.get_close_matches(name, list(REGISTRY), n=1)
            suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
            raise r.error(where, item_path, f"no fault {name!r}{suggestion}; known: {', '.join(sorted(REGISTRY))}")
        try:
            fault = fault_from_spec({name: params})
        except (TypeError, ValueError) as exc:
            message = str(exc).removeprefix("ctxsim: ").removeprefix(f"fault {name}: ")
            raise r.error(where, item_path, f"fault {name}: {message}") from None
        out.append(FaultSpec(name, params, where, fault))
    return tuple(out)
