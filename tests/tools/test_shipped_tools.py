"""The statusline tools people use, installed at pinned versions and run as Claude Code runs them, judged over the
whole bundled corpus: every session scenario, in every mode of every tool (one item each, so pytest-xdist spreads
them). Which scenarios each tool fails, the first point off and which way, and why, is pinned here grouped by bug:
from ``docs/explanation/shipped-trackers.md`` (each tool's formula, the research's fixtures a-g), or where the research
did not go, from the tool's installed source (file:line under its install directory). Every other session scenario
is one the tool must track, so a session scenario added to the corpus is judged at once: it must be tracked until it
is pinned here.

The groups name the scenarios by what the tools trip on (a compaction, a ``/clear``, interleaved subagent rows...);
they are declared, and :func:`test_the_groups_are_what_they_say` holds each to the scenario files (their worlds and
faults), never to what a tool did.

Tools come from the tools directory (``$CTXSIM_TOOLS_DIR``, default ``~/.cache/ctxsim/tools``), where ``.ci/run``
installs them (``ctxsim tools install``); one not there is installed by the first test that needs it, and a tool that
cannot be had (no npm, no registry) skips its tests, saying why. ``CTXSIM_NO_TOOL_INSTALL=1`` skips instead of
installing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from ctxsim.corpus import bundled_scenarios
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.tools import TOOLS, InstallError, Tool, install, installed, tracker
from ctxsim.world import Call, Compaction, ConversationReset, keeps_segment

ROOT = Path(__file__).resolve().parents[2]


def _session_scenarios() -> dict[str, SessionScenario]:
    out = {}
    for path in bundled_scenarios():
        scenario = load_scenario(path)
        if isinstance(scenario, SessionScenario) and scenario.ctx_tracker != "skip":
            out[scenario.name] = scenario
    return out


SCENARIOS = _session_scenarios()
"""Every session scenario of the bundled corpus that judges a tracker under test, by name (task scenarios judge
restart loops, not trackers)."""

# --- the corpus, by what the tools trip on: scenario -> the point where it first shows ---------------------------

KEPT = {"b21-autocompact-threshold-is-configuration": "q1 compaction",
        "statusline-stuck-after-compact": "q3 compaction", "window-1m-suffix": "q3 compaction",
        "autocompact-window-setting": "q3 compaction", "autocompact-window-statusline": "q3 compaction",
        "repl-compact-keeps-last-reply": "q3 compaction"}
"""Every scenario whose (first) compaction keeps a trailing segment (two or more calls before it): the point right
after it, where Claude Code's payload is all zeros."""
NOT_KEPT = {"compaction": "q2 compaction", "idle-compaction": "q2 compaction"}
"""Every scenario whose (first) compaction keeps no segment (one call before it): the point right after it, where
Claude Code's payload has current_usage null."""
COMPACTED = {**KEPT, **NOT_KEPT}
"""Every scenario with a compaction: the point right after it (no call since)."""
CLEARED = {"b17-clear-keeps-old-context": "q2 reset", "haiku-after-clear": "q2 reset"}
"""Every scenario with a ``/clear``: the point right after it."""
INTERLEAVED = {"b19-subagent-line-as-latest": "q1 subagent call 1",
               "statusline-subagent-rows-interleaved": "q1 subagent call 1"}
