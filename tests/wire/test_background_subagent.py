"""A background subagent on every surface: stream-json through the SDK's own parser, the transcript, the statusline
payload, and the truth (the main context never holds the subagent's calls). The expected shapes are the CLI's, as
recorded in the ``background-subagent`` captures and the REPL's ``subagent`` recording (Claude Code 2.1.330 to
2.1.332); the tests that replay those captures compare every field trackers read."""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ResultMessage,
    TaskNotificationMessage,
    TaskStartedMessage,
    UserMessage,
)

from ctxsim.sdk import client_message
from ctxsim.wire import render, render_transcript, statusline_payloads
from ctxsim.world import Call, Session, SessionBuilder, SubagentStart, TaskNotification, ToolResult


def _session(entrypoint: str = "sdk") -> Session:
    b = SessionBuilder(seed=7, entrypoint=entrypoint)  # type: ignore[arg-type]
    b.query("audit it in the background").call(prompt=30_000, results=(500,))
    b.start_subagent("explore", background=True)
    b.call(input=3, cache_creation=9_000, cache_read=0, results=(700,))
    b.call(input=3, cache_creation=1_000, cache_read=9_000, blocks=("text",))
    b.end_subagent(result_tokens=900)
    b.call(blocks=("text",))
    return b.query("thanks").call(blocks=("text",)).build()


def test_the_builder_puts_the_launch_the_subagent_and_its_notification_in_one_query() -> None:
    steps = _session().queries[0].steps
    kinds = [type(s).__name__ for s in steps]
    start = kinds.index("SubagentStart")
    assert kinds[start:] == ["SubagentStart", "ToolResult", "Call", "Call", "ToolResult", "Call", "TaskNotification",
                             "Call"]
    started = steps[start]
    assert isinstance(started, SubagentStart) and started.background
    agent = steps[start - 1]
    assert isinstance(agent, Call) and agent.blocks[-1].input["run_in_background"] is True  # type: ignore[union-attr]
    launch, answer = steps[start + 1], steps[start + 2]
    assert isinstance(launch, ToolResult) and launch.tool_use_id == started.tool_use_id
    assert isinstance(answer, Call) and answer.is_main and answer.stop_reason == "end_turn"
    notified = steps[-2]
    assert isinstance(notified, TaskNotification) and notified.tokens == 900


def test_the_main_context_never_holds_the_subagent_s_calls() -> None:
    session = _session()
    timeline = session.timeline()
    main_truths = {}
    for _, step, truth in timeline:
        assert truth is not None
        if isinstance(step, Call) and not step.is_main:
            assert truth.prompt > 30_000 and truth.prompt != step.prompt  # the main chain's, not the subagent's
        elif isinstance(step, Call):
            main_truths[step.message_id] = truth.prompt
    answers = [s for s in session.queries[0].steps if isinstance(s, Call) and s.is_main]
    launch_answer, notification_answer = answers[-2], answers[-1]
    # The notification's 900 tokens reach the next main prompt; the subagent's 10,000-token prompts do not.
    assert notification_answer.prompt == launch_answer.prompt + launch_answer.output_tokens + 900


def _frames(session: Session) -> list[dict[str, Any]]:
    return [f.data for script in render(session) for f in script.frames]


