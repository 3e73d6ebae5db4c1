"""The statusline tools people use, installed at pinned versions and run as Claude Code runs them, judged over the
statusline corpus: which scenarios each fails, where, and why, pinned from ``shared/research/shipped-trackers.md``
(section 3's measurements; the scenarios carry the fixtures' numbers).

Tools come from the tools directory (``$CTXSIM_TOOLS_DIR``, default ``~/.cache/ctxsim/tools``), where ``.ci/run``
installs them (``ctxsim tools install``); one not there is installed by the session fixture, and a tool that cannot
be had (no npm, no registry) skips its tests, saying why. ``CTXSIM_NO_TOOL_INSTALL=1`` skips instead of installing.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.scenario_run import run_scenario
from ctxsim.trackers.shipped import TOOLS, InstallError, Tool, install, installed, tracker

CORPUS = Path(__file__).resolve().parent.parent / "src" / "ctxsim" / "corpus"

SCENARIOS = ("statusline-1m-denominator", "statusline-stuck-after-compact", "statusline-subagent-rows-interleaved",
             "statusline-synthetic-error-row", "statusline-replayed-row-later", "compaction")
"""The scenarios the tools are pinned on: the research's fixtures (``statusline-1m-denominator`` is also the plain
session every reader of the payload tracks) and the corpus's compaction."""

# The research's findings, as scenario -> (the first point the tool is off at, what it shows there, the bug and its
# source). Every scenario of SCENARIOS not listed for a tool is one it must track.
_AFTER_COMPACT_ZERO = "shows Claude Code's 0 right after /compact (the payload's all-zero current_usage; fixture b1 S)"
_STALE = "the last assistant line, no compact_boundary check: stays at the pre-compaction figure (fixture b1 T)"
_SIDECHAIN = "the last assistant line, no isSidechain filter: a subagent's row read as the main context (fixture d)"
_SYNTHETIC = "the last assistant line, no isApiErrorMessage/<synthetic> check: 0 (fixture e)"
_REPLAY = "the last row: a replayed earlier call, written after call 2, taken as the context (fixture f)"
_MILLION = "divides by 1,000,000 where Claude Code says 200,000 (fixture a T: 140,706 shown as 14%)"
_NOTHING = "prints no estimate right after /compact, where Claude Code sends 0 (fixture b1 S)"

PINS: dict[str, dict[str, tuple[str, str]]] = {
    "ccstatusline@2.2.30 (payload)": {
        "statusline-stuck-after-compact": ("q3 compaction", _AFTER_COMPACT_ZERO),
        "compaction": ("q2 compaction", _AFTER_COMPACT_ZERO),
    },
    "ccstatusline@2.2.30 (transcript)": {
        "statusline-stuck-after-compact": ("q3 compaction", "copies the boundary's postTokens, the summary alone "
                                           "(2,680 vs 14,477): dist/ccstatusline.js:58073, fixture b1 T"),
        "statusline-replayed-row-later": ("q2 call 1", "the most recent usage by timestamp: a replayed row "
                                                       "(dist/ccstatusline.js:58011-58030, fixture f T)"),
        "compaction": ("q2 compaction", "copies postTokens (20,000 where the context holds 32,000)"),
    },
    "ccusage-17@17.2.1 (payload)": {
        "statusline-stuck-after-compact": ("q3 compaction", _AFTER_COMPACT_ZERO),
        "compaction": ("q2 compaction", _AFTER_COMPACT_ZERO),
    },
    "ccusage-17@17.2.1 (transcript)": {
        "statusline-stuck-after-compact": ("q3 compaction", _STALE + ", data-loader-DZaU_svm.js:3941-3979"),
        "statusline-subagent-rows-interleaved": ("q1 subagent call 1", _SIDECHAIN),
        "statusline-synthetic-error-row": ("q1 result", _SYNTHETIC),
        "statusline-replayed-row-later": ("q2 call 1", _REPLAY),
        "compaction": ("q2 compaction", _STALE),
    },
    "ccusage-20@20.0.24 (payload)": {
        "statusline-stuck-after-compact": ("q3 compaction", _AFTER_COMPACT_ZERO),
        "compaction": ("q2 compaction", _AFTER_COMPACT_ZERO),
    },
    "ccusage-20@20.0.24 (transcript)": dict.fromkeys(SCENARIOS, ("q1 call 1", _MILLION)),
    "ccline@1.1.2 (payload)": {
        "statusline-stuck-after-compact": ("q3 compaction", "ignores context_window; " + _STALE
                                           + ", src/core/segments/context_window.rs:104-148"),
        "statusline-subagent-rows-interleaved": ("q1 subagent call 1", "ignores context_window; " + _SIDECHAIN),
        "statusline-synthetic-error-row": ("q1 result", "ignores context_window; " + _SYNTHETIC),
        "statusline-replayed-row-later": ("q2 call 1", "ignores context_window; " + _REPLAY),
        "compaction": ("q2 compaction", "ignores context_window; " + _STALE),
    },
    "cc-statusline@1.4.0 (payload)": {
        "statusline-stuck-after-compact": ("q3 compaction", _NOTHING + ": 'TBD'"),
        "compaction": ("q2 compaction", _NOTHING + ": 'TBD'"),
    },
    "ccstatusline-py@0.1.2 (payload)": {
        "statusline-stuck-after-compact": ("q3 compaction", _NOTHING + ": blank"),
        "compaction": ("q2 compaction", _NOTHING + ": blank"),
    },
}
"""Per tool and mode: the scenarios it fails, the first point off, and why."""

