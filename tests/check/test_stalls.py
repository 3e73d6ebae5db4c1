"""Claude Code's host-only session-state frames, and every wait on the SDK client bounded (issue 10).

Claude Code writes ``system``/``session_state_changed`` frames with ``"sdk_host_only": true`` (states
``running``/``idle``) that the SDK client reads and drops (``docs/explanation/wire.md``; the capture
``tests/captures/claude-code-2.1.332/stream-json-compact.jsonl`` has them). A recorded stream
with them must play to the end; a stream whose frames make the runner wait for a message that never comes must end
within the silence bound with a ``ctxsim:`` line naming where, as a failing scenario, never a hang.

Every test that could hang without the fix runs under an outer guard of its own (``anyio.fail_after``, a daemon
thread joined with a timeout, or a subprocess timeout), so a regression fails here instead of hanging the suite.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from claude_agent_sdk import ClaudeAgentOptions, HookMatcher, ResultMessage, query

import ctxsim.check
from ctxsim import cli
from ctxsim.check import arun_tracker
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import load_scenario
from ctxsim.sdk import FakeTransport
from ctxsim.trackers.catalogue import make
from ctxsim.wire import Script, render
from ctxsim.world import SessionBuilder

T = TypeVar("T")

GUARD = 120.0
"""Seconds after which a test counts as hung: far above what any of these takes even on a loaded 2-core machine
(a pytest subprocess there has taken over 30 s), far below forever."""

CAPTURE = "stream-json-compact.jsonl"
"""Among the captures: the real CLI's stream-json of three queries, with session-state frames."""


def within(seconds: float, run: Callable[[], T]) -> T:
    """``run()`` in a daemon thread (its own event loop); fails the test if it has not returned after ``seconds``."""
    out: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.append(run())
        except BaseException as exc:  # handed back to the test's thread
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"still running after {seconds} s: hung")
    if errors:
        raise errors[0]
    return out[0]


def state(value: str, session_id: str) -> dict[str, Any]:
    """A session-state frame as Claude Code writes it for the SDK host."""
    return {"type": "system", "subtype": "session_state_changed", "state": value, "sdk_host_only": True,
            "session_id": session_id, "uuid": f"state-{value}"}


def recorded_with_states(path: Path) -> Path:
    """A stream-json recording of two queries, each between a ``running`` and an ``idle`` frame, as the CLI
    writes them (the rendering opens each query with its ``running``; the ``idle`` after the result, as the
    transport writes it)."""
    session = (SessionBuilder(seed=3, name="states")
               .query("one").call(input=3, cache_creation=900, cache_read=30_000, output=140, results=(2000,))
               .call(output=60)
               .query("two").call(results=(700,))
               .build())
    lines: list[dict[str, Any]] = []
    for script in render(session):
        assert script.frames[0].data.get("state") == "running"
        lines += [*(f.data for f in script.frames), state("idle", session.session_id)]
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))
    return path


def real_capture(captured: Path, path: Path) -> Path:
    """The frames of the real capture (each ``{"raw": frame}`` line unwrapped; ``get_context_usage`` lines out)."""
    frames = [json.loads(line)["raw"] for line in (captured / CAPTURE).read_text().splitlines()
              if line.strip() and "raw" in json.loads(line)]
    assert sum(f.get("sdk_host_only") is True for f in frames) == 6  # running + idle around each of 3 queries
    path.write_text("".join(json.dumps(f) + "\n" for f in frames))
    return path


def scenario_file(directory: Path, name: str, stream: Path) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(f"name: {name}\nstream: {stream.name}\nexpect:\n  fail: [mala-overwrite]\n")
    return path


# --- session-state frames play to the end -------------------------------------------------------------------------


def test_the_one_rule_is_what_the_sdk_client_keeps_to_itself() -> None:
    from ctxsim.sdk import client_message, kept_by_client

    for kind in ("control_request", "control_response", "control_cancel_request", "transcript_mirror"):
        assert kept_by_client({"type": kind})
    host_only = state("idle", "s")
    assert kept_by_client(host_only) and client_message(host_only) is None
    # the same frame for a caller who asked for session state is a message like any other system frame
    shown = {**host_only, "sdk_host_only": False}
    assert not kept_by_client(shown) and client_message(shown) is not None


