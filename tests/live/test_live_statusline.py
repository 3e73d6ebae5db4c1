"""The statusline payload rendering held to the real CLI's REPL (ctxsim.lab._repl._statusline).

The live test drives the installed CLI's interactive REPL under tmux and compares every payload it sends after each
step with the rendering (marked ``live``; it skips, saying why, where tmux is absent). The recordings under
``src/ctxsim/wire/captures/claude-code-<version>/statusline/`` (``ctxsim record --statusline``) hold the rendering
to the CLI that was recorded, with no CLI needed; the self-checks plant a divergence in the rendering for one
projected field at a time and assert the comparison names it.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_live import leaves_nothing_behind  # noqa: F401  (autouse: every live test leaves nothing behind)

from ctxsim.lab import tmux_skip_reason
from ctxsim.lab._repl._statusline import (
    PAYLOAD_FIELDS,
    STATUSLINE_SESSIONS,
    StatuslineRecording,
    compare_payloads,
    load_recordings,
    record_statusline,
)
from ctxsim.wire import statusline_payloads
from ctxsim.wire._versions import CAPTURES

RECORDINGS = load_recordings(CAPTURES)


def _leftovers() -> set[str]:
    """This process's recording directories (another pytest-xdist worker may be recording at the same time)."""
    return {p.name for p in Path(tempfile.gettempdir()).glob(f"ctxsim-statusline-{os.getpid()}-*")}


@pytest.mark.live
@pytest.mark.parametrize("name", list(STATUSLINE_SESSIONS))
def test_rendered_payloads_match_the_repl_s(name: str) -> None:
    reason = tmux_skip_reason()
    if reason is not None:
        pytest.skip(f"ctxsim: {reason}")
    before = _leftovers()
    recording = record_statusline(STATUSLINE_SESSIONS[name], timeout=60.0)
    assert recording.initial and len(recording.steps) == len(STATUSLINE_SESSIONS[name].steps)
    differences = compare_payloads(recording)
    assert not differences, f"{name}: the rendered payloads differ from CLI {recording.cli_version}'s:\n" + "\n".join(
        map(str, differences))
    assert _leftovers() <= before


def test_there_are_recordings() -> None:
    assert {r.name for r in RECORDINGS} >= set(STATUSLINE_SESSIONS)


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: f"{r.cli_version}-{r.name}")
def test_rendering_matches_the_recorded_cli(recording: StatuslineRecording) -> None:
    assert compare_payloads(recording) == []


def test_the_recorded_facts() -> None:
    """What the recorded REPL sent (read from the recording, not the rendering): null before any call, the
    research page's 75% and 11% around /compact."""
    recording = next(r for r in RECORDINGS if r.name == "statusline-compact")
    assert all(p["context_window"]["current_usage"] is None for p in recording.initial)
    windows = [p["context_window"] for p in recording.steps]
    assert (windows[0]["total_input_tokens"], windows[0]["used_percentage"]) == (150_003, 75)
    assert (windows[2]["total_input_tokens"], windows[2]["used_percentage"]) == (21_004, 11)


# --- self-checks ------------------------------------------------------------------------------------------------


def _changed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "-planted"
    if isinstance(value, list):
        return [*value, "/planted"]
    if isinstance(value, dict):
        return {**value, "input_tokens": value.get("input_tokens", 0) + 1}
    return {"planted": True}  # None


def _planting(field: str, step: int) -> Callable[..., list[dict[str, Any]]]:
    """The rendering, with ``field`` changed in the payload of ``step``'s last point."""

    def renderer(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        payloads = copy.deepcopy(statusline_payloads(*args, **kwargs))
        target = payloads[-1] if step < 0 else payloads[step]
        if field == "keys":
            target["planted"] = True
            return payloads
        *parents, key = field.split(".")
        for name in parents:
            target = target[name]
        target[key] = _changed(target[key])
        return payloads

    return renderer


@pytest.mark.parametrize("field", PAYLOAD_FIELDS)
def test_a_divergence_in_one_field_is_named(field: str) -> None:
    recording = next(r for r in RECORDINGS if r.name == "statusline-compact")
    differences = compare_payloads(recording, renderer=_planting(field, -1))
    assert [d.field for d in differences] == [field], [str(d) for d in differences]
    assert differences[0].step == len(recording.steps)


def test_a_wrong_gauge_before_the_first_prompt_is_named() -> None:
    recording = copy.deepcopy(next(r for r in RECORDINGS if r.name == "statusline-compact"))
    recording.initial[0]["context_window"]["used_percentage"] = 0
    assert [d.where for d in compare_payloads(recording)] == ["before the first prompt"]


def test_the_recorded_clear() -> None:
    """After /clear the REPL names the new session and its transcript, and its gauge is empty again."""
    recording = next(r for r in RECORDINGS if r.name == "statusline-tools")
    before, cleared, after = recording.steps[1], recording.steps[2], recording.steps[3]
    assert cleared["session_id"] != before["session_id"] and cleared["session_id"] == after["session_id"]
    assert cleared["transcript_path"].endswith(f"/{cleared['session_id']}.jsonl")
    assert cleared["context_window"]["current_usage"] is None and "prompt_id" not in cleared
    assert cleared["cost"]["total_cost_usd"] == 0


def test_record_statusline_lists_its_sessions(capsys: pytest.CaptureFixture[str]) -> None:
    from ctxsim import cli

    assert cli.main(["record", "--statusline", "--list"]) == 0
    out = capsys.readouterr().out
    assert all(f"{name}: " in out for name in STATUSLINE_SESSIONS)


def test_record_statusline_names_an_unknown_session(capsys: pytest.CaptureFixture[str]) -> None:
    from ctxsim import cli

    if tmux_skip_reason() is not None:
        pytest.skip(f"ctxsim: {tmux_skip_reason()}")
    assert cli.main(["record", "--statusline", "no-such-session"]) == 2
    assert "ctxsim: no statusline session 'no-such-session'" in capsys.readouterr().err
