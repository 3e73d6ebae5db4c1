"""FakeTransport under the real SDK: query(), ClaudeSDKClient, the control protocol, close(), patch_sdk()."""

from __future__ import annotations

import anyio
import pytest
from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    StreamEvent,
    query,
)
from claude_agent_sdk._internal.transport import subprocess_cli

from ctxsim.sdk import FakeTransport, patch_sdk
from ctxsim.world import SessionBuilder


def session(queries: int = 2):
    b = SessionBuilder(seed=2, name="two-queries")
    for q in range(queries):
        b.query(f"query {q}").call(blocks=("thinking", "text", "tool_use"), results=[2000]).call()
    return b.build()


def run(main, backend: str = "asyncio"):
    async def bounded():
        with anyio.fail_after(10):
            return await main()
    return anyio.run(bounded, backend=backend)


def test_client_plays_one_script_per_query_and_reports_truth(anyio_backend_name: str) -> None:
    s = session()

    async def main():
        transport = FakeTransport(s)
        seen: list[list[type]] = []
        totals: list[int] = []
        async with ClaudeSDKClient(transport=transport) as client:
            for q in s.queries:
                await client.query(q.prompt)
                seen.append([type(m) async for m in client.receive_response()])
                totals.append((await client.get_context_usage())["totalTokens"])
        return transport, seen, totals

    transport, seen, totals = run(main, anyio_backend_name)
    assert [kinds.count(ResultMessage) for kinds in seen] == [1, 1]
    # three blocks of the first call plus one of the second, per query
    assert [kinds.count(AssistantMessage) for kinds in seen] == [4, 4]
    assert totals == [q.main_calls[-1].prompt for q in s.queries]  # /context: the last main call's prompt
    assert transport.prompts == [q.prompt for q in s.queries]
    assert transport.control_requests.count("initialize") == 1
    assert not transport.is_ready()  # closed by the client's __aexit__


def test_one_shot_query_ends_after_its_result(anyio_backend_name: str) -> None:
    s = session(queries=1)

    async def main():
        return [m async for m in query(prompt="go", transport=FakeTransport(s, include_partial_messages=True))]

    messages = run(main, anyio_backend_name)
    assert isinstance(messages[-1], ResultMessage)
    deltas = [m.event["usage"]["output_tokens"] for m in messages
              if isinstance(m, StreamEvent) and m.event["type"] == "message_delta"]
    assert deltas == [c.output_tokens for c in s.main_calls]


def test_interrupt_stops_the_turn_and_set_model_answers() -> None:
    s = session(queries=1)

    async def main():
        transport = FakeTransport(s)
        async with ClaudeSDKClient(transport=transport) as client:
            await client.set_model("claude-opus-4-5")
            await client.query("go")
            kinds = []
            async for m in client.receive_response():
                kinds.append(m)
                if isinstance(m, AssistantMessage) and len(kinds) == 3:
                    await client.interrupt()
        return transport, kinds

    transport, messages = run(main)
    assert transport.model == "claude-opus-4-5"
    assert isinstance(messages[-1], ResultMessage)
    assert messages[-1].terminal_reason == "aborted_streaming"
    played = sum(isinstance(m, AssistantMessage) for m in messages)
    assert played < sum(len(c.blocks) for c in s.main_calls)


def test_more_queries_than_scripted_is_a_clear_error() -> None:
    s = session(queries=1)

    async def main():
        async with ClaudeSDKClient(transport=FakeTransport(s)) as client:
            await client.query("one")
            async for _ in client.receive_response():
                pass
            await client.query("two")
            async for _ in client.receive_response():
                pass

    with pytest.raises(Exception, match=r"ctxsim: FakeTransport got user message #2 but session 'two-queries' "
                                        r"scripts only 1 queries"):
        run(main)


def test_unknown_control_request_is_answered_with_an_error() -> None:
    async def main():
        async with ClaudeSDKClient(transport=FakeTransport(session(1))) as client:
            await client.rewind_files("u1")

    with pytest.raises(Exception, match="ctxsim: FakeTransport does not answer control request 'rewind_files'"):
        run(main)


def test_close_is_bounded_even_inside_a_cancelled_scope() -> None:
    async def main():
        transport = FakeTransport(session(1))
        with anyio.move_on_after(0.05):
            async with ClaudeSDKClient(transport=transport):
                await anyio.sleep(5)
        return transport

    assert not run(main).is_ready()


def test_patch_sdk_replaces_the_subprocess_for_clients_and_query(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_process(*args, **kwargs):
        raise AssertionError("the CLI subprocess must not be started")

    s = session(queries=1)

    async def main():
        async with ClaudeSDKClient(ClaudeAgentOptions(include_partial_messages=True)) as client:
            await client.query("go")
            streamed = [m async for m in client.receive_response() if isinstance(m, StreamEvent)]
        one_shot = [m async for m in query(prompt="go")]
        return streamed, one_shot

    original = subprocess_cli.SubprocessCLITransport
    monkeypatch.setattr(original, "connect", no_process)
    with patch_sdk(s) as patched:
        streamed, one_shot = run(main)
    assert subprocess_cli.SubprocessCLITransport is original  # restored on exit
    assert streamed, "options.include_partial_messages chose the rendering"
    assert isinstance(one_shot[-1], ResultMessage)
    assert len(patched.transports) == 2
    assert patched.last.prompts == ["go"]


def test_patch_sdk_gives_successive_sessions_to_successive_clients() -> None:
    first, second = session(1), SessionBuilder(seed=9).query("x").call(prompt=50_000).build()

    async def main():
        totals = []
        for _ in range(2):
            async with ClaudeSDKClient() as client:
                await client.query("go")
                async for _ in client.receive_response():
                    pass
                totals.append((await client.get_context_usage())["totalTokens"])
        return totals

    with patch_sdk([first, second]):
        assert run(main) == [first.main_calls[-1].prompt, 50_000]
