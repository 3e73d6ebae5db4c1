"""The YAML scenario format: a session whose true context is known, and what trackers must do on it.

A scenario file describes one Claude Code session compactly (one line per API call) and the expected outcome:
the reference tracker tracks it, and the named trackers of :mod:`ctxsim.trackers` fail on it. It is read with
PyYAML's *safe* loader only (no tags, no anchors or aliases, no duplicate keys), validated strictly, and built
into a :class:`ctxsim.world.Session` with :class:`~ctxsim.world.SessionBuilder`. Every error is a
:class:`ScenarioError` whose message reads ``ctxsim: <file>:<line>: <key path>: <what is wrong>``, e.g.
``ctxsim: scenarios/x.yaml:14: queries[0].steps[2].call.cr: expected a non-negative integer, got -5``.

Example::

    name: seed000-cache-read-719
    source: "mala seed 000: 719% reported when actual usage was ~3%"
    description: one or two sentences on the bug
    world: {model: claude-sonnet-4-5, window: 200000, baseline: 12000, seed: 0}
    stream: {partial: false}
    queries:
      - prompt: "Run the tests"
        steps:
          - call: {in: 3, cc: 500, cr: 20000, out: 159, blocks: [thinking, text, tool_use], results: [1500]}
          - call: {prompt: 24000, out: 40}
          - call: {}
          - repeat: {times: 240, call: {in: 3, cc: 20, cr: 5990, out: 20}}
          - expire_cache: {keep_prefix: 0}
          - compact: {post: 20000}
          - subagent: {description: explore, calls: [{results: [30000]}, {}], result: 600}
          - reset: {}
    expect:
      tolerance: 0
      reference: pass
      fail: [mala-cache-read-pressure]
      pass: [arbiter-msgid]

Keys (integers are token counts unless said otherwise; YAML allows ``172_301``):

Top level
    ``name`` (string, default: the file's stem), ``source`` (string: the public report or seed the numbers come
    from), ``description`` (string), ``world``, ``stream``, ``queries`` (required), ``expect``.
``world`` (all optional)
    ``model`` (default ``claude-sonnet-4-5``), ``window`` (context window, default 200,000, > 0), ``baseline``
    (system prompt + tools a fresh conversation starts with, default 12,000), ``max_output`` (max output tokens,
    default 32,000, > 0), ``seed`` (any integer, default 0: ids, uuids and filler text derive from it).
``stream`` (optional)
    ``partial`` (bool, default false): render with ``include_partial_messages`` (``stream_event`` frames).
``queries`` (a non-empty list; each item one ``client.query()``, closed by one ``ResultMessage``)
    ``prompt`` (string, default ``Continue with the task.``), ``prompt_tokens`` (tokens the prompt adds to the
    next derived call; default about ``len(prompt) / 4``), ``steps`` (a list, may be empty).
A step is a mapping with exactly one of these keys:
    ``call``
        one API call of the current chain (the main chain, or the subagent being described). ``in``/``cc``/``cr``
        (uncached input, cache creation, cache read) state the usage exactly: give all three or none. Without
        them the prompt is ``prompt`` if given, else the previous prompt plus its output plus everything added
        since; either way it is split as a real prompt cache would split it. ``out`` (final output tokens,
        default 120); ``blocks`` (list of ``thinking``, ``text``, ``tool_use``; default ``text`` plus one
        ``tool_use`` per result); ``results`` (tokens of each tool result, one per ``tool_use`` block);
        ``model`` (string); ``id`` (the message id, string); ``request_id`` (string, or ``false`` for none).
        ``{}`` is a call derived entirely from growth. A prompt is 1 token up to the window, and a cache read
        no larger than the window.
    ``repeat``
        ``times`` (1..10,000) and either ``call`` (one call mapping) or ``steps`` (a list of steps). A scenario
        builds at most 20,000 calls in all.
    ``expire_cache``
        the prompt cache expired (TTL, resume, microcompaction): the next call re-creates what it read.
        ``keep_prefix`` (tokens still readable, default 0). An empty value or ``{}`` is fine.
    ``compact``
        Claude Code compacted the main chain: ``post`` (required, tokens after), ``pre`` (tokens before, default
        the current context), ``trigger`` (``auto`` or ``manual``, default ``auto``).
    ``subagent``
        a main call starts a subagent (``Agent`` tool), its ``calls`` (a non-empty list of call mappings) run in
        its own context, and its answer reaches the main chain. ``description`` (string), ``prompt_tokens`` (the
        subagent's task prompt, default 400), ``out`` (output of the main call that starts it, default 150),
        ``calls`` (required), ``result`` (tokens of the answer the main chain gets, default 600). Claude Code
        forwards only the tool uses of a subagent's calls, so a subagent call without a ``tool_use`` block
        reaches no tracker (and has no observation point).
    ``reset``
        ``/clear``: a new session id, the main context starts again from the baseline. Empty value or ``{}``.
``expect`` (optional)
    ``tolerance`` (tokens a tracker may be off at any point, default 0); ``reference`` (``pass``, the default,
    or ``fail``); ``fail`` (catalogued trackers, :mod:`ctxsim.trackers`, that must fail on the scenario);
    ``pass`` (catalogued trackers that must track it). A tracker may appear in only one list, and
    ``reference`` in neither (use ``expect.reference``).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ._internal.yaml_lines import LineLoader, Positioned, Reader, describe, join_path
from .world import Session, SessionBuilder

__all__ = ["Scenario", "ScenarioError", "load_scenario", "parse_scenario"]

MAX_REPEAT = 10_000
"""The largest ``repeat.times``."""
MAX_CALLS = 20_000
"""The most calls a scenario may build (nested repeats multiply)."""

_BLOCK_KINDS = ("thinking", "text", "tool_use")
_STEP_KINDS = ("call", "repeat", "expire_cache", "compact", "subagent", "reset")
_CALL_KEYS = ("in", "cc", "cr", "prompt", "out", "blocks", "results", "model", "id", "request_id")
_TOP_KEYS = ("name", "source", "description", "world", "stream", "queries", "expect")
_WORLD_KEYS = ("model", "window", "baseline", "max_output", "seed")


class ScenarioError(ValueError):
    """A scenario file that cannot be read or is not a valid scenario; the message names file, line and key."""

    def __init__(self, message: str, *, file: str = "", line: int | None = None, key: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.key = key


@dataclass(frozen=True)
class Scenario:
    """A loaded scenario: the session it describes and what is expected of trackers on it."""

    name: str
    source: str
    description: str
    session: Session
    path: Path
    partial: bool = False
    """Render with ``include_partial_messages``."""
    tolerance: int = 0
    expect_reference: bool = True
    """True when the reference tracker must track the session (``expect.reference: pass``)."""
    must_fail: tuple[str, ...] = ()
    """Catalogued trackers that must fail on the session, in file order."""
    must_pass: tuple[str, ...] = ()
    """Catalogued trackers that must track the session, in file order."""
    lines: Mapping[str, int] = field(default_factory=dict)
    """The 1-based line of each top-level section present (``name``, ``queries``, ``expect``...), of
    ``expect.reference``/``expect.tolerance`` when given, and of each expected tracker as ``tracker:<name>``."""
    points: Mapping[str, int] = field(default_factory=dict)
    """The line of the step behind each observation point, by the point's label (``q1 call 2``, ``q2 result``)."""

    def line_of(self, tracker: str) -> int:
        """The line that states what ``tracker`` (or ``reference``) must do: its entry, else ``expect``, else 1."""
        lines = self.lines
        if tracker == "reference":
            return lines.get("expect.reference") or lines.get("expect") or lines.get("queries") or 1
        return lines.get(f"tracker:{tracker}") or lines.get("expect") or 1


