"""Release day on a stand-in CLI: ``ctxsim fidelity`` on a wrapper around the bundled CLI that changes what it writes.

A release that only moves tokens between ``get_context_usage`` categories (their sum unchanged) is judged green; one
that shifts a usage field a tracker reads by a single token is judged red, the report naming the field by its path.
Each wrapper logs every frame it edited, so a green verdict is never one where nothing was edited.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_wrapper import fidelity, wrapper

pytestmark = pytest.mark.live

MOVE_CATEGORIES = """
response = (frame.get("response") or {{}}).get("response") if frame.get("type") == "control_response" else None
if isinstance(response, dict) and isinstance(response.get("categories"), list):
    tokens = {{c.get("id"): c for c in response["categories"] if isinstance(c, dict)}}
    if "system_tools" in tokens and "skills" in tokens:
        tokens["system_tools"]["tokens"] -= 5
        tokens["skills"]["tokens"] += 5
        open({log!r}, "a").write("moved\\n")
"""

SHIFT_USAGE = """
if frame.get("type") == "assistant":
    frame["message"]["usage"]["cache_read_input_tokens"] += 1
    open({log!r}, "a").write("shifted\\n")
"""


def _edited(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_tokens_moved_between_categories_are_green(tmp_path: Path) -> None:
    log = tmp_path / "edited.log"
    cli = wrapper(tmp_path, MOVE_CATEGORIES.format(log=str(log)))
    status, out, err = fidelity("several-queries", "--cli", str(cli))
    assert _edited(log) >= 4, err  # the context usage before the first query and after each of the three
    assert status == 0, out
    assert out.splitlines()[0].startswith("ok: "), out
    assert "fields trackers read that differ" not in out


def test_a_usage_field_shifted_by_one_token_is_red_and_named(tmp_path: Path) -> None:
    """Red, naming the field; ``--record`` writes the capture and, beside it, the draft of the rules naming it."""
    log = tmp_path / "edited.log"
    cli = wrapper(tmp_path, SHIFT_USAGE.format(log=str(log)))
    status, out, err = fidelity("several-queries", "--cli", str(cli), "--record", str(tmp_path / "captures"))
    assert _edited(log) > 0, err
    assert status == 1, out
    lines = out.splitlines()
    assert lines[0].startswith("FAIL: ")
    tracked = lines[lines.index("fields trackers read that differ (fake → CLI):") + 1:]
    named = [line for line in tracked if line.startswith("  usage.cache_read_input_tokens: ")]
    assert named and "(+1" in named[0], out
    (capture,) = (tmp_path / "captures").glob("claude-code-*/several-queries.json")
    draft = (capture.parent / "rules-draft.md").read_text()
    assert "\n- `usage.cache_read_input_tokens`: " in draft and "(+1" in draft, draft
    assert f"wrote {capture.parent / 'rules-draft.md'}" in lines
