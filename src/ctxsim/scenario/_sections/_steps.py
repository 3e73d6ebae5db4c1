"""Building a session from the ``queries`` of a scenario: each step validated and handed to SessionBuilder.

:class:`StepBuilder` walks the queries and steps of a loaded document, checks every value against the schema
(:mod:`ctxsim.scenario`) with the positions the YAML loader kept, and drives a
:class:`~ctxsim.world.SessionBuilder`.
It also records, for every observation point the wire will produce, the line of the step behind it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ...world import Call, Session, SessionBuilder, compacted_context
from .._schema import keys
from .._yaml import Map, Reader, describe, join_path

__all__ = ["MAX_CALLS", "MAX_REPEAT", "MAX_TEXT_TOKENS", "StepBuilder"]

MAX_REPEAT = 10_000
"""The largest ``repeat.times``."""
MAX_CALLS = 20_000
"""The most calls a scenario may build (nested repeats multiply)."""
MAX_TEXT_TOKENS = 20_000_000
"""The most tokens of generated text (user prompts, tool results, subagent prompts and results) a scenario's session
may hold, repeats counted: about 80 MB of text, checked before it is made."""

_BLOCK_KINDS = ("thinking", "text", "tool_use")
_STEP_KINDS = keys("queries[].steps[]")
_CALL_KEYS = keys("call")


@dataclass
class _Labels:
    """Mirrors how :mod:`ctxsim.wire` labels observation points, to map each back to a line of the file."""

    points: dict[str, int] = field(default_factory=dict)
    query: int = 0
    main: int = 0
    sub: int = 0
    subagents: list[list[int]] = field(default_factory=list)
    """The line of each call of each subagent of the query being read: labelled once the query is read, with the
    subagent's place where it has several (:func:`ctxsim.wire.subagent_label`)."""
    call_lines: list[tuple[int, str]] = field(default_factory=list)
    """``(line, key path)`` of every call built, in session order, for checks after building."""

    def mark(self, label: str, line: int) -> None:
        self.points.setdefault(f"q{self.query} {label}", line)

    def mark_subagents(self) -> None:
        """Label the subagent calls of the query just read, as the wire does."""
        from ...wire import subagent_label

        several = len(self.subagents) > 1
        for place, lines in enumerate(self.subagents, 1):
            for call, line in enumerate(lines, 1):
                self.points.setdefault(subagent_label(f"q{self.query}", place if several else None, call), line)
        self.subagents.clear()


