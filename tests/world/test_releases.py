"""The truth per Claude Code release: the rules that differ between releases, the release a session renders as, and
the REPL's session-title requests, each held to the recordings of every release it names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxsim.lab._repl._compare import ReplRecording, world_of_recording
from ctxsim.wire import CAPTURES, captured_versions, rendered_version, resolve_cli, use_cli
from ctxsim.wire._titles import title_calls
from ctxsim.world import RULES, TITLE_INPUT_TOKENS, Session, holds, title_asks

REPL = sorted(CAPTURES.glob("claude-code-*/repl/*.json"))


def test_every_rule_is_dated_by_recorded_releases() -> None:
    """A rule's since and until are releases ctxsim recorded (a change is dated by the first recording showing it),
    and each says which recordings show it."""
    recorded = set(captured_versions())
    for rule in RULES.values():
        assert rule.since is not None or rule.until is not None, rule.name
        assert {v for v in (rule.since, rule.until) if v is not None} <= recorded, rule.name
        assert rule.says and rule.shown_by, rule.name


def test_a_rule_holds_from_its_first_release_and_numerically() -> None:
    rule = RULES["statusline-percent-of-autocompact-window"]
    assert rule.since == "2.1.337"
    assert not rule.holds("2.1.332") and rule.holds("2.1.337") and rule.holds("2.1.1000")
    assert holds("transcript-reply-resent-as-blob", "2.1.331") and not holds("transcript-reply-resent-as-blob",
                                                                              "2.1.330")


def test_a_range_resolves_to_the_cli_in_use_when_it_falls_in_it_else_to_the_newest_recorded_in_it() -> None:
    newest, oldest = captured_versions()[-1], captured_versions()[0]
    assert resolve_cli("2.1.100") == "2.1.100"  # a version is taken as it is
    assert resolve_cli(f">={oldest}", in_use="9.9.9") == "9.9.9"
    assert resolve_cli(f"<{newest}", in_use="9.9.9") == captured_versions()[-2]
    assert resolve_cli(None, in_use="9.9.9") == "9.9.9"
    with pytest.raises(ValueError, match=r"^ctxsim: no recorded Claude Code release is in '<1\.0'"):
        resolve_cli("<1.0")
    with pytest.raises(ValueError, match=r"^ctxsim: 'soon' is neither a Claude Code version"):
        resolve_cli("soon")


def test_a_session_renders_as_the_release_it_names_else_the_chosen_else_the_installed() -> None:
    plain = Session("s", ())
    named = Session("s", (), cli="2.1.330")
    assert rendered_version(named) == "2.1.330"
    assert rendered_version(named, "2.1.331") == "2.1.330"  # the session's own release is a fact of it
    assert rendered_version(plain, "2.1.331") == "2.1.331"  # a caller's version for one that names none
    use_cli("2.1.331")
    try:
        assert rendered_version(plain) == "2.1.331"
        assert rendered_version(named) == "2.1.330"
    finally:
        use_cli(None)
    with pytest.raises(ValueError, match="not a Claude Code version"):
        use_cli(">=2.1.330")


def test_title_asks_follow_the_bundle_s_tries() -> None:
    # worth a title from 10 characters; the next prompt asks again with the same text, once; commands ask nothing
    assert title_asks(["hello", "more", "go on"]) == [False, False, False]
    assert title_asks(["run a command", "/compact", "again", "again"]) == [True, False, True, False]
    assert title_asks(["still more", "read everything", "ok", "ok"]) == [True, True, True, False]


@pytest.mark.parametrize("path", REPL, ids=[f"{p.parents[1].name}-{p.stem}" for p in REPL])
def test_the_title_requests_fall_where_every_recorded_repl_sent_them(path: Path) -> None:
    """Per step of each REPL recording, the title requests the REPL sent (a side request of the title's usage, as
    the fake API served it) are those the world derives for that release: none before the rule holds."""
    recording = ReplRecording.from_json(json.loads(path.read_text()))
    sent = [sum(s["kind"] == "side" and s["usage"][0] == TITLE_INPUT_TOKENS for s in step["served"])
            for step in recording.steps]
    derived = title_calls(world_of_recording(recording), recording.cli_version)
    assert sent == [int(i in derived) for i in range(len(recording.steps))]
    if not holds("repl-session-title", recording.cli_version):
        assert not any(sent)


def test_ctxsim_cli_names_the_release_sessions_render_as(tmp_path: Path) -> None:
    """``CTXSIM_CLI`` names the CLI in use: sessions that name no release render as its version; one that gives no
    version changes nothing."""
    from ctxsim.live import render_as_named_cli
    from ctxsim.wire import cli_in_use, installed_cli_version

    older = tmp_path / "claude"
    older.write_text(f"#!/bin/sh\necho '{captured_versions()[0]} (Claude Code)'\n")
    older.chmod(0o755)
    broken = tmp_path / "broken"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    try:
        assert render_as_named_cli({"CTXSIM_CLI": str(older)}) == captured_versions()[0]
        assert rendered_version(Session("s", ())) == captured_versions()[0]
    finally:
        use_cli(None)
    assert render_as_named_cli({"CTXSIM_CLI": str(broken)}) is None
    assert render_as_named_cli({}) is None
    assert cli_in_use() == installed_cli_version()
