"""The live backend: the real Claude Code CLI bundled in claude-agent-sdk, against ctxsim's fake Messages API.

Marked ``live`` (CI runs them; ``-m 'not live'`` deselects them). Each test checks, when it ends, that it left no
child process, no thread and no listening socket behind. Expected values come from the real CLI: the fidelity
tests compare what it does with what the in-process fake does for the same world, and with the captures that ship
in ``ctxsim/wire/captures`` (of the installed version, or the newest one below it).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
from cli_wrapper import fidelity as _fidelity, wrapper as _wrapper
from live_known import unexplained

from ctxsim.lab._fidelity import SESSIONS, Played, play_inprocess, play_live
from ctxsim.lab._projection import compare, compare_keys, compare_raw
from ctxsim.lab._record import CAPTURES, capture_for
from ctxsim.lab.release import drift
from ctxsim.live._api import FakeMessagesAPI, Reply
from ctxsim.live._claude import LiveClaude, LiveError, child_processes
from ctxsim.plugin import DRIFT_PROPERTY
from ctxsim.world import Text

pytestmark = pytest.mark.live


def listening_sockets() -> set[int]:
    """Inodes of the TCP sockets this process holds that are listening (from /proc)."""
    mine = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            mine.add(int(target[8:-1]))
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                listening.add(int(fields[9]))
    return mine & listening


def _threads() -> set[threading.Thread]:
    return set(threading.enumerate())


@pytest.fixture(autouse=True)
def leaves_nothing_behind() -> Iterator[None]:
    """After each live test: no new child process, thread or listening socket of this process."""
    children, threads, sockets = child_processes(), _threads(), listening_sockets()
    yield
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        left = (child_processes() - children, _threads() - threads, listening_sockets() - sockets)
        if not any(left):
            return
        time.sleep(0.05)
    processes, extra_threads, extra_sockets = left
    assert not processes, f"child processes left: {sorted(processes)}"
    assert not extra_threads, f"threads left: {[t.name for t in extra_threads]}"
    assert not extra_sockets, f"listening sockets left: {sorted(extra_sockets)}"


# --- fidelity -------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SESSIONS))
def test_live_and_inprocess_agree(name: str, record_property: Callable[[str, object], None]) -> None:
    """The scripted session through the real CLI, and its world through FakeTransport, each with the same hook
    callbacks (every event) and, where the permission mode asks, a can_use_tool callback: every tracker-relevant
    field of every message and of get_context_usage, every hook call and permission prompt, at every step, and the
    tracked keys of every raw frame kind, compared. What no tracker reads (keys the fake does not write) and the
    drift from the capture of the nearest recorded version go to the run's summary, not to a failure; against the
    capture of the installed version itself, a changed field (not a number) fails."""
    scripted = SESSIONS[name]

    async def both() -> tuple[Played, Played]:
        live = await play_live(scripted, timeout=30)
        assert live.session is not None
        inprocess = await play_inprocess(live.session, include_partial_messages=scripted.include_partial_messages,
                                         hooks=scripted.hooks)
        return live, inprocess

    live, inprocess = anyio.run(both)
    differences = compare(live.steps, inprocess.steps, initial=(live.initial, inprocess.initial))
    keys = compare_keys(live.frame_keys, inprocess.frame_keys)
    differences += compare_raw(live.raw, inprocess.raw)
    problem = unexplained(name, [d for d in differences + keys if d.tracked])  # moved categories: not tracked
    assert not problem, problem
    untracked = sorted({f"{d.kind.removeprefix('frames ')} {d.field.removeprefix('keys: ')}" for d in keys
                        if not d.tracked})
    if untracked:
        record_property(DRIFT_PROPERTY, f"{name}: {len(untracked)} key(s) of Claude Code {live.cli_version} the "
                                        f"fake does not write, none read by trackers")

    chosen = capture_for(live.cli_version)
    assert chosen is not None, f"no capture ships in {CAPTURES}: run `ctxsim fidelity --record {CAPTURES}`"
    captured_version, captures = chosen
    assert name in captures, f"the captures of {captured_version} lack {name!r}: re-record them"
    moved = drift(captures[name], live)
    if captured_version != live.cli_version or moved.keys or moved.numbers:
        record_property(DRIFT_PROPERTY, moved.summary(name))
    if captured_version == live.cli_version:
        assert not moved.changed, "drift from the capture of the same version:\n" + "\n".join(map(str, moved.changed))


# --- lifecycle --------------------------------------------------------------------------------------------------


def test_an_error_inside_the_block_stops_everything() -> None:
    api = FakeMessagesAPI()

    async def main() -> None:
        async with LiveClaude(api) as live:
            assert live.pids and live.pids <= child_processes()
            await live.ask("hello")
            raise ValueError("boom")

    with api, pytest.raises(ValueError, match="boom"):
        anyio.run(main)
    assert api.thread is None and [s.request.kind for s in api.served] == ["main"]


def test_cancelled_mid_stream_stops_the_cli() -> None:
    """The model hangs mid-stream; the test gives up on the query (an anyio cancellation, as a timeout or Ctrl-C
    in the host would): the CLI is stopped within the disconnect bound, nothing is left."""
    pids: set[int] = set()

    async def main() -> None:
        async with LiveClaude(disconnect_timeout=1.0) as live:
            pids.update(live.pids)
            live.api.model.main.append(Reply((Text("never"),), delay=60))
            with anyio.move_on_after(1.5) as scope:
                await live.ask("hang")
            assert scope.cancelled_caught

    started = time.monotonic()
    anyio.run(main)
    assert pids and not pids & child_processes()
    assert time.monotonic() - started < 15


def test_keyboard_interrupt_inside_the_block_stops_everything() -> None:
    async def main() -> None:
        async with LiveClaude():
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        anyio.run(main)


def test_a_query_that_gets_no_answer_ends_in_a_ctxsim_error() -> None:
    async def main() -> None:
        async with LiveClaude(disconnect_timeout=1.0) as live:
            live.api.model.main.append(Reply((Text("never"),), delay=60))
            await live.ask("hang", timeout=1.0)

    with pytest.raises(LiveError, match=r"^ctxsim: no result for the query 'hang' within 1 s"):
        anyio.run(main)


def test_over_window_prompt_gets_the_api_error_and_the_cli_compacts() -> None:
    """A prompt over the window gets 400 'prompt is too long'; the CLI compacts reactively and retries."""

    async def main() -> list[str]:
        async with LiveClaude() as live:
            await live.ask("hello")
            live.api.model.main.append(Reply((Text("too big"),), prompt=210_000))
            messages = await live.ask("a huge one")
            kinds = [s.request.kind for s in live.api.served]
            assert [s.reply.error is not None for s in live.api.served].count(True) == 1
            error = next(s.reply.error for s in live.api.served if s.reply.error is not None)
            assert error is not None and error[0] == 400
            assert error[1]["error"]["message"].startswith("prompt is too long: ")
            boundary = [m for m in messages if getattr(m, "subtype", None) == "compact_boundary"]
            assert boundary and boundary[0].data["compact_metadata"]["trigger"] == "auto"
            return kinds

    assert anyio.run(main) == ["main", "main", "compact", "main"]


# --- scenarios through the live backend ---------------------------------------------------------------------------

CORPUS = Path(__file__).resolve().parents[2] / "scenarios"


def test_a_corpus_scenario_has_the_same_verdict_live_and_in_process() -> None:
    from ctxsim.live._scenarios import live_skip_reason, run_scenario_live
    from ctxsim.runner._scenario import run_scenario
    from ctxsim.scenario import SessionScenario, load_scenario
    from ctxsim.trackers.catalogue import make

    scenario = load_scenario(CORPUS / "b08-result-usage-as-context.yaml")
    assert isinstance(scenario, SessionScenario) and live_skip_reason(scenario) is None
    for tracker in ("reference", *scenario.must_fail):
        inprocess, live = run_scenario(scenario, make(tracker)), run_scenario_live(scenario, make(tracker))
        assert (inprocess.ok, live.ok) == ((tracker == "reference"),) * 2, tracker
        assert [(p.observation.label, p.estimate) for p in live.report.points] == [
            (p.observation.label, p.estimate) for p in inprocess.report.points], tracker


def test_ctx_backend_live_runs_what_it_can_and_skips_the_rest(pytester: pytest.Pytester) -> None:
    for name in ("b08-result-usage-as-context.yaml", "compaction.yaml"):
        (pytester.path / name).write_text((CORPUS / name).read_text())
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # the suite's pytest-asyncio
    result = pytester.runpytest("--ctx-scenarios=.", "--ctx-backend=live", "-rs", "-p", "no:randomly")
    result.assert_outcomes(passed=2, skipped=3)  # compaction.yaml: reference, arbiter-msgid, ccstatusline
    result.stdout.fnmatch_lines(["*ctxsim: --ctx-backend=live: query 2 compacts: the live CLI decides compaction*"])


# --- fidelity sees what it compares (issue 18's two planted divergences, against the real CLI) ----------------------


def _planted_on_live(plant: Callable[[dict[str, object]], dict[str, object]]) -> list[str]:
    """Play partial-messages live, then in-process with ``plant`` editing the fake's frames: the tracked fields
    the comparison names."""

    async def both() -> list[str]:
        scripted = SESSIONS["partial-messages"]
        live = await play_live(scripted, timeout=30)
        assert live.session is not None
        fake = await play_inprocess(live.session, include_partial_messages=True, hooks=scripted.hooks,
                                    edit=plant)  # type: ignore[arg-type]
        differences = compare(live.steps, fake.steps, initial=(live.initial, fake.initial))
        return sorted({f"{d.kind} {d.field}" for d in differences if d.tracked})

    return anyio.run(both)


def test_a_per_block_stop_reason_planted_in_the_fake_fails_against_the_cli() -> None:
    """The CLI writes ``stop_reason: null`` on every per-block assistant message; a fake that copies the call's
    stop reason onto them is named."""

    def plant(frame: dict[str, object]) -> dict[str, object]:
        if frame.get("type") != "assistant":
            return frame
        message = dict(frame["message"])  # type: ignore[call-overload]
        message["stop_reason"] = "end_turn"
        return {**frame, "message": message}

    assert _planted_on_live(plant) == ["assistant stop_reason"]


def test_a_message_delta_input_shift_planted_in_the_fake_fails_against_the_cli() -> None:
    def plant(frame: dict[str, object]) -> dict[str, object]:
        event = frame.get("event")
        if frame.get("type") != "stream_event" or not isinstance(event, dict) or event.get("type") != "message_delta":
            return frame
        usage = dict(event["usage"])
        usage["input_tokens"] += 777
        return {**frame, "event": {**event, "usage": usage}}

    assert _planted_on_live(plant) == ["stream_event/message_delta usage.input_tokens"]


# --- ctxsim fidelity on any CLI (the wrapper: cli_wrapper.py) -----------------------------------------------------


def test_fidelity_on_a_wrapper_that_inflates_cache_reads_exits_1_naming_the_field(tmp_path: Path) -> None:
    cli = _wrapper(tmp_path, """