"""Every scenario whose subagent rows are written into the main transcript (the older layout): its first subagent
call."""
SYNTHETIC = {"statusline-synthetic-error-row": "q1 result", "synthetic-error-null-usage": "q1 result"}
"""Every scenario with synthetic error rows (``<synthetic>``, ``isApiErrorMessage``): the result after the first."""
REPLAYED_LATER = {"b06-message-in-several-files": "q1 call 2", "statusline-replayed-row-later": "q2 call 1"}
"""Every scenario with a call's rows replayed after a later call: that later call. Claude Code writes the replay
into a new file (a resumed session's), and every tool here reads the session's own file (the payload's
``transcript_path``): none is pinned on it."""
ITERATED = {"advisor-iterations": "q1 call 1"}
"""Every scenario whose calls the API reports over several inference iterations (``usage_iterations``): its first
call."""
NESTED = {"nested-cache-creation-only": "q1 call 1"}
"""Every scenario whose cache writes the API reports only in the nested breakdown (``nested_cache_creation``): its
first call."""
GARBAGE_PROMPT = {"garbage-prompt-counts": "q1 call 1"}
"""Every scenario where a gateway's prompt count is not a count (``garbage_values`` on the prompt): its first call
(the scenario's seed spoils it)."""
WRONG_WINDOW = {"b20-wrong-window-pegs-at-200k": "q2 call 1"}
"""Every scenario where Claude Code reports the wrong window (``wrong_context_window``): the first point past the
reported window."""
INCLUSIVE = {"gateway-inclusive-usage-aider-5516": "q1 call 1"}
"""Every scenario whose usage is inclusive (a gateway's ``input_tokens`` holds the cache reads): its first call."""
WIDE = dict.fromkeys(("b12-input-tokens-only", "b17-clear-keeps-old-context", "b20-wrong-window-pegs-at-200k",
                      "b21-autocompact-threshold-is-configuration", "window-1m-suffix", "haiku-after-clear",
                      "window-1m-lost-pegged", "idle-compaction", "idle-compaction-off", "subagent-as-session",
                      "subagent-compact-window"), "q1 call 1")
"""Every rendered scenario of a 1,000,000-token window: its first call."""
SWITCHED_WIDE = {"model-switch-window": "q2 result"}
"""Every rendered scenario of a 200,000-token window whose ``/model`` switches to a 1,000,000 one: the first point
after the switch."""
NARROW = dict.fromkeys((
    "advisor-iterations", "autocompact-window-setting", "autocompact-window-statusline", "percent-until-autocompact",
    "window-1m-disabled",
    "background-subagent", "autocompact-window-disabled",
    "repl-compact-keeps-last-reply", "autocompact-disabled", "settings-that-move-nothing", "hard-coded-buffer",
    "model-switch-window",
    "b01-no-dedupe-without-request-id", "b02-first-wins-keeps-placeholder",
    "b03-stop-reason-filter-per-block-rows", "b04-summing-every-row", "b05-placeholder-output-only",
    "b06-message-in-several-files", "b08-result-usage-as-context", "b09-result-input-plus-output",
    "b11-cumulative-statusline-totals", "b13-cache-creation-ignored", "b14-resume-invalidates-cache",
    "b15-output-included-gauge-swings", "b19-subagent-line-as-latest", "b22-gauges-disagree-denominator",
    "b25-error-result-zeroed-usage", "b27-accumulated-cache-read-clamped", "compaction", "garbage-output-counts",
    "garbage-prompt-counts", "gateway-inclusive-usage-aider-5516", "missing-usage-some-blocks",
    "nested-cache-creation-only", "repeated-message-delta", "reused-message-ids", "seed000-cache-read-719",
    "seed000-overwrite-not-accumulate", "seed001-subagent-max-cache-read", "seed001-uuid-dedupe",
    "seed002-chars-estimator", "seed002-chars-reasoning-overhead", "seed003-cache-read-already-in-input",
    "seed004-nonadditive-prompt-tokens", "statusline-1m-denominator", "statusline-replayed-row-later",
    "statusline-stuck-after-compact", "statusline-subagent-rows-interleaved", "statusline-synthetic-error-row",
    "synthetic-error-null-usage", "subagent-own-compaction"), "q1 call 1") | {
    "seed002-chars-reasoning-overhead": "q1 call 2"}  # its first call's 1,006 tokens are within its tolerance
"""Every rendered scenario of a 200,000-token window: its first call (where the first is off by more than the
scenario's tolerance for a gauge that reads a fifth of the context)."""
RECORDED = ("clear-new-session-id",)
"""Every scenario played from a recorded stream: there is no world to render a transcript or payload from, so a
statusline tool is judged at no point there (the report says so)."""

