"""The strategies for sessions, message streams and fault plans, and the settings profiles (the package's face
says what they generate and guarantee)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from .. import faults as F
from ..faults import Fault, FaultPlan, apply
from ..scenario import scenario_yaml
from ..wire import Script, render
from ..world import (
    CALL_BYTES,
    DEFAULT_MODEL,
    SUBAGENT_BYTES,
    Bytes,
    Compaction,
    Session,
    SessionBuilder,
    auto_compact_threshold,
    dress,
    main_call,
    prompts,
    subagent,
)

__all__ = [
    "MessageStream",
    "fault_plans",
    "message_streams",
    "register_profiles",
    "scenario_text",
    "sessions",
]

IntKnob = int | SearchStrategy[int]
"""A count: a value, or a strategy that draws one."""

_UP_TO_1, _UP_TO_2, _UP_TO_3 = st.integers(0, 1), st.integers(0, 2), st.integers(0, 3)
_QUERIES = st.integers(1, 3)
_SEEDS = st.integers(0, 2**16 - 1)
_BOOLEANS = st.booleans()


def _knob(where: str, name: str, value: Any, *, minimum: int = 0) -> SearchStrategy[Any]:
    """``value`` as a strategy: a strategy as given, a valid plain value as ``st.just``."""
    if isinstance(value, SearchStrategy):
        return value
    if type(value) is not int or value < minimum:
        raise InvalidArgument(f"ctxsim: {where}({name}={value!r}): expected an integer >= {minimum} or a strategy")
    return st.just(value)


def _checked(where: str, name: str, value: Any, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise InvalidArgument(f"ctxsim: {where}({name}=...) drew {value!r}; expected an integer >= {minimum}")
    return value


# --- sessions ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class _GeneratedSession(Session):
    """A session drawn by :func:`sessions`: a plain :class:`Session` that prints as its scenario file."""

    scenario: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """The scenario document: ``name``, ``world`` and ``queries``, as :func:`scenario_yaml` takes them, and
    ``built``, the fields it describes (a copy made with ``dataclasses.replace`` may no longer match it)."""

    @property
    def described(self) -> bool:
        """True while the scenario document still describes this session."""
        built = self.scenario.get("built")
        return built is not None and built[0] is self.queries and built[1:] == _world_fields(self)

    def __repr__(self) -> str:
        return scenario_text(self) if self.described else Session.__repr__(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _world_fields(session: Session) -> tuple[Any, ...]:
    return session.model, session.window, session.baseline, session.max_output_tokens, session.seed


@dataclass
class _Tally:
    """The main chain's next prompt, as :class:`SessionBuilder` derives it (the window check needs it first)."""

    baseline: int
    prompt: int | None = None
    output: int = 0
    pending: int = 0

    def next(self) -> int:
        return (self.baseline if self.prompt is None else self.prompt) + self.output + self.pending

    def called(self, prompt: int, output: int, added: int) -> None:
        self.prompt, self.output, self.pending = prompt, output, added

    def compacted(self, post: int) -> None:
        self.prompt, self.output, self.pending = self.baseline + post, 0, 0  # the system prefix stays


_CALL = st.binary(min_size=CALL_BYTES, max_size=CALL_BYTES)
"""A main call's bytes, read by :func:`ctxsim.world.main_call` (not ``.map``-ed: a map costs more than
the draw)."""
_SUBAGENT = st.binary(min_size=SUBAGENT_BYTES, max_size=SUBAGENT_BYTES)


def _spots(draw: Any, count: SearchStrategy[int], name: str, n: int, low: int = 0) -> list[int]:
    """Up to ``count`` distinct call indices in ``low..n-1``.

    Drawn as offsets (two bytes each, one draw) taken modulo the range, so that removing a call while shrinking
    never invalidates them.
    """
    wanted = _checked("sessions", name, draw(count), 0)
    if n <= low or not wanted:
        return []
    b = Bytes(draw(st.binary(min_size=2 * wanted, max_size=2 * wanted)))
    return sorted({low + b.take(2) % (n - low) for _ in range(wanted)})


def _blocks(thinking: bool, results: Sequence[int]) -> list[str]:
    return (["thinking"] if thinking else []) + ["text"] + ["tool_use"] * len(results)