def test_a_recording_splits_each_query_after_its_idle_and_never_puts_a_point_on_a_state_frame(
        tmp_path: Path) -> None:
    sc = load_scenario(scenario_file(tmp_path, "states", recorded_with_states(tmp_path / "states.jsonl")))
    scripts = sc.scripts()
    assert len(scripts) == 2  # not a third query holding the last idle
    for script in scripts:
        first, last = script.frames[0].data, script.frames[-1].data
        assert (first.get("state"), last.get("state")) == ("running", "idle")
    observed = [f for s in scripts for f in s.frames if f.observation is not None]
    assert [f.observation.label for f in observed] == ["q1 call 1", "q1 call 2", "q1 result", "q2 call 1",
                                                      "q2 result"]
    assert not any(f.data.get("subtype") == "session_state_changed" for f in observed)


def test_a_recording_with_session_state_frames_plays_through_ctxsim_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario_file(tmp_path, "states", recorded_with_states(tmp_path / "states.jsonl"))
    assert within(GUARD, lambda: cli.main(["run", str(path), "--tracker", "reference"])) == 0
    out = capsys.readouterr().out
    assert "ctxsim: reference tracks session 'states'" in out and "q2 result" in out


def test_a_recording_with_session_state_frames_plays_through_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    scenario_file(scenarios, "states", recorded_with_states(scenarios / "states.jsonl"))
    result = within(GUARD, lambda: pytester.runpytest("--ctx-scenarios=scenarios", "-v"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["scenarios/states.yaml::reference PASSED*"])


def test_the_real_capture_plays_through_ctxsim_run_and_pytest(captured: Path, pytester: pytest.Pytester,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    path = scenario_file(scenarios, "capture", real_capture(captured, scenarios / "capture.jsonl"))
    assert within(GUARD, lambda: cli.main(["run", str(path), "--tracker", "reference"])) == 0
    out = capsys.readouterr().out
    assert "ctxsim: reference tracks session 'capture'" in out
    assert "q2 compaction" in out and "q3 result" in out  # every query played: three, /compact the second
    result = within(GUARD, lambda: pytester.runpytest("--ctx-scenarios=scenarios", "-v"))
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("cut", [False, True], ids=["whole", "cut-before-idle"])
def test_a_recorded_turn_with_session_state_ends_for_a_client_with_hooks(tmp_path: Path, cut: bool,
                                                                         anyio_backend_name: str) -> None:
    """A client with hooks keeps input open until the CLI reports ``idle`` after the result (up to ten minutes
    without it); the recorded turn brings its idle, and a turn cut short of it is ended with one."""
    sc = load_scenario(scenario_file(tmp_path, "states", recorded_with_states(tmp_path / "states.jsonl")))
    script = sc.scripts()[0]
    if cut:
        script.frames = [f for f in script.frames if f.data.get("state") != "idle"]

    async def hook(*_: Any) -> dict[str, Any]:
        return {}

    async def main() -> list[Any]:
        options = ClaudeAgentOptions(hooks={"PreToolUse": [HookMatcher(matcher=None, hooks=[hook])]})
        transport = FakeTransport(sc.session, scripts=[script])
        with anyio.fail_after(5):
            return [m async for m in query(prompt="go", options=options, transport=transport)]

    messages = anyio.run(main, backend=anyio_backend_name)
    assert isinstance(messages[-1], ResultMessage)


# --- a wait that would never end, bounded -----------------------------------------------------------------------


class Withholding(FakeTransport):
    """A CLI that never writes the result of the first query: the runner waits for a message that never comes."""

    async def _play(self, script: Script) -> AsyncIterator[dict[str, Any]]:
        async for data in super()._play(script):
            if not (script.query_index == 0 and data.get("type") == "result"):
                yield data


STALL = ("ctxsim: the run over session 'states' stalled: no progress from the SDK client for over 0.2 s "
         "(silence_timeout=0.2) in query 1 of 2, waiting for message 6 of 6 (frame 7: result/success, q1 result); "
         "the last delivered was message 5 of query 1 (AssistantMessage; frame 6: assistant, q1 call 2)")


def test_a_message_that_never_comes_ends_the_run_within_the_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, anyio_backend_name: str) -> None:
    monkeypatch.setattr(ctxsim.check._run, "FakeTransport", Withholding)
    sc = load_scenario(scenario_file(tmp_path, "states", recorded_with_states(tmp_path / "states.jsonl")))

    async def main() -> ctxsim.check.Report:
        with anyio.fail_after(GUARD):
            return await arun_tracker(make("reference"), sc.session, scripts=sc.scripts(), silence_timeout=0.2)

    report = anyio.run(main, backend=anyio_backend_name)
    assert report.stall == STALL
    assert not report.ok and report.summary() == STALL
    assert [p.observation.label for p in report.points] == ["q1 call 1", "q1 call 2"]


class EndingEarly(FakeTransport):
    """A CLI whose output ends after the first query's first two frames (the process exited)."""

    async def _play(self, script: Script) -> AsyncIterator[dict[str, Any]]:
        async with aclosing(super()._play(script)) as played:
            async for data in played:
                if data is script.frames[2].data:
                    self._closed = True
                    return
                yield data


def test_a_stream_that_ends_early_ends_the_run_saying_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         anyio_backend_name: str) -> None:
    monkeypatch.setattr(ctxsim.check._run, "FakeTransport", EndingEarly)
    sc = load_scenario(scenario_file(tmp_path, "states", recorded_with_states(tmp_path / "states.jsonl")))

    async def main() -> ctxsim.check.Report:
        with anyio.fail_after(GUARD):
            return await arun_tracker(make("reference"), sc.session, scripts=sc.scripts())

    report = anyio.run(main, backend=anyio_backend_name)
    assert report.stall == (
        "ctxsim: the run over session 'states' stalled: the SDK client's message stream ended in query 1 of 2, "
        "waiting for message 2 of 6 (frame 3: assistant); the last delivered was message 1 of query 1 "
        "(SystemMessage; frame 2: system/init)")