# --- building ---------------------------------------------------------------------------------------------------


@dataclass
class _Labels:
    """Mirrors how :mod:`ctxsim.wire` labels observation points, to map each back to a line of the file."""

    points: dict[str, int] = field(default_factory=dict)
    query: int = 0
    main: int = 0
    sub: int = 0
    call_lines: list[tuple[int, str]] = field(default_factory=list)
    """``(line, key path)`` of every call built, in session order, for checks after building."""

    def mark(self, label: str, line: int) -> None:
        self.points.setdefault(f"q{self.query} {label}", line)


class _Builder:
    """Turns a validated document into a session, step by step."""

    def __init__(self, reader: Reader, builder: SessionBuilder, window: int) -> None:
        self.r = reader
        self.b = builder
        self.window = window
        self.labels = _Labels()

    def query(self, item: Any, line: int, path: str) -> None:
        r = self.r
        q = r.mapping(item, line, path, ("prompt", "prompt_tokens", "steps"))
        prompt = r.get(q, "prompt", path, r.string, "Continue with the task.")
        tokens = r.get(q, "prompt_tokens", path, r.count)
        steps = r.get(q, "steps", path, lambda v, ln, p: r.sequence(v, ln, p), None)
        self.b.query(prompt, prompt_tokens=tokens)
        self.labels.query += 1
        self.labels.main = self.labels.sub = 0
        for i, step in enumerate(steps or ()):
            self.step(step, steps.item_lines[i], f"{path}.steps[{i}]")
        self.labels.mark("result", q.line)

    def step(self, item: Any, line: int, path: str) -> None:
        r = self.r
        kinds = _STEP_KINDS
        s = r.mapping(item, line, path, kinds)
        if len(s) != 1:
            what = "an empty mapping" if not s else f"{len(s)} keys ({', '.join(map(str, s))})"
            raise r.error(s.line, path, f"a step has exactly one of {', '.join(kinds)}; got {what}")
        (kind,) = s
        value, vline, vpath = s[kind], s.value_lines[kind], join_path(path, kind)
        getattr(self, f"step_{kind}")(value, vline, vpath, at=s.line)

    def step_call(self, value: Any, line: int, path: str, *, at: int, sub: bool = False) -> None:
        """One call; ``at`` is the line of the step (or list item) that holds it."""
        r = self.r
        c = r.mapping(value, line, path, _CALL_KEYS, empty_ok=True)
        split = {k: r.get(c, k, path, r.count) for k in ("in", "cc", "cr")}
        given = [k for k, v in split.items() if v is not None]
        if given and len(given) != 3:
            missing = [k for k in ("in", "cc", "cr") if k not in given]
            raise r.error(c.line, join_path(path, missing[0]),
                          "give all of in, cc and cr (the exact usage) or none of them")
        prompt = r.get(c, "prompt", path, r.count)
        if given and prompt is not None:
            raise r.error(c.key_lines["prompt"], join_path(path, "prompt"),
                          "give either prompt or in/cc/cr, not both")
        if split["cr"] is not None and split["cr"] > self.window:
            raise r.error(c.value_lines["cr"], join_path(path, "cr"),
                          f"cache read of {split['cr']:,} tokens is larger than the window ({self.window:,})")
        total = sum(split.values()) if given else None  # type: ignore[arg-type]
        if total is not None and not 0 < total <= self.window:
            raise r.error(c.line, path, f"a prompt of {total:,} tokens (in + cc + cr): an API call's prompt is "
                                        f"1 to {self.window:,} tokens (the window)")
        if prompt is not None and not 0 < prompt <= self.window:
            raise r.error(c.value_lines["prompt"], join_path(path, "prompt"),
                          f"a prompt of {prompt:,} tokens: an API call's prompt is 1 to {self.window:,} tokens "
                          f"(the window)")
        if len(self.labels.call_lines) >= MAX_CALLS:
            raise r.error(at, path, f"more than {MAX_CALLS:,} calls in one scenario")
        out = r.get(c, "out", path, r.count, 120)
        blocks = r.get(c, "blocks", path, self.blocks)
        results = r.get(c, "results", path, self.results, ())
        if blocks is not None and results and len(results) != blocks.count("tool_use"):
            raise r.error(c.value_lines["results"], join_path(path, "results"),
                          f"{len(results)} results for {blocks.count('tool_use')} tool_use blocks")
        model = r.get(c, "model", path, r.string)
        message_id = r.get(c, "id", path, r.string)
        request_id = r.get(c, "request_id", path, self.request_id)
        try:
            self.b.call(input=split["in"], cache_creation=split["cc"], cache_read=split["cr"], prompt=prompt,
                        output=out, blocks=blocks, results=results, model=model, message_id=message_id,
                        request_id=request_id)
        except ValueError as exc:
            raise r.error(at, path, str(exc).removeprefix("ctxsim: ")) from None
        self.labels.call_lines.append((at, path))
        if sub:
            self.labels.sub += 1
            self.labels.mark(f"subagent call {self.labels.sub}", at)
        else:
            self.labels.main += 1
            self.labels.mark(f"call {self.labels.main}", at)

    def blocks(self, value: Any, line: int, path: str) -> tuple[str, ...]:
        r = self.r
        seq = r.sequence(value, line, path, non_empty=True)
        for i, kind in enumerate(seq):
            r.choice(_BLOCK_KINDS)(kind, seq.item_lines[i], f"{path}[{i}]")
        return tuple(seq)

    def results(self, value: Any, line: int, path: str) -> tuple[int, ...]:
        r = self.r
        seq = r.sequence(value, line, path)
        return tuple(r.count(v, seq.item_lines[i], f"{path}[{i}]") for i, v in enumerate(seq))

    def request_id(self, value: Any, line: int, path: str) -> str | bool:
        if value is False or isinstance(value, str):
            return value
        raise self.r.error(line, path, f"expected a string or false, got {describe(value)}")

    def step_repeat(self, value: Any, line: int, path: str, *, at: int) -> None:
        r = self.r
        m = r.mapping(value, line, path, ("times", "call", "steps"), required=("times",))
        times = r.get(m, "times", path, lambda v, ln, p: r.integer(v, ln, p, minimum=1, maximum=MAX_REPEAT))
        if ("call" in m) == ("steps" in m):
            raise r.error(m.line, path, "give either call or steps")
        if "call" in m:
            for _ in range(times):
                self.step_call(m["call"], m.value_lines["call"], join_path(path, "call"), at=at)
            return
        steps = r.sequence(m["steps"], m.value_lines["steps"], join_path(path, "steps"), non_empty=True)
        for _ in range(times):
            for i, step in enumerate(steps):
                self.step(step, steps.item_lines[i], f"{path}.steps[{i}]")

    def step_expire_cache(self, value: Any, line: int, path: str, *, at: int) -> None:
        r = self.r
        m = r.mapping(value, line, path, ("keep_prefix",), empty_ok=True)
        self.b.expire_cache(keep_prefix=r.get(m, "keep_prefix", path, r.count, 0))

    def step_compact(self, value: Any, line: int, path: str, *, at: int) -> None:
        r = self.r
        m = r.mapping(value, line, path, ("post", "pre", "trigger"), required=("post",))
        post = r.get(m, "post", path, r.count)
        if post > self.window:
            raise r.error(m.value_lines["post"], join_path(path, "post"),
                          f"{post:,} tokens after compaction exceed the window ({self.window:,})")
        pre = r.get(m, "pre", path, r.count)
        trigger = r.get(m, "trigger", path, r.choice(("auto", "manual")), "auto")
        self.b.compact(post, pre_tokens=pre, trigger=trigger)
        self.labels.mark("compaction", at)

    def step_subagent(self, value: Any, line: int, path: str, *, at: int) -> None:
        r = self.r
        m = r.mapping(value, line, path, ("description", "prompt_tokens", "out", "calls", "result"),
                      required=("calls",))
        description = r.get(m, "description", path, r.string, "explore the code")
        prompt_tokens = r.get(m, "prompt_tokens", path, r.count, 400)
        out = r.get(m, "out", path, r.count, 150)
        calls = r.sequence(m["calls"], m.value_lines["calls"], join_path(path, "calls"), non_empty=True)
        result = r.get(m, "result", path, r.count, 600)
        self.b.start_subagent(description, prompt_tokens=prompt_tokens, output=out)
        self.labels.call_lines.append((at, path))
        self.labels.main += 1
        self.labels.mark(f"call {self.labels.main}", at)
        self.labels.sub = 0
        for i, call in enumerate(calls):
            self.step_call(call, calls.item_lines[i], f"{path}.calls[{i}]", at=calls.item_lines[i], sub=True)
        self.b.end_subagent(result_tokens=result)

    def step_reset(self, value: Any, line: int, path: str, *, at: int) -> None:
        self.r.mapping(value, line, path, (), empty_ok=True)
        self.b.reset()
        self.labels.main = 0
        self.labels.mark("reset", at)

    def check_windows(self, session: Session) -> None:
        """Derived prompts are known only once built: none may exceed the window."""
        for call, (line, path) in zip(session.calls, self.labels.call_lines):
            if call.prompt > self.window:
                raise self.r.error(line, path, f"this call's prompt grows to {call.prompt:,} tokens, more than "
                                               f"the window ({self.window:,})")


