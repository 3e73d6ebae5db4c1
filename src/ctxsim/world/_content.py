"""Realistic text for generated sessions: prose, code, logs and grep hits from faker, sized to the token counts.

A session's truth lives in its token counts; its text is only what char-based estimators read. :func:`dress`
replaces the filler text of a built session (text and thinking blocks, tool results) with faker text of exactly
the same length, chosen by what produced it (a ``Bash`` result reads like test logs, a ``Read`` like code, a
``Grep`` like grep hits), so an estimator sees realistic text of the true size. The corpora are generated once per
process from a fixed faker seed; the same session and seed always get the same text (for one faker version).
"""

from __future__ import annotations

import functools
import random
from dataclasses import replace
from datetime import datetime

from ._session import Call, Query, Session, Step, Text, Thinking, ToolResult, ToolUse

__all__ = ["dress", "prompts"]

_SEED = 20261122
_KIND_BY_TOOL = {"Bash": "log", "Read": "code", "Edit": "code", "Grep": "grep", "Agent": "prose", "Task": "prose"}


@functools.cache
def _corpora() -> dict[str, str]:
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(_SEED)
    start, end = datetime(2026, 1, 1), datetime(2026, 12, 31)

    def ident() -> str:
        return f"{fake.word()}_{fake.word()}"

    def when() -> str:
        return fake.date_time_between(start, end).isoformat(timespec="seconds")

    code = (
        lambda: f"def {ident()}(self, {fake.word()}: int, {fake.word()}: str = {fake.word()!r}) -> bool:",
        lambda: f"    {ident()} = {fake.word()}.{ident()}({fake.pyint()}, {fake.word()!r})",
        lambda: f"    # {fake.sentence()}",
        lambda: f"from {fake.word()}.{fake.word()} import {fake.word().capitalize()}{fake.word().capitalize()}",
        lambda: f"    if {fake.word()} is None or len({fake.word()}) > {fake.pyint(1, 64)}:",
        lambda: f"        raise ValueError({fake.sentence()!r})",
    )
    log = (
        lambda: f"tests/test_{fake.word()}.py::test_{ident()} "
                f"{fake.random_element(('PASSED', 'PASSED', 'FAILED', 'SKIPPED'))} [{fake.random_int(0, 99):3d}%]",
        lambda: f"{when()} INFO {fake.word()}.{fake.word()}: {fake.sentence()}",
        lambda: f"-rw-r--r-- 1 dev dev {fake.random_int(80, 90_000):>6} {when()} {fake.file_name()}",
        lambda: f"E       AssertionError: assert {fake.pyint()} == {fake.pyint()}",
    )
    code_lines = [fake.random_element(code)() for _ in range(600)]
    log_lines = [fake.random_element(log)() for _ in range(600)]
    grep_lines = [f"{fake.file_path(depth=3, extension='py').lstrip('/')}:{fake.random_int(1, 900)}:"
                  f"    {ident()} = {fake.word()}({fake.word()!r})" for _ in range(600)]
    prose = " ".join(fake.paragraph(nb_sentences=6) for _ in range(150))
    return {"prose": prose + " ", "code": "\n".join(code_lines) + "\n", "log": "\n".join(log_lines) + "\n",
            "grep": "\n".join(grep_lines) + "\n"}


@functools.cache
def prompts() -> tuple[str, ...]:
    """User prompts of the kind an agent gets, from faker (fixed seed)."""
    from faker import Faker

    fake = Faker("en_US")
    fake.seed_instance(_SEED + 1)
    templates = (
        "Fix the failing test in {path}",
        "Add a {word} option to {path} and cover it with tests",
        "Why does {path} raise {error} when the {word} is empty?",
        "Refactor {func} in {path}; keep the public API",
        "Run the test suite and fix whatever fails",
        "Explain how {func} handles {word} and write it up in the README",
        "Review {path} for {word} bugs",
    )
    out = []
    for n in range(200):
        out.append(templates[n % len(templates)].format(
            path=fake.file_path(depth=2, extension="py").lstrip("/"), word=fake.word(),
            func=f"{fake.word()}_{fake.word()}", error=fake.random_element(("KeyError", "ValueError", "TypeError"))))
    return tuple(out)


def _take(rng: random.Random, kind: str, chars: int) -> str:
    if chars <= 0:
        return ""
    corpus = _corpora()[kind]
    start = rng.randrange(len(corpus))
    end = start + chars
    if end <= len(corpus):
        return corpus[start:end]
    return (corpus * (end // len(corpus) + 1))[start:end]


def _block(rng: random.Random, block: Thinking | Text | ToolUse) -> Thinking | Text | ToolUse:
    kind = type(block)  # the plain classes built directly: dataclasses.replace costs more than the text
    if kind is Text and isinstance(block, Text):
        return Text(_take(rng, "prose", len(block.text)))
    if kind is Thinking and isinstance(block, Thinking):
        return Thinking(_take(rng, "prose", len(block.text)), block.signature)
    if isinstance(block, Thinking):
        return replace(block, text=_take(rng, "prose", len(block.text)))
    if isinstance(block, Text):
        return replace(block, text=_take(rng, "prose", len(block.text)))
    return block


def dress(session: Session, seed: int) -> Session:
    """``session`` with faker text of the same length in its blocks and tool results; counts and ids untouched."""
    rng = random.Random(f"ctxsim.content:{seed}")
    tools: dict[str, str] = {}
    queries = []
    for query in session.queries:
        steps: list[Step] = []
        for step in query.steps:
            if isinstance(step, Call):
                blocks = tuple(_block(rng, b) for b in step.blocks)
                tools.update((b.id, b.name) for b in blocks if isinstance(b, ToolUse))
                step = replace(step, blocks=blocks)
            elif isinstance(step, ToolResult):
                kind = _KIND_BY_TOOL.get(tools.get(step.tool_use_id, ""), "log")
                step = replace(step, content=_take(rng, kind, len(step.content)))
            steps.append(step)
        queries.append(Query(query.prompt, tuple(steps), query.model))
    return replace(session, queries=tuple(queries))
