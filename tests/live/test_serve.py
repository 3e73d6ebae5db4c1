"""``ctxsim serve``: one scenario's fake Messages API for any client of the real CLI, behind its own credential, a 4xx
for what the script does not have, the truth at every point, and the verdict on a tracker's estimates."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxsim.corpus import find_scenario
from ctxsim.live import release_notice
from ctxsim.live._claude import LiveClaude
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.serve import EstimatesError, ScenarioServer, read_estimates
from ctxsim.trackers.catalogue import reference_for

B01 = "b01-no-dedupe-without-request-id"
TOOLS = [{"name": "Bash", "description": "run", "input_schema": {"type": "object"}}]
MAIN = {"model": "claude-sonnet-4-5", "max_tokens": 100, "stream": False, "tools": TOOLS,
        "system": [{"type": "text", "text": "You are a Claude agent."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Go"}]}]}


def scenario(name: str) -> SessionScenario:
    loaded = load_scenario(find_scenario(name))
    assert isinstance(loaded, SessionScenario)
    return loaded


def call(url: str, data: dict[str, Any] | None = None, key: str | None = None) -> tuple[int, Any]:
    headers = {"content-type": "application/json", **({"x-api-key": key} if key else {})}
    request = urllib.request.Request(url, json.dumps(data).encode() if data is not None else None, headers=headers,
                                     method="POST" if data is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_it_answers_its_own_credential_only_and_refuses_what_the_script_does_not_have_with_a_4xx() -> None:
    with ScenarioServer(scenario(B01)) as server:
        url = server.api.base_url + "/v1/messages"
        status, body = call(url, MAIN)
        assert status == 401 and body["error"]["type"] == "authentication_error"
        status, body = call(url, MAIN, key="sk-ant-ctxsim-fake-0000")
        assert status == 401
        replies = [call(url, MAIN, key=server.key) for _ in range(3)]
        assert [status for status, _ in replies] == [200, 200, 400]  # b01 has two main-chain calls
        assert replies[0][1]["usage"]["cache_read_input_tokens"] == 16_945
        assert replies[2][1]["error"]["message"] == (f"ctxsim serve: scenario '{B01}': request #3 refused: the "
                                                     f"script's main calls are used up")
        side = {k: v for k, v in MAIN.items() if k != "tools"}
        status, body = call(url, side, key=server.key)
        assert status == 400 and "a side request (no tools: a title, a probe) does not belong" in body["error"][
            "message"]
        assert server.api.rejected == ['POST /v1/messages'] * 2 and len(server.refused) == 2


def test_its_settings_are_what_a_client_needs_and_its_truth_names_what_closes_each_point() -> None:
    played = scenario("b14-resume-invalidates-cache")
    with ScenarioServer(played) as server:
        settings = server.settings()
        assert settings["env"]["ANTHROPIC_BASE_URL"] == server.api.base_url
        assert settings["env"]["ANTHROPIC_API_KEY"] == server.key and server.key.startswith("sk-ant-ctxsim-")
        assert settings["prompts"] == [q.prompt for q in played.session.queries]
        assert settings["world"]["CTXSIM_WINDOW"] == "200000"
        status, truth = call(settings["truth_url"], key=settings["env"]["ANTHROPIC_API_KEY"])
    assert status == 200
    assert [p["point"] for p in truth["points"]] == ["q1 call 1", "q1 result", "q2 call 1", "q2 result",
                                                     "q3 call 1", "q3 result"]
    first = truth["points"][0]
    assert first["after"] == {"type": "assistant", "query": 1, "message_id": played.session.calls[0].message_id,
                              "n": 1}
    assert (first["low"], first["high"]) == (173_648, 173_848)
    assert truth["points"][1]["after"] == {"type": "result", "query": 1}


MID_TURN_COMPACTION = """\
name: mid-turn-compaction
description: "an automatic compaction mid-turn after an answer (its twin: a query of its own after one call)"
world: {window: 200000, baseline: 12000}
queries:
  - prompt: "Go"
    steps:
      - call: {in: 3, cc: 1000, cr: 140000, out: 100}
      - compact: {pre: 141103, post: 20000, trigger: auto}
      - call: {out: 50}
