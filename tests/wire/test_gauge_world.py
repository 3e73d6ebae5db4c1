"""Claude Code's windows, models and compaction settings in the world, rendered on every surface: stream-json, the
transcript, the statusline payload and ``get_context_usage`` (through the real SDK client). Every expected number is
worked by hand (or read from the REPL recording named), never taken from the code under test."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient

from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.sdk import FakeTransport
from ctxsim.wire import context_usage_response, render, render_transcript, statusline_payloads
from ctxsim.world import (
    ClaudeSettings,
    Session,
    SessionBuilder,
    autocompact_point,
    display_name,
    effective_window,
    override_point,
    window_for,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _scenario(name: str) -> Session:
    scenario = load_scenario(SCENARIOS / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    return scenario.session


def _switched() -> Session:
    """The recorded model-switch session (captures/claude-code-2.1.332/repl/model-switch.json) as a scenario."""
    return _scenario("model-switch-window")


def _frames(session: Session) -> list[dict[str, Any]]:
    return [f.data for script in render(session) for f in script.frames]


# --- the world's arithmetic --------------------------------------------------------------------------------------


def test_windows_of_every_family_and_the_autocompact_point_worked_by_hand() -> None:
    for family in ("claude-sonnet-4-5", "claude-opus-4-6", "claude-haiku-4-5"):
        assert window_for(family) == 200_000
        assert window_for(family + "[1m]") == 1_000_000
        assert window_for(family + "[1m]", disable_1m_context=True) == 200_000
    assert effective_window(200_000, 32_000) == 180_000  # the output reserve is capped at 20,000
    assert effective_window(200_000, 8_192) == 191_808
    assert autocompact_point(200_000, 32_000) == 167_000
    assert autocompact_point(200_000, 8_192) == 178_808
    assert autocompact_point(1_000_000, 32_000) == 967_000
    assert autocompact_point(200_000, 32_000, auto_compact=False) == 180_000  # no buffer when it is off
    assert override_point(200_000, 32_000, 50) == 90_000  # what a gauge believing the override counts to
    assert display_name("claude-opus-4-6[1m]") == "Opus 4.6 (1M context)"


def test_settings_recorded_to_move_nothing_move_nothing() -> None:
    moved = SessionBuilder(settings=ClaudeSettings(pct_override=50, max_context_tokens=100_000)).world()
    assert (moved.window, moved.auto_compact_threshold) == (200_000, 167_000)
    assert ClaudeSettings(auto_compact=False, pct_override=50).env == {"DISABLE_AUTO_COMPACT": "1",
                                                                       "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE": "50"}


def test_a_switch_moves_the_window_and_the_point_per_query() -> None:
    session = _switched()
    assert [session.model_at(i) for i in range(5)] == ["claude-sonnet-4-5", "claude-sonnet-4-5[1m]",
                                                       "claude-sonnet-4-5[1m]", "claude-sonnet-4-5",
                                                       "claude-sonnet-4-5"]
    assert session.window_of("claude-sonnet-4-5[1m]") == 1_000_000
    assert session.threshold_of(1_000_000) == 967_000


# --- stream-json ---------------------------------------------------------------------------------------------------


def test_stream_json_names_the_model_in_force_and_reports_each_model_s_window() -> None:
    session = _switched()
    inits = [f["model"] for f in _frames(session) if f.get("subtype") == "init"]
    assert inits == ["claude-sonnet-4-5", "claude-sonnet-4-5[1m]", "claude-sonnet-4-5[1m]", "claude-sonnet-4-5",
                     "claude-sonnet-4-5"]
    results = [f for f in _frames(session) if f["type"] == "result"]
    windows = {model: entry["contextWindow"] for model, entry in results[-1]["modelUsage"].items()}
    assert windows == {"claude-sonnet-4-5": 200_000, "claude-sonnet-4-5[1m]": 1_000_000}
    observed = [f.observation.window for script in render(session) for f in script.frames if f.observation]
    assert observed == [200_000, 200_000, 1_000_000, 1_000_000, 1_000_000, 200_000, 200_000, 200_000]


# --- the statusline payload (the recorded REPL's numbers) ----------------------------------------------------------


def test_the_statusline_s_model_and_denominator_follow_a_switch_as_recorded() -> None:
    payloads = statusline_payloads(_switched(), cli_version="2.1.332")
    shown = [(p["model"]["id"], p["context_window"]["context_window_size"], p["context_window"]["used_percentage"])
             for p in payloads]
    # model-switch.json: 31 of 200000; after /model [1m] 6 of 1000000 (no new call); 6; after /model back 32; 32
    assert shown == [("claude-sonnet-4-5", 200_000, 31), ("claude-sonnet-4-5", 200_000, 31),
                     ("claude-sonnet-4-5[1m]", 1_000_000, 6), ("claude-sonnet-4-5[1m]", 1_000_000, 6),
                     ("claude-sonnet-4-5[1m]", 1_000_000, 6), ("claude-sonnet-4-5", 200_000, 32),
                     ("claude-sonnet-4-5", 200_000, 32), ("claude-sonnet-4-5", 200_000, 32)]
    assert payloads[2]["model"]["display_name"] == "Sonnet 4.5 (1M context)"


@pytest.mark.parametrize("name", ["autocompact-disabled", "settings-that-move-nothing"])
def test_the_statusline_keeps_the_model_s_window_under_the_compaction_settings(name: str) -> None:
    # autocompact-disabled.json, autocompact-pct-override.json, max-context-tokens.json: context_window_size 200000
    assert {p["context_window"]["context_window_size"] for p in statusline_payloads(_scenario(name))} == {200_000}


# --- the transcript --------------------------------------------------------------------------------------------------


def test_the_repl_transcript_writes_the_model_command_and_the_api_s_model() -> None:
    files = render_transcript(_switched()).files
    rows = [row for file in files.values() for row in file.rows]
    contents = [r["message"]["content"] for r in rows if r.get("type") == "user"
                and isinstance(r["message"]["content"], str)]
    assert any("<command-args>claude-sonnet-4-5[1m]</command-args>" in c for c in contents)
    assert ("<local-command-stdout>Set model to `Sonnet 4.5 (1M context)` and saved as your default for new "
            "sessions</local-command-stdout>") in contents
    models = [r["message"]["model"] for r in rows if r.get("type") == "assistant"]
    assert models == ["claude-sonnet-4-5"] * 3  # the API's model: no [1m] suffix (as recorded)


# --- get_context_usage, through the real client ----------------------------------------------------------------------


async def _usage_after_each_query(session: Session) -> list[dict[str, Any]]:
    out = []
    async with ClaudeSDKClient(options=ClaudeAgentOptions(), transport=FakeTransport(session)) as client:
        for query in session.queries:
            await client.query(query.prompt)
            async for _ in client.receive_response():
                pass
            out.append(await client.get_context_usage())
    return out


def test_get_context_usage_follows_the_switch_and_the_auto_compact_setting() -> None:
    usage = asyncio.run(_usage_after_each_query(_switched()))
    assert [(u["model"], u["maxTokens"], u["autoCompactThreshold"]) for u in usage] == [
        ("claude-sonnet-4-5", 200_000, 167_000), ("claude-sonnet-4-5[1m]", 1_000_000, 967_000),
        ("claude-sonnet-4-5[1m]", 1_000_000, 967_000), ("claude-sonnet-4-5", 200_000, 167_000),
        ("claude-sonnet-4-5", 200_000, 167_000)]
    off = context_usage_response(_scenario("autocompact-disabled"), None)
    assert (off["isAutoCompactEnabled"], off["autoCompactThreshold"], off["maxTokens"]) == (False, 180_000, 200_000)
    ignored = context_usage_response(_scenario("settings-that-move-nothing"), None)
    assert (ignored["isAutoCompactEnabled"], ignored["autoCompactThreshold"]) == (True, 167_000)


# --- idle compaction and a subagent's own window ---------------------------------------------------------------------


def test_idle_compaction_is_rendered_on_every_surface() -> None:
    """idle-compaction.yaml, worked by hand there: 300,203 compacted while idle to a 3,000 summary (15,000 with the
    baseline); the next call carries 15,001."""
    idle = _scenario("idle-compaction")
    boundaries = [f["compact_metadata"] for f in _frames(idle) if f.get("subtype") == "compact_boundary"]
    assert [(b["trigger"], b["pre_tokens"], b["post_tokens"]) for b in boundaries] == [("auto", 300_203, 3_000)]
    rows = [r for f in render_transcript(idle).files.values() for r in f.rows]
    marks = [(r["compactMetadata"]["trigger"], r["compactMetadata"]["preTokens"]) for r in rows
             if r.get("subtype") == "compact_boundary"]
    assert marks == [("auto", 300_203)]
    assert [r["entrypoint"] for r in rows if r.get("type") == "user"][:1] == ["cli"]  # the REPL's transcript
    shown = [p["context_window"]["total_input_tokens"] for p in statusline_payloads(idle)]
    assert shown[-1] == 15_001 and 300_003 in shown
    usage = asyncio.run(_usage_after_each_query(idle))
    assert usage[0]["totalTokens"] >= 300_003 and usage[1]["totalTokens"] < 16_000


def test_idle_compaction_off_or_under_the_minimum_lets_the_cache_expire() -> None:
    """idle-compaction-off.yaml: no boundary on any surface; the next call re-creates 300,201 tokens."""
    off = _scenario("idle-compaction-off")
    assert not [f for f in _frames(off) if f.get("subtype") == "compact_boundary"]
    rows = [r for f in render_transcript(off).files.values() for r in f.rows]
    assert not [r for r in rows if r.get("subtype") == "compact_boundary"]
    last = off.queries[-1].main_calls[-1]
    assert (last.cache_creation_input_tokens, last.cache_read_input_tokens) == (300_201, 0)
    assert statusline_payloads(off)[-1]["context_window"]["total_input_tokens"] == 300_204


def test_idle_compaction_needs_the_repl_auto_compact_and_the_minimum() -> None:
    def idled(**kwargs: Any) -> Session:
        b = SessionBuilder(seed=0, model="claude-sonnet-4-5[1m]", window=1_000_000, **kwargs)
        b.query("go").call(input=3, cache_creation=4_000, cache_read=196_000, output=200)  # 200,203 with output
        return b.idle().query("next").call().build()

    def compacted(session: Session) -> bool:
        return any(type(s).__name__ == "Compaction" for q in session.queries for s in q.steps)

    assert compacted(idled(entrypoint="repl"))
    assert not compacted(idled(entrypoint="sdk"))  # unattended: no idle compaction
    assert not compacted(idled(entrypoint="repl", settings=ClaudeSettings(idle_compaction=False)))
    assert not compacted(idled(entrypoint="repl", settings=ClaudeSettings(auto_compact=False)))
    assert not compacted(idled(entrypoint="repl", settings=ClaudeSettings(idle_compact_min_tokens=250_000)))
    assert compacted(idled(entrypoint="repl", settings=ClaudeSettings(idle_compact_min_tokens=50_000)))  # floor 100k
    assert ClaudeSettings(idle_compact_min_tokens=50_000).idle_compacts(100_000)
    assert not ClaudeSettings(idle_compact_min_tokens=50_000).idle_compacts(99_999)
    assert not ClaudeSettings().idle_compacts(199_999) and ClaudeSettings().idle_compacts(200_000)


def test_a_subagent_s_own_window_lowers_its_point_only() -> None:
    # 300,000 - 20,000 - 13,000; the inherited 1M window's point when the own window is larger; never under 100,000
    own = ClaudeSettings(subagent_compact_window=300_000)
    assert own.subagent_point(1_000_000, 32_000) == 267_000
    assert ClaudeSettings(subagent_compact_window=1_500_000).subagent_point(1_000_000, 32_000) == 967_000
    assert own.subagent_point(1_000_000, 32_000, auto_compact_window=200_000) == 167_000  # the inherited is lower
    assert own.point(1_000_000, 32_000) == 967_000  # the main chain ignores it
    assert ClaudeSettings().subagent_point(200_000, 32_000) == 167_000
    scenario = _scenario("subagent-compact-window")
    assert scenario.settings.subagent_compact_window == 300_000
    b = SessionBuilder(seed=0, model="claude-sonnet-4-5[1m]", window=1_000_000, settings=own)
    b.query("go").call().start_subagent().call(input=3, cache_creation=8_000, cache_read=260_000)
    b.call(input=3, cache_creation=1_000, cache_read=268_003)  # after a first call past it: no compaction
    with pytest.raises(ValueError, match=r"after its call 2, past its autocompact point \(267,000"):
        b.call()  # after a second: Claude Code compacts the subagent first


def test_the_subagent_s_own_window_is_on_no_surface_and_moves_no_main_figure() -> None:
    """The statusline, get_context_usage and the results report the main chain: the subagent's calls (250,003 and
    262,831) move none of them, with or without the subagent's window."""
    with_window = _scenario("subagent-compact-window")
    shown = {p["context_window"]["total_input_tokens"] for p in statusline_payloads(with_window)}
    assert not shown & {250_003, 262_831}
    usage = asyncio.run(_usage_after_each_query(with_window))
    assert [(u["maxTokens"], u["autoCompactThreshold"]) for u in usage] == [(1_000_000, 967_000)] * 2