@st.composite
def _sessions(draw: Any, knobs: dict[str, SearchStrategy[Any]]) -> Session:
    calls = [main_call(raw) for raw in draw(knobs["calls"])]
    n = len(calls)
    window = _checked("sessions", "window", draw(knobs["window"]), 100_000)
    baseline = _checked("sessions", "baseline", draw(knobs["baseline"]), 1)
    max_output = _checked("sessions", "max_output", draw(knobs["max_output"]), 1)
    model, seed = draw(knobs["model"]), draw(knobs["seed"])
    if baseline > window // 4:
        raise InvalidArgument(f"ctxsim: sessions() drew baseline={baseline:,} for window={window:,}; a baseline is "
                              f"at most a quarter of the window")
    more_queries = _checked("sessions", "queries", draw(knobs["queries"]), 1) - 1
    starts = {0, *_spots(draw, st.just(more_queries), "queries", n, 1)}
    subagents = {i: subagent(draw(_SUBAGENT)) for i in _spots(draw, knobs["subagents"], "subagents", n)}
    expiries = set(_spots(draw, knobs["cache_expiries"], "cache_expiries", n, 1))
    compactions = set(_spots(draw, knobs["compactions"], "compactions", n, 1))
    resets = set(_spots(draw, knobs["resets"], "resets", n, 1))
    threshold = auto_compact_threshold(window, max_output)
    post_high = max(1_000, min(25_000, threshold // 2 - baseline))  # a summary; the system prefix comes on top
    posts = st.integers(1_000, post_high)

    builder = SessionBuilder(seed=seed, model=model, window=window, baseline=baseline, max_output_tokens=max_output,
                             name=f"generated-{seed}")
    tally = _Tally(baseline)
    queries: list[dict[str, Any]] = []
    slots: list[dict[str, Any] | None] = []
    compacts: list[dict[str, Any]] = []

    def compact(post: int) -> None:
        post = max(0, min(post, tally.next() - baseline))  # the summary of what there is beyond the prefix
        builder.compact(post)
        compacts.append({"post": post})
        queries[-1]["steps"].append({"compact": compacts[-1]})
        tally.compacted(post)

    def call(thinking: bool, results: Sequence[int], out: int) -> dict[str, Any]:
        kinds = _blocks(thinking, results)
        builder.call(output=min(out, max_output), blocks=tuple(kinds), results=tuple(results))
        slot: dict[str, Any] = {"blocks": kinds, "results": list(results)}
        slots.append(slot)
        return slot

    for i, (thinking, results, out) in enumerate(calls):
        if i in starts:
            prompt = draw(st.sampled_from(prompts()))
            builder.query(prompt)
            queries.append({"prompt": prompt, "steps": []})
            tally.pending += max(1, len(prompt) // 4)
        steps = queries[-1]["steps"]
        if i in resets:
            builder.reset()
            steps.append({"reset": {}})
            tally = _Tally(baseline)
        if i in expiries:
            keep = draw(st.sampled_from((0, baseline)))
            builder.expire_cache(keep_prefix=keep)
            steps.append({"expire_cache": {"keep_prefix": keep}})
        if i in compactions:
            compact(draw(posts))
        if i in subagents:
            task, prompt_tokens, sub_calls, answer = subagents[i]
            if tally.next() > threshold:
                compact(draw(posts))
            builder.start_subagent(task, prompt_tokens=prompt_tokens, output=150)
            slots.append(None)
            tally.called(tally.next(), 150, 0)
            docs = [call(t, r, o) for t, r, o in sub_calls]
            builder.end_subagent(result_tokens=answer)
            tally.pending += answer
            steps.append({"subagent": {"description": task, "prompt_tokens": prompt_tokens, "out": 150,
                                       "calls": docs, "result": answer}})
        if tally.next() > threshold:
            compact(draw(posts))
        last_of_query = i + 1 in starts or i == n - 1
        results = [] if last_of_query else results
        prompt = tally.next()
        steps.append({"call": call(thinking, results, out)})
        tally.called(prompt, min(out, max_output), sum(results))

    built = builder.build()
    for doc, made in zip(slots, built.calls):
        if doc is not None:
            kinds, results = doc.pop("blocks"), doc.pop("results")
            doc.update({"in": made.input_tokens, "cc": made.cache_creation_input_tokens,
                        "cr": made.cache_read_input_tokens, "out": made.output_tokens, "blocks": kinds})
            if results:
                doc["results"] = results
    steps_made = [s for q in built.queries for s in q.steps if isinstance(s, Compaction)]
    for doc, made_compaction in zip(compacts, steps_made):
        doc["pre"] = made_compaction.pre_tokens
    dressed = dress(built, seed)
    world = {"model": model, "window": window, "baseline": baseline, "max_output": max_output, "seed": seed}
    return _GeneratedSession(**{f.name: getattr(dressed, f.name) for f in fields(Session)},
                             scenario={"name": built.name, "world": world, "queries": queries,
                                       "built": (dressed.queries, *_world_fields(dressed))})


def _calls_knob(calls: Any) -> SearchStrategy[list[Any]]:
    if isinstance(calls, tuple) and len(calls) == 2 and all(type(v) is int for v in calls) and (
            1 <= calls[0] <= calls[1]):
        return st.lists(_CALL, min_size=calls[0], max_size=calls[1])
    if isinstance(calls, SearchStrategy):
        return calls.flatmap(lambda n: st.lists(_CALL, min_size=_checked("sessions", "calls", n, 1), max_size=n))
    if type(calls) is int and calls >= 1:
        return st.lists(_CALL, min_size=calls, max_size=calls)
    raise InvalidArgument(f"ctxsim: sessions(calls={calls!r}): expected an integer >= 1, a (min, max) pair or a "
                          f"strategy")


def sessions(
    *,
    calls: int | tuple[int, int] | SearchStrategy[int] = (1, 20),
    queries: IntKnob = _QUERIES,
    subagents: IntKnob = _UP_TO_2,
    compactions: IntKnob = _UP_TO_1,
    cache_expiries: IntKnob = _UP_TO_2,
    resets: IntKnob = _UP_TO_1,
    window: IntKnob = 200_000,
    baseline: IntKnob = 12_000,
    max_output: IntKnob = 32_000,
    model: str | SearchStrategy[str] = DEFAULT_MODEL,
    seed: IntKnob = _SEEDS,
) -> SearchStrategy[Session]:
    """Sessions with ``calls`` main-chain calls in up to ``queries`` queries, and up to the events asked for.

    ``calls`` is a count, a ``(min, max)`` range (the default, and what shrinks best: calls are removed one by
    one) or a strategy of counts. Up to ``subagents`` extra main calls start a subagent (one to three calls of its
    own, then its answer); up to ``compactions``, ``cache_expiries`` and ``resets`` (``/clear``) happen before
    chosen calls (two events of a kind may fall on the same call, and then count once). Tool results run from a few
    tokens to 30k; whenever the next prompt would pass Claude Code's autocompact threshold the session compacts
    first, so no prompt exceeds the window. ``window`` is at least 100,000. Each query ends with a text-only call.

    Shrinks towards one query of one text-only call with no events; the drawn session prints as its scenario.
    """
    knobs = {
        "calls": _calls_knob(calls),
        "queries": _knob("sessions", "queries", queries, minimum=1),
        "subagents": _knob("sessions", "subagents", subagents),
        "compactions": _knob("sessions", "compactions", compactions),
        "cache_expiries": _knob("sessions", "cache_expiries", cache_expiries),
        "resets": _knob("sessions", "resets", resets),
        "window": _knob("sessions", "window", window, minimum=100_000),
        "baseline": _knob("sessions", "baseline", baseline, minimum=1),
        "max_output": _knob("sessions", "max_output", max_output, minimum=1),
        "seed": _knob("sessions", "seed", seed),
        "model": model if isinstance(model, SearchStrategy) else st.just(model),
    }
    return _sessions(knobs)


# --- fault plans ------------------------------------------------------------------------------------------------


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
        "garbage_values": st.one_of(
            st.fixed_dictionaries({"fields": st.just("bystander"),
                                   "kinds": st.lists(choose(kinds), min_size=1, unique=True).map(tuple)}),
            st.fixed_dictionaries({"fields": st.just("prompt"), "kinds": st.lists(
                choose(("numeric_string", "float") if keep else kinds), min_size=1, unique=True).map(tuple)})),
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
) -> SearchStrategy[FaultPlan]:
    """Plans of ``size`` distinct faults (in drawn order) with drawn parameters.

    ``faults`` lists what may be drawn: fault names or classes of :mod:`ctxsim.faults` (parameters drawn),
    fault instances, or strategies of faults; default every fault. ``truth_keeping`` keeps to faults and
    parameters that keep the truth (a correct tracker must track every such stream). Shrinks towards fewer
    faults, earlier in ``faults``, with their first parameter choices.
    """
    entries = list(F.REGISTRY) if faults is None else list(faults)
    options = [o for o in (_option(e, truth_keeping) for e in entries) if o is not None]
    count, seeds = _knob("fault_plans", "size", size), _knob("fault_plans", "seed", seed)

    @st.composite
    def plans(draw: Any) -> FaultPlan:
        wanted = min(_checked("fault_plans", "size", draw(count), 0), len(options))
        picked = draw(st.lists(st.integers(0, len(options) - 1), min_size=wanted, max_size=wanted, unique=True)
                      if options else st.just([]))
        return FaultPlan(tuple(draw(options[i]) for i in picked), draw(seeds))

    return plans()


# --- message streams --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MessageStream:
    """A session rendered as the CLI writes it and put through a fault plan: what a tracker under test sees.

    Play it with ``ctxsim.check.run_tracker(tracker, stream.session, scripts=stream.scripts)`` (the real client)
    or ``run_tracker_parsed(tracker, stream.session, stream.scripts)``. Prints as its scenario file.
    """

    session: Session
    plan: FaultPlan
    """The faults applied; its seed is the session's, as a scenario's ``world.seed`` seeds its faults."""
    partial: bool
    """Rendered with ``include_partial_messages`` (``stream_event`` frames)."""
    scripts: tuple[Script, ...]

    def __repr__(self) -> str:
        if isinstance(self.session, _GeneratedSession) and self.session.described:
            return scenario_text(self)
        name = self.session.name or self.session.session_id
        return f"MessageStream(session={name!r}, partial={self.partial}, faults={self.plan.spec()!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _stream(session: Session, plan: FaultPlan, partial: bool) -> MessageStream:
    plan = FaultPlan(plan.faults, session.seed)
    scripts = apply(plan, render(session, include_partial_messages=partial))
    return MessageStream(session, plan, partial, tuple(scripts))


def message_streams(
    *,
    session: Session | SearchStrategy[Session] | None = None,
    faults: FaultPlan | SearchStrategy[FaultPlan] | None = None,
    partial: bool | SearchStrategy[bool] = _BOOLEANS,
) -> SearchStrategy[MessageStream]:
    """Sessions (default :func:`sessions`) rendered with or without ``partial`` messages and faulted.

    ``faults`` is a plan or a strategy of plans (default :func:`fault_plans`); the plan's seed is replaced by the
    session's seed, so the printed scenario (whose ``world.seed`` seeds its ``faults``) replays the same stream.
    """
    sessions_ = sessions() if session is None else session if isinstance(session, SearchStrategy) else st.just(
        session)
    plans = fault_plans() if faults is None else faults if isinstance(faults, SearchStrategy) else st.just(faults)
    partials = partial if isinstance(partial, SearchStrategy) else st.just(partial)
    return st.builds(_stream, sessions_, plans, partials)


# --- printing and profiles --------------------------------------------------------------------------------------


def scenario_text(value: Session | MessageStream, *, source: str = "ctxsim.strategies", comment: str = "") -> str:
    """The scenario file that rebuilds ``value``, a session or stream drawn from these strategies (``source`` and
    ``comment``: the file's ``source`` and a header comment above the generated one)."""
    stream = value if isinstance(value, MessageStream) else None
    session = stream.session if stream is not None else value
    if not isinstance(session, _GeneratedSession) or not session.described:
        raise InvalidArgument(f"ctxsim: scenario_text() takes a session or stream drawn from ctxsim.strategies "
                              f"(unchanged), got {type(value).__name__}")
    doc = session.scenario
    faults_ = stream.plan.spec() if stream is not None else ()
    comment = "\n".join(filter(None, (comment, "Generated by ctxsim.strategies: calls, ids, uuids and faults replay "
                                                 "exactly; the text is filler of the same length.")))
    return scenario_yaml(name=doc["name"], source=source, world=doc["world"], queries=doc["queries"],
                         partial=stream.partial if stream is not None else None, faults=faults_, comment=comment)


def register_profiles(*, database: str | None = None) -> None:
    """Register the Hypothesis settings profiles ``ctx-fast``, ``ctx-ci`` and ``ctx-fuzz``; load none.

    ``ctx-fast``: 20 examples, for the edit-test loop. ``ctx-ci``: 200 derandomized examples, no example
    database, blobs printed to reproduce (HypoFuzz skips derandomized tests: use it in CI only). ``ctx-fuzz``:
    10,000 examples, and the campaign's shared example database when ``database`` or ``$CTXSIM_FUZZ_DATABASE``
    names one (:func:`ctxsim.strategies.example_database`: a directory, or ``redis://...``). None has a deadline (a
    stream through the real SDK takes tens of milliseconds). Load one with ``settings.load_profile("ctx-ci")`` or
    ``pytest --hypothesis-profile=ctx-ci``.
    """
    from ._database import example_database

    shared = example_database(database)
    slow = [HealthCheck.too_slow, HealthCheck.data_too_large]
    settings.register_profile("ctx-fast", max_examples=20, deadline=None, suppress_health_check=slow)
    settings.register_profile("ctx-ci", max_examples=200, derandomize=True, database=None, print_blob=True,
                              deadline=None, suppress_health_check=slow)
    fuzz = settings(max_examples=10_000, deadline=None, suppress_health_check=slow)
    settings.register_profile("ctx-fuzz", fuzz if shared is None else settings(fuzz, database=shared))

