"""The live backend: the real Claude Code CLI bundled in claude-agent-sdk, against ctxsim's fake Messages API.

Marked ``live`` (CI runs them; ``-m 'not live'`` deselects them). Each test checks, when it ends, that it left no
child process, no thread and no listening socket behind. Expected values come from the real CLI: the conformance
tests compare what it does with what the in-process fake does for the same world, and with the captures in
``tests/captures``.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from live_known import unexplained

from ctxsim.live.api import FakeMessagesAPI, Reply
from ctxsim.live.claude import LiveClaude, LiveError, bundled_cli_version, child_processes
from ctxsim.live.conformance import SESSIONS, play_inprocess, play_live
from ctxsim.live.projection import compare
from ctxsim.live.record import capture_dir, drift, load_capture
from ctxsim.world import Text

pytestmark = pytest.mark.live

CAPTURES = Path(__file__).parent / "captures"


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


# --- conformance ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(SESSIONS))
def test_live_and_inprocess_agree(name: str) -> None:
    """The scripted session through the real CLI, and its world through FakeTransport, each with the same hook
    callbacks (every event) and, where the permission mode asks, a can_use_tool callback: every tracker-relevant
    field of every message and of get_context_usage, and every hook call and permission prompt, at every step,
    compared. Then the live run against the recorded capture (the drift report)."""
    scripted = SESSIONS[name]

    async def both() -> tuple[object, object]:
        live = await play_live(scripted, timeout=30)
        assert live.session is not None
        inprocess = await play_inprocess(live.session, include_partial_messages=scripted.include_partial_messages,
                                         hooks=scripted.hooks)
        return live, inprocess

    live, inprocess = anyio.run(both)
    differences = compare(live.steps, inprocess.steps, initial=(live.initial, inprocess.initial))  # type: ignore[attr-defined]
    problem = unexplained(name, differences)
    assert not problem, problem

    path = capture_dir(CAPTURES, bundled_cli_version()) / f"{name}.json"
    if not path.exists():
        recorded = sorted(CAPTURES.glob(f"claude-code-*/{name}.json"))
        assert recorded, f"no capture of {name!r} in {CAPTURES}: run `ctxsim record {name}`"
        capture = load_capture(recorded[-1])
        changed, numbers = drift(capture, live)  # type: ignore[arg-type]
        report = "\n".join(str(d) for d in changed + numbers) or "(no field changed)"
        pytest.fail(f"ctxsim: the bundled CLI is {bundled_cli_version()}, the capture of {name!r} is of "
                    f"{capture.cli_version}; fields that changed:\n{report}\nre-record with `ctxsim record`")
    changed, _numbers = drift(load_capture(path), live)  # type: ignore[arg-type]
    assert not changed, "drift from the capture:\n" + "\n".join(map(str, changed))


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

CORPUS = Path(__file__).resolve().parents[1] / "scenarios"


def test_a_corpus_scenario_has_the_same_verdict_live_and_in_process() -> None:
    from ctxsim.live.scenarios import live_skip_reason, run_scenario_live
    from ctxsim.scenario import SessionScenario, load_scenario
    from ctxsim.scenario_run import run_scenario
    from ctxsim.trackers import make

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
