"""A scenario's ``world.cli``: the release whose rules its session renders as, read with file, line and key; the
corpus holds both sides of a change each judged on its releases; a statusline command that shows Claude Code's own
``used_percentage`` is judged right on every release, and one that divides by the model's window is judged wrong
where Claude Code counts against the autocompact window."""

from __future__ import annotations

import shlex
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxsim.reference import ContextTracker
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import ScenarioError, SessionScenario, load_scenario, parse_scenario
from ctxsim.trackers._command import CommandTracker
from ctxsim.wire import captured_versions, rendered_version, use_cli, version_key

CORPUS = Path(__file__).resolve().parents[2] / "scenarios"
BEFORE, AFTER = "2.1.332", "2.1.337"  # both sides of the statusline's change (rule statusline-percent-of-...)

WORLD = textwrap.dedent("""\
    world: {window: 200000, auto_compact_window: 100000, baseline: 12000, max_output: 32000%s}
    queries:
      - prompt: "Read the service"
        steps:
          - call: {in: 3, cc: 2000, cr: 30000, out: 60}
      - prompt: "Read everything"
        steps:
          - call: {in: 3, cc: 1000, cr: 50000, out: 90}
    """)

# Claude Code's own figure, and the one a tool computes from the model's window (the 2.1.337 changelog's "for the
# full window"), each printed as "ctx N%"
USED = "import json,sys; c=json.load(sys.stdin)['context_window']; print(f\"ctx {c['used_percentage']}%\")"
FULL = ("import json,sys; c=json.load(sys.stdin)['context_window']; "
        "print(f\"ctx {round(100 * c['total_input_tokens'] / c['context_window_size'])}%\")")


def command(code: str) -> CommandTracker:
    return CommandTracker(f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}", regex="(?P<percent>[0-9]+)%")


@pytest.fixture
def release() -> Iterator[None]:
    yield
    use_cli(None)


@pytest.mark.parametrize(("value", "said"), [
    ("'soon'", "'soon' is neither a Claude Code version (2.1.337) nor a range of them (>=2.1.337, <2.1.337)"),
    ("'<1.0'", "no recorded Claude Code release is in '<1.0'"),
    ("3", "expected a string, got 3"),
])
def test_a_bad_release_is_one_error_with_file_line_and_key(value: str, said: str) -> None:
    text = WORLD % f",\n        cli: {value}"
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, file="bad.yaml")
    assert str(info.value).startswith(f"ctxsim: bad.yaml:2: world.cli: {said}")  # then the recorded releases
    assert "\n" not in str(info.value)


def test_a_scenario_renders_as_the_release_it_names() -> None:
    pinned = parse_scenario(WORLD % f", cli: '{BEFORE}'", file="x.yaml")
    ranged = parse_scenario(WORLD % f", cli: '<{AFTER}'", file="x.yaml")
    assert isinstance(pinned, SessionScenario) and isinstance(ranged, SessionScenario)
    assert rendered_version(pinned.session) == BEFORE
    assert rendered_version(ranged.session) == [v for v in captured_versions()
                                                if version_key(v) < version_key(AFTER)][-1]


@pytest.mark.parametrize("version", [BEFORE, AFTER])
def test_a_statusline_showing_used_percentage_is_judged_right_on_either_side(version: str, release: None) -> None:
    use_cli(version)
    scenario = parse_scenario(WORLD % "", file="x.yaml")
    assert isinstance(scenario, SessionScenario)
    run = run_scenario(scenario, command(USED))
    assert run.report.ok, run.report
    full = run_scenario(scenario, command(FULL)).report
    if version == BEFORE:  # the same number then
        assert full.ok, full
    else:  # 16% of the model's window where Claude Code shows 32% of the autocompact window: half the pressure
        assert not full.ok
        first = full.failures[0]
        assert (first.observation.label, first.estimate) == ("q1 call 1", 16_000)


@pytest.mark.parametrize("name", ["autocompact-window-setting", "autocompact-window-statusline"])
@pytest.mark.parametrize("version", [BEFORE, AFTER])
def test_both_sides_of_the_change_hold_whatever_the_cli_in_use(name: str, version: str, release: None) -> None:
    """Each side names the releases it is true for, so the reference passes it and its catalogued gauge fails it
    as expected whichever CLI is installed (--ctx-cli stands for one)."""
    use_cli(version)
    scenario = load_scenario(CORPUS / f"{name}.yaml")
    assert isinstance(scenario, SessionScenario)
    after = version_key(rendered_version(scenario.session)) >= version_key(AFTER)
    assert after == (name == "autocompact-window-statusline")
    assert run_scenario(scenario, ContextTracker()).report.ok
