"""Our rendering, played through the real SDK, against the real CLI's captures in ``tests/captures``.

The sessions behind ``tests/captures/claude-code-2.1.332`` (recorded by ``tests/captures/remake.py``) are rebuilt
step by step as :class:`Session`\\ s: each call's usage as the fake API served it (``served.jsonl``), its blocks and
tool results as the script gave them. They are rendered by :func:`ctxsim.wire.render` for the captured CLI version
and played to the real ``ClaudeSDKClient`` over a :class:`~ctxsim.sdk.FakeTransport`. What a context tracker can see
(message order, ids, usage, results, context usage) is projected from both the live SDK messages and the captured
ones, and compared field by field.

Expected values are always read from the capture files, never from our own rendering.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from ctxsim.sdk import FakeTransport
from ctxsim.wire import render
from ctxsim.world import Call, Query, Session, Step, SubagentStart, Text, Thinking, ToolResult, ToolUse

CAPTURES = Path(__file__).resolve().parents[1] / "captures" / "claude-code-2.1.332"
"""The captures of Claude Code 2.1.332 (``tests/captures/remake.py``)."""
VERSION = CAPTURES.name.removeprefix("claude-code-")

MODEL = "claude-sonnet-4-5"
WINDOW = 200_000
MAX_OUTPUT = 32_000

SKIPPED_SYSTEM_SUBTYPES = frozenset({
    "init", "status", "thinking_tokens", "background_tasks_changed", "task_started", "task_progress",
    "task_updated", "task_notification",
})
"""System messages a tracker cannot use (a subagent's task reports included)."""

RESULT_USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")
MODEL_USAGE_KEYS = ("inputTokens", "outputTokens", "cacheReadInputTokens", "cacheCreationInputTokens",
                    "contextWindow", "maxOutputTokens")
CONTEXT_USAGE_KEYS = ("totalTokens", "maxTokens", "rawMaxTokens", "percentage", "autoCompactThreshold")

BACKENDS = ["asyncio", pytest.param("trio", marks=pytest.mark.skipif(
    not __import__("importlib").util.find_spec("trio"), reason="trio is not installed"))]


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (CAPTURES / name).read_text().splitlines() if line.strip()]


def served(session: str) -> dict[str, dict[str, Any]]:
    """What the fake API answered in one recorded session (``served.jsonl``), by message id."""
    return {r["message_id"]: r for r in _rows("served.jsonl") if r["session"] == session}


# --- the sessions behind the captures --------------------------------------------------------------------------


def _call(truth: dict[str, dict[str, Any]], message_id: str, *blocks: Any, parent: str | None = None) -> Call:
    # each call's usage and output as the fake API reported them; no request id reached the SDK
    (input_tokens, cache_creation, cache_read), output = truth[message_id]["usage"], truth[message_id]["output_tokens"]
    return Call(input_tokens=input_tokens, cache_creation_input_tokens=cache_creation,
                cache_read_input_tokens=cache_read, output_tokens=output, blocks=tuple(blocks),
                message_id=message_id, model=MODEL, request_id=None, parent_tool_use_id=parent)


def _bash(tool_use_id: str, command: str) -> ToolUse:
    return ToolUse(tool_use_id, "Bash", {"command": command, "description": f"run {command}"})


def _seq(n: int) -> str:
    return "\n".join(str(i) for i in range(1, n + 1))


def _session_id(name: str) -> str:
    return str(next(r["data"]["data"]["session_id"] for r in _rows(name) if r["class"] == "SystemMessage"))


def _agent_id() -> str:
    (path,) = CAPTURES.glob("transcript-subagent-agent-*.jsonl")
    return path.stem.removeprefix("transcript-subagent-agent-")