expect: {reference: pass}
"""


def test_a_scenario_the_live_cli_cannot_play_is_refused_saying_why(tmp_path: Path) -> None:
    (tmp_path / "mid.yaml").write_text(MID_TURN_COMPACTION)
    with pytest.raises(ValueError, match="query 2 compacts on its own after a single call: the live CLI"):
        ScenarioServer(load_scenario(tmp_path / "mid.yaml"))  # type: ignore[arg-type]


def test_an_automatic_compaction_after_a_single_call_is_asked_for_in_the_twin_keeping_its_points() -> None:
    from ctxsim.live._twins import COMPACT_PROMPT, live_twin
    from ctxsim.world import Compaction

    original = scenario("compaction")
    twin = live_twin(original)
    assert twin is not None
    assert [q.prompt for q in twin.session.queries] == ["Keep going with the refactor", COMPACT_PROMPT, "Continue"]
    compaction = twin.session.queries[1].steps
    assert len(compaction) == 1 and isinstance(compaction[0], Compaction) and compaction[0].trigger == "manual"
    before = {o.label: o.truth for o in original.observations()}
    after = {o.label: o.truth for o in twin.observations()}
    assert after["q2 compaction"] == before["q2 compaction"]  # where the expected failures first show
    assert after["q3 call 1"] == before["q2 call 1"] and after["q3 result"] == before["q2 result"]


def test_serve_places_the_clis_autocompact_point_between_the_prompts_that_must_and_must_not_compact() -> None:
    from ctxsim.live._twins import AUTOCOMPACT_RESERVE, autocompact_window, compaction_reason
    from ctxsim.world import Call, Compaction, Query, Session, Text, ToolUse

    def call(prompt: int, tool: bool = False) -> Call:
        return Call(3, 0, prompt - 3, 10, (ToolUse("t", "Bash", {}) if tool else Text("ok"),), f"msg_{prompt}")

    two = Query("read", (call(60_000, tool=True), call(150_000)))
    auto = Query("go on", (Compaction(150_100, 3_000), call(20_000)))
    session = Session("s", (two, auto))
    window = autocompact_window(session)
    assert window is not None and 60_000 + 2_000 < window - AUTOCOMPACT_RESERVE < 150_000 - 2_000
    assert window > 150_000  # the compacting prompt stays inside the CLI's window
    assert compaction_reason(session) is None
    close = Session("s", (Query("read", (call(140_000, tool=True), call(141_000))), auto))
    assert "no autocompact point lies between" in str(compaction_reason(close))
    by_hand = Session("s", (two, Query("compact it", (Compaction(150_100, 3_000, trigger="manual"),))))
    assert "live, that is a query of its own whose prompt is /compact" in str(compaction_reason(by_hand))


def test_it_judges_estimates_by_point_and_says_where_a_file_is_wrong(tmp_path: Path) -> None:
    with ScenarioServer(scenario(B01)) as server:
        points = server.observations()
        good = tmp_path / "good.jsonl"
        good.write_text("".join(json.dumps({"point": p.label, "estimate": p.truth.prompt}) + "\n" for p in points))
        assert server.judge(read_estimates(good, points)).ok
        summed = tmp_path / "summed.jsonl"
        summed.write_text(json.dumps({"point": 1, "estimate": 3 * points[0].truth.prompt}) + "\n")
        run = server.judge(read_estimates(summed, points))
        assert not run.ok and run.report.failures[0].observation.label == "q1 call 1"
        for line, says in [("not json", "summed.jsonl:2: not a JSON line"),
                           ('{"point": "q9 call 1", "estimate": 1}', "summed.jsonl:2: key 'point': 'q9 call 1' is no "
                                                                     "observation point"),
                           ('{"point": 1, "estimate": "12"}', "summed.jsonl:2: key 'estimate': '12' is not a number "
                                                               "or null"),
                           ('{"point": 1, "estimate": 12.5}', "summed.jsonl:2: key 'estimate': 12.5 is not a token "
                                                             "count or null (a gauge's number needs a line"),
                           ('{"quantity": "percent"}', "summed.jsonl:2: key 'quantity': 'percent' is none of "
                                                       "tokens, percent_of_window")]:
            summed.write_text(json.dumps({"point": 1, "estimate": 5}) + "\n" + line + "\n")
            with pytest.raises(EstimatesError) as raised:
                read_estimates(summed, points)
            assert says in str(raised.value)


def test_a_gauges_estimates_are_judged_in_the_quantity_they_declare_as_in_process(tmp_path: Path) -> None:
    from ctxsim.runner import judgement, served
    from ctxsim.world import in_quantity

    played = scenario("autocompact-window-setting")  # percent_until_autocompact, 67,000 of a 100,000 window
    session = played.session
    with ScenarioServer(played) as server:
        points = server.observations()
        shown = {o.index: round(in_quantity(o.truth.prompt, "percent_until_autocompact", o.window,
                                            session.threshold_of(o.window))) for o in points}
        path = tmp_path / "gauge.jsonl"
        path.write_text(json.dumps({"quantity": "percent_until_autocompact"}) + "\n" + "".join(
            json.dumps({"point": index, "estimate": value}) + "\n" for index, value in shown.items()))
        estimates = read_estimates(path, points)
        assert estimates.quantity == "percent_until_autocompact" and estimates[1] == 52
        run = server.judge(estimates)
        assert run.ok and run.report.quantity == "percent_until_autocompact", run.table()
        assert [p.shown for p in run.report.points][:1] == [52]
        as_tokens = server.judge(estimates, quantity="tokens")  # 52 tokens: far under the truth
        assert not as_tokens.ok and as_tokens.report.failures[0].observation.label == "q1 call 1"
        model_window = {i: round(in_quantity(o.truth.prompt, "percent_until_autocompact", o.window, 167_000))
                        for i, o in ((o.index, o) for o in points)}
        wrong = server.judge({**model_window}, quantity="percent_until_autocompact")
    assert not wrong.ok and wrong.report.confusion == ("ctxsim: the gauge counts to an autocompact point of 167,000 "
                                                       "where the session compacts at 67,000")
    verdict = served(played, "gauge", "percent_until_autocompact")
    assert verdict.quantity == "percent_until_autocompact" and served(played, "gauge").quantity == "tokens"
    in_process = judgement(played, "model-window-autocompact-gauge").run()
    by_serve = served(played, "model-window-autocompact-gauge", "percent_until_autocompact").judge(wrong)
    assert by_serve.run is not None and in_process.run is not None
    assert by_serve.first == in_process.first and by_serve.does == in_process.does


def test_ctxsim_serve_prints_the_settings_then_on_sigterm_the_truth_and_the_verdict(tmp_path: Path) -> None:
    estimates = tmp_path / "estimates.jsonl"
    ctxsim = [sys.executable, "-m", "ctxsim.cli", "serve", B01, "--json", "--judge", str(estimates), "--timeout", "60"]
    process = subprocess.Popen(ctxsim, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        settings = json.loads(process.stdout.readline())
        for _ in range(2):  # the client plays b01's two calls
            assert call(settings["env"]["ANTHROPIC_BASE_URL"] + "/v1/messages", MAIN,
                        key=settings["env"]["ANTHROPIC_API_KEY"])[0] == 200
        status, truth = call(settings["truth_url"], key=settings["env"]["ANTHROPIC_API_KEY"])
        assert status == 200
        estimates.write_text("".join(json.dumps({"point": p["point"], "estimate": p["low"]}) + "\n"
                                     for p in truth["points"]))
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert result["verdict"]["ok"] and result["truth"]["points"] == truth["points"]


def test_ctxsim_serve_refuses_what_it_cannot_play_and_a_busy_port(capsys: pytest.CaptureFixture[str],
                                                                   tmp_path: Path) -> None:
    from ctxsim.cli import main

    bounded = ["--timeout", "5"]  # should one of these start serving after all, the test still ends
    assert main(["serve", "multi-restart-40-steps", "--judge", str(tmp_path / "x.jsonl"), *bounded]) == 2
    assert "is a task scenario: its fake agent's record is what is printed" in capsys.readouterr().err
    (tmp_path / "mid.yaml").write_text(MID_TURN_COMPACTION)
    assert main(["serve", str(tmp_path / "mid.yaml"), *bounded]) == 2
    assert "query 2 compacts on its own after a single call" in capsys.readouterr().err
    assert main(["serve", B01, "--prompts", str(tmp_path / "p.json"), *bounded]) == 2
    assert "--prompts: b01-no-dedupe-without-request-id is a session scenario" in capsys.readouterr().err
    assert main(["serve", "multi-restart-40-steps", "--prompts", str(tmp_path / "none.json"), *bounded]) == 2
    assert f"ctxsim: serve --prompts: {tmp_path / 'none.json'}: cannot read it" in capsys.readouterr().err
    assert main(["serve", *bounded]) == 2
    assert "name the scenario to serve (or --list" in capsys.readouterr().err
    with ScenarioServer(scenario(B01)) as server:
        assert main(["serve", B01, "--port", str(server.api.port), *bounded]) == 2
    assert f"cannot listen on 127.0.0.1:{server.api.port}" in capsys.readouterr().err


def play_served(server: ScenarioServer, tracker: Any, messages: list[Any] | None = None) -> dict[int, float | None]:
    """A client of the real CLI as a user of serve writes one (the settings' model, environment, CLI and prompts):
    the tracker fed every message (kept in ``messages``), its estimate taken where the truth says a point closes."""
    from ctxsim.serve import ServedPoints, play_served as play

    played = anyio.run(play, server)
    if messages is not None:
        messages.extend(played)
    points = ServedPoints(server.truth())
    estimates: dict[int, float | None] = {}
    for message in played:
        tracker.observe(message)
        index = points.observe(message)
        if index is not None:
            estimates[index] = tracker.context_tokens()
    return estimates


@pytest.mark.live
@pytest.mark.parametrize("name", ["b14-resume-invalidates-cache", "statusline-stuck-after-compact",
                                  "repl-compact-keeps-last-reply", "window-1m-suffix", "window-1m-disabled",
                                  "b25-error-result-zeroed-usage", "repeated-message-delta", "reused-message-ids",
                                  "b19-subagent-line-as-latest"])
def test_the_real_cli_plays_a_scenario_through_serve_and_the_reference_tracks_it(name: str) -> None:
    played = scenario(name)
    messages: list[Any] = []
    with ScenarioServer(played) as server:
        tokens = reference_for(dataclasses.replace(played.session, quantity="tokens"))  # serve judges tokens
        estimates = play_served(server, tokens, messages)
        assert server.refused == [] and server.api.rejected == [] and server.unplayed == 0
        windows = {usage["contextWindow"] for m in messages if type(m).__name__ == "ResultMessage"
                   for usage in (m.model_usage or {}).values()}
        assert windows == {played.session.window}  # the CLI gives the model the scenario's window
        assert sorted(estimates) == [o.index for o in server.observations()]
        run = server.judge(estimates)
        assert run.ok, run.table()
    assert os.environ.get("ANTHROPIC_API_KEY") != server.key


@pytest.mark.live
def test_the_real_cli_works_a_task_scenario_through_its_fake_agent_across_a_restart() -> None:
    from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock

    from ctxsim.reference import (
        CHECKPOINT_REQUEST_PROMPT,
        CONTINUE_PROMPT,
        build_continuation_prompt,
        extract_checkpoint,
    )
    from ctxsim.scenario import TaskScenario
    from ctxsim.serve import TaskServer

    played = load_scenario(find_scenario("checkpoint-block"))  # well-formed checkpoint first; one step a turn
    assert isinstance(played, TaskScenario)

    def text(messages: list[Any]) -> str:
        return "".join(b.text for m in messages if isinstance(m, AssistantMessage) for b in m.content
                       if isinstance(b, TextBlock))

    async def work(server: TaskServer) -> None:
        live_env = {"ANTHROPIC_API_KEY": server.key}
        async with LiveClaude(server.api, env=live_env) as live:
            await live.ask(server.settings()["prompts"][0])
            await live.ask(CONTINUE_PROMPT)
            answer = await live.ask(CHECKPOINT_REQUEST_PROMPT)
        assert isinstance(answer[-1], ResultMessage) and not answer[-1].is_error
        checkpoint = extract_checkpoint(text(answer))
        async with LiveClaude(server.api, env=live_env) as live:  # a new CLI session: the restart
            await live.ask(build_continuation_prompt(checkpoint))

    with TaskServer(played) as server:
        anyio.run(work, server)
        record = server.record()
    assert server.refused == [] and server.api.rejected == []
    assert [[t["kind"] for t in s["turns"]] for s in record["sessions"]] == [["task", "continue", "checkpoint"],
                                                                           ["continuation"]]
    assert [[t["steps"] for t in s["turns"]] for s in record["sessions"]] == [[["s01"], ["s02"], []], [["s03"]]]
    assert record["redone"] == 0 and not record["finished"]


@pytest.mark.live
def test_a_task_turn_whose_usage_cannot_be_read_reaches_the_client_unreadable_through_the_live_cli() -> None:
    from claude_agent_sdk import AssistantMessage

    from ctxsim.reference import CONTINUE_PROMPT, ContextTracker
    from ctxsim.scenario import TaskScenario
    from ctxsim.serve import TaskServer

    played = load_scenario(find_scenario("unknown-context-never-fires"))  # session 1, turn 3: "n/a" prompt counts
    assert isinstance(played, TaskScenario)
    seen: list[tuple[Any, int | None]] = []

    async def work(server: TaskServer) -> None:
        tracker = ContextTracker()
        async with LiveClaude(server.api, env={"ANTHROPIC_API_KEY": server.key}) as live:
            for prompt in [server.settings()["prompts"][0], CONTINUE_PROMPT, CONTINUE_PROMPT]:
                messages = await live.ask(prompt)
                for message in messages:
                    tracker.observe(message)
                usage = [m.usage for m in messages if isinstance(m, AssistantMessage) and m.usage]
                seen.append((usage[-1]["input_tokens"], tracker.context_tokens()))

    with TaskServer(played) as server:
        anyio.run(work, server)
    assert server.refused == [] and server.api.rejected == []
    assert [type(read) for read, _ in seen[:2]] == [int, int] and all(known is not None for _, known in seen[:2])
    assert seen[2] == ("n/a", None)  # the CLI passes the garbage on; no tracker knows the context there


def test_ctxsim_serve_a_task_prints_the_loop_prompts_it_reads_and_on_sigterm_the_agents_record() -> None:
    ctxsim = [sys.executable, "-m", "ctxsim.cli", "serve", "multi-restart-40-steps", "--json", "--timeout", "60"]
    process = subprocess.Popen(ctxsim, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        settings = json.loads(process.stdout.readline())
        assert settings["prompts"][0].startswith("Work through task 'multi-restart-40-steps': 40 steps")
        from ctxsim.reference import CHECKPOINT_REQUEST_PROMPT, CONTINUE_PROMPT, WIND_DOWN_PROMPT

        assert settings["loop_prompts"]["checkpoint_request"] == [CHECKPOINT_REQUEST_PROMPT]  # in full
        assert settings["loop_prompts"]["continue_prompt"] == [CONTINUE_PROMPT, WIND_DOWN_PROMPT]
        status, record = call(settings["truth_url"], key=settings["env"]["ANTHROPIC_API_KEY"])
        assert status == 200 and record["sessions"] == [] and record["skipped"][:2] == ["s01", "s02"]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 1, err  # nothing was done: the task is not finished
    assert json.loads(out.strip().splitlines()[-1])["record"]["finished"] is False


def serve_in_background(*args: str) -> tuple[subprocess.Popen[str], dict[str, Any]]:
    process = subprocess.Popen([sys.executable, "-m", "ctxsim.cli", "serve", *args, "--json", "--timeout", "60"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())


def stopped(process: subprocess.Popen[str]) -> tuple[str, str]:
    try:
        process.send_signal(signal.SIGTERM)
        return process.communicate(timeout=20)
    finally:
        process.kill()


@pytest.mark.parametrize(("requests", "says"), [
    (3, "the client did not play the script (1 request refused): exit 1"),
    (1, "the client did not play the script (1 of the script's calls never asked for): exit 1"),
    (0, "(2 of the script's calls never asked for)"),
])
def test_ctxsim_serve_exits_1_saying_so_when_the_client_left_the_script(requests: int, says: str) -> None:
    process, settings = serve_in_background(B01)
    url, key = settings["env"]["ANTHROPIC_BASE_URL"] + "/v1/messages", settings["env"]["ANTHROPIC_API_KEY"]
    statuses = [call(url, MAIN, key=key)[0] for _ in range(requests)]
    _, err = stopped(process)
    assert statuses == [200, 200, 400][:requests]
    assert process.returncode == 1 and says in err


def test_ctxsim_serve_a_task_exits_1_when_it_refused_a_request_even_had_the_task_finished() -> None:
    process, settings = serve_in_background("multi-restart-40-steps")
    url, key = settings["env"]["ANTHROPIC_BASE_URL"] + "/v1/messages", settings["env"]["ANTHROPIC_API_KEY"]
    compact = {**MAIN, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "CRITICAL: Respond with TEXT ONLY. Do NOT call any tools. <summary>"}]}]}
    status, body = call(url, compact, key=key)
    _, err = stopped(process)
    assert status == 400 and "it names no CLI session" in body["error"]["message"]
    assert process.returncode == 1 and "(1 request refused): exit 1" in err


def test_ctxsim_serve_list_says_which_scenarios_can_be_served_and_why_not(
        capsys: pytest.CaptureFixture[str]) -> None:
    from ctxsim.cli import main

    assert main(["serve", "--list", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    rows = {row["name"]: row for row in listed["scenarios"]}
    assert rows[B01] == {"name": B01, "kind": "session", "servable": True, "reason": None}
    assert rows["clear-new-session-id"]["servable"]  # the session its recording shows, built
    assert rows["seed004-autocompact-rearms-wind-down"]["servable"]  # the CLI's own autocompaction, steered
    assert all(row["servable"] for row in rows.values() if row["kind"] == "task")
    assert all(row["servable"] == (row["reason"] is None) for row in rows.values())
    for kind in ("session", "task"):
        assert listed["counts"][kind] == {"servable": sum(r["servable"] for r in rows.values() if r["kind"] == kind),
                                          "total": sum(r["kind"] == kind for r in rows.values())}
    assert main(["serve", "--list", B01]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["yes", "session", B01]
    assert out[-1] == "# servable: 1 of 1 session scenarios, 0 of 0 task scenarios"


@pytest.mark.live
def test_a_tracker_stale_after_compact_is_judged_wrong_at_the_compaction_the_live_cli_made() -> None:
    from ctxsim.trackers import make_tracker, resolve

    played = scenario("statusline-stuck-after-compact")
    stale = make_tracker(resolve("ccusage-fallback").factory, played.session)  # the last assistant line, kept
    with ScenarioServer(played) as server:
        estimates = play_served(server, stale)
        assert server.refused == [] and server.unplayed == 0
        compaction = next(p for p in server.truth()["points"] if p["point"] == "q3 compaction")
        run = server.judge(estimates)
    assert compaction["after"] == {"type": "compact_boundary", "query": 3, "n": 1}
    assert len(server.post_tokens()) == 1 and compaction["estimated"][0] == compaction["low"] == 14_477
    assert not run.ok and run.report.failures[0].observation.label == "q3 compaction"
    assert run.report.failures[0].estimate == 150_305


AUTO_COMPACTION = """\
name: served-autocompaction
description: compaction's bug on the shape the live CLI compacts on its own (two calls before it)
world: {window: 200000, baseline: 12000}
queries:
  - prompt: "Keep going with the refactor"
    steps:
      - call: {in: 3, cc: 1000, cr: 140000, blocks: [tool_use], out: 100}
      - call: {in: 3, cc: 2000, cr: 148000, out: 300}
  - prompt: "Continue"
    steps:
      - compact: {pre: 150000, post: 20000, trigger: auto}
      - call: {results: [2500], blocks: [tool_use], out: 90}
      - call: {out: 400}
expect: {tolerance: 2000, reference: pass}
"""


@pytest.mark.live
def test_the_live_cli_compacts_on_its_own_where_the_scenario_does_and_a_stale_maximum_is_judged_wrong(
        tmp_path: Path) -> None:
    from ctxsim.trackers import make_tracker, resolve

    (tmp_path / "auto.yaml").write_text(AUTO_COMPACTION)
    played = load_scenario(tmp_path / "auto.yaml")
    assert isinstance(played, SessionScenario)
    for spec, ok in [("reference", True), ("arbiter-msgid", False)]:
        with ScenarioServer(played) as server:
            assert int(server.settings()["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"]) > 150_003
            tracker = reference_for(played.session) if ok else make_tracker(resolve(spec).factory, played.session)
            estimates = play_served(server, tracker)
            assert server.refused == [] and server.unplayed == 0
            assert [s.request.kind for s in server.api.served] == ["main", "main", "compact", "main", "main"]
            run = server.judge(estimates)
        assert sorted(estimates) == [o.index for o in server.observations()]
        assert run.ok is ok, run.table()
        if not ok:
            assert run.report.failures[0].observation.label == "q2 compaction"


@pytest.mark.live
def test_compactions_twin_asks_the_live_cli_to_compact_and_its_expected_failures_show_where_they_do_in_process(
        ) -> None:
    from ctxsim.trackers import make_tracker, resolve

    played = scenario("compaction")
    for name, failure in played.failures.items():
        with ScenarioServer(played) as server:
            assert server.split and server.settings()["prompts"][1] == "/compact"
            estimates = play_served(server, make_tracker(resolve(name).factory, played.session))
            assert server.refused == [] and server.unplayed == 0
            assert [s.request.kind for s in server.api.served] == ["main", "compact", "main", "main"]
            run = server.judge(estimates, tracker=name)
        assert not run.ok and run.report.failures[0].observation.label == failure.first == "q2 compaction", name


@pytest.mark.live
def test_a_recorded_stream_is_served_as_the_session_it_shows_and_its_bug_shows_after_the_clear() -> None:
    from ctxsim.trackers import make_tracker, resolve

    played = scenario("clear-new-session-id")  # a recording: its twin is built from what it shows
    for name, ok in [("reference", True), ("arbiter-msgid", False)]:
        with ScenarioServer(played) as server:
            assert server.split and server.settings()["prompts"][1] == "/clear"
            tracker = reference_for(played.session) if ok else make_tracker(resolve(name).factory, played.session)
            estimates = play_served(server, tracker)
            assert server.refused == [] and server.unplayed == 0
            run = server.judge(estimates, tracker=name)
        assert run.ok is ok, run.table()
        if not ok:  # the recording's first failing point is q2 result; the twin's /clear query has its reset first
            assert [p.observation.label for p in run.report.failures][:2] == ["q2 reset", "q2 result"]


def servable_session_scenarios() -> list[str]:
    from ctxsim.corpus import bundled_scenarios
    from ctxsim.serve import serve_skip_reason

    loaded = [load_scenario(path) for path in bundled_scenarios()]
    return [s.name for s in loaded if isinstance(s, SessionScenario) and serve_skip_reason(s) is None]


@pytest.mark.live
@pytest.mark.parametrize("name", servable_session_scenarios())
def test_a_served_scenarios_verdict_is_the_in_process_verdict_for_the_same_tracker(name: str) -> None:
    from ctxsim.live._twins import live_twin
    from ctxsim.runner import run_scenario
    from ctxsim.trackers.catalogue.mutants import MUTANTS

    played = scenario(name)
    twin = live_twin(played) or played  # what serve plays (the scenario, or its live twin), in-process
    makers = {"reference": lambda: reference_for(played.session),  # a gauge of the scenario's quantity
              "sums-calls": lambda: MUTANTS["sums-calls"].edit(played.session.usage)}  # tokens
    for tracker, make in makers.items():
        with ScenarioServer(played) as server:
            made = make()
            estimates = play_served(server, made)
            assert (server.refused, server.unplayed, server.unfaulted) == ([], 0, 0)
            served = server.judge(estimates, tracker=tracker, quantity=getattr(made, "quantity", None))
            assert served.report.quantity == getattr(made, "quantity", "tokens")
            assert [o.label for o in server.observations()] == [o.label for o in twin.observations()]
        in_process = run_scenario(twin, make(), name=tracker)
        assert served.ok == in_process.ok, (tracker, served.table(), in_process.table())
        assert [p.observation.label for p in served.report.failures] == [
            p.observation.label for p in in_process.report.failures]


def task_request(prompt: str, session: str = "11111111-2222-3333-4444-555555555555") -> dict[str, Any]:
    return {**MAIN, "metadata": {"user_id": json.dumps({"session_id": session})},
            "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}]}


def test_serve_a_task_reads_the_loop_prompts_declared_with_prompts_and_says_what_is_wrong_in_a_file(
        tmp_path: Path) -> None:
    from ctxsim.scenario import TaskScenario
    from ctxsim.serve import TaskServer, read_loop_prompts

    played = load_scenario(find_scenario("multi-restart-40-steps"))
    assert isinstance(played, TaskScenario)
    declared = tmp_path / "prompts.json"
    declared.write_text(json.dumps({"continue_prompt": ["Keep at it."], "done_marker": "ALL DONE"}))
    statuses = {}
    for name, prompts in [("declared", read_loop_prompts(declared)), ("default", None)]:
        with TaskServer(played, prompts=prompts) as server:
            url = server.api.base_url + "/v1/messages"
            first = call(url, task_request(server.settings()["prompts"][0]), key=server.key)[0]
            statuses[name] = (first, call(url, task_request("Keep at it."), key=server.key)[0])
            if prompts is not None:
                assert server.settings()["loop_prompts"]["continue_prompt"] == ["Keep at it."]
                assert server.settings()["done_marker"] == "ALL DONE"
    assert statuses == {"declared": (200, 200), "default": (200, 400)}
    for text, says in [("[1]", "expected a JSON object"), ("{", "not JSON"),
                       ('{"checkpoint": "x"}', "key 'checkpoint' is not a loop prompt"),
                       ('{"inspect": [{"regex": "("}]}', "key 'inspect': regex '('"),
                       ('{"continuation": [3]}', "key 'continuation': 3 is neither a template text"),
                       ('{"done_marker": " "}', "key 'done_marker': expected a text that is not empty")]:
        declared.write_text(text)
        with pytest.raises(ValueError, match=re.escape(says)):
            read_loop_prompts(declared)


def test_a_client_that_disconnects_mid_stream_or_never_comes_leaves_serve_to_end_cleanly() -> None:
    import socket

    process, settings = serve_in_background("b25-error-result-zeroed-usage")  # faults: a wrapper, a directory
    workdir = Path(settings["env"]["CLAUDE_CONFIG_DIR"]).parent
    assert Path(settings["cli_path"]).is_file() and workdir.is_dir()
    port = int(settings["env"]["ANTHROPIC_BASE_URL"].rsplit(":", 1)[1])
    body = json.dumps({**MAIN, "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:  # reads the first bytes, then hangs up
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     + f"x-api-key: {settings['env']['ANTHROPIC_API_KEY']}\r\ncontent-length: {len(body)}\r\n\r\n"
                       .encode() + body)
        assert sock.recv(64).startswith(b"HTTP/1.1 200")
    status, truth = call(settings["truth_url"], key=settings["env"]["ANTHROPIC_API_KEY"])  # still serving
    assert status == 200 and truth["requests"] == 1
    _, err = stopped(process)
    assert process.returncode == 1 and "(2 of the script's calls never asked for, 3 queries not through the CLI" in err
    assert "Traceback" not in err and not workdir.exists()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()

    never = subprocess.run([sys.executable, "-m", "ctxsim.cli", "serve", B01, "--timeout", "1"], capture_output=True,
                           text=True, timeout=60, check=False)
    assert never.returncode == 1
    own = [line for line in never.stderr.splitlines() if line != release_notice()]  # not the environment's notice
    assert own[-1] == ("ctxsim: serve: the client did not play the script (2 of the script's calls never asked "
                       "for): exit 1")


def test_a_live_twin_keeps_the_main_chains_calls_and_their_truth_and_is_in_the_clis_shape() -> None:
    from ctxsim.corpus import bundled_scenarios
    from ctxsim.live._twins import GO_ON, live_twin, recorded_twin
    from ctxsim.world import Call, ConversationReset

    twins = 0
    for path in bundled_scenarios():
        loaded = load_scenario(path)
        if not isinstance(loaded, SessionScenario) or (twin := live_twin(loaded)) is None:
            continue
        original = recorded_twin(loaded) or loaded  # a recording: the session it shows, built
        twins += 1
        assert twin.session.main_calls == original.session.main_calls, original.name
        def at_calls(played: SessionScenario) -> list[tuple[int, int]]:
            return [(o.truth.prompt, o.truth.output) for o in played.observations() if o.kind == "call"]

        assert at_calls(twin) == at_calls(original), original.name  # the truth at every main-chain call
        for query in twin.session.queries:
            main = query.main_calls
            assert all(c.stop_reason == "tool_use" for c in main[:-1]), (original.name, query.prompt)
            if any(isinstance(s, ConversationReset) for s in query.steps):
                assert query.prompt == "/clear" and len(query.steps) == 1
            chains: dict[str, list[Call]] = {}
            for call in (s for s in query.steps if isinstance(s, Call) and not s.is_main):
                chains.setdefault(str(call.parent_tool_use_id), []).append(call)
            assert all(calls[-1].stop_reason == "end_turn" for calls in chains.values()), original.name
        added = len(twin.session.queries) - len(original.session.queries)
        assert [q.prompt for q in twin.session.queries].count(GO_ON) <= added
    assert twins >= 5


@pytest.mark.live
def test_the_real_cli_compacts_on_its_own_where_the_task_agent_does_and_the_wind_down_rearms() -> None:
    from claude_agent_sdk import ResultMessage, SystemMessage

    from ctxsim.reference import CONTINUE_PROMPT, WIND_DOWN_PROMPT
    from ctxsim.scenario import TaskScenario
    from ctxsim.serve import TaskServer

    played = load_scenario(find_scenario("seed004-autocompact-rearms-wind-down"))
    assert isinstance(played, TaskScenario)
    wind_downs = {19, 36}  # the turns after the crossings the scenario works out by hand (81.55% both times)
    compacted_in: list[int] = []

    async def work(server: TaskServer) -> None:
        settings = server.settings()
        live_env = {"ANTHROPIC_API_KEY": server.key,
                    "CLAUDE_CODE_AUTO_COMPACT_WINDOW": settings["env"]["CLAUDE_CODE_AUTO_COMPACT_WINDOW"]}
        async with LiveClaude(server.api, env=live_env) as live:
            for turn in range(1, 41):
                prompt = (settings["prompts"][0] if turn == 1 else WIND_DOWN_PROMPT if turn in wind_downs
                          else CONTINUE_PROMPT)
                messages = await live.ask(prompt)
                assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error, turn
                if any(isinstance(m, SystemMessage) and m.subtype == "compact_boundary" for m in messages):
                    compacted_in.append(turn)

    with TaskServer(played) as server:
        anyio.run(work, server)
        record = server.record()
    assert server.refused == [] and server.api.rejected == []
    assert compacted_in == [19, 36]  # the CLI's own autocompaction, where the agent compacts in-process
    assert len(record["sessions"]) == 1 and record["finished"] and record["redone"] == 0
    assert record["skipped"] == [] and record["steps"] == {f"s{n:02d}": 1 for n in range(1, 41)}


@pytest.mark.live
@pytest.mark.parametrize("name", ["checkpoint-block",  # no autocompact_at: only the loop compacts
                                  "seed004-autocompact-rearms-wind-down"])  # the CLI's context under its own point
def test_a_clients_compact_in_a_served_task_is_the_loops_compact_the_agent_runs_in_process(name: str) -> None:
    from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, SystemMessage

    from ctxsim.agent import FakeAgent
    from ctxsim.reference import CONTINUE_PROMPT
    from ctxsim.scenario import TaskScenario
    from ctxsim.serve import TaskServer

    played = load_scenario(find_scenario(name))
    assert isinstance(played, TaskScenario)
    task = played.task.task
    boundaries: list[dict[str, Any]] = []
    seen: list[int] = []  # the context the client reads from each turn's last call, as a tracker does

    def last_prompt(messages: list[Any]) -> int:
        usage = [m.usage for m in messages if isinstance(m, ResultMessage)][-1] or {}
        return int(usage.get("input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
                   + usage.get("cache_read_input_tokens", 0))

    async def work(server: TaskServer) -> None:
        async with LiveClaude(server.api, env={"ANTHROPIC_API_KEY": server.key}) as live:
            for prompt in (server.settings()["prompts"][0], CONTINUE_PROMPT, "/compact", CONTINUE_PROMPT):
                messages = await live.ask(prompt)
                assert isinstance(messages[-1], ResultMessage) and not messages[-1].is_error, prompt
                boundaries.extend(m.data for m in messages
                                  if isinstance(m, SystemMessage) and m.subtype == "compact_boundary")
                if prompt != "/compact":
                    seen.append(last_prompt(messages))

    with TaskServer(played) as server:
        anyio.run(work, server)
        served = server.record()
    assert server.refused == [] and server.api.rejected == []
    assert len(boundaries) == 1 and boundaries[0]["compact_metadata"]["trigger"] == "manual"

    agent = FakeAgent(task, checkpoints=played.task.checkpoints)  # the in-process run of the same prompts

    async def in_process() -> list[int]:
        options = ClaudeAgentOptions()
        shown: list[int] = []
        async with ClaudeSDKClient(options, transport=agent.transport(options)) as client:
            for prompt in (agent.task_prompt, CONTINUE_PROMPT, "/compact", CONTINUE_PROMPT):
                await client.query(prompt)
                messages = [m async for m in client.receive_response()]
                if prompt != "/compact":
                    shown.append(last_prompt(messages))
        return shown

    shown = anyio.run(in_process)
    expected = [{"turn": t.index, "kind": t.kind, "steps": list(t.steps), "prompt": t.peak_prompt,
                 "next_request": t.peak_next, "rejected": t.rejected} for t in agent.connections[0].turns]
    assert [t["kind"] for t in expected] == ["task", "continue", "compact", "continue"]
    assert expected[2]["prompt"] == task.baseline + task.summary_tokens  # the world's context after /compact
    assert served["sessions"] == [{"session": 1, "turns": expected}]
    # the CLI's own count of what it compacted is the world's context before the /compact (its post_tokens its own)
    assert boundaries[0]["compact_metadata"]["pre_tokens"] == expected[1]["next_request"]
    assert seen == shown  # the client reads the usage the compaction left, as in-process
