"""Our rendering, played through the real SDK, against the real CLI captures in ``shared/captures``.

The sessions behind ``shared/captures/claude-code-2.1.330`` are rebuilt step by step as :class:`Session`\\ s,
rendered by :func:`ctxsim.wire.render` and played to the real ``ClaudeSDKClient`` over a
:class:`~ctxsim.sdk.FakeTransport`. What a context tracker can see (message order, ids, usage, results, context
usage) is projected from both the live SDK messages and the captured ones, and compared field by field.

Expected values are always read from the capture files, never from our own rendering.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from ctxsim.sdk import FakeTransport
from ctxsim.world import Call, Query, Session, SubagentStart, Text, Thinking, ToolResult, ToolUse

CAPTURES = Path(__file__).resolve().parents[3] / "shared" / "captures" / "claude-code-2.1.330"
"""``<repo root>/../shared/captures/...``: CI clones the repo with ``shared/`` beside it."""

MODEL = "claude-sonnet-4-5"
WINDOW = 200_000
MAX_OUTPUT = 32_000

SKIPPED_SYSTEM_SUBTYPES = frozenset({
    "init", "status", "thinking_tokens", "background_tasks_changed", "task_started", "task_progress",
})
"""System messages a tracker cannot use; the capture also has ``background_tasks_changed`` because its subagent
was backgrounded, which our foreground-subagent rendering does not produce."""

RESULT_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
MODEL_USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens",
                    "contextWindow", "maxOutputTokens")
CONTEXT_USAGE_KEYS = ("totalTokens", "maxTokens", "rawMaxTokens", "percentage", "autoCompactThreshold")

BACKENDS = ["asyncio", pytest.param("trio", marks=pytest.mark.skipif(
    not __import__("importlib").util.find_spec("trio"), reason="trio is not installed"))]


def _capture(name: str) -> Path:
    path = CAPTURES / name
    if not path.is_file():
        pytest.skip(f"real CLI captures not available: {path} is missing (shared/ must sit beside the repo root)")
    return path


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in _capture(name).read_text().splitlines() if line.strip()]


# --- the sessions behind the captures --------------------------------------------------------------------------


def _call(message_id: str, cache_read: int, output: int, *blocks: Any, parent: str | None = None) -> Call:
    # The fake API reported input 5 and cache creation 200 for every call; no request id reached the SDK.
    return Call(input_tokens=5, cache_creation_input_tokens=200, cache_read_input_tokens=cache_read,
                output_tokens=output, blocks=tuple(blocks), message_id=message_id, model=MODEL, request_id=None,
                parent_tool_use_id=parent)


def _lines(n: int) -> str:
    return "\n".join(str(i) for i in range(1, n + 1))


SUMMARY = "<summary>User asked to run commands; done steps 1-3.</summary>"


def three_queries_session() -> Session:
    """``sdk-messages-three-queries.jsonl``: fake-api requests #1 to #6 (#7, the subagent's second call, and #8
    came after the q3 result: the subagent was backgrounded)."""
    q1 = Query("q1", (_call("msg_cap0001", 14_607, 50, Text(SUMMARY)),))
    q2 = Query("q2", (_call("msg_cap0002", 184_688, 50, Text("Big turn answered.")),))
    q3 = Query("q3", (
        _call("msg_cap0003", 14_760, 80,
              Thinking("I should run two commands.", "sig123"),
              Text("Running two commands."),
              ToolUse("toolu_a003", "Bash", {"command": "seq 1 500", "description": "a"}),
              ToolUse("toolu_b003", "Bash", {"command": "seq 1 700", "description": "b"})),
        # The capture delivers toolu_b003's result before toolu_a003's.
        ToolResult("toolu_b003", _lines(700), 700),
        ToolResult("toolu_a003", _lines(500), 500),
        _call("msg_cap0004", 16_379, 50,
              ToolUse("toolu_c004", "Agent", {"description": "subtask", "prompt": "SUBTASK: count to 300",
                                               "subagent_type": "general-purpose"})),
        SubagentStart("toolu_c004", "ab556dfddfb036beb", "subtask", "SUBTASK: count to 300"),
        ToolResult("toolu_c004", "Async agent launched successfully.", 30),
        _call("msg_cap0005", 16_757, 50, Text("All done.")),
        _call("msg_cap0006", 11_058, 50,
              ToolUse("toolu_s006", "Bash", {"command": "seq 1 300", "description": "sub count"}),
              parent="toolu_c004"),
    ))
    return Session(session_id="27fef5c3-0394-4c96-ac87-59c315e6d0cb", queries=(q1, q2, q3), model=MODEL,
                   window=WINDOW, max_output_tokens=MAX_OUTPUT, name="capture three queries")


def partial_session() -> Session:
    """``sdk-messages-partial.jsonl``: fake-api request #9, one query with partial messages on."""
    q1 = Query("q1", (_call("msg_cap0009", 14_607, 50, Text(SUMMARY)),))
    # The fake API behind these captures sent the output count alone in message_delta.
    return Session(session_id="264579f3-3cd7-4e7e-9e04-32d336cb0548", queries=(q1,), model=MODEL,
                   window=WINDOW, max_output_tokens=MAX_OUTPUT, name="capture partial", delta_usage="output")


