"""The fake Messages API on its own (no CLI): routes, streaming and JSON answers, the prompt cache, the overflow
error, the address it listens on. Request bodies are shaped as CLI 2.1.330 sends them (live-proto/FINDINGS.md)."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from ctxsim.live._api import FakeMessagesAPI, Reply, Served
from ctxsim.world import Text, Thinking, ToolUse

SYSTEM = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330.abc; cc_entrypoint=sdk-py;"},
          {"type": "text", "text": "You are a Claude agent.", "cache_control": {"type": "ephemeral"}}]
TOOLS = [{"name": "Bash", "description": "run " * 500, "input_schema": {"type": "object"}}]


def body(*messages: dict[str, Any], stream: bool = True, system: list[dict[str, Any]] = SYSTEM) -> dict[str, Any]:
    last = messages[-1]
    content = [dict(b) for b in last["content"]]
    content[-1]["cache_control"] = {"type": "ephemeral"}  # the CLI's breakpoint on the conversation's end
    return {"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream, "system": system, "tools": TOOLS,
            "messages": [*messages[:-1], {**last, "content": content}]}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def post(api: FakeMessagesAPI, path: str, data: dict[str, Any]) -> tuple[int, str]:
    request = urllib.request.Request(api.base_url + path, json.dumps(data).encode(), method="POST",
                                     headers={"content-type": "application/json", "x-api-key": api.key})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_streams_a_reply_with_cache_usage_and_the_final_output_in_message_delta() -> None:
    with FakeMessagesAPI() as api:
        api.model.main.append(Reply((Thinking("hm", "sig"), Text("hi"), ToolUse("", "Bash", {"command": "true"})),
                                    output_tokens=77, usage=(3, 100, 14_000), message_id="msg_x"))
        status, text = post(api, "/v1/messages?beta=true", body(user("hello")))
    assert status == 200
    got = events(text)
    assert [e["type"] for e in got] == ["message_start", "ping"] + ["content_block_start", "content_block_delta",
                                                                    "content_block_delta", "content_block_stop",
                                                                    ] + ["content_block_start",
                                                                         "content_block_delta",
                                                                         "content_block_stop"] * 2 + [
        "message_delta", "message_stop"]
    assert got[0]["message"]["usage"] == {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                          "cache_read_input_tokens": 14_000, "output_tokens": 1}
    assert got[0]["message"]["id"] == "msg_x"
    # message_delta's usage is cumulative, as the real API's: the input and cache counts with the final output
    assert got[-2]["usage"] == {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                "cache_read_input_tokens": 14_000, "output_tokens": 77}
    assert got[-2]["delta"]["stop_reason"] == "tool_use"
    assert api.served[0].blocks[2] == ToolUse(f"toolu_ctxsim{api.served[0].request.number:04d}_2", "Bash",
                                              {"command": "true"})


def test_prompt_cache_reads_what_the_previous_request_wrote() -> None:
    first = user("hello")
    reply = {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    with FakeMessagesAPI() as api:
        post(api, "/v1/messages", body(first))
        post(api, "/v1/messages", body(first, reply, user("and more")))
        post(api, "/v1/messages", body(user("something else")))
    one, two, three = (s.usage for s in api.served)
    assert one[2] == 0 and one[1] > 500 and one[0] == 3  # all written, nothing read; 3 uncached after the breakpoint
    assert two[2] == one[1] and two[1] > 0  # reads the first conversation's prefix, writes the new turn
    assert 0 < three[2] < one[1]  # another conversation: only tools + system are shared
    assert sum(two) > sum(one)


def test_non_streaming_json_and_count_tokens() -> None:
    with FakeMessagesAPI() as api:
        status, text = post(api, "/v1/messages", body(user("hello"), stream=False))
        assert status == 200
        message = json.loads(text)
        assert message["content"] == [{"type": "text", "text": "ok"}]
        assert set(message["usage"]) == {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens",
                                         "output_tokens"}
        for path in ("/v1/messages/count_tokens", "/v1/messages/count_tokens?beta=true"):
            status, text = post(api, path, {"model": "m", "messages": [{"role": "user", "content": "foo"}],
                                            "tools": TOOLS})
            assert status == 200 and json.loads(text)["input_tokens"] > 400
        assert api.count_tokens_calls == 2
        assert post(api, "/v1/other", {})[0] == 404 and api.unhandled == ["POST /v1/other"]


def test_over_window_prompt_gets_the_real_error() -> None:
    with FakeMessagesAPI(window=200_000) as api:
        api.model.main.append(Reply(prompt=210_000))
        status, text = post(api, "/v1/messages", body(user("hello")))
    assert status == 400
    assert json.loads(text) == {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}}


def test_classifies_subagent_and_compact_requests() -> None:
    sub = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.330; cc_is_subagent=true;"}]
    compact = user("CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. ... <summary> ...")
    with FakeMessagesAPI() as api:
        api.model.main.append(Reply((ToolUse("toolu_agent", "Agent", {"prompt": "p"}),)))
        post(api, "/v1/messages", body(user("delegate")))
        post(api, "/v1/messages", body(user("sub task"), system=sub))
        _, text = post(api, "/v1/messages", body(user("hello"), compact))
    assert [(s.request.kind, s.request.agent) for s in api.served] == [
        ("main", None), ("subagent", "toolu_agent"), ("compact", None)]
    assert "<summary>" in events(text)[3]["delta"]["text"]


def test_listens_on_loopback_only_and_stops_cleanly() -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.1 only"):
        FakeMessagesAPI(host="0.0.0.0")
    api = FakeMessagesAPI().start()
    thread = api.thread
    assert thread is not None and thread.is_alive() and api.base_url.startswith("http://127.0.0.1:")
    api.stop()
    assert not thread.is_alive() and api.thread is None
    api.stop()  # idempotent


def test_the_hold_is_awaited_before_the_answer() -> None:
    """A hold sees each request once served and the client gets nothing until it returns."""
    seen: list[tuple[str, int]] = []

    async def hold(served: Served) -> None:
        seen.append((served.request.kind, len(api.served)))
        await asyncio.sleep(0.2)
        seen.append(("released", len(api.served)))

    with FakeMessagesAPI() as api:
        api.hold = hold
        status, text = post(api, "/v1/messages", body(user("hello")))
    assert status == 200 and events(text)[-1]["type"] == "message_stop"
    assert seen == [("main", 1), ("released", 1)]
