"""The ``system`` frames Claude Code writes beside a query's messages, and where it places them: the session's state
(host-only), a thinking block's estimate and a subagent's progress.

As recorded: the structure of the raw frames of every scripted session (``tests/captures/claude-code-*/
stream-structure.json``, ``tests/captures/remake_structure.py``), and, the same placement, the raw frames and SDK
messages of the captures of 2.1.330 and 2.1.332:

- ``session_state_changed`` (``sdk_host_only``: the SDK client keeps it to itself): ``running`` is a query's
  first frame (before its ``init``, before ``/clear``'s reset and ``/compact``'s status frames); ``idle`` its last,
  after its last ``result`` (a background subagent's turns included), and ``requires_action`` then ``running``
  around a permission prompt, both written by :class:`~ctxsim.sdk.FakeTransport` (a script ends with its result;
  the transport asks the permission);
- ``thinking_tokens``: before a main-chain thinking block's frames;
- ``task_progress``: one for each tool use of a subagent, none for a call without one; a foreground subagent's
  before the tool use's frame, a background subagent's after it (:func:`progress_before_tool_use`).
"""

from __future__ import annotations

import math

from ..world import Call, Thinking, ToolUse
from ._frames import Frame
from ._tasks import Renderer

__all__ = ["progress_before_tool_use", "session_state", "task_progress", "thinking_tokens"]


def session_state(renderer: Renderer, state: str) -> Frame:
    """``system/session_state_changed`` to ``state`` (``running``, ``idle``, ``requires_action``), host-only."""
    return renderer.system("session_state_changed", state=state, sdk_host_only=True)


def thinking_tokens(renderer: Renderer, block: Thinking) -> Frame:
    """``system/thinking_tokens``: the CLI's estimate of a thinking block (a token per four characters)."""
    estimate = math.ceil(len(block.text) / 4)
    return renderer.system("thinking_tokens", estimated_tokens=estimate, estimated_tokens_delta=estimate)


def progress_before_tool_use(background: bool) -> bool:
    """Whether a subagent's ``task_progress`` comes before the frame of the tool use it reports (a foreground
    subagent's) or after it (a background one's), as every recorded release places it (a foreground subagent's
    recorded from 2.1.332 on, a background one's from 2.1.330 on). One function, so a release that moves it is one
    edit (a rule keyed on :func:`~ctxsim.wire.cli_version_rendered`)."""
    return not background


def task_progress(renderer: Renderer, call: Call, use: ToolUse, tool_uses: int) -> Frame:
    """``system/task_progress`` for the tool use ``use`` of subagent call ``call``, the subagent's ``tool_uses``-th;
    its usage: the call's prompt and output."""
    parent = call.parent_tool_use_id or ""
    task_id, run_id = renderer.tasks.get(parent, (parent, f"run-{parent}"))
    description = str(use.input.get("description") or use.name)
    return renderer.system("task_progress", task_id=task_id, run_id=run_id, tool_use_id=parent,
                           description=f"Running {description}", subagent_type="general-purpose",
                           usage={"total_tokens": call.prompt + call.output_tokens, "tool_uses": tool_uses,
                                  "duration_ms": 100 * tool_uses}, last_tool_name=use.name)