if frame.get("type") == "assistant":
    frame["message"]["usage"]["cache_read_input_tokens"] += 1000""")
    status, out, _ = _fidelity("several-queries", "--cli", str(cli), "--no-noise")
    assert status == 1, out
    lines = out.splitlines()
    tracked = lines[lines.index("fields trackers read that differ (fake → CLI):") + 1:]
    assert tracked[0].startswith("  usage.cache_read_input_tokens: ") and "(+1000" in tracked[0], out
    assert out.splitlines()[0].startswith("FAIL: ")  # the verdict first


def test_fidelity_on_a_wrapper_that_adds_an_untracked_key_exits_0_listing_it(tmp_path: Path) -> None:
    cli = _wrapper(tmp_path, """
if frame.get("type") == "assistant":
    frame["ctxsim_probe"] = 1""")
    status, out, _ = _fidelity("several-queries", "--cli", str(cli), "--json")
    assert status == 0, out
    report = json.loads(out)
    (session,) = report["sessions"]
    assert {"field": "keys: ctxsim_probe", "tracked": False} in [
        {"field": d["field"], "tracked": d["tracked"]} for d in session["differences"]]
    assert "appeared: assistant ctxsim_probe" in session["drift"]["summary"]


def test_fidelity_on_a_cli_that_cannot_start_is_one_ctxsim_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-claude"
    status, out, err = _fidelity("--cli", str(missing))
    assert status == 2 and not out
    assert err.startswith(f"ctxsim: the CLI {missing} cannot be started: ") and err.count("\n") == 1


# --- temporary directories ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["clean", "error", "interrupt"])
def test_a_live_run_leaves_nothing_in_the_temp_directory(ending: str, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Everything a live run makes (ctxsim's work directory; the CLI's project directory, fs.watch probes and
    cwd files under claude-<uid>/) is gone when it ends: cleanly, on an error, on an interrupt."""
    import tempfile

    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))  # the system temp directory of this run, and of the CLI it starts
    monkeypatch.setattr(tempfile, "tempdir", None)
    api = FakeMessagesAPI()
    seen: list[Path] = []

    async def main() -> None:
        async with LiveClaude(api) as live:
            await live.ask("hello")
            seen.extend(private.rglob("*"))
            if ending == "error":
                raise ValueError("boom")
            if ending == "interrupt":
                raise KeyboardInterrupt

    with api:
        if ending == "clean":
            anyio.run(main)
        else:
            with pytest.raises((ValueError, KeyboardInterrupt)):
                anyio.run(main)
    assert any(p.name.startswith("ctxsim-live-") for p in seen)  # it did use this temp directory
    assert any("claude-" in p.name for p in seen), [str(p) for p in seen]  # and so did the CLI, inside it
    assert list(private.iterdir()) == []