GROUPS: dict[str, tuple[Mapping[str, str] | tuple[str, ...], Callable[[SessionScenario], bool]]] = {
    "KEPT": (KEPT, lambda s: _first_compaction_keeps(s) is True),
    "NOT_KEPT": (NOT_KEPT, lambda s: _first_compaction_keeps(s) is False),
    "CLEARED": (CLEARED, lambda s: _steps(s, ConversationReset)),
    "INTERLEAVED": (INTERLEAVED, lambda s: _fault(s, "interleaved_subagents")),
    "SYNTHETIC": (SYNTHETIC, lambda s: _fault(s, "synthetic_errors")),
    "REPLAYED_LATER": (REPLAYED_LATER, lambda s: _fault(s, "replayed_messages", where="later")),
    "ITERATED": (ITERATED, lambda s: _fault(s, "usage_iterations")),
    "NESTED": (NESTED, lambda s: _fault(s, "nested_cache_creation")),
    "GARBAGE_PROMPT": (GARBAGE_PROMPT, lambda s: _fault(s, "garbage_values", fields="prompt")),
    "WRONG_WINDOW": (WRONG_WINDOW, lambda s: _fault(s, "wrong_context_window")),
    "INCLUSIVE": (INCLUSIVE, lambda s: s.session.usage == "inclusive"),
    "WIDE": (WIDE, lambda s: s.recording is None and s.session.window == 1_000_000),
    "NARROW": (NARROW, lambda s: s.recording is None and s.session.window == 200_000),
    "SWITCHED_WIDE": (SWITCHED_WIDE, lambda s: s.recording is None and s.session.window == 200_000 and any(
        q.model is not None and s.session.window_of(q.model) == 1_000_000 for q in s.session.queries)),
    "RECORDED": (RECORDED, lambda s: s.recording is not None),
}
"""Each group, with what makes a scenario belong to it, read from its file."""


def _steps_of(scenario: SessionScenario) -> list[object]:
    return [step for query in scenario.session.queries for step in query.steps]


def _steps(scenario: SessionScenario, kind: type) -> bool:
    return any(isinstance(step, kind) for step in _steps_of(scenario))


def _first_compaction_keeps(scenario: SessionScenario) -> bool | None:
    """Whether the scenario's first compaction keeps a trailing segment (None: it has none), as the world decides."""
    calls = 0
    for step in _steps_of(scenario):
        if isinstance(step, Call) and step.is_main:
            calls += 1
        elif isinstance(step, Compaction):
            return keeps_segment(step, calls)
    return None


def _fault(scenario: SessionScenario, name: str, **params: object) -> bool:
    return any(f.name == name and all(f.params.get(k) == v for k, v in params.items()) for f in scenario.faults)


# --- the bugs: why, with the source, which way the estimate is off, and the scenarios it shows in -----------------

@dataclass(frozen=True)
class Bug:
    """One way a tool fails: why (with its source), which way it is off at the first point (``over``, ``under``, or
    ``none``: no estimate where the truth is knowable), and the scenarios it shows in, with that first point."""

    why: str
    direction: str
    at: Mapping[str, str]


_PAYLOAD_ZERO = Bug("shows Claude Code's 0 right after a compaction that kept a trailing segment: the payload's "
                    "all-zero current_usage (recorded REPL 2.1.330-2.1.332; research section 4, fixture b1 S)",
                    "under", KEPT)
_NULL_POST = Bug("right after a compaction that kept no segment Claude Code's current_usage is null, so it reads the "
                 "transcript: the boundary's postTokens, the summary alone (dist/ccstatusline.js:49643, :58073)",
                 "under", NOT_KEPT)
_NULL_TOTAL = Bug("reads total_input_tokens whatever current_usage says: 0 right after a compaction that kept no "
                  "segment, where Claude Code's payload has current_usage null (17.2.1 dist/index.js:6189-6192; "
                  "20.0.24 the same)", "under", NOT_KEPT)
_PAYLOAD_INCLUSIVE = Bug("Claude Code's payload adds input + cache writes + cache reads (its c_t, research section "
                         "4); a gateway's input_tokens already holds the cache reads: 34,213 for 17,111 "
                         "(Aider-AI/aider#5516)", "over", INCLUSIVE)
