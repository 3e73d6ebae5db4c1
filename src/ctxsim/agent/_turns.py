"""How the fake agent's turns are written: checkpoint replies, and the wire of rejected or cut-off turns.

Private to :mod:`ctxsim.agent`: the text of its checkpoints in every degradation, the parsing of the prompts it
gets, and the patches that turn a rendered script into what Claude Code writes when the API rejects a request
as too long or stops a reply at ``max_tokens``.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..wire import Frame, Renderer, Script
from ..world import Call, Query, Session, Text, ToolUse

PROMPT_TOO_LONG = "Prompt is too long"
"""The text of Claude Code's synthetic message when the API rejects a request as too long."""

NOTHING_TO_COMPACT = "Error: No messages to compact"
"""What Claude Code 2.1.332 answers to ``/compact`` as a session's first prompt (a ``<synthetic>`` message)."""

NO_WORK_REPLY = "There is no work in this session to checkpoint: nothing has been done in it yet."
"""The answer to a checkpoint request on a session that did no work (no tags, no state)."""

_COMPACT = re.compile(r"/compact(?:\s|$)")


def is_compact(prompt: str) -> bool:
    """The prompt is Claude Code's ``/compact`` command: it starts with ``/compact`` (instructions may follow after
    a space). Claude Code 2.1.332 runs no command for a prompt with whitespace before the slash: it sends it to the
    model as text."""
    return _COMPACT.match(prompt) is not None


_SECTION = re.compile(r"^[ \t]*#{1,6}[ \t]*(?P<name>[^\n]*?)[ \t]*$", re.MULTILINE)


class Renderings:
    """Renders a growing session one new query at a time, as :func:`ctxsim.wire.render` would render it whole.

    ``render()`` of the whole session for every turn would cost O(turns^2); this keeps one renderer (the CLI's
    running state: cumulative model usage, uuids, observations) per partial-messages setting and renders only
    the queries it has not rendered yet. The frames are the ones a full render gives.
    """

    def __init__(self) -> None:
        self._renderers: dict[bool, tuple[Renderer, list[int]]] = {}

    def last(self, session: Session, include_partial_messages: bool) -> Script:
        """The script of ``session``'s last query."""
        if include_partial_messages not in self._renderers:
            self._renderers[include_partial_messages] = (
                Renderer(session, include_partial_messages, False, "/home/dev/project"), [0])
        renderer, done = self._renderers[include_partial_messages]
        renderer.session = session
        last = len(session.queries) - 1
        for index in range(done[0], last):
            renderer.script(index)  # catch up: the running state must have seen every earlier query
        done[0] = last + 1
        return renderer.script(last)


@dataclass
class Planned:
    """What one call of a turn says: a tool call for a step, or a text."""

    step: str | None = None
    text: str = ""


def parse_sections(text: str) -> dict[str, str]:
    """Markdown sections by lower-cased heading: the text between a heading and the next one."""
    heads = list(_SECTION.finditer(text))
    return {h.group("name").strip().lower(): text[h.end():heads[k + 1].start() if k + 1 < len(heads) else len(text)]
            for k, h in enumerate(heads)}


def checkpoint_body(task: str, steps: int, done: Sequence[str], remaining: Sequence[str]) -> list[str]:
    """The sections of design 003's checkpoint template, filled in for a task named ``task`` of ``steps`` steps."""
    lines = ["## Goal", f"Finish task {task!r} ({steps} steps), each step exactly once, in order.",
             "", "## Completed Work"]
    lines += [f"- {s}: edited src/{s}.py" for s in done] or ["- nothing yet"]
    lines += ["", "## Remaining Tasks"]
    lines += [f"{n}. {s}" for n, s in enumerate(remaining, 1)] or ["- none"]
    lines += ["", "## Do Not Redo", ", ".join(done) or "- nothing", "", "## Key Decisions",
              "- One tool call per step, in task order."]
    return lines


_TEMPLATE = re.compile(r"<checkpoint>.*?</checkpoint>", re.DOTALL | re.IGNORECASE)