# --- projection ------------------------------------------------------------------------------------------------


def _block_kind(block: dict[str, Any]) -> str:
    """The kind of a content block from its ``dataclasses.asdict`` form (the captures keep no class names)."""
    if "tool_use_id" in block:
        return "tool_result"
    if "thinking" in block:
        return "thinking"
    if "id" in block and "name" in block:
        return "tool_use"
    if "text" in block:
        return "text"
    return "?" + ",".join(sorted(block))


def project(cls: str, data: dict[str, Any]) -> tuple[Any, ...] | None:
    """What a context tracker can use from one SDK message (``None``: not compared)."""
    if cls == "AssistantMessage":
        return (cls, data["message_id"], data["parent_tool_use_id"], data["usage"],
                [_block_kind(b) for b in data["content"]])
    if cls == "UserMessage":
        content = data["content"]
        ids = [b["tool_use_id"] for b in content if "tool_use_id" in b] if isinstance(content, list) else []
        return (cls, data["parent_tool_use_id"], ids)
    if cls == "ResultMessage":
        usage = {k: data["usage"][k] for k in RESULT_USAGE_KEYS}
        model_usage = {k: data["model_usage"][MODEL][k] for k in MODEL_USAGE_KEYS}
        return (cls, data["subtype"], usage, model_usage, pytest.approx(data["total_cost_usd"], abs=1e-9))
    if cls == "StreamEvent":
        event = data["event"]
        kind = event["type"]
        if kind == "message_start":
            return (cls, kind, event["message"]["id"], event["message"]["usage"])
        if kind == "message_delta":
            return (cls, kind, event["usage"], event["delta"]["stop_reason"])
        return (cls, kind)
    subtype = data.get("subtype")
    if subtype in SKIPPED_SYSTEM_SUBTYPES:
        return None
    return ("SystemMessage", subtype)  # any other system message (compact_boundary, ...) must match in order


def project_context_usage(usage: dict[str, Any], threshold: int | None = None) -> dict[str, Any]:
    merged = dict(usage)
    if threshold is not None:
        merged.setdefault("autoCompactThreshold", threshold)
    return {k: merged.get(k) for k in CONTEXT_USAGE_KEYS}


def captured(name: str) -> dict[str, dict[str, Any]]:
    """Per query: the projected messages and the projected ``get_context_usage`` from a capture file."""
    out: dict[str, dict[str, Any]] = {}
    for row in _rows(name):
        q = out.setdefault(row["query"], {"messages": [], "context_usage": None})
        if "context_usage" in row:
            q["context_usage"] = project_context_usage(row["context_usage"], row.get("autoCompactThreshold"))
            continue
        item = project(row["class"], row["data"])
        if item is not None:
            q["messages"].append(item)
    return out


def played(session: Session, backend: str, *, include_partial_messages: bool = False) -> dict[str, dict[str, Any]]:
    """Play ``session`` through the real SDK client; the same projection as :func:`captured`."""
    out: dict[str, dict[str, Any]] = {}

    async def main() -> None:
        transport = FakeTransport(session, include_partial_messages=include_partial_messages)
        options = ClaudeAgentOptions(include_partial_messages=include_partial_messages)
        async with ClaudeSDKClient(options, transport=transport) as client:
            for i, query in enumerate(session.queries):
                q = out.setdefault(f"q{i + 1}", {"messages": [], "context_usage": None})
                await client.query(query.prompt)
                async for message in client.receive_response():
                    item = project(type(message).__name__, dataclasses.asdict(message))
                    if item is not None:
                        q["messages"].append(item)
                q["context_usage"] = project_context_usage(await client.get_context_usage())

    async def bounded() -> None:
        with anyio.fail_after(10):  # never hang CI; a run takes milliseconds
            await main()

    anyio.run(bounded, backend=backend)
    return out