def _results_in_order(*tool_use_ids: str) -> list[str]:
    """``tool_use_ids`` in the order their results reached the SDK in the capture: tools run side by side, so the
    order is the run's, as its usage is."""
    delivered = [b["tool_use_id"] for r in _rows("sdk-messages-three-queries.jsonl") if r.get("class") == "UserMessage"
                 and isinstance(r["data"]["content"], list) for b in r["data"]["content"] if "tool_use_id" in b]
    return sorted(tool_use_ids, key=delivered.index)


def three_queries_session() -> Session:
    """``sdk-messages-three-queries.jsonl``: three queries, the third with two tool calls and a foreground subagent."""
    truth = served("three-queries")
    agent = ToolUse("toolu_cap_agent", "Agent", {"description": "a subtask", "prompt": "count to three",
                                                 "subagent_type": "general-purpose", "run_in_background": False})
    lines = {"toolu_cap_a": 5, "toolu_cap_b": 7}  # seq 1 5, seq 1 7
    q3: tuple[Step, ...] = (
        _call(truth, "msg_cap0003", Thinking("I should run two commands.", "sig-cap"), Text("Running two commands."),
              _bash("toolu_cap_a", "seq 1 5"), _bash("toolu_cap_b", "seq 1 7")),
        *(ToolResult(i, _seq(lines[i]), lines[i]) for i in _results_in_order(*lines)),
        _call(truth, "msg_cap0004", agent),
        SubagentStart("toolu_cap_agent", _agent_id(), "a subtask", "count to three"),
        _call(truth, "msg_cap0006", _bash("toolu_cap_sub", "seq 1 3"), parent="toolu_cap_agent"),
        ToolResult("toolu_cap_sub", _seq(3), 3, parent_tool_use_id="toolu_cap_agent"),
        _call(truth, "msg_cap0007", Text("Counted to three."), parent="toolu_cap_agent"),
        ToolResult("toolu_cap_agent", "Counted to three.", 30),
        _call(truth, "msg_cap0005", Text("All done.")),
    )
    queries = (Query("hello", (_call(truth, "msg_cap0001", Text("Hello.")),)),
               Query("read the big file", (_call(truth, "msg_cap0002", Text("Big turn answered.")),)),
               Query("run two commands, then delegate a count", q3))
    return Session(session_id=_session_id("sdk-messages-three-queries.jsonl"), queries=queries, model=MODEL,
                   window=WINDOW, max_output_tokens=MAX_OUTPUT, name="capture three queries")


def partial_session() -> Session:
    """``sdk-messages-partial.jsonl``: one query with partial messages on."""
    q1 = Query("hello", (_call(served("partial"), "msg_cap0008", Text("Hello, in parts.")),))
    # the fake API sends message_delta's usage whole (input and cache fields with the output), as the real API does
    return Session(session_id=_session_id("sdk-messages-partial.jsonl"), queries=(q1,), model=MODEL, window=WINDOW,
                   max_output_tokens=MAX_OUTPUT, name="capture partial", delta_usage="cumulative")


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
        # without a tool result (the subagent's prompt, which the CLI forwards and ctxsim does not render) a user
        # message holds nothing a tracker counts, as in the live fidelity projection
        return (cls, data["parent_tool_use_id"], ids) if ids else None
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
        scripts = render(session, include_partial_messages=include_partial_messages, cli_version=VERSION)
        transport = FakeTransport(session, scripts=scripts, include_partial_messages=include_partial_messages)
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


def _sum(calls: list[dict[str, Any]], index: int | None = None) -> int:
    """The sum over ``calls`` (rows of ``served.jsonl``) of one usage field, or of the output with no index."""
    return sum(c["usage"][index] if index is not None else c["output_tokens"] for c in calls)


