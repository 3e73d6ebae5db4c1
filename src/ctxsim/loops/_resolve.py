"""Naming a restart loop on a command line: a catalogued loop's name (``keep-tracker``) or ``module:function``.

Shared by ``pytest --ctx-loop`` and ``ctxsim run --loop``; a name or a spec is read by the tracker resolver's
:func:`ctxsim.trackers.load_named`, with the same import rule and the same errors. A loop is a callable taking a
:class:`~ctxsim.loops.LoopRig` (sync, or returning an awaitable); it may declare ``policy`` (a
:class:`~ctxsim.reference.PressurePolicy` or a fraction of the window) and ``prompts`` (a
:class:`~ctxsim.agent.LoopPrompts`) as attributes (:mod:`ctxsim.loops`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..agent import LoopPrompts
from ..reference import PressurePolicy
from ..trackers import SpecError, load_named
from ._catalogue import CATALOGUE
from ._check import declared_policy, declared_prompts
from ._rig import LoopRig

__all__ = ["LoopSpec", "LoopSpecError", "resolve_loop"]


class LoopSpecError(SpecError):
    """A loop spec that names nothing usable; the message says why, in one line."""


@dataclass(frozen=True)
class LoopSpec:
    """A resolved loop: how it was given, what reports call it, the loop, and what it declares."""

    spec: str
    name: str
    loop: Callable[[LoopRig], Any]
    policy: PressurePolicy | None = None
    """The policy the loop declares; None: it takes the one its rig hands it (a task scenario's)."""
    prompts: LoopPrompts | None = None
    """The prompts the loop declares; None: design 003's."""
    catalogued: bool = False


def resolve_loop(spec: str, *, search: Sequence[str] = ()) -> LoopSpec:
    """The loop ``spec`` names; ``search`` as for :func:`ctxsim.trackers.load_spec`. Raises
    :class:`LoopSpecError` saying what is wrong."""
    spec = spec.strip()
    entry, loop = load_named(spec, CATALOGUE, error=LoopSpecError, noun="a catalogued loop", what="function",
                             example="mypackage.agent:restart_loop", kind="function taking a LoopRig", search=search)
    if entry is not None:
        return LoopSpec(spec, spec, entry.loop, catalogued=True)
    try:
        policy, prompts = declared_policy(loop), declared_prompts(loop)
    except TypeError as exc:
        raise LoopSpecError(str(exc).removeprefix("ctxsim: ")) from None
    name = getattr(loop, "__name__", None) or spec.rpartition(":")[2]
    return LoopSpec(spec, name, loop, policy, prompts)