_ADDS_INCLUSIVE = Bug("adds input + cache writes + cache reads of the last row, the Anthropic formula; a gateway's "
                      "input_tokens already holds the cache reads (Aider-AI/aider#5516)", "over", INCLUSIVE)
_PAYLOAD_ITERATED = Bug("shows Claude Code's current_usage, the call's top-level usage, which sums its inference "
                        "iterations where the context is the last one's: Claude Code's own gauge inflates on advisor "
                        "turns (ilia-pluzhnikov/claude-code-statusline#9, jarrodwatts/claude-hud#666)", "over",
                        ITERATED)
_ADDS_ITERATED = Bug("adds input + cache writes + cache reads off the last row's top level, which sums the call's "
                     "inference iterations; the context is the last message iteration's "
                     "(ilia-pluzhnikov/claude-code-statusline#9, jarrodwatts/claude-hud#666)", "over", ITERATED)
_PAYLOAD_NESTED = Bug("shows Claude Code's current_usage, whose cache_creation_input_tokens is 0 when the API reports "
                      "the cache write only in the nested cache_creation breakdown (Claude Code 2.1.152 changelog): "
                      "3 for 30,003", "under", NESTED)
_ADDS_NESTED = Bug("adds input + cache writes + cache reads off the last row's top level, whose "
                   "cache_creation_input_tokens is 0 when the API reports the write only in the nested cache_creation "
                   "breakdown; no fall-back to the breakdown's sum (Claude Code 2.1.152 changelog)", "under", NESTED)
_PEGGED = Bug("reads the payload's used_percentage of its context_window_size: Claude Code reports a 200,000 window "
              "on a 1,000,000-token session, so its percentage pegs at 100% and the gauge at 200,000 "
              "(anthropics/claude-code#76751)", "under", WRONG_WINDOW)
_CLEAR_ZERO = Bug("reads total_input_tokens whatever current_usage says: 0 right after /clear, where Claude Code's "
                  "payload has current_usage and used_percentage null (17.2.1 dist/index.js:6189-6192; 20.0.24 the "
                  "same)", "under", CLEARED)
_STALE = Bug("the last assistant line, no compact_boundary check: stays at the pre-compaction figure (research "
             "fixture b1 T; ccusage data-loader-DZaU_svm.js:3941-3979, ccline context_window.rs:104-148)", "over",
             COMPACTED)
_SIDECHAIN = Bug("the last assistant line, no isSidechain filter: a subagent's row read as the main context "
                 "(research fixture d)", "under", INTERLEAVED)
_SYNTHETIC_ROW = Bug("the last assistant line, no isApiErrorMessage/<synthetic> check: 0 (research fixture e)",
                     "under", SYNTHETIC)
_NARROW_WINDOW = Bug("the transcript fallback's window is 200,000 (data-loader-DZaU_svm.js:3960, offline) where the "
                     "session's is 1,000,000: its percentage is five times Claude Code's (research section 1)",
                     "over", {**WIDE, **SWITCHED_WIDE})
_MILLION = Bug("divides by 1,000,000 for claude-sonnet-4-5 where Claude Code says 200,000: 140,706 shown as 14% "
               "(research section 1, fixture a T)", "under", NARROW)
_COMPACT_NOTHING = Bug("prints no estimate right after a compaction, where Claude Code sends 0 (a trailing segment "
                       "kept) or null (none kept): research fixture b1 S", "none", COMPACTED)
_OWN_PERCENT = Bug("divides the context by the model's window (200,000) for its percentage, where Claude Code 2.1.337 "
                   "and later count used_percentage against CLAUDE_CODE_AUTO_COMPACT_WINDOW (100,000: its changelog, "
                   "ctxsim's REPL recordings): half the pressure Claude Code shows", "under",
                   {"autocompact-window-statusline": "q1 call 1"})
_IGNORES = "ignores the payload's context_window (src/config/types.rs:114-120): "

_CCSTATUSLINE_CLEAR = Bug("0 right after /clear: a transcript with no usage yet is a context of 0, not unknown "
                         "(dist/ccstatusline.js:58073, '?? 0'); with the payload's current_usage null it reads the "
                         "transcript (:49643, :51605-51611)", "under", CLEARED)

