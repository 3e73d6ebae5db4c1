"""The in-process fake against the captures of the real CLI that ship in ``ctxsim/wire/captures``, every version.

Every capture holds a scripted session played live (the CLI of its version, the fake Messages API answering), the
world session
that happened, the tracker-relevant projection of every message and ``get_context_usage`` the CLI gave, and every
hook call and permission prompt the client's callbacks got. Here the world session is played in-process
(FakeTransport under the real ``ClaudeSDKClient``, the same callbacks registered) and compared field by field with
the recorded projection: no CLI, no network and nothing outside the repository is needed. The expected values are
the recorded ones. ``tests/live/live_known.py`` lists the differences that remain, with what removes each.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from builder_twin import builder_twin, twin_ready
from live_known import KNOWN, unexplained

from ctxsim.lab._fidelity import SESSIONS, play_inprocess
from ctxsim.lab._projection import compare, compare_keys, compare_raw, message_kind
from ctxsim.lab._record import (
    Capture,
    capture_for,
    captured_versions,
    load_captures,
    session_from_json,
    session_to_json,
)
from ctxsim.world import Compaction, ConversationReset

ALL = load_captures()


def test_every_captured_version_has_every_scripted_session() -> None:
    assert len(captured_versions()) >= 1
    for version in captured_versions():
        assert {c.name for c in ALL if c.cli_version == version} == set(SESSIONS), version
    assert set(KNOWN) == set(SESSIONS)


@pytest.mark.parametrize("capture", ALL, ids=[f"{c.cli_version}-{c.name}" for c in ALL])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_inprocess_fake_matches_capture(capture: Capture, backend: str) -> None:
    played = anyio.run(lambda: play_inprocess(capture.session,
                                              include_partial_messages=capture.include_partial_messages,
                                              hooks=capture.hooks),
                       backend=backend)
    differences = compare(capture.steps, played.steps, initial=(capture.initial, played.initial))
    differences += [d for d in compare_keys(capture.frame_keys, played.frame_keys) if d.tracked]
    differences += compare_raw(capture.raw, played.raw)
    problem = unexplained(capture.name, differences)
    assert not problem, problem
    compared = sum(len(m) for s in capture.steps for m in s.messages) + sum(len(s.context_usage)
                                                                           for s in capture.steps)
    assert compared > 50  # the comparison really looked at fields
    assert all(step.hooks or step.prompt == "/clear" for step in capture.steps)  # hook calls recorded and compared


TWINS = [c for c in ALL if twin_ready(c.session)]


@pytest.mark.parametrize("capture", TWINS, ids=[f"{c.cli_version}-{c.name}" for c in TWINS])
def test_a_session_built_as_users_build_it_matches_the_capture(capture: Capture) -> None:
    """The capture's world rebuilt through the public builder (:func:`builder_twin`: each compaction's
    ``preTokens``, the context after it and after ``/clear``, whether it kept a segment, derived, not taken
    from the CLI) plays in-process to what the CLI wrote, field by field: the derivations are the CLI's."""
    twin = builder_twin(capture.session)
    pairs = [(a, b) for q, t in zip(capture.session.queries, twin.queries) for a, b in zip(q.steps, t.steps)
             if isinstance(a, (Compaction, ConversationReset))]
    for recorded, derived in pairs:  # what the CLI said, derived by the builder
        assert recorded is not derived
        if isinstance(recorded, Compaction):
            assert isinstance(derived, Compaction) and derived.pre_tokens == recorded.pre_tokens
        if recorded.context_tokens is not None:  # /context right after (no call in between)
            assert derived.context_tokens == recorded.context_tokens
    played = anyio.run(lambda: play_inprocess(twin, include_partial_messages=capture.include_partial_messages,
                                              hooks=capture.hooks))
    differences = compare(capture.steps, played.steps, initial=(capture.initial, played.initial))
    differences += [d for d in compare_keys(capture.frame_keys, played.frame_keys) if d.tracked]
    problem = unexplained(capture.name, differences)
    assert not problem, problem


def test_the_builder_twin_covers_compaction_and_clear() -> None:
    assert {"compact", "autocompact", "autocompact-midturn", "clear", "parallel-tools"} <= {c.name for c in TWINS}


@pytest.mark.parametrize("capture", ALL, ids=[c.name for c in ALL])
def test_capture_session_round_trips(capture: Capture) -> None:
    assert session_from_json(session_to_json(capture.session)) == capture.session


