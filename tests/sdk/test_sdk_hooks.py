"""Hooks and permission prompts in-process: ``FakeTransport`` sends the control requests Claude Code sends for the
hooks and the ``can_use_tool`` callback the SDK registered, at the moments it sends them, and applies denials.
Also the scripted reply text (``call: {text: ...}``) that lets ``fake_claude`` drive an agent that branches on
what the model says. A user-shaped project runs through ``pytester``."""

from __future__ import annotations

from typing import Any

import anyio
import hypothesis  # noqa: F401 - kept across pytester's in-process runs (see test_plugin.py)
import pytest
from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    HookMatcher,
    PermissionResultAllow,
    PermissionResultDeny,
    ResultMessage,
    UserMessage,
)

import ctxsim.scenario  # noqa: F401
from ctxsim import SessionBuilder, patch_sdk
from ctxsim.world import Session

AGENT = '''
import json
from pathlib import Path

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, HookMatcher, ResultMessage

STATE = Path("state.json")


async def save_before_compaction(hook_input, tool_use_id, context):
    saved = json.loads(STATE.read_text()) if STATE.exists() else []
    saved.append({"session": hook_input["session_id"], "trigger": hook_input["trigger"]})
    STATE.write_text(json.dumps(saved))
    return {}


async def run(prompts):
    options = ClaudeAgentOptions(hooks={"PreCompact": [HookMatcher(hooks=[save_before_compaction])]})
    replies = []
    async with ClaudeSDKClient(options) as client:
        for prompt in prompts:
            await client.query(prompt)
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    replies.append(message.result)
            if replies[-1].startswith("TASK COMPLETE"):
                break
    return replies
'''

TEST_AGENT = '''
import json
from pathlib import Path

import anyio

import precompact_agent as agent


def test_the_agent_saves_its_state_before_each_compaction(ctx_session, fake_claude):
    session = ctx_session("""
        queries:
          - prompt: "Refactor the parser"
            steps:
              - call: {in: 3, cc: 2000, cr: 150000, out: 300, text: "Half way."}
              - compact: {post: 20000}
              - call: {text: "Still working."}
          - prompt: "Continue"
            steps:
              - compact: {post: 15000, trigger: manual}
              - call: {text: "TASK COMPLETE: the parser is refactored."}
          - prompt: "never sent"
            steps:
              - call: {}
    """)
    fake = fake_claude(session)
    replies = anyio.run(agent.run, ["Refactor the parser", "Continue", "never sent"])
    assert replies == ["Still working.", "TASK COMPLETE: the parser is refactored."]
    saved = json.loads(Path("state.json").read_text())
    assert saved == [{"session": session.session_id, "trigger": "auto"},
                     {"session": session.session_id, "trigger": "manual"}]
    assert fake.last.prompts == ["Refactor the parser", "Continue"]
'''