PINS: dict[str, tuple[Bug, ...]] = {
    "ccstatusline@2.2.30 (payload)": (_PAYLOAD_ZERO, _NULL_POST, _CCSTATUSLINE_CLEAR, _PAYLOAD_INCLUSIVE,
                                      _PAYLOAD_ITERATED, _PAYLOAD_NESTED),
    "ccstatusline@2.2.30 (transcript)": (
        Bug("copies the compact_boundary's postTokens, the summary alone (2,680 vs 14,477 in fixture b1 T): "
            "dist/ccstatusline.js:58073", "under", COMPACTED),
        _CCSTATUSLINE_CLEAR,
        _ADDS_INCLUSIVE,
        _ADDS_ITERATED,
        _ADDS_NESTED,
        Bug("a count that is not a number (a gateway's 'n/a' in the row) is 0 in its sum, where the call's size "
            "cannot be read: dist/ccstatusline.js:49581-49593 (toFiniteNonNegativeNumber(...) ?? 0)", "under",
            GARBAGE_PROMPT)),
    "ccusage-17@17.2.1 (payload)": (_OWN_PERCENT, _PAYLOAD_ZERO, _NULL_TOTAL, _CLEAR_ZERO, _PAYLOAD_INCLUSIVE,
                                    _PAYLOAD_ITERATED, _PAYLOAD_NESTED),
    "ccusage-17@17.2.1 (transcript)": (_OWN_PERCENT, _NARROW_WINDOW, _STALE, _SIDECHAIN, _SYNTHETIC_ROW,
                                       _ADDS_INCLUSIVE, _ADDS_ITERATED, _ADDS_NESTED),
    "ccusage-20@20.0.24 (payload)": (_OWN_PERCENT, _PAYLOAD_ZERO, _NULL_TOTAL, _CLEAR_ZERO, _PAYLOAD_INCLUSIVE,
                                     _PAYLOAD_ITERATED, _PAYLOAD_NESTED),
    "ccusage-20@20.0.24 (transcript)": (_MILLION, _STALE),
    "ccline@1.1.2 (payload)": tuple(Bug(_IGNORES + bug.why, bug.direction, bug.at) for bug in (
        _STALE, _SIDECHAIN, _SYNTHETIC_ROW, _ADDS_INCLUSIVE, _ADDS_ITERATED, _ADDS_NESTED)),
    "cc-statusline@1.4.0 (payload)": (
        _OWN_PERCENT, Bug(_COMPACT_NOTHING.why + ": 'TBD' (generated statusline.sh:141-165)", "none", COMPACTED),
        _PAYLOAD_INCLUSIVE, _PAYLOAD_ITERATED, _PAYLOAD_NESTED, _PEGGED),
    "ccstatusline-py@0.1.2 (payload)": (
        Bug(_COMPACT_NOTHING.why + ": blank (widgets/core.py:41)", "none", COMPACTED), _PAYLOAD_INCLUSIVE,
        _PAYLOAD_ITERATED, Bug(_PAYLOAD_NESTED.why + ", 0%, which it shows blank (widgets/core.py:41)", "none",
                               NESTED), _PEGGED),
}
"""Per tool and mode, the bugs it shows in the corpus. A scenario under several is pinned by the first listed that
names it (the bug that shows first there)."""


def pinned(label: str) -> dict[str, tuple[str, Bug]]:
    """The scenarios ``label`` (a tool in a mode) fails: scenario -> (the first point off, the bug)."""
    out: dict[str, tuple[str, Bug]] = {}
    for bug in PINS[label]:
        for name, point in bug.at.items():
            out.setdefault(name, (point, bug))
    return out


COLUMNS = [(tool, mode) for tool in TOOLS.values() for mode in tool.modes]


def test_every_tool_and_mode_is_pinned_on_scenarios_of_the_corpus() -> None:
    assert sorted(PINS) == sorted(tool.label(mode) for tool, mode in COLUMNS)
    for label in PINS:
        assert set(pinned(label)) <= set(SCENARIOS), f"{label}: pinned on scenarios not in the corpus"
    assert all(bug.direction in ("over", "under", "none") for bugs in PINS.values() for bug in bugs)


