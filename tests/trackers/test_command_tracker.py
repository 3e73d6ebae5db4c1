"""Statusline commands as trackers (``cmd:``): run at every point over the rendered transcript and payload, read
through presets or a regex, judged by the oracle; a command that fails, hangs or prints nonsense is one bounded
``ctxsim:`` error naming it."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from ctxsim.check import run_tracker, run_tracker_parsed
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers._command import CommandTracker, parse_command_spec
from ctxsim.trackers._resolve import TrackerSpecError, resolve
from ctxsim.wire import render
from ctxsim.world import Session, SessionBuilder

HERE = Path(__file__).resolve().parent
TRACKERS = HERE.parent / "statusline_trackers"
CORPUS = HERE.parents[1] / "scenarios"

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="ctxsim: node is not on PATH")


def node(script: str, **options: object) -> CommandTracker:
    return CommandTracker(f"node {TRACKERS / script}", **options)  # type: ignore[arg-type]


def tool_use_session() -> Session:
    """A plain tool-use session: calls written as several content blocks (thinking, text, tool use) each."""
    builder = SessionBuilder(seed=7).query("Fix the failing test")
    builder.call(input=3, cache_creation=4_000, cache_read=30_000, blocks=("thinking", "text", "tool_use"),
                 results=(1_500,))
    builder.call(input=5, cache_creation=1_700, cache_read=34_000, blocks=("text", "tool_use"), results=(800,))
    builder.call(input=4, cache_creation=900, cache_read=35_700, blocks=("text",))
    return builder.build()


def corpus(name: str) -> SessionScenario:
    scenario = load_scenario(CORPUS / name)
    assert isinstance(scenario, SessionScenario)
    return scenario


# --- the Node trackers of the "done when" ------------------------------------------------------------------


@needs_node
def test_a_plain_last_row_reader_and_a_payload_echo_track_a_plain_tool_use_session() -> None:
    session = tool_use_session()
    for script in ("last_row.js", "payload_echo.js"):
        report = run_tracker(node(script), session)
        assert report.ok, str(report)
        assert [p.estimate for p in report.points][:3] == [34_003, 35_705, 36_604]


@needs_node
def test_summing_every_row_of_a_call_fails_a_plain_tool_use_session() -> None:
    report = run_tracker(node("sum_rows.js"), tool_use_session())
    assert not report.ok and report.error is None and report.crash is None
    first = report.failures[0]
    assert first.observation.label == "q1 call 1"
    assert first.estimate == 3 * 34_003  # three rows (thinking, text, tool use) of one call, each with its usage


@needs_node
def test_the_payload_echo_fails_compaction_where_claude_code_sends_zero() -> None:
    run = run_scenario(corpus("compaction.yaml"), node("payload_echo.js", after_compaction="zero"))
    assert not run.ok and run.report.error is None
    off = run.report.failures
    assert [p.observation.kind for p in off] == ["compaction"]
    assert off[0].estimate == 0  # the all-zero current_usage the research saw right after /compact
    # where the payload says null there instead (as ctxsim recorded the REPL), the echo has no estimate: still off
    run = run_scenario(corpus("compaction.yaml"), node("payload_echo.js", after_compaction="null"))
    assert [(p.observation.kind, p.estimate) for p in run.report.failures] == [("compaction", None)]


@pytest.mark.slow
@needs_node
def test_a_gauge_that_never_comes_down_fails_the_corpus_where_the_context_shrinks() -> None:
    failing = []
    for path in sorted(CORPUS.glob("*.yaml")):
        scenario = load_scenario(path)
        if not isinstance(scenario, SessionScenario) or scenario.faults:
            continue  # a fault that reaches the rows (garbage, a nested cache write) is judged by tests of its own
        run = run_scenario(scenario, node("never_down.js"))
        assert run.report.error is None and run.report.crash is None, run.report.summary()
        if not run.ok:
            failing.append(scenario.name)
            # every point it is off at is one where the truth came down below what it keeps showing
            for point in run.report.failures:
                assert point.estimate is not None and point.estimate > point.high, str(run.report)
    assert "compaction" in failing, failing  # (a /clear starts a new transcript file: b17 does not catch it)
    assert "seed000-cache-read-719" not in failing  # a context that only grows: nothing to keep too long


@pytest.mark.slow
@needs_node
def test_the_reference_shape_read_through_a_command_passes_what_the_python_reference_passes() -> None:
    scenario = corpus("seed000-cache-read-719.yaml")
    assert run_scenario(scenario, node("last_row.js")).ok


# --- failing commands: one bounded ctxsim: error -----------------------------------------------------------------


def test_a_command_that_exits_1_gives_one_error_naming_it_the_session_the_point_and_its_stderr() -> None:
    tracker = CommandTracker("echo 'statusline: cannot parse settings' >&2; exit 1", name="broken")
    run = run_scenario(corpus("compaction.yaml"), tracker)
    error = run.report.error
    assert error is not None and not run.ok and run.inconclusive
    assert error.startswith("ctxsim: command tracker broken (")
    assert "on session 'compaction' at point #1 (q1 call 1) exited with status 1" in error
    assert error.endswith("stderr ends: statusline: cannot parse settings")
    assert not run.report.points


@pytest.mark.parametrize(("line", "said"), [
    ("./no-such-statusline", "exited with status 127 (the shell found no such program: it never started)"),
    ("exit 126", "exited with status 126 (the shell found the program but could not run it: it never started)"),
])
def test_a_command_the_shell_could_not_start_says_it_never_started(line: str, said: str) -> None:
    run = run_scenario(corpus("compaction.yaml"), CommandTracker(line, name="gone"))
    assert run.report.error is not None and said in run.report.error


def test_a_command_that_hangs_is_killed_at_its_timeout_and_named() -> None:
    tracker = CommandTracker("sleep 30 & sleep 30", timeout=0.5, workers=2)
    started = time.monotonic()
    report = run_tracker_parsed(tracker, tool_use_session(), render(tool_use_session()))
    assert time.monotonic() - started < 5  # the later points are dropped, not each waited for
    assert report.error is not None
    assert "'sleep 30 & sleep 30'" in report.error
    assert "at point #1 (q1 call 1) ran past its timeout of 0.5 s and was killed" in report.error


def test_a_command_that_prints_nonsense_is_named_with_what_it_printed() -> None:
    report = run_tracker(CommandTracker("echo 'context: lots'"), tool_use_session())
    assert report.error is not None
    assert "printed nonsense: the last line 'context: lots' is not a bare integer" in report.error


def test_blank_output_and_tbd_are_no_estimate() -> None:
    for command in ("true", "echo TBD", "printf '\\033[0m   \\n'"):
        report = run_tracker(CommandTracker(command), tool_use_session())
        assert report.error is None
        assert [p.estimate for p in report.points] == [None] * len(report.points)
        assert not report.ok  # the truth is knowable at every point of a plain session


def test_the_command_runs_in_a_private_home_with_the_transcript_and_payload_of_its_point(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # it runs from where ctxsim was started, its HOME private
    config = tmp_path / "config"
    (config / ".config" / "tool").mkdir(parents=True)
    (config / ".config" / "tool" / "figure").write_text("36604\n")
    script = (f'test "$CLAUDE_CONFIG_DIR" = "$HOME/.claude" && test "$(pwd -P)" = "{tmp_path.resolve()}" '
              '&& python3 -c "import json,sys; p=json.load(sys.stdin); open(p[\'transcript_path\']).read(); '
              'assert p[\'transcript_path\'].startswith(\'$HOME/.claude/projects/\')" '
              '&& cat "$HOME/.config/tool/figure"')
    report = run_tracker(CommandTracker(script, config=config), tool_use_session())
    assert report.error is None, report.error
    assert [p.estimate for p in report.points][-1] == 36_604


def test_points_run_in_parallel_give_what_they_give_one_at_a_time() -> None:
    session = tool_use_session()
    scripts = render(session)
    one = run_tracker_parsed(CommandTracker("wc -c < /dev/stdin", workers=1), session, scripts)
    two = run_tracker_parsed(CommandTracker("wc -c < /dev/stdin", workers=2), session, scripts)
    assert one.error is None and [p.estimate for p in one.points] == [p.estimate for p in two.points]
    assert len({p.estimate for p in one.points}) > 1  # each point's own payload


# --- naming one on a command line ----------------------------------------------------------------------------


def test_cmd_specs_resolve_with_their_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "ccstatusline.js").write_text("")
    spec = resolve("cmd[preset=ccusage timeout=3 workers=2]:npx ccusage statusline --offline")
    tracker = spec.factory()
    assert isinstance(tracker, CommandTracker) and spec.command and spec.fed_messages is None
    assert (tracker.command, tracker.preset, tracker.timeout, tracker.workers) == (
        "npx ccusage statusline --offline", "ccusage", 3.0, 2)
    assert spec.name == "cmd:ccusage" and resolve("cmd:node dist/ccstatusline.js").name == "cmd:ccstatusline.js"
    regex = parse_command_spec("cmd[regex='ctx (?P<percent>[0-9]+)%] done' no_context_window]:./gauge.sh")
    assert regex.readout is not None and regex.readout.reads == "percent" and not regex.context_window


@pytest.mark.parametrize(("spec", "message"), [
    ("cmd:", "is not cmd:COMMAND"),
    ("cmd[preset=nope]:x", "no preset 'nope'"),
    ("cmd[speed=3]:x", "no option 'speed'"),
    ("cmd[timeout=soon]:x", "option timeout='soon' is not a float"),
    ("cmd[regex='([0-9]+)']:x", "has no named group tokens, percent or remaining"),
    ("cmd[preset=ccline:x", "is never closed"),
])
def test_a_bad_cmd_spec_says_what_is_wrong(spec: str, message: str) -> None:
    with pytest.raises(TrackerSpecError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        resolve(spec)


# --- through the pytest plugin -------------------------------------------------------------------------------

PLAIN = """\
source: "unit test: a cached call"
queries:
  - prompt: "go"
    steps:
      - call: {in: 3, cc: 100, cr: 12000, out: 50, blocks: [text, tool_use], results: [300]}
      - call: {}