# --- tests -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_three_queries_match_capture(backend: str) -> None:
    expected = captured("sdk-messages-three-queries.jsonl")
    actual = played(three_queries_session(), backend)
    assert list(actual) == list(expected) == ["q1", "q2", "q3"]
    for q in expected:
        assert actual[q]["messages"] == expected[q]["messages"], q
        assert actual[q]["context_usage"] == expected[q]["context_usage"], q
    assert actual == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_partial_messages_match_capture(backend: str) -> None:
    expected = captured("sdk-messages-partial.jsonl")
    actual = played(partial_session(), backend, include_partial_messages=True)
    assert actual == expected
    events = [m[1] for m in expected["q1"]["messages"] if m[0] == "StreamEvent"]
    assert events == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                      "message_delta", "message_stop"]


def test_readme_facts_hold_in_capture_and_rendering() -> None:
    """The README's facts, checked on the capture and on our replay of it."""
    expected = captured("sdk-messages-three-queries.jsonl")
    actual = played(three_queries_session(), "asyncio")
    for side in (expected, actual):
        q3 = side["q3"]["messages"]
        assistants = [m for m in q3 if m[0] == "AssistantMessage"]
        # 1. one message per block; blocks of one call share message_id and an equal usage dict.
        first_call = [m for m in assistants if m[1] == "msg_cap0003"]
        assert [m[4] for m in first_call] == [["thinking"], ["text"], ["tool_use"], ["tool_use"]]
        assert all(m[3] == first_call[0][3] for m in first_call)
        # 2. assistant output_tokens is the message_start placeholder, never the final count.
        assert {m[3]["output_tokens"] for q in side.values() for m in q["messages"]
                if m[0] == "AssistantMessage"} == {1}
        # 3. result usage sums this query's main-chain calls: 47,896 = 14,760 + 16,379 + 16,757.
        result = q3[-1]
        assert result[0] == "ResultMessage"
        assert result[2] == {"input_tokens": 15, "cache_creation_input_tokens": 600,
                             "cache_read_input_tokens": 14_760 + 16_379 + 16_757, "output_tokens": 180}
        assert result[2]["cache_read_input_tokens"] == 47_896
        # 4. model usage is cumulative over the session, the subagent call included, with contextWindow.
        assert result[3]["inputTokens"] == 30 and result[3]["outputTokens"] == 330
        assert result[3]["contextWindow"] == WINDOW
        # 5. totalTokens is the last main-chain prompt, output excluded; threshold 167,000.
        assert side["q3"]["context_usage"]["totalTokens"] == 5 + 200 + 16_757 == 16_962
        assert side["q3"]["context_usage"]["autoCompactThreshold"] == 167_000
        # 6. subagent calls carry parent_tool_use_id and their own smaller context.
        sub = [m for m in assistants if m[2] is not None]
        assert [(m[1], m[2], m[3]["cache_read_input_tokens"]) for m in sub] == [("msg_cap0006", "toolu_c004",
                                                                                  11_058)]
        # tool results in delivery order: b003 before a003.
        assert [m[2] for m in q3 if m[0] == "UserMessage"] == [["toolu_b003"], ["toolu_a003"], ["toolu_c004"]]
        # 7. no compaction at 92%: q2 ends at 184,893 and q3's first call is small again, with no boundary.
        assert side["q2"]["context_usage"]["totalTokens"] == 184_893
        assert side["q2"]["context_usage"]["percentage"] == 92
        assert not any(m[0] == "SystemMessage" for q in side.values() for m in q["messages"])


def test_sessions_agree_with_request_log() -> None:
    """The rebuilt calls are the fake API's requests #1-#6 (three queries) and #9 (partial), prompt and output."""
    log = _capture("fake-api-requests.log").read_text()
    requests = {int(n): (int(reported), int(out)) for n, reported, out in
                re.findall(r"^#(\d+) .*?reported=(\d+) .*?out=(\d+)", log, re.MULTILINE)}
    calls = three_queries_session().calls
    assert [(c.prompt, c.output_tokens) for c in calls] == [requests[n] for n in range(1, 7)]
    assert [(c.prompt, c.output_tokens) for c in partial_session().calls] == [requests[9]]