@pytest.mark.parametrize("group", GROUPS)
def test_the_groups_are_what_they_say(group: str) -> None:
    members, belongs = GROUPS[group]
    assert set(members) == {name for name, scenario in SCENARIOS.items() if belongs(scenario)}, (
        f"{group} is not the corpus's scenarios it describes: add the scenario (or remove it) and pin each tool on it")


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


ITEMS = [(tool, mode, name) for name in sorted(SCENARIOS, key=lambda n: -len(_steps_of(SCENARIOS[n])))
         for tool, mode in COLUMNS]
"""One item per tool, mode and scenario, the longest scenarios first (pytest-xdist hands items out in this order:
the long ones started last would keep one worker busy after the other is done)."""


@pytest.mark.tools
@pytest.mark.parametrize(("tool", "mode", "name"), ITEMS, ids=[f"{t.name}-{m}-{n}" for t, m, n in ITEMS])
def test_each_tool_fails_where_its_bugs_show_and_tracks_the_rest(tool: Tool, mode: str, name: str) -> None:
    _have(tool)
    label = tool.label(mode)
    scenario = SCENARIOS[name]
    run = run_scenario(scenario, tracker(tool, mode))
    assert run.report.error is None, run.report.error  # a tool that cannot be read is no verdict
    assert run.report.crash is None, run.report.crash
    failure = run.failure
    if name in RECORDED:
        assert failure.kind == "nowhere", f"{label} on the recorded {name}: judged at a point\n{run.report}"
        return
    pin = pinned(label).get(name)
    if pin is None:
        assert run.ok, f"{label} must track {name}\n{run.report}"
        return
    where, bug = pin
    assert (failure.kind, failure.first, failure.direction) == ("off", where, bug.direction), (
        f"{label} on {name}: expected off ({bug.direction}) first at {where}: {bug.why}\n{run.report}")


@pytest.mark.tools
def test_the_verdicts_page_is_generated_by_ctxsim_tools_verdicts(tmp_path: Path) -> None:
    from ctxsim.cli import main

    ccline = TOOLS["ccline"]
    _have(ccline)
    out = tmp_path / "verdicts.md"
    scenario = ROOT / "scenarios" / "statusline-synthetic-error-row.yaml"
    assert main(["tools", "verdicts", str(scenario), "--tool", "ccline", "--out", str(out)]) == 0
    page = out.read_text()
    assert "| scenario | ccline@1.1.2 (payload) |" in page
    assert "| `statusline-synthetic-error-row` | ✗ q1 result: 0 (truth 81,003..81,063) |" in page
    assert "### ccline 1.1.2" in page and "known bug: ignores the payload's context_window" in page
    assert main(["tools", "verdicts", "--tool", "nope"]) == 2


def test_the_page_in_docs_shows_the_pinned_verdicts_over_the_whole_corpus() -> None:
    """``docs/shipped-tools.md`` is ``ctxsim tools verdicts`` over the bundled corpus: a row for every session
    scenario, and in each tool's column ✗ at the pinned first point where it is pinned, ✓ elsewhere (regenerate it
    when the pins or the corpus change)."""
    page = (ROOT / "docs" / "shipped-tools.md").read_text(encoding="utf-8")
    table = [line for line in page.splitlines() if line.startswith("| ")]
    header = [cell.strip() for cell in table[0].strip("|").split("|")]
    assert header == ["scenario", *(tool.label(mode) for tool, mode in COLUMNS)]
    rows: dict[str, dict[str, str]] = {}
    for line in table[1:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = dict(zip(header[1:], cells[1:]))
    assert sorted(rows) == sorted(SCENARIOS)
    for label in header[1:]:
        pins = pinned(label)
        for name, row in rows.items():
            cell = row[label]
            if name in RECORDED:
                assert cell == "✗ judged at no point", (label, name, cell)
            elif name in pins:
                assert re.match(rf"✗ {re.escape(pins[name][0])}: ", cell), (label, name, cell)
            else:
                assert cell == "✓", (label, name, cell)