def _known_trackers() -> Collection[str]:
    from .trackers import CATALOGUE

    return CATALOGUE


def parse_scenario(text: str, *, file: str = "<scenario>", path: Path | None = None,
                   trackers: Collection[str] | None = None) -> Scenario:
    """Read a scenario from YAML ``text``; ``file`` names it in errors.

    ``trackers`` are the names ``expect.fail``/``expect.pass`` may use (default: :data:`ctxsim.trackers.CATALOGUE`).
    """
    reader = Reader(file, ScenarioError)
    try:
        doc = yaml.load(text, Loader=LineLoader)  # noqa: S506 - a SafeLoader subclass
    except Positioned as exc:
        raise reader.error(exc.line, "", str(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise reader.error(line, "", f"not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise reader.error(1, "", f"not valid YAML: {exc}") from None
    except RecursionError:
        raise reader.error(1, "", "nested too deeply") from None
    if doc is None:
        raise reader.error(1, "", "the file is empty (a scenario is a mapping with at least queries)")
    top = reader.mapping(doc, 1, "", _TOP_KEYS, required=("queries",))
    r = reader
    lines = {key: top.key_lines[key] for key in top}

    stem = path.stem if path is not None else "scenario"
    name = r.get(top, "name", "", r.string, stem)
    source = r.get(top, "source", "", r.string, "")
    description = r.get(top, "description", "", r.string, "")

    world = r.mapping(top.get("world"), top.value_lines.get("world", 1), "world", _WORLD_KEYS, empty_ok=True)
    window = r.get(world, "window", "world", r.positive, 200_000)
    builder = SessionBuilder(
        seed=r.get(world, "seed", "world", lambda v, ln, p: r.integer(v, ln, p, minimum=None), 0),
        model=r.get(world, "model", "world", r.string, SessionBuilder.model),
        window=window,
        baseline=r.get(world, "baseline", "world", r.count, SessionBuilder.baseline),
        max_output_tokens=r.get(world, "max_output", "world", r.positive, SessionBuilder.max_output_tokens),
        name=name,
    )
    if builder.baseline > window:
        if "baseline" in world:
            raise r.error(world.value_lines["baseline"], "world.baseline",
                          f"a baseline of {builder.baseline:,} tokens exceeds the window ({window:,})")
        raise r.error(world.value_lines["window"], "world.window",
                      f"a window of {window:,} tokens is smaller than the default baseline "
                      f"({builder.baseline:,}); give world.baseline too")

    stream = r.mapping(top.get("stream"), top.value_lines.get("stream", 1), "stream", ("partial",),
                       empty_ok=True)
    partial = r.get(stream, "partial", "stream", r.boolean, False)

    queries = r.sequence(top["queries"], top.value_lines["queries"], "queries", non_empty=True)
    build = _Builder(reader, builder, window)
    for i, item in enumerate(queries):
        build.query(item, queries.item_lines[i], f"queries[{i}]")
    session = builder.build()
    build.check_windows(session)

    expect = r.mapping(top.get("expect"), top.value_lines.get("expect", 1), "expect",
                       ("tolerance", "reference", "fail", "pass"), empty_ok=True)
    tolerance = r.get(expect, "tolerance", "expect", r.count, 0)
    reference = r.get(expect, "reference", "expect", r.choice(("pass", "fail")), "pass")
    for key in ("tolerance", "reference"):
        if key in expect:
            lines[f"expect.{key}"] = expect.key_lines[key]
    known = _known_trackers() if trackers is None else trackers
    lists: dict[str, tuple[str, ...]] = {}
    seen: dict[str, str] = {}
    for key in ("fail", "pass"):
        if key not in expect:
            lists[key] = ()
            continue
        path_ = f"expect.{key}"
        seq = r.sequence(expect[key], expect.value_lines[key], path_)
        names = []
        for i, item in enumerate(seq):
            where = (seq.item_lines[i], f"{path_}[{i}]")
            tracker = r.string(item, *where)
            if tracker == "reference":
                raise r.error(*where, "use expect.reference for the reference tracker")
            if tracker in seen:
                raise r.error(*where, f"{tracker!r} is already listed in expect.{seen[tracker]}")
            if tracker not in known:
                hint = difflib.get_close_matches(tracker, list(known), n=1)
                suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
                raise r.error(*where, f"no tracker {tracker!r} in the catalogue{suggestion}; known: "
                                      f"{', '.join(sorted(known))}")
            seen[tracker] = key
            names.append(tracker)
            lines[f"tracker:{tracker}"] = seq.item_lines[i]
        lists[key] = tuple(names)

    return Scenario(
        name=name, source=source, description=description, session=session,
        path=path if path is not None else Path(file), partial=partial, tolerance=tolerance,
        expect_reference=reference == "pass", must_fail=lists["fail"], must_pass=lists["pass"],
        lines=lines, points=dict(build.labels.points),
    )


def _display(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path) if rel.startswith(os.pardir) else rel


def load_scenario(path: str | os.PathLike[str], *, display: str | None = None,
                  trackers: Collection[str] | None = None) -> Scenario:
    """Load and validate the scenario file at ``path``; errors name it as ``display`` (default: a short path)."""
    p = Path(path)
    file = display if display is not None else _display(p)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError(f"ctxsim: {file}: cannot read the scenario: {reason}", file=file) from None
    return parse_scenario(text, file=file, path=p, trackers=trackers)