def test_the_cli_facts_hold_in_capture_and_rendering() -> None:
    """What the CLI does with the usage the API reports (``docs/explanation/wire.md``), checked on the capture and
    on our replay of it; every expected number is the fake API's own (``served.jsonl``)."""
    expected = captured("sdk-messages-three-queries.jsonl")
    actual = played(three_queries_session(), "asyncio")
    truth = list(served("three-queries").values())
    main_q3 = [c for c in truth if c["query"] == "q3" and c["kind"] == "main"]
    subagent = [c for c in truth if c["kind"] == "subagent"]
    assert len(main_q3) == 3 and len(subagent) == 2
    for side in (expected, actual):
        q3 = side["q3"]["messages"]
        assistants = [m for m in q3 if m[0] == "AssistantMessage"]
        # 1. one message per block; blocks of one call share message_id and an equal usage dict.
        first_call = [m for m in assistants if m[1] == "msg_cap0003"]
        assert [m[4] for m in first_call] == [["thinking"], ["text"], ["tool_use"], ["tool_use"]]
        assert all(m[3] == first_call[0][3] for m in first_call)
        # 2. assistant output_tokens is message_start's placeholder (1), never the final count.
        assert {m[3]["output_tokens"] for q in side.values() for m in q["messages"]
                if m[0] == "AssistantMessage"} == {1} != {c["output_tokens"] for c in truth}
        # 3. the result's usage sums this query's main-chain calls (the subagent's left out); not a context size.
        result = q3[-1]
        assert result[0] == "ResultMessage"
        assert result[2] == {"input_tokens": _sum(main_q3, 0), "cache_creation_input_tokens": _sum(main_q3, 1),
                             "cache_read_input_tokens": _sum(main_q3, 2), "output_tokens": _sum(main_q3)}
        # 4. model usage is cumulative over the session, the subagent's calls included, with contextWindow.
        assert (result[3]["inputTokens"], result[3]["outputTokens"]) == (_sum(truth, 0), _sum(truth))
        assert result[3]["cacheReadInputTokens"] == _sum(truth, 2) and result[3]["contextWindow"] == WINDOW
        # 5. totalTokens is the last main-chain call's prompt, output excluded; the threshold is the CLI's.
        assert side["q3"]["context_usage"]["totalTokens"] == sum(main_q3[-1]["usage"])
        assert side["q3"]["context_usage"]["autoCompactThreshold"] == expected["q3"]["context_usage"][
            "autoCompactThreshold"] < WINDOW
        # 6. a subagent's call carries parent_tool_use_id and its own smaller context; its last call, text only,
        # is not forwarded to the SDK.
        sub = [m for m in assistants if m[2] is not None]
        assert [(m[1], m[2], m[3]["cache_read_input_tokens"]) for m in sub] == [
            (subagent[0]["message_id"], "toolu_cap_agent", subagent[0]["usage"][2])]
        assert sum(subagent[0]["usage"]) < sum(main_q3[0]["usage"])
        # tool results in the order the tools finished, then the subagent's own, then the Agent call's.
        assert [m[2] for m in q3 if m[0] == "UserMessage"] == [
            [i] for i in _results_in_order("toolu_cap_a", "toolu_cap_b")] + [["toolu_cap_sub"], ["toolu_cap_agent"]]
        # 7. no compaction at 92%: q2 ends at its call's prompt and q3's first call is small again, with no boundary.
        big = next(c for c in truth if c["query"] == "q2")
        assert side["q2"]["context_usage"]["totalTokens"] == sum(big["usage"])
        assert side["q2"]["context_usage"]["percentage"] == round(100 * sum(big["usage"]) / WINDOW) == 92
        assert not any(m[0] == "SystemMessage" for q in side.values() for m in q["messages"])


def test_the_sessions_are_every_call_the_fake_api_served() -> None:
    """The rebuilt calls are the fake API's requests of each session, in the order it served them (the summary and
    side requests aside), with the prompt and output it reported."""
    for session, name in ((three_queries_session(), "three-queries"), (partial_session(), "partial")):
        log = [r for r in served(name).values() if r["kind"] in ("main", "subagent")]
        assert [(c.message_id, c.prompt, c.output_tokens) for c in session.calls] == [
            (r["message_id"], sum(r["usage"]), r["output_tokens"]) for r in log]