def test_an_agent_that_checkpoints_in_its_pre_compact_hook_is_tested_with_fake_claude(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    # names no test module of this suite has: pytester's in-process run would find ours in sys.modules
    pytester.makepyfile(precompact_agent=AGENT, test_precompact_agent=TEST_AGENT)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


# --- the moments and the answers, through the real client -------------------------------------------------------


def _session() -> Session:
    return (SessionBuilder(seed=5, name="hooks").query("work")
            .call(prompt=30_000, blocks=("tool_use",), results=[400])
            .start_subagent("look around").call(prompt=5_000, blocks=("tool_use",), results=[100]).end_subagent()
            .call(text="Done for now.")
            .compact(8_000)
            .build())


def _run(session: Session, options: ClaudeAgentOptions) -> list[Any]:
    async def main() -> list[Any]:
        out = []
        async with ClaudeSDKClient(options) as client:
            await client.query("work")
            async for message in client.receive_response():
                out.append(message)
        return out

    with patch_sdk(session):
        return anyio.run(main)


def test_each_hook_fires_at_its_moment_with_claude_codes_inputs() -> None:
    events: list[tuple[Any, ...]] = []

    async def record(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        name = hook_input["hook_event_name"]
        detail = {"UserPromptSubmit": "prompt", "PreToolUse": "tool_name", "PostToolUse": "tool_name",
                  "SubagentStart": "agent_type", "SubagentStop": "agent_type", "PreCompact": "trigger",
                  "Stop": "last_assistant_message"}[name]
        events.append((name, hook_input[detail], tool_use_id))
        assert hook_input["cwd"] == "/home/dev/project" and hook_input["session_id"] == session.session_id
        return {}

    session = _session()
    events_all = ("UserPromptSubmit", "PreToolUse", "PostToolUse", "SubagentStart", "SubagentStop", "PreCompact",
                  "Stop")
    messages = _run(session, ClaudeAgentOptions(hooks={e: [HookMatcher(hooks=[record])]  # type: ignore[misc]
                                                       for e in events_all}))
    calls = [s for q in session.queries for s in q.steps if hasattr(s, "blocks")]
    main_tool, agent_tool, sub_tool = calls[0].blocks[-1], calls[1].blocks[-1], calls[2].blocks[-1]
    assert agent_tool.name == "Agent" and calls[2].parent_tool_use_id == agent_tool.id
    assert [e[0] for e in events] == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "PreToolUse",
                                      "SubagentStart", "PreToolUse", "PostToolUse", "SubagentStop", "PostToolUse",
                                      "PreCompact", "SubagentStop", "Stop"]
    assert events[0][:2] == ("UserPromptSubmit", "work")
    assert events[1] == ("PreToolUse", main_tool.name, main_tool.id)
    assert events[3] == ("PreToolUse", agent_tool.name, agent_tool.id)
    assert events[5] == ("PreToolUse", sub_tool.name, sub_tool.id)
    assert events[4][1] == events[7][1] == "general-purpose"
    assert events[9][1] == "auto" and events[10][1] == ""  # the compaction's summary agent stops (CLI 2.1.330)
    assert events[11][:2] == ("Stop", "Done for now.")
    assert all(e[2] is not None for e in events)  # the CLI gives hooks that are not about a tool an id as well
    assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error


def test_a_pre_tool_use_deny_and_a_permission_deny_become_the_tool_result() -> None:
    session = (SessionBuilder(seed=7).query("go").call(prompt=20_000, blocks=("tool_use", "tool_use"),
                                                       results=[300, 300]).call(text="ok").build())
    first, second = list(session.queries[0].steps[0].blocks)
    assert first.name == second.name == "Bash"  # pytest commands: asked in the default permission mode
    asked: list[str] = []

    async def guard(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        if tool_use_id != first.id:
            return {}
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                       "permissionDecisionReason": "not this one"}}

    async def permit(name: str, tool_input: Any, context: Any) -> Any:
        asked.append(context.tool_use_id)
        return PermissionResultDeny(message="the user said no")

    messages = _run(session, ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(hooks=[guard])]},
                                                can_use_tool=permit))
    results = {b.tool_use_id: b for m in messages if isinstance(m, UserMessage) and isinstance(m.content, list)
               for b in m.content}
    assert asked == [second.id]  # the hook's deny decides the first tool: no permission prompt for it
    assert (results[first.id].content, results[first.id].is_error) == (
        f"PreToolUse:{first.name} hook error: not this one", True)  # CLI 2.1.330's text
    assert (results[second.id].content, results[second.id].is_error) == ("the user said no", True)


def test_permission_prompts_follow_the_permission_mode_and_an_allow_changes_nothing() -> None:
    session = SessionBuilder(seed=3).query("go").call(prompt=20_000, results=[300]).call().build()
    asked: list[str] = []

    async def permit(name: str, tool_input: Any, context: Any) -> Any:
        asked.append(name)
        return PermissionResultAllow()

    allowed = _run(session, ClaudeAgentOptions(can_use_tool=permit))
    with pytest.warns(UserWarning, match="can_use_tool will not be invoked"):  # the SDK says so, and it is so
        _run(session, ClaudeAgentOptions(can_use_tool=permit, permission_mode="bypassPermissions"))
    tool = next(b for b in session.queries[0].steps[0].blocks if hasattr(b, "name"))
    assert asked == [tool.name]
    assert not any(getattr(b, "is_error", False) for m in allowed if isinstance(m, UserMessage)
                   and isinstance(m.content, list) for b in m.content)


def test_a_matcher_selects_by_tool_name() -> None:
    session = SessionBuilder(seed=2).query("go").call(prompt=20_000, blocks=("tool_use", "tool_use"),
                                                      results=[300, 300]).call().build()
    names = [b.name for b in session.queries[0].steps[0].blocks]
    seen: list[str] = []

    async def record(hook_input: Any, tool_use_id: Any, context: Any) -> dict[str, Any]:
        seen.append(hook_input["tool_name"])
        return {}

    _run(session, ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(matcher=names[1], hooks=[record])]}))
    assert seen == [n for n in names if n == names[1]]


def test_read_only_tools_get_no_permission_prompt() -> None:
    """As CLI 2.1.330 in the default permission mode: Read and Grep, a read-only Bash command and the Agent call
    run unasked; a Bash command that changes things is asked (the live suite's ``permissions`` session)."""
    from ctxsim.sdk._hooks import _unasked

    assert _unasked("Read", {}) and _unasked("Grep", {}) and _unasked("Agent", {})
    assert _unasked("Bash", {"command": "echo one"}) and _unasked("Bash", {"command": "ls"})
    assert not _unasked("Bash", {"command": "touch made.txt"}) and not _unasked("Bash", {"command": "ls > x"})
    assert not _unasked("Edit", {})
    session = SessionBuilder(seed=3).query("go").call(prompt=20_000, blocks=("tool_use", "tool_use"),
                                                      results=[300, 300]).call(text="ok").build()
    asked: list[str] = []

    async def permit(name: str, tool_input: Any, context: Any) -> Any:
        asked.append(name)
        return PermissionResultAllow()

    _run(session, ClaudeAgentOptions(can_use_tool=permit))
    assert [b.name for b in session.queries[0].steps[0].blocks] == ["Grep", "Bash"] and asked == ["Bash"]