def test_stream_json_as_the_cli_writes_it_and_the_sdk_reads_it() -> None:
    frames = _frames(_session())
    first = [f for f in frames if f.get("type") != "stream_event"]
    kinds = [f"{f['type']}/{f.get('subtype', '')}" for f in first]
    # background_tasks_changed, then task_started (no prompt frame), then the launch at once.
    at = kinds.index("system/background_tasks_changed")
    assert kinds[at + 1:at + 3] == ["system/task_started", "user/"]
    assert first[at]["tasks"][0]["task_type"] == "local_agent"
    assert first[at + 1]["is_backgrounded"] is True
    assert first[at + 2]["tool_use_result"]["status"] == "async_launched"
    results = [i for i, k in enumerate(kinds) if k == "result/success"]
    assert len(results) == 3  # the launching turn's, the notification's, the next query's
    between = first[results[0] + 1:results[1]]
    assert {f.get("parent_tool_use_id") for f in between if f["type"] == "assistant"} >= {
        first[at + 1]["tool_use_id"]}  # the subagent's calls, between the two turns (its text reply forwarded)
    end = [f"{f['type']}/{f.get('subtype', '')}" for f in between if f["type"] == "system"]
    assert end[-4:] == ["system/task_updated", "system/task_notification", "system/background_tasks_changed",
                        "system/init"]
    assert first[results[0]]["subagent_stats"]["completed"] == 0
    assert first[results[1]]["subagent_stats"]["completed"] == 1
    assert first[results[1]]["origin"]["kind"] == "task-notification"
    # One turn, and one more for each main-chain tool result (the first call's and the launch; recorded: 2 for the
    # Agent call alone), then 1 for the notification's turn.
    assert first[results[0]]["num_turns"] == 3 and first[results[1]]["num_turns"] == 1
    messages = [m for m in (client_message(f) for f in frames) if m is not None]
    started = next(m for m in messages if isinstance(m, TaskStartedMessage))
    assert started.data["is_backgrounded"] is True
    assert any(isinstance(m, TaskNotificationMessage) and m.status == "completed" for m in messages)
    assert sum(isinstance(m, ResultMessage) for m in messages) == 3
    assert any(isinstance(m, UserMessage) and m.tool_use_result and m.tool_use_result.get("isAsync")
               for m in messages)
    sub = [m for m in messages if isinstance(m, AssistantMessage) and m.parent_tool_use_id is not None]
    assert len(sub) >= 2


@pytest.mark.parametrize("entrypoint", ["sdk", "repl"])
def test_the_transcript_keeps_the_subagent_in_its_own_file(entrypoint: str) -> None:
    session = _session(entrypoint)
    files = render_transcript(session).files
    (main,) = [rows for path, rows in ((p, f.rows) for p, f in files.items()) if "/" not in path]
    (side,) = [f.rows for p, f in files.items() if "/subagents/" in p]
    assert all(r.get("isSidechain") is False for r in main if "isSidechain" in r)
    assert all(r.get("isSidechain") is True for r in side)
    launch = next(r for r in main if isinstance(r.get("toolUseResult"), dict) and r["toolUseResult"].get("isAsync"))
    assert launch["toolUseResult"]["status"] == "async_launched"
    notified = next(r for r in main if r.get("turnOrigin") == "task_notification")
    assert notified["message"]["content"].startswith("<task-notification>")
    assert notified["origin"]["kind"] == "task-notification" and notified["promptSource"] == "system"
    companion = main[main.index(notified) - 1]
    assert companion.get("turnCompanion") is True and companion["promptId"] == notified["promptId"]
    queued = [r for r in main if r.get("type") == "queue-operation" and "task-notification" in str(r.get("content"))]
    assert len(queued) == 1  # enqueued with its text (then dequeued), in both shapes
    if entrypoint == "repl":
        pending = [r.get("pendingBackgroundAgentCount") for r in main if r.get("subtype") == "turn_duration"]
        assert pending[0] == 1 and all(p is None for p in pending[1:])
        assert notified["turnPosition"] == {"promptIndex": 1, "turnIndex": 2}


def test_the_statusline_payloads_follow_the_main_chain_only() -> None:
    session = _session("repl")
    payloads = statusline_payloads(session)
    labels = [f.observation.label for script in render(session) for f in script.frames if f.observation]
    assert len(payloads) == len(labels)
    for label, payload in zip(labels, payloads):
        usage = payload["context_window"]["current_usage"]
        if "subagent" in label:
            prompt = sum(usage[k] for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
            assert prompt > 30_000, label  # the main chain's last call, not the subagent's
