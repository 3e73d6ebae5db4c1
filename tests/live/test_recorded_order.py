"""The world read from a live run orders a background subagent's calls as the CLI streamed them.

No CLI runs here: the SDK messages and the fake API's served calls are those of a live run of the
``background-subagent`` fidelity session (the main chain launches a subagent in the background, answers, ends its
turn; the subagent calls Bash, then answers; its notification starts a turn of its own), written out by hand. The
subagent runs beside the main chain, so its first request may reach the API before or after the main chain's next
one; the CLI streams the main chain's reply first either way (the subagent's first reply is held a second). The
world must be the one the stream shows, whichever request came first.
"""

from __future__ import annotations

from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from ctxsim.lab._recorded import session_of
from ctxsim.live import Reply, Served
from ctxsim.live._api import ApiRequest
from ctxsim.world import Call, Text, ToolUse

MODEL = "claude-sonnet-4-5"
LAUNCH = "toolu_ctxsim0020_1"
TASK = {"tool_use_id": LAUNCH, "task_id": "a13e0bd6707a1058f"}


def _served(number: int, message_id: str, agent: str | None, *blocks: Text | ToolUse) -> Served:
    request = ApiRequest(number, "subagent" if agent else "main", {}, agent)
    return Served(request, Reply(blocks), message_id, (3, 100, 1000), blocks)


def _assistant(message_id: str, parent: str | None, block: Any) -> AssistantMessage:
    return AssistantMessage([block], MODEL, parent_tool_use_id=parent, message_id=message_id)


def _result(text: str) -> ResultMessage:
    return ResultMessage("success", 1, 1, False, 1, "session-1", result=text)


def _run(main_answer: str, subagent_bash: str) -> tuple[list[Any], list[Served]]:
    """The messages and the served calls of the run where the main chain's answer got ``main_answer`` and the
    subagent's Bash call ``subagent_bash`` (the ids show which request reached the API first)."""
    bash = f"toolu_ctxsim{subagent_bash[-4:]}_0"
    messages = [
        SystemMessage("init", {"session_id": "session-1"}),
        _assistant("msg_ctxsim0020", None, TextBlock("Delegating.")),
        _assistant("msg_ctxsim0020", None, ToolUseBlock(LAUNCH, "Agent", {"prompt": "count to three"})),
        SystemMessage("task_started", {**TASK, "description": "a subtask", "prompt": "count to three",
                                       "is_backgrounded": True}),
        UserMessage([ToolResultBlock(LAUNCH, "Async agent launched successfully.")]),
        _assistant(main_answer, None, TextBlock("Started it in the background.")),
        _result("Started it in the background."),
        _assistant(subagent_bash, LAUNCH, ToolUseBlock(bash, "Bash", {"command": "echo sub"})),
        SystemMessage("task_progress", dict(TASK)),
        UserMessage([ToolResultBlock(bash, "sub")], parent_tool_use_id=LAUNCH),
        _assistant("msg_ctxsim0023", LAUNCH, TextBlock("Counted.")),
        SystemMessage("task_notification", {**TASK, "status": "completed", "summary": "Counted."}),
        SystemMessage("init", {"session_id": "session-1"}),
        _assistant("msg_ctxsim0024", None, TextBlock("The background task finished.")),
        _result("The background task finished."),
    ]
    calls = sorted([
        _served(1, "msg_ctxsim0020", None, Text("Delegating."), ToolUse(LAUNCH, "Agent", {})),
        _served(2, main_answer, None, Text("Started it in the background.")),
        _served(3, subagent_bash, LAUNCH, ToolUse(bash, "Bash", {"command": "echo sub"})),
        _served(4, "msg_ctxsim0023", LAUNCH, Text("Counted.")),
        _served(5, "msg_ctxsim0024", None, Text("The background task finished.")),
    ], key=lambda s: s.message_id)  # the API numbers its messages in the order the requests reached it
    return messages, calls


def _order(messages: list[Any], calls: list[Served]) -> list[tuple[str, str | None]]:
    session = session_of("background-subagent", ["delegate this"], [messages], [calls], [None], model=MODEL,
                         window=200_000, baseline=10_000)
    (query,) = session.queries
    return [(type(step).__name__, step.message_id if isinstance(step, Call) else None) for step in query.steps]


def test_a_background_subagent_call_whose_request_came_first_is_placed_where_the_stream_shows_it() -> None:
    """The subagent's request reached the API first (msg_ctxsim0021), the main chain's answer second
    (msg_ctxsim0022); the stream showed the main chain's answer first: so does the world."""
    assert _order(*_run(main_answer="msg_ctxsim0022", subagent_bash="msg_ctxsim0021")) == [
        ("Call", "msg_ctxsim0020"), ("SubagentStart", None), ("ToolResult", None),
        ("Call", "msg_ctxsim0022"),
        ("Call", "msg_ctxsim0021"), ("ToolResult", None), ("Call", "msg_ctxsim0023"),
        ("TaskNotification", None), ("Call", "msg_ctxsim0024"),
    ]


def test_the_world_is_the_same_whichever_request_reached_the_api_first() -> None:
    first = _order(*_run(main_answer="msg_ctxsim0022", subagent_bash="msg_ctxsim0021"))
    second = _order(*_run(main_answer="msg_ctxsim0021", subagent_bash="msg_ctxsim0022"))
    renamed = {"msg_ctxsim0021": "msg_ctxsim0022", "msg_ctxsim0022": "msg_ctxsim0021"}
    assert [(kind, renamed.get(mid or "", mid)) for kind, mid in second] == first