"""


@needs_node
def test_ctx_tracker_cmd_checks_a_command_on_every_scenario_and_a_failing_one_fails_its_item_only(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "plain.yaml").write_text(PLAIN)
    (pytester.path / "scenarios" / "also.yaml").write_text(PLAIN.replace("go", "again"))
    result = pytester.runpytest("--ctx-scenarios=scenarios", "-v", f"--ctx-tracker=cmd:node {TRACKERS / 'last_row.js'}",
                                "--ctx-tracker=cmd[name=broken timeout=2]:echo 'no settings' >&2; exit 1")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "ctxsim tracker under test: cmd:last_row.js (cmd:node *last_row.js)",
        "scenarios/also.yaml::cmd:last_row.js PASSED*",
        "scenarios/also.yaml::broken FAILED*",
    ])
    result.stdout.fnmatch_lines([
        "*ctxsim: command tracker broken (\"echo 'no settings' >&2; exit 1\") on session 'plain' at point #1 "
        "(q1 call 1) exited with status 1; stderr ends: no settings*",
    ])


def test_ctx_tracker_cmd_skips_a_recorded_stream_saying_why(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    corpus = Path(__file__).resolve().parents[2] / "scenarios"
    result = pytester.runpytest(f"--ctx-scenarios={corpus / 'clear-new-session-id.yaml'}", "-rs",
                                "--ctx-tracker=cmd:echo 1")
    result.assert_outcomes(passed=2, skipped=1)   # the reference and arbiter-msgid's pinned failure run; yours skips
    result.stdout.fnmatch_lines(["*ctxsim: cmd:echo is not judged here: the scenario plays a recorded stream; a "
                                 "statusline command reads the transcript and payload*"])


@needs_node
@pytest.mark.parametrize("name", ["b06-message-in-several-files", "statusline-replayed-row-later"])
def test_a_reader_of_the_session_s_own_transcript_file_is_not_failed_for_a_resumed_session_s_copy(name: str) -> None:
    # Claude Code writes a resume's copies of earlier rows into a new file, never into the session's own one
    scenario = corpus(f"{name}.yaml")
    run = run_scenario(scenario, node("last_row.js"))
    assert run.ok, str(run.report)