class StepBuilder:
    """Turns the validated queries of a document into a session, step by step."""

    def __init__(self, reader: Reader, builder: SessionBuilder, window: int) -> None:
        self.r = reader
        self.b = builder
        self.window = window
        """The window of the model in force: what a call's prompt may reach."""
        self.labels = _Labels()
        self.checked: dict[int, dict[str, Any]] = {}
        """The builder keywords of each call mapping checked so far, by the mapping's id."""
        self.text_tokens = 0
        """Tokens of text the session holds so far (:data:`MAX_TEXT_TOKENS`)."""

    def spend(self, tokens: int, line: int, path: str) -> None:
        """Count ``tokens`` more of generated text; past :data:`MAX_TEXT_TOKENS`, an error at ``line``."""
        self.text_tokens += tokens
        if self.text_tokens > MAX_TEXT_TOKENS:
            raise self.r.error(line, path, f"the session's text passes {MAX_TEXT_TOKENS:,} tokens (prompts and tool "
                                           f"results, repeats counted): a scenario holds at most that much")

    def query(self, item: Any, line: int, path: str) -> None:
        r = self.r
        q = r.mapping(item, line, path, keys("queries[]"))
        prompt = r.get(q, "prompt", path, r.string, "Continue with the task.")
        tokens = r.get(q, "prompt_tokens", path, r.count)
        self.spend(tokens or 0, q.line, path)
        steps = r.get(q, "steps", path, lambda v, ln, p: r.sequence(v, ln, p), None)
        model = r.get(q, "model", path, r.string, None)
        if r.get(q, "idle", path, r.boolean, False):
            self.b.idle()
        if model is not None:
            self.b.switch_model(model)
            self.window = self.b.world().window_of(model)  # /model: the window in force follows the model
        self.b.query(prompt, prompt_tokens=tokens)
        self.labels.query += 1
        self.labels.main = self.labels.sub = 0
        for i, step in enumerate(steps or ()):
            self.step(step, steps.item_lines[i], f"{path}.steps[{i}]")
        self.labels.mark_subagents()
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
        key = id(value)  # a repeated call is checked once: its YAML value is the same object every time
        kwargs = self.checked.get(key)
        if kwargs is None:
            kwargs = self.checked[key] = self.read_call(value, line, path)
        if len(self.labels.call_lines) >= MAX_CALLS:
            raise r.error(at, path, f"more than {MAX_CALLS:,} calls in one scenario")
        self.spend(sum(kwargs["results"]), at, path)
        try:
            self.b.call(**kwargs)
        except ValueError as exc:
            raise r.error(at, path, str(exc).removeprefix("ctxsim: ")) from None
        self.labels.call_lines.append((at, path))
        if sub:
            self.labels.sub += 1
            self.labels.subagents[-1].append(at)
        else:
            self.labels.main += 1
            self.labels.mark(f"call {self.labels.main}", at)

    def read_call(self, value: Any, line: int, path: str) -> dict[str, Any]:
        """A call mapping checked, as :meth:`SessionBuilder.call` keywords."""
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
        total = sum(v or 0 for v in split.values()) if given else None
        if total is not None and not 0 < total <= self.window:
            raise r.error(c.line, path, f"a prompt of {total:,} tokens (in + cc + cr): an API call's prompt is "
                                        f"1 to {self.window:,} tokens (the window)")
        if prompt is not None and not 0 < prompt <= self.window:
            raise r.error(c.value_lines["prompt"], join_path(path, "prompt"),
                          f"a prompt of {prompt:,} tokens: an API call's prompt is 1 to {self.window:,} tokens "
                          f"(the window)")
        out = r.get(c, "out", path, r.count, 120)
        blocks = r.get(c, "blocks", path, self.blocks)
        results = r.get(c, "results", path, self.results, ())
        if blocks is not None and results and len(results) != blocks.count("tool_use"):
            raise r.error(c.value_lines["results"], join_path(path, "results"),
                          f"{len(results)} results for {blocks.count('tool_use')} tool_use blocks")
        return {"input": split["in"], "cache_creation": split["cc"], "cache_read": split["cr"], "prompt": prompt,
                "output": out, "blocks": blocks, "results": results, "model": r.get(c, "model", path, r.string),
                "message_id": r.get(c, "id", path, r.string),
                "request_id": r.get(c, "request_id", path, self.request_id), **self.text(c, path, blocks)}

    def text(self, c: Any, path: str, blocks: tuple[str, ...] | None) -> dict[str, Any]:
        """``{"text": ...}`` for a call that says what the model replies (none otherwise)."""
        said = self.r.get(c, "text", path, self.r.string)
        if said is None:
            return {}
        if blocks is not None and "text" not in blocks:
            raise self.r.error(c.key_lines["text"], join_path(path, "text"),
                               f"a reply text needs a text block, but blocks are {list(blocks)}")
        return {"text": said}

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
        m = r.mapping(value, line, path, keys("repeat"), required=("times",))
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
        m = r.mapping(value, line, path, keys("expire_cache"), empty_ok=True)
        self.b.expire_cache(keep_prefix=r.get(m, "keep_prefix", path, r.count, 0))

    def step_compact(self, value: Any, line: int, path: str, *, at: int) -> None:
        r = self.r
        m = r.mapping(value, line, path, keys("compact"))
        if "post" not in m and "context" not in m:
            raise r.error(line, path, "give post (what the compact_boundary reports) or context (what /context "
                                      "shows after)")
        post = r.get(m, "post", path, r.count)
        context = r.get(m, "context", path, r.count)
        baseline = self.b.baseline
        pre = r.get(m, "pre", path, r.count)
        trigger = r.get(m, "trigger", path, r.choice(("auto", "manual")), "auto")
        if context is None:
            context = compacted_context(baseline, post, trigger)
        elif post is None:
            if context < baseline:
                raise r.error(m.value_lines["context"], join_path(path, "context"),
                              f"{context:,} is below the baseline ({baseline:,}): the system prompt and tools stay "
                              f"after a compaction")
            post = context - baseline
        if context > self.window:
            key = "context" if "context" in m else "post"
            raise r.error(m.value_lines[key], join_path(path, key),
                          f"the context after compaction, {context:,} tokens (the system prefix and the summary), "
                          f"exceeds the window ({self.window:,})")
        preserved = r.get(m, "preserved", path, r.boolean, None)
        summary = None if "summary" not in m else self.request(m["summary"], m.value_lines["summary"],
                                                               join_path(path, "summary"))
        rejected = []
        if "rejected" in m:
            where = join_path(path, "rejected")
            items = r.sequence(m["rejected"], m.value_lines["rejected"], where)
            rejected = [self.request(item, items.item_lines[i], f"{where}[{i}]") for i, item in enumerate(items)]
        self.b.compact(post, context=context, pre_tokens=pre, trigger=trigger, preserved=preserved, summary=summary,
                       rejected=rejected)
        self.labels.mark("compaction", at)

    def request(self, value: Any, line: int, where: str) -> tuple[int, int, int, int]:
        """A summary request stated in a compaction: ``{input, cache_creation, cache_read, output}``."""
        r = self.r
        fields = ("input", "cache_creation", "cache_read", "output")
        s = r.mapping(value, line, where, fields, required=fields)
        return (r.get(s, "input", where, r.count), r.get(s, "cache_creation", where, r.count),
                r.get(s, "cache_read", where, r.count), r.get(s, "output", where, r.count))

    def step_subagent(self, value: Any, line: int, path: str, *, at: int) -> None:
        r = self.r
        m = r.mapping(value, line, path, keys("subagent"), required=("calls",))
        description = r.get(m, "description", path, r.string, "explore the code")
        prompt_tokens = r.get(m, "prompt_tokens", path, r.count, 400)
        out = r.get(m, "out", path, r.count, 150)
        calls = r.sequence(m["calls"], m.value_lines["calls"], join_path(path, "calls"), non_empty=True)
        result = r.get(m, "result", path, r.count, 600)
        background = r.get(m, "background", path, r.boolean, False)
        self.spend(prompt_tokens + result, at, path)
        self.b.start_subagent(description, prompt_tokens=prompt_tokens, output=out, background=background)
        for _ in range(1 + background):  # in the background, a main call answers the launch
            self.labels.call_lines.append((at, path))
            self.labels.main += 1
            self.labels.mark(f"call {self.labels.main}", at)
        self.labels.sub = 0
        self.labels.subagents.append([])
        for i, call in enumerate(calls):
            if isinstance(call, Map) and "compact" in call:
                self.subagent_compact(call, calls.item_lines[i], f"{path}.calls[{i}]")
            else:
                self.step_call(call, calls.item_lines[i], f"{path}.calls[{i}]", at=calls.item_lines[i], sub=True)
        self.b.end_subagent(result_tokens=result)

    def subagent_compact(self, item: Map, line: int, path: str) -> None:
        """An item ``compact: {...}`` of a subagent's calls: Claude Code compacting the subagent on its own."""
        r = self.r
        outer = r.mapping(item, line, path, ("compact",))
        where = join_path(path, "compact")
        m = r.mapping(outer["compact"], outer.value_lines["compact"], where, keys("subagent.calls[].compact"))
        if "post" not in m and "context" not in m:
            raise r.error(m.line, where, "give post (what the subagent's compact_boundary reports) or context "
                                         "(what the subagent holds after)")
        context = r.get(m, "context", where, r.count)
        if context is not None and context > self.window:
            raise r.error(m.value_lines["context"], join_path(where, "context"),
                          f"the subagent's context after compaction, {context:,} tokens, exceeds the window "
                          f"({self.window:,})")
        summary = None if "summary" not in m else self.request(m["summary"], m.value_lines["summary"],
                                                               join_path(where, "summary"))
        try:
            self.b.compact(r.get(m, "post", where, r.count), context=context,
                           pre_tokens=r.get(m, "pre", where, r.count), summary=summary)
        except ValueError as exc:
            raise r.error(line, where, str(exc).removeprefix("ctxsim: ")) from None

    def step_reset(self, value: Any, line: int, path: str, *, at: int) -> None:
        self.r.mapping(value, line, path, keys("reset"), empty_ok=True)
        self.b.reset()
        self.labels.main = 0
        self.labels.mark("reset", at)

    def check_windows(self, session: Session) -> None:
        """Derived prompts are known only once built: none may exceed the window of the model in force."""
        windows = []
        for i, query in enumerate(session.queries):  # the window of each query's model, once a query
            window = session.window_of(session.model_at(i))
            windows += [window for step in query.steps if isinstance(step, Call)]
        for call, window, (line, path) in zip(session.calls, windows, self.labels.call_lines):
            if call.prompt > window:
                raise self.r.error(line, path, f"this call's prompt grows to {call.prompt:,} tokens, more than "
                                               f"the window ({window:,})")