def checkpoint_reply(task: str, steps: int, degradation: str, done: Sequence[str], remaining: Sequence[str],
                     request: str = "") -> str:
    """The answer to a checkpoint request (``request``), written as ``degradation`` says
    (:data:`ctxsim.agent.DEGRADATIONS`); ``template_echo`` echoes the request's ``<checkpoint>`` template, and is
    ``well_formed`` for a request without one."""
    body = "\n".join(checkpoint_body(task, steps, done, remaining))
    block = f"<checkpoint>\n{body}\n</checkpoint>"
    if degradation in ("fenced_xml", "fenced_markdown", "fenced_bare"):
        language = {"fenced_xml": "xml", "fenced_markdown": "markdown", "fenced_bare": ""}[degradation]
        return f"```{language}\n{block}\n```"
    if degradation == "no_tags":
        return f"Here is where the work stands.\n\n{body}"
    if degradation == "several_blocks":
        stale = "\n".join(checkpoint_body(task, steps, done[:-1], [*done[-1:], *remaining]))
        return (f"<checkpoint>\n{stale}\n</checkpoint>\n\nCorrection: the last step had already finished.\n\n"
                f"{block}")
    template = _TEMPLATE.search(request)
    if degradation == "template_echo" and template is not None:  # a model can only echo a template it was given
        return f"{block}\n\nThat is the state, written in the template I was given:\n\n{template.group(0)}"
    if degradation == "unclosed":
        return f"<checkpoint>\n{body}\n"
    if degradation == "empty_block":
        return "<checkpoint>\n</checkpoint>"
    if degradation == "tag_case":
        return f"< Checkpoint >\n{body}\n</CHECKPOINT >"
    if degradation == "refusal":
        return "I'm sorry, but I can't write a checkpoint summary right now."
    if degradation == "truncated":
        lines = checkpoint_body(task, steps, done, remaining)
        cut = lines.index("## Completed Work") + 1 + len(done) // 2
        return "<checkpoint>\n" + "\n".join(lines[:cut]) + "\n- "
    return block


# --- wire patches ---------------------------------------------------------------------------------------------


def with_content(query: Query, planned: Sequence[Planned]) -> Query:
    """``query`` with its calls' blocks replaced by what the agent said (the builder made filler)."""
    calls = iter(planned)
    steps: list[Any] = []
    for step in query.steps:
        if isinstance(step, Call) and step.is_main:
            said = next(calls)
            if said.step is not None:
                tool = next(b for b in step.blocks if isinstance(b, ToolUse))
                step = replace(step, blocks=(ToolUse(tool.id, "Edit", {
                    "file_path": f"src/{said.step}.py", "step": said.step,
                    "old_string": "TODO", "new_string": f"done: {said.step}"}),))
            else:
                step = replace(step, blocks=(Text(said.text),))
        steps.append(step)
    return replace(query, steps=tuple(steps))


def _insert_synthetic(script: Script, label: str, text: str, stop_reason: str, stop_sequence: str | None,
                      **extra: Any) -> dict[str, Any]:
    """Insert before the result of ``script`` the ``<synthetic>`` assistant message Claude Code writes itself
    (all-zero usage, no API call), saying ``text``; ``label`` seeds its ids. Returns the result's data."""
    result = script.frames[-1]
    rng = random.Random(f"ctxsim.agent.{label}")
    ident = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    synthetic = {
        "type": "assistant",
        "message": {"id": ident, "type": "message", "role": "assistant", "model": "<synthetic>",
                    "content": [{"type": "text", "text": text}], "stop_reason": stop_reason,
                    "stop_sequence": stop_sequence, "usage": {"input_tokens": 0, "output_tokens": 0,
                                                   "cache_creation_input_tokens": 0,
                                                   "cache_read_input_tokens": 0}},
        "parent_tool_use_id": None, "session_id": result.data["session_id"],
        "uuid": str(uuid.UUID(int=rng.getrandbits(128), version=4)), **extra,
    }
    script.frames.insert(len(script.frames) - 1, Frame(synthetic))
    return result.data


def reject_as_too_long(script: Script, session: Session, turn: int) -> None:
    """Make the end of ``script`` what Claude Code writes when the API rejects a request as too long.

    Modelled on the research notes (a ``<synthetic>`` assistant message with all-zero usage, then an error
    result); not yet checked against a capture of the real CLI.
    """
    result = _insert_synthetic(script, f"reject:{session.session_id}:{turn}", PROMPT_TOO_LONG, "stop_sequence", "",
                               error="invalid_request")
    result.update(is_error=True, result=PROMPT_TOO_LONG, stop_reason="stop_sequence",
                  terminal_reason="prompt_too_long")


def nothing_to_compact(script: Script, session: Session, turn: int) -> None:
    """Make ``script`` (a ``/compact`` query with no step: init, then the result) what Claude Code 2.1.332 writes
    for ``/compact`` on a session with no message to compact: a ``<synthetic>`` reply saying so
    (:data:`NOTHING_TO_COMPACT`) before the successful, empty result; no ``compact_boundary``."""
    _insert_synthetic(script, f"compact:{session.session_id}:{turn}", NOTHING_TO_COMPACT, "end_turn", None)


def mark_stopped(script: Script, reason: str) -> None:
    """Mark the last call of ``script`` as stopped by ``reason`` (its ``message_delta`` and the result)."""
    for frame in reversed(script.frames):
        event = frame.data.get("event") if frame.data.get("type") == "stream_event" else None
        if isinstance(event, dict) and event.get("type") == "message_delta":
            event["delta"]["stop_reason"] = reason
            break
    script.frames[-1].data["stop_reason"] = reason