@pytest.mark.parametrize("version", captured_versions())
def test_recorded_facts_of_the_cli(version: str) -> None:
    """What each recorded CLI did, read from its captures (the facts the fidelity suite rests on)."""

    def _capture(name: str) -> Capture:
        return next(c for c in ALL if c.name == name and c.cli_version == version)

    # totalTokens is the last main-chain call's prompt (no thinking): input + cache creation + cache read.
    for capture in (c for c in ALL if c.cli_version == version):
        for step, query in zip(capture.steps, capture.session.queries):
            calls = query.main_calls
            if calls and not any(type(b).__name__ == "Thinking" for b in calls[-1].blocks):
                assert step.context_usage["totalTokens"] == calls[-1].prompt, (capture.name, step.prompt)
    # /compact: a manual boundary, pre = last prompt + its output; the result carries zero usage.
    compact = _capture("compact")
    boundary = next(m for m in compact.steps[2].messages if m.get("subtype") == "compact_boundary")
    last = compact.session.queries[1].main_calls[-1]
    assert boundary["trigger"] == "manual" and boundary["pre_tokens"] == last.prompt + last.output_tokens
    assert compact.steps[2].messages[-1]["usage.input_tokens"] == 0
    # The CLI compacted by itself (CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000: threshold 67,000) before the next call.
    auto = _capture("autocompact")
    assert [message_kind(m) for m in auto.steps[2].messages][:3] == ["system/init", "system/compact_boundary",
                                                                      "assistant"]
    assert auto.steps[2].messages[1]["trigger"] == "auto"
    assert auto.steps[1].context_usage["autoCompactThreshold"] == 67_000
    mid = _capture("autocompact-midturn")
    kinds = [m["subtype"] if m["type"] == "system" else m["type"] for m in mid.steps[1].messages]
    assert kinds == ["init", "assistant", "user", "compact_boundary", "assistant", "result"]
    # Hooks (every event registered): no UserPromptSubmit for /compact or /clear; each compaction's summary agent
    # ends in a SubagentStop of agent type "" right after PreCompact; a PreToolUse deny becomes the tool's result.
    def events(name: str, step: int) -> list[str]:
        return [h.get("event") or f"{h['type']}:{h['tool_name']}" for h in _capture(name).steps[step].hooks]

    assert events("compact", 2) == ["PreCompact", "SubagentStop"] and not events("clear", 1)
    assert events("autocompact-midturn", 1) == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "PreCompact",
                                                "SubagentStop", "Stop"]
    assert _capture("compact").steps[2].hooks[1]["agent_type"] == ""
    denied = _capture("hook-deny").steps[0]
    assert events("hook-deny", 0) == ["UserPromptSubmit", "PreToolUse", "Stop"]  # no PostToolUse
    assert [m["error_texts"] for m in denied.messages if m["type"] == "user"] == [
        ["PreToolUse:Bash hook error: ctxsim denies this tool"]]
    # Permission mode default: touch and rm are asked, ls and the Agent call are not; a refusal skips PostToolUse.
    assert events("permissions", 0) == ["UserPromptSubmit", "PreToolUse", "can_use_tool:Bash", "PostToolUse",
                                        "PreToolUse", "PostToolUse", "PreToolUse", "can_use_tool:Bash", "Stop"]
    assert events("permissions", 1) == ["UserPromptSubmit", "PreToolUse", "SubagentStart", "PreToolUse",
                                        "can_use_tool:Bash", "PostToolUse", "SubagentStop", "PostToolUse", "Stop"]


def test_the_capture_for_a_version_is_its_own_or_the_newest_below(tmp_path: Path) -> None:
    """A CLI newer than every capture is compared with the newest one (never failed for being new); one between two
    with the older; one older than all with the oldest."""
    versions = captured_versions()
    for version in versions:
        chosen = capture_for(version)
        assert chosen is not None and chosen[0] == version and set(chosen[1]) == set(SESSIONS)
    newer = capture_for("2.99.0")
    assert newer is not None and newer[0] == versions[-1]
    older = capture_for("0.1.0")
    assert older is not None and older[0] == versions[0]
    for name in ("2.1.5", "2.1.40"):  # 2.1.40 sorts after 2.1.5: versions compare by number, not text
        (tmp_path / f"claude-code-{name}").mkdir()
    assert captured_versions(tmp_path) == ["2.1.5", "2.1.40"]
    assert capture_for("2.1.39", tmp_path) == ("2.1.5", {})
    assert capture_for("2.1.40", tmp_path) == ("2.1.40", {})
    assert capture_for("2.1.1", Path(tmp_path / "none")) is None