def test_a_stalled_scenario_fails_whatever_it_expects_and_ctxsim_run_says_where(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ctxsim.check._run, "FakeTransport", Withholding)
    path = scenario_file(tmp_path, "states", recorded_with_states(tmp_path / "states.jsonl"))
    sc = load_scenario(path)
    run = within(GUARD, lambda: run_scenario(sc, make("mala-overwrite"), silence_timeout=0.2))
    assert run.stalled and not run.ok  # expected to fail, but a stall is no such failure
    monkeypatch.setitem(run_scenario.__kwdefaults__, "silence_timeout", 0.2)
    assert within(GUARD, lambda: cli.main(["run", str(path)])) == 1
    out = capsys.readouterr().out
    assert "== reference: the run did not finish (the SDK client went silent): NOT AS EXPECTED" in out
    assert "== mala-overwrite: the run did not finish" in out
    assert STALL in out


CONFTEST = """\
import ctxsim.check
import ctxsim.runner._scenario
from ctxsim.sdk import FakeTransport


class Withholding(FakeTransport):
    async def _play(self, script):
        async for data in super()._play(script):
            if not (script.query_index == 0 and data.get("type") == "result"):
                yield data


def pytest_configure(config):
    ctxsim.check._run.FakeTransport = Withholding
    ctxsim.runner.run_scenario.__kwdefaults__["silence_timeout"] = 0.2
"""


def test_a_stalled_scenario_is_a_failing_item_not_a_crash_of_the_run(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST)
    scenarios = pytester.path / "scenarios"
    scenarios.mkdir()
    scenario_file(scenarios, "states", recorded_with_states(scenarios / "states.jsonl"))
    result = pytester.runpytest_subprocess("--ctx-scenarios=scenarios", "-v", timeout=GUARD)
    result.assert_outcomes(failed=2)  # the reference and mala-overwrite, which is expected to fail
    result.stdout.fnmatch_lines([
        "scenarios/states.yaml:*: reference on scenario 'states': the run did not finish (the SDK client went "
        "silent) (expect.reference: pass)",
        STALL,
        "scenarios/states.yaml:4: mala-overwrite on scenario 'states': the run did not finish (the SDK client "
        "went silent) (expect.fail)",
    ])
    assert "INTERNALERROR" not in result.stdout.str() and "Traceback" not in result.stdout.str()
