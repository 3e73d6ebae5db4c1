"""Stream trackers (``stream:``): one process per session fed one JSON line per message the SDK yields, read back one
line per message; a process that fails, hangs, floods or answers nonsense is one bounded ``ctxsim:`` error naming
the command and the message, and nothing it started outlives the run."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import pytest
from test_command_tracker import PLAIN, tool_use_session  # the same sessions as cmd:'s tests

from ctxsim.check import run_tracker
from ctxsim.cli import main
from ctxsim.corpus import bundled_scenarios
from ctxsim.runner import run_scenario
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.sdk import client_message
from ctxsim.trackers import StreamTracker, TrackerSpecError, TrackerWorld, make_tracker, parse_stream_spec, resolve
from ctxsim.wire import Frame, Script, cli_version_rendered, render
from ctxsim.world import SessionBuilder

HERE = Path(__file__).resolve().parent
TRACKERS = HERE.parent / "stream_trackers"


def yielded(script: Script) -> list[Frame]:
    """The frames of ``script`` the SDK client yields a message for: what the protocol sends, one line each."""
    return [frame for frame in script.frames if client_message(frame.data) is not None]

needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="ctxsim: node is not on PATH")


def sh(script: str, **options: object) -> StreamTracker:
    """A stream tracker written as a shell loop."""
    return StreamTracker(script, **options)  # type: ignore[arg-type]


def alive(pid: int | str) -> bool:
    """The process runs (a zombie left to an init that does not reap is dead)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def session_scenarios() -> list[SessionScenario]:
    return [s for s in map(load_scenario, bundled_scenarios()) if isinstance(s, SessionScenario)]


# --- the Node trackers of the "done when" ------------------------------------------------------------------


@needs_node
def test_a_node_tracker_reading_the_last_main_chain_usage_tracks_a_plain_tool_session() -> None:
    report = run_tracker(StreamTracker(f"node {TRACKERS / 'last_main.mjs'}"), tool_use_session())
    assert report.ok, str(report)
    assert [p.estimate for p in report.points] == [34_003, 35_705, 36_604, 36_604]


@needs_node
def test_a_node_tracker_summing_every_assistant_message_fails_a_plain_tool_session_and_the_corpus() -> None:
    tracker = f"stream:node {TRACKERS / 'sum_all.mjs'}"
    report = run_tracker(parse_stream_spec(tracker), tool_use_session())
    assert not report.ok and report.error is None and report.crash is None
    first = report.failures[0]
    assert (first.observation.label, first.estimate) == ("q1 call 1", 3 * 34_003)  # three blocks, summed
    factory = resolve(tracker).factory
    scenarios = session_scenarios()
    failed = [s.name for s in scenarios if not run_scenario(s, make_tracker(factory, s.session)).ok]
    assert "b04-summing-every-row" in failed
    assert len(failed) >= len(scenarios) - 5, f"fails only {failed}"  # measured: 42 of 44


# --- the protocol ------------------------------------------------------------------------------------------------


def test_each_message_goes_as_the_stream_json_line_the_sdk_yields_it_from(tmp_path: Path) -> None:
    seen = tmp_path / "seen.jsonl"
    tracker = sh(f"while IFS= read -r line; do printf '%s\\n' \"$line\" >> {seen}; echo null; done")
    session = SessionBuilder(seed=3).query("Go").call(blocks=("thinking", "tool_use"), results=(100,)) \
        .call(blocks=("text",)).build()
    report = run_tracker(tracker, session, include_partial_messages=True)
    assert report.error is None and report.crash is None, str(report)
    lines = [json.loads(line) for line in seen.read_text().splitlines()]
    expected = [frame.data for script in render(session, include_partial_messages=True)
                for frame in yielded(script)]
    assert lines == expected
    assert {line["type"] for line in lines} >= {"system", "assistant", "user", "stream_event", "result"}
    assert not any(line["type"].startswith("control") for line in lines)


def test_the_estimate_after_the_message_closing_a_point_is_the_one_judged() -> None:
    counting = sh("n=0; while read -r line; do n=$((n+1)); echo $n; done")
    session = tool_use_session()
    report = run_tracker(counting, session)
    frames = [f for script in render(session) for f in yielded(script)]
    closing = [i for i, frame in enumerate(frames, 1) if frame.observation is not None]
    assert [p.estimate for p in report.points] == closing