COLUMNS = [(tool, mode) for tool in TOOLS.values() for mode in tool.modes]


def test_every_tool_and_mode_is_pinned() -> None:
    assert sorted(PINS) == sorted(tool.label(mode) for tool, mode in COLUMNS)
    assert all(set(pins) <= set(SCENARIOS) for pins in PINS.values())


@pytest.fixture(scope="session")
def scenarios() -> dict[str, SessionScenario]:
    out = {}
    for name in SCENARIOS:
        scenario = load_scenario(CORPUS / f"{name}.yaml")
        assert isinstance(scenario, SessionScenario)
        out[name] = scenario
    return out


_FAILED: dict[str, str] = {}


def _have(tool: Tool) -> None:
    """Skip unless ``tool`` is installed (installing it unless CTXSIM_NO_TOOL_INSTALL is set)."""
    if tool.name in _FAILED:
        pytest.skip(_FAILED[tool.name])
    if installed(tool) is not None:
        return
    if os.environ.get("CTXSIM_NO_TOOL_INSTALL"):
        _FAILED[tool.name] = f"ctxsim: {tool.name} ({tool.package}) is not installed and CTXSIM_NO_TOOL_INSTALL is set"
        pytest.skip(_FAILED[tool.name])
    try:
        install(tool, timeout=300)
    except InstallError as exc:
        _FAILED[tool.name] = f"{exc} (tests of {tool.name} skip)"
        pytest.skip(_FAILED[tool.name])


@pytest.mark.parametrize(("tool", "mode"), COLUMNS, ids=[t.label(m) for t, m in COLUMNS])
def test_each_tool_fails_where_the_research_found_it_wrong_and_tracks_the_rest(
        tool: Tool, mode: str, scenarios: dict[str, SessionScenario]) -> None:
    _have(tool)
    pins = PINS[tool.label(mode)]
    verdicts = {}
    for name, scenario in scenarios.items():
        run = run_scenario(scenario, tracker(tool, mode))
        assert run.report.error is None, run.report.error  # a tool that cannot be read is no verdict
        assert run.report.crash is None, run.report.crash
        first = run.report.failures[0].observation.label if run.report.failures else None
        verdicts[name] = first
        if name in pins:
            where, bug = pins[name]
            assert first == where, f"{tool.label(mode)} on {name}: expected off at {where} ({bug})\n{run.report}"
        else:
            assert run.ok, f"{tool.label(mode)} must track {name}\n{run.report}"
    assert {n for n, v in verdicts.items() if v is not None} == set(pins)


def test_the_verdicts_page_is_generated_by_ctxsim_tools_verdicts(tmp_path: Path) -> None:
    from ctxsim.cli import main

    ccline = TOOLS["ccline"]
    _have(ccline)
    out = tmp_path / "verdicts.md"
    scenario = CORPUS / "statusline-synthetic-error-row.yaml"
    assert main(["tools", "verdicts", str(scenario), "--tool", "ccline", "--out", str(out)]) == 0
    page = out.read_text()
    assert "| scenario | ccline@1.1.2 (payload) |" in page
    assert "| `statusline-synthetic-error-row` | ✗ q1 result: 0 (truth 81,003..81,063) |" in page
    assert "### ccline 1.1.2" in page and "known bug: ignores the payload's context_window" in page
    assert main(["tools", "verdicts", "--tool", "nope"]) == 2
