"""The frames of a subagent's task in Claude Code's stream-json: its start, its end and, run in the background, its
launch result and the background tasks running (recorded, Claude Code 2.1.330-2.1.332).

A foreground subagent: ``system/task_started``, its prompt frame, its calls (with ``task_progress``), then
``task_updated`` and ``task_notification`` before the ``Agent`` tool's result. In the background: the tasks running
(``background_tasks_changed``) and ``task_started`` (``is_backgrounded``) with no prompt frame, the tool's result at
once (``async_launched``), and at its end ``task_updated``, ``task_notification`` (its summary), the tasks running
again and the ``init`` of the turn its notification starts.
"""

from __future__ import annotations

from typing import Any, Protocol

from ..world import SubagentStart, TaskNotification, ToolResult
from ._frames import Frame


class Renderer(Protocol):
    """What these frames need of the stream-json renderer: its frames and the tasks it keeps."""

    session_id: str
    model: str
    tasks: dict[str, tuple[str, str]]
    task_tokens: dict[str, int]
    background: set[str]
    launched: set[str]
    descriptions: dict[str, str]
    prompts: dict[str, str]

    def system(self, subtype: str, **fields: Any) -> Frame: ...
    def init(self, model: str) -> Frame: ...
    def tool_result(self, result: ToolResult) -> Frame: ...
    def uuid(self) -> str: ...

__all__ = ["TURN_COMPANION", "background_tasks", "launch", "notification_text", "task_end", "task_start"]

TURN_COMPANION = "<system-reminder>\n<tools-used-before-summary></tools-used-before-summary>\n</system-reminder>"
"""The meta row the CLI writes before a notification's row (it names the tools used before; here none)."""


def notification_text(step: TaskNotification) -> str:
    """The ``<task-notification>`` message the main chain gets when a background subagent ends (the CLI's also
    names the subagent's output file, a note, its answer and its usage)."""
    return (f"<task-notification>\n<task-id>{step.task_id}</task-id>\n<tool-use-id>{step.tool_use_id}</tool-use-id>"
            f"\n<status>{step.status}</status>\n<summary>{step.summary}</summary>\n</task-notification>")


def task_start(renderer: Renderer, step: SubagentStart) -> list[Frame]:
    """The frames of a subagent's start."""
    run_id = f"run-{step.task_id}"
    renderer.tasks[step.tool_use_id] = (step.task_id, run_id)
    renderer.descriptions[step.tool_use_id], renderer.prompts[step.tool_use_id] = step.description, step.prompt
    started = renderer.system("task_started", task_id=step.task_id, run_id=run_id, tool_use_id=step.tool_use_id,
                          description=step.description, subagent_type="general-purpose",
                          is_backgrounded=step.background, spawn_depth=1, task_type="local_agent",
                          prompt=step.prompt)
    if step.background:  # no prompt frame; the tasks running first (recorded, 2.1.332)
        renderer.background.add(step.tool_use_id)
        return [background_tasks(renderer), started]
    prompt = Frame({"type": "user", "message": {"role": "user", "content": [
        {"type": "text", "text": step.prompt}]}, "parent_tool_use_id": step.tool_use_id,
        "session_id": renderer.session_id, "uuid": renderer.uuid()})
    return [started, prompt]


def task_end(renderer: Renderer, tool_use_id: str, calls: int, notified: TaskNotification | None = None) -> list[Frame]:
    """What the CLI writes when the subagent started by ``tool_use_id`` ends: ``system/task_updated``
    (completed) and ``system/task_notification`` (its summary and usage), before the ``Agent`` tool's result;
    for a background subagent (``notified``), then ``background_tasks_changed`` (none left running) and the
    ``init`` of the turn its notification starts."""
    task_id, run_id = renderer.tasks.pop(tool_use_id)
    status = notified.status if notified is not None else "completed"
    report = {"summary": notified.summary, "summary_is_report": True} if notified is not None else {"summary": ""}
    frames = [renderer.system("task_updated", task_id=task_id, run_id=run_id, patch={"status": status, "end_time": 0}),
              renderer.system("task_notification", task_id=task_id, run_id=run_id, tool_use_id=tool_use_id,
                          status=status, output_file=f"tasks/{task_id}.output", **report,
                          usage={"total_tokens": renderer.task_tokens.pop(tool_use_id, 0), "tool_uses": calls,
                                 "duration_ms": 100 * calls})]
    if notified is not None:
        renderer.background.discard(tool_use_id)
        frames += [background_tasks(renderer), renderer.init(renderer.model)]
    return frames

def background_tasks(renderer: Renderer) -> Frame:
    """``system/background_tasks_changed``: the background subagents running now."""
    return renderer.system("background_tasks_changed", tasks=[
        {"task_id": renderer.tasks[t][0], "run_id": renderer.tasks[t][1], "task_type": "local_agent",
         "subagent_type": "general-purpose", "description": renderer.descriptions.get(t, "")}
        for t in sorted(renderer.background)])

def launch(renderer: Renderer, result: ToolResult) -> Frame:
    """The ``Agent`` tool's result for a background subagent: the launch, at once (its ``tool_use_result``
    says ``async_launched``)."""
    task_id = renderer.tasks[result.tool_use_id][0]
    frame = renderer.tool_result(result)
    frame.data["message"]["content"][0]["content"] = [{"type": "text", "text": result.content}]
    frame.data["tool_use_result"] = {
        "isAsync": True, "status": "async_launched", "agentId": task_id,
        "description": renderer.descriptions.get(result.tool_use_id, ""), "resolvedModel": renderer.model,
        "prompt": renderer.prompts.get(result.tool_use_id, ""), "outputFile": f"tasks/{task_id}.output",
        "canReadOutputFile": True, "canContinueAgent": True}
    renderer.launched.add(result.tool_use_id)
    return frame