def test_every_session_gets_a_fresh_process_and_none_outlives_its_run(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    tracker = sh(f"echo $$ >> {pids}; n=0; while read -r line; do n=$((n+1)); echo $n; done")
    session = tool_use_session()
    first, second = run_tracker(tracker, session), run_tracker(tracker, session)
    assert [p.estimate for p in first.points] == [p.estimate for p in second.points]  # counted from 1 again
    started = [int(line) for line in pids.read_text().split()]
    assert len(set(started)) == 2
    assert not [pid for pid in started if alive(pid)]


def test_the_command_is_told_the_world_and_runs_where_ctxsim_was_started(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "gauge.sh").write_text('while read -r line; do echo "$CTXSIM_WINDOW"; done\n')
    monkeypatch.chdir(tmp_path)
    spec = resolve("stream:sh gauge.sh")
    world = TrackerWorld(window=123_456, usage="inclusive", auto_compact_threshold=100_000)
    tracker = spec.factory(world=world)  # type: ignore[call-arg]
    env = tracker.environment()  # type: ignore[union-attr]
    told = (env["CTXSIM_WINDOW"], env["CTXSIM_USAGE"], env["CTXSIM_AUTOCOMPACT_TOKENS"], env["CTXSIM_CLI_VERSION"])
    assert told == ("123456", "inclusive", "100000", cli_version_rendered())
    monkeypatch.chdir(HERE)  # the directory it was made in counts, not where the run happens
    report = run_tracker(tracker, tool_use_session())  # type: ignore[arg-type]
    assert report.error is None, report.error
    assert {p.estimate for p in report.points} == {123_456}


# --- failures: one ctxsim: line naming the command and the message -------------------------------------------------


@pytest.mark.parametrize(("script", "says"), [
    ("read -r a; echo null; read -r b; echo 5; echo boom >&2; exit 3",
     "on message #3 (assistant msg_"),
    ("while read -r a; do echo '12 tokens'; done", "answered '12 tokens', which is neither a token count"),
    ("while read -r a; do echo -1; done", "answered '-1'"),
    ("while read -r a; do echo 99999999999999999999; done", "answered '99999999999999999999'"),
    ("while read -r a; do printf '1\\n2\\n'; done", "answered with more than one line"),
    ("while read -r a; do head -c 100000 /dev/zero | tr '\\0' x; done", "more than 64 KiB without a newline"),
    ("read -r a; yes flood >&2", "more than 64 KiB on stderr"),
    ("exit 0", "exited with status 0 without answering"),
    ("kill -9 $$", "was killed by signal 9"),
])
def test_a_process_that_cannot_be_read_is_one_ctxsim_line(script: str, says: str) -> None:
    start = time.monotonic()
    report = run_tracker(sh(script, timeout=5), tool_use_session())
    assert time.monotonic() - start < 10
    assert report.error is not None and report.crash is None
    assert report.error.startswith("ctxsim: stream tracker stream:") and f"({script!r})" in report.error
    assert says in report.error, report.error
    assert "\n" not in report.error and len(report.error) < 1_000


def test_its_stderr_ends_the_line_when_it_exits() -> None:
    report = run_tracker(sh("read -r a; echo 'cannot parse the line' >&2; exit 1"), tool_use_session())
    assert report.error is not None
    assert report.error.endswith("exited with status 1 without answering; stderr ends: cannot parse the line")
    assert "on message #1 (system/init)" in report.error


def test_a_hanging_process_is_stopped_at_its_timeout_and_killed(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    tracker = sh(f"sleep 60 & echo $! >> {pids}; read -r a; sleep 60", timeout=0.5)
    start = time.monotonic()
    report = run_tracker(tracker, tool_use_session())
    assert time.monotonic() - start < 6
    assert report.error is not None and "gave no answer within its timeout of 0.5 s" in report.error
    assert not alive(pids.read_text().strip())  # its group's children too


def test_a_process_that_never_reads_its_stdin_cannot_block_the_run() -> None:
    big = SessionBuilder(seed=5).query("x" * 300_000).call().build()  # an init line far past a pipe's buffer
    report = run_tracker(sh("sleep 60", timeout=1), big)
    assert report.error is not None and "gave no answer within its timeout of 1 s" in report.error


def test_a_command_that_cannot_start_says_so() -> None:
    report = run_tracker(StreamTracker("./no-such-gauge --stream"), tool_use_session())
    assert report.error is not None and "exited with status 127" in report.error
    assert "not found" in report.error and "the shell found no such program: it never started" in report.error


# --- naming one --------------------------------------------------------------------------------------------------


def test_a_stream_spec_resolves_with_its_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "gauge.mjs").write_text("")
    spec = resolve("stream[timeout=2.5 name=my-gauge]:node dist/gauge.mjs --stream")
    assert spec.stream and not spec.command and spec.fed_messages is None
    tracker = make_tracker(spec.factory)
    assert isinstance(tracker, StreamTracker)
    assert (tracker.command, tracker.timeout, tracker.name) == ("node dist/gauge.mjs --stream", 2.5, "my-gauge")
    assert resolve("stream:node dist/gauge.mjs").name == "stream:gauge.mjs"


@pytest.mark.parametrize(("spec", "says"), [
    ("stream:", "is not stream:COMMAND or stream[OPTIONS]:COMMAND"),
    ("stream[timeout=soon]:x", "option timeout='soon' is not a float"),
    ("stream[workers=2]:x", "no option 'workers' (known: cwd, name, timeout)"),
    ("stream[timeout=0]:x", "timeout must be positive seconds"),
    ("stream[name=x:y", "the options' '[' is never closed"),
])
def test_a_bad_stream_spec_is_one_line(spec: str, says: str) -> None:
    with pytest.raises(TrackerSpecError) as raised:
        resolve(spec)
    assert says in str(raised.value) and "\n" not in str(raised.value)


def test_ctxsim_run_takes_a_stream_tracker(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", "b01-no-dedupe-without-request-id", "--tracker",
                 f"stream:{sys.executable} -c \"import sys\nfor _ in sys.stdin: print('null', flush=True)\""])
    out = capsys.readouterr().out
    assert code == 1 and "== stream:" in out and "no estimate" in out.lower()


