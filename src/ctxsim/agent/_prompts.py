"""What a restart loop under test says to the fake agent, declared: :class:`LoopPrompts`.

The fake agent never guesses what a prompt means from its words. The loop under test declares its checkpoint
request, its continuation prompt, the continuations that tell the agent to inspect the work first, and the prompts
that mean "go on" (each a text, a regex or a predicate, or a list of them), and the marker the agent writes when the
task is done; the defaults are design 003's prompts (:mod:`ctxsim.reference`), which the reference loop and
the catalogue use. A text is a template: it matches a prompt equal to it (surrounding whitespace aside), where each
``{placeholder}`` (``{checkpoint}``, ``{task}``) stands for any text. A compiled regex matches where it is found
(``re.search``); a callable is called with the prompt. Claude Code's own ``/compact`` is not declared: the agent
knows the command (a prompt starting with ``/compact``) and answers it as the CLI does, whatever the loop declares.
No SDK here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..reference import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUATION_TEMPLATE,
    CONTINUE_PROMPT,
    DONE_MARKER,
    MINIMAL_CONTINUATION_PROMPT,
    TRUNCATED_NOTE,
    WIND_DOWN_PROMPT,
)

__all__ = ["LoopPrompts", "PromptMatcher", "PromptPattern", "UnclassifiedPromptError"]

PromptPattern = str | re.Pattern[str] | Callable[[str], bool]
"""One way to recognise a prompt: a template text, a compiled regex, or a predicate."""

PromptMatcher = PromptPattern | Sequence[PromptPattern]
"""A pattern, or several (a prompt matching any of them matches)."""

_PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")


class UnclassifiedPromptError(RuntimeError):
    """The fake agent got a prompt it cannot classify from what the loop declared: it refuses to guess."""


def _template(text: str) -> re.Pattern[str]:
    parts = _PLACEHOLDER.split(text.strip())
    return re.compile(r"\s*" + r"(?:.*?)".join(re.escape(p) for p in parts) + r"\s*", re.DOTALL)


def _patterns(matcher: PromptMatcher) -> list[PromptPattern]:
    if isinstance(matcher, (str, re.Pattern)) or callable(matcher):
        return [matcher]
    return list(matcher)


@dataclass(frozen=True)
class _Match:
    pattern: PromptPattern
    template: re.Pattern[str] | None

    def __call__(self, prompt: str) -> bool:
        if self.template is not None:
            return self.template.fullmatch(prompt) is not None
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(prompt) is not None
        if isinstance(self.pattern, str):  # a template always has its compiled form: never reached
            return self.pattern == prompt
        return bool(self.pattern(prompt))


def _compile(matcher: PromptMatcher) -> tuple[Callable[[str], bool], ...]:
    out = []
    for pattern in _patterns(matcher):
        if not (isinstance(pattern, (str, re.Pattern)) or callable(pattern)):
            raise TypeError(f"ctxsim: LoopPrompts: a prompt pattern is a text, a compiled regex or a predicate, "
                            f"got {type(pattern).__name__}")
        out.append(_Match(pattern, _template(pattern) if isinstance(pattern, str) else None))
    return tuple(out)


def _describe(matcher: PromptMatcher) -> str:
    patterns = _patterns(matcher)
    shown = []
    for p in patterns:
        if isinstance(p, str):
            first = p.strip().splitlines()[0] if p.strip() else ""
            shown.append(repr(first + (" ..." if "\n" in p.strip() else "")))
        elif isinstance(p, re.Pattern):
            shown.append(f"re.compile({p.pattern!r})")
        else:
            shown.append(getattr(p, "__name__", type(p).__name__))
    return " | ".join(shown)


@dataclass(frozen=True)
class LoopPrompts:
    """How the fake agent recognises what a restart loop under test says (module docstring for the matching).

    Declare it on your loop function (``my_loop.prompts = LoopPrompts(...)``), or pass it to
    :func:`ctxsim.loops.check_restart_loop` / :class:`~ctxsim.agent.FakeAgent` as ``prompts=``.
    """

    checkpoint_request: PromptMatcher = CHECKPOINT_REQUEST_PROMPT
    """The prompt that asks the session for its checkpoint."""
    continuation: PromptMatcher = (CONTINUATION_TEMPLATE, MINIMAL_CONTINUATION_PROMPT)
    """The first prompt of a new session after a restart (the checkpoint in it, or none)."""
    continue_prompt: PromptMatcher = (CONTINUE_PROMPT, WIND_DOWN_PROMPT)
    """The prompts that mean "go on with the task" after a session's first turn."""
    inspect: PromptMatcher = (MINIMAL_CONTINUATION_PROMPT, re.compile(re.escape(TRUNCATED_NOTE)))
    """Continuations that tell the agent to inspect the work before going on, because the state they carry is
    missing or may be incomplete (the minimal continuation prompt; a checkpoint followed by the note that it was
    cut off): the agent then looks in the workspace for the steps already done. The first prompt of a new session
    matching one is a continuation."""
    done_marker: str = DONE_MARKER
    """What the agent's reply starts with once every step is done (what the loop looks for)."""
    _compiled: dict[str, tuple[Callable[[str], bool], ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.done_marker.strip():
            raise ValueError("ctxsim: LoopPrompts: done_marker is empty")
        compiled = {name: _compile(getattr(self, name))
                    for name in ("checkpoint_request", "continuation", "continue_prompt", "inspect")}
        object.__setattr__(self, "_compiled", compiled)

    def matches(self, kind: str, prompt: str) -> bool:
        """Whether ``prompt`` is a ``kind`` (``checkpoint_request``, ``continuation``, ``continue_prompt``,
        ``inspect``)."""
        return any(match(prompt) for match in self._compiled[kind])

    def describe(self, kind: str) -> str:
        """The declared patterns of ``kind``, in a line."""
        return _describe(getattr(self, kind))
