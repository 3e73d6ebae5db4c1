"""Hypothesis strategies of fault plans: which faults a generated stream carries, with drawn parameters."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from .. import faults as F
from ..faults import Fault, FaultPlan
from ..surfaces import carried_on
from ._knobs import _SEEDS, _UP_TO_3, IntKnob, _checked, _knob

__all__ = ["fault_plans"]


_RATES = st.sampled_from((0.3, 0.6, 1.0))


def _fault_params(name: str, keep: bool) -> SearchStrategy[Fault] | None:
    """The parameters of fault ``name`` (only truth-keeping ones if ``keep``), or None when none keep the truth."""
    choose = st.sampled_from
    kinds = ("negative", "text", "numeric_string", "float", "nan", "huge", "null", "bool")
    params: dict[str, SearchStrategy[Any]] = {
        "duplicate_blocks": st.fixed_dictionaries({"copies": st.integers(1, 3)}),
        "replayed_messages": st.fixed_dictionaries({"where": choose(("later", "after"))}),
        "streaming_partials": st.fixed_dictionaries({"partials": st.integers(1, 3)}),
        "stale_output_tokens": st.fixed_dictionaries({"mode": choose(("growing", "stale"))}),
        "repeated_message_delta": st.fixed_dictionaries({"deltas": st.integers(2, 4), "with_prompt": st.booleans()}),
        "synthetic_errors": st.fixed_dictionaries({"usage": choose(("zero", "none"))}),
        "reused_message_ids": st.fixed_dictionaries({"reuse": choose(("previous", "first"))}),
        "missing_request_ids": st.fixed_dictionaries({"mode": choose(("absent", "empty"))}),
        "cache_read_drop": st.fixed_dictionaries({"keep_prefix": choose((0, 12_000))}),
        "missing_usage": st.fixed_dictionaries({
            "shape": choose(("none", "empty", "output_only")),
            "scope": st.just("some_blocks") if keep else choose(("some_blocks", "whole_call"))}),
        "garbage_values": st.fixed_dictionaries({"fields": st.just("bystander"),
                                                 "kinds": st.lists(choose(kinds), min_size=1, unique=True).map(tuple)})
        if keep else st.one_of(  # garbage in a prompt count makes its point not knowable: never truth-keeping
            st.fixed_dictionaries({"fields": st.just("bystander"),
                                   "kinds": st.lists(choose(kinds), min_size=1, unique=True).map(tuple)}),
            st.fixed_dictionaries({"fields": st.just("prompt"),
                                   "kinds": st.lists(choose(kinds), min_size=1, unique=True).map(tuple)})),
        "compaction_metadata": st.fixed_dictionaries({
            "mode": st.just("camel_case") if keep else choose(("no_post", "no_metadata", "camel_case"))}),
        "wrong_context_window": st.fixed_dictionaries({"reported": choose((None, 200_000, 1_000_000))}),
        "truncated_stream": st.fixed_dictionaries({"at": choose((0.25, 0.5, 0.75))}),
        "inserted_compaction": st.fixed_dictionaries({"post_ratio": choose((0.15, 0.3)),
                                                      "with_post": st.booleans()}),
        "model_switch": st.fixed_dictionaries({"to_model": choose(("claude-opus-4-6", "claude-haiku-4-5")),
                                               "to_window": choose((None, 200_000, 1_000_000)),
                                               "at": choose((0.0, 0.5))}),
    }
    cls = F.REGISTRY[name]
    if keep and name in ("inserted_compaction", "model_switch"):
        return None
    given = params.get(name, st.fixed_dictionaries({}))
    if "rate" in cls.__dataclass_fields__:
        given = st.tuples(given, _RATES).map(lambda p: {"rate": p[1], **p[0]})
    return given.map(lambda p: cls(**p))


def _option(entry: Any, keep: bool) -> SearchStrategy[Fault] | None:
    if isinstance(entry, SearchStrategy):
        return entry.filter(lambda f: f.keeps_truth) if keep else entry
    if isinstance(entry, Fault):
        return None if keep and not entry.keeps_truth else st.just(entry)
    name = entry.name if isinstance(entry, type) and issubclass(entry, Fault) else entry
    if name not in F.REGISTRY:
        raise InvalidArgument(f"ctxsim: fault_plans(faults=...): no fault {entry!r}; known: "
                              f"{', '.join(sorted(F.REGISTRY))}")
    return _fault_params(name, keep)


def fault_plans(
    *,
    faults: Sequence[str | type[Fault] | Fault | SearchStrategy[Fault]] | None = None,
    size: IntKnob = _UP_TO_3,
    truth_keeping: bool = False,
    seed: IntKnob = _SEEDS,
    reads: frozenset[str] | None = None,
) -> SearchStrategy[FaultPlan]:
    """Plans of ``size`` distinct faults (in drawn order) with drawn parameters.

    ``faults`` lists what may be drawn: fault names or classes of :mod:`ctxsim.faults` (parameters drawn),
    fault instances, or strategies of faults; default every fault (with ``reads``, a set of
    :data:`ctxsim.surfaces.SURFACES`, every fault real on one of those surfaces and written into it,
    :func:`ctxsim.surfaces.carried_on`: what a tracker reading them can meet; a fault its input cannot carry is never
    drawn, so no counterexample holds one).
    ``truth_keeping`` keeps to faults and parameters that keep the truth (a correct tracker must track every such
    stream). Shrinks towards fewer faults, earlier in ``faults``, with their first parameter choices.
    """
    entries: list[str | type[Fault] | Fault | SearchStrategy[Fault]] = list(F.REGISTRY) if faults is None else list(
        faults)
    if reads is not None and faults is None:
        entries = [name for name in F.REGISTRY if carried_on(name) & reads]
    options = [o for o in (_option(e, truth_keeping) for e in entries) if o is not None]
    count, seeds = _knob("fault_plans", "size", size), _knob("fault_plans", "seed", seed)

    @st.composite
    def plans(draw: Any) -> FaultPlan:
        wanted = min(_checked("fault_plans", "size", draw(count), 0), len(options))
        picked = draw(st.lists(st.integers(0, len(options) - 1), min_size=wanted, max_size=wanted, unique=True)
                      if options else st.just([]))
        return FaultPlan(tuple(draw(options[i]) for i in picked), draw(seeds))

    return plans()