@needs_node
def test_the_documented_node_example_speaks_the_protocol_and_tracks_a_plain_tool_session(tmp_path: Path) -> None:
    page = (HERE.parents[1] / "docs" / "how-to" / "trackers-in-any-language.md").read_text(encoding="utf-8")
    example = page.split("```js\n", 1)[1].split("```", 1)[0]
    assert len(example.strip().splitlines()) <= 16  # the page promises a short one
    (tmp_path / "last-call.mjs").write_text(example, encoding="utf-8")
    report = run_tracker(StreamTracker("node last-call.mjs", cwd=str(tmp_path)), tool_use_session())
    assert report.ok, str(report)


@needs_node
def test_ctx_tracker_stream_checks_a_process_on_every_scenario_and_a_broken_one_fails_its_items_only(
        pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "plain.yaml").write_text(PLAIN)
    (pytester.path / "scenarios" / "also.yaml").write_text(PLAIN.replace("go", "again"))
    (pytester.path / "gauge.mjs").write_text((TRACKERS / "last_main.mjs").read_text())
    result = pytester.runpytest("--ctx-scenarios=scenarios", "-v", "--ctx-tracker=stream:node gauge.mjs",
                                "--ctx-tracker=stream[name=broken]:echo 'no model here' >&2; exit 1")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines(["scenarios/also.yaml::stream:gauge.mjs PASSED*",
                                 "scenarios/also.yaml::broken FAILED*"])
    result.stdout.fnmatch_lines([
        "*ctxsim: stream tracker broken (\"echo 'no model here' >&2; exit 1\") on message #1 (system/init) exited "
        "with status 1 without answering; stderr ends: no model here*"])


def test_ctx_tracker_stream_skips_a_restart_loop_saying_why(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    corpus = Path(__file__).resolve().parents[2] / "scenarios"
    result = pytester.runpytest(f"--ctx-scenarios={corpus / 'checkpoint-block.yaml'}", "-rs",
                                "--ctx-tracker=stream:echo null")
    outcomes = result.parseoutcomes()
    assert outcomes.get("skipped") == 1 and not outcomes.get("failed"), outcomes
    result.stdout.fnmatch_lines(["*ctxsim: --ctx-tracker=stream:echo null: a stream tracker is fed the stream-json "
                                 "line of each message; a restart loop feeds its tracker the SDK's message objects*"])
