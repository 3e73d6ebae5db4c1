"""``ctxsim serve``: one scenario's fake Messages API for any client of the real CLI, behind its own credential, a 4xx
for what the script does not have, the truth at every point, and the verdict on a tracker's estimates."""

from __future__ import annotations

import json
import os
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
from ctxsim.live import EstimatesError, ScenarioServer, read_estimates
from ctxsim.live._claude import LiveClaude
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers import reference_for

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
    assert first["after"] == {"type": "assistant", "message_id": played.session.calls[0].message_id, "n": 1}
    assert (first["low"], first["high"]) == (173_648, 173_848)
    assert truth["points"][1]["after"] == {"type": "result", "query": 1}


def test_a_scenario_the_live_cli_cannot_play_is_refused_saying_why() -> None:
    with pytest.raises(ValueError, match="query 2 compacts: the live CLI decides compaction sizes itself"):
        ScenarioServer(scenario("compaction"))


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
                           ('{"point": 1, "estimate": "12"}', "summed.jsonl:2: key 'estimate': '12' is not a token "
                                                               "count or null")]:
            summed.write_text(json.dumps({"point": 1, "estimate": 5}) + "\n" + line + "\n")
            with pytest.raises(EstimatesError) as raised:
                read_estimates(summed, points)
            assert says in str(raised.value)


def test_ctxsim_serve_prints_the_settings_then_on_sigterm_the_truth_and_the_verdict(tmp_path: Path) -> None:
    estimates = tmp_path / "estimates.jsonl"
    ctxsim = [sys.executable, "-m", "ctxsim.cli", "serve", B01, "--json", "--judge", str(estimates), "--timeout", "60"]
    process = subprocess.Popen(ctxsim, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        settings = json.loads(process.stdout.readline())
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
    assert main(["serve", "seed004-autocompact-rearms-wind-down", *bounded]) == 2
    assert "its agent compacts on its own (autocompact_at)" in capsys.readouterr().err
    assert main(["serve", "multi-restart-40-steps", "--judge", str(tmp_path / "x.jsonl"), *bounded]) == 2
    assert "is a task scenario: its fake agent's record is what is printed" in capsys.readouterr().err
    assert main(["serve", "compaction", *bounded]) == 2
    assert "query 2 compacts" in capsys.readouterr().err
    with ScenarioServer(scenario(B01)) as server:
        assert main(["serve", B01, "--port", str(server.api.port), *bounded]) == 2
    assert f"cannot listen on 127.0.0.1:{server.api.port}" in capsys.readouterr().err


@pytest.mark.live
def test_the_real_cli_plays_a_scenario_through_serve_and_the_reference_tracks_it() -> None:
    played = scenario("b14-resume-invalidates-cache")

    async def play(server: ScenarioServer) -> list[Any]:
        messages = []
        async with LiveClaude(server.api, model=played.session.model,
                              env={"ANTHROPIC_API_KEY": server.key}) as live:
            for query in played.session.queries:
                messages += await live.ask(query.prompt)
        return messages

    with ScenarioServer(played) as server:
        messages = anyio.run(play, server)
        assert server.refused == [] and server.api.rejected == []
        tracker = reference_for(played.session)
        estimates: dict[int, int | None] = {}
        seen: dict[str, int] = {}
        results = 0
        closes = {(p["after"].get("message_id"), p["after"].get("n"), p["after"].get("query")): p["index"]
                  for p in server.truth()["points"]}
        for message in messages:
            tracker.observe(message)
            key: tuple[Any, ...] | None = None
            if getattr(message, "message_id", None) is not None and type(message).__name__ == "AssistantMessage":
                seen[message.message_id] = seen.get(message.message_id, 0) + 1
                key = (message.message_id, seen[message.message_id], None)
            elif type(message).__name__ == "ResultMessage":
                results += 1
                key = (None, None, results)
            if key in closes:
                estimates[closes[key]] = tracker.context_tokens()
        assert sorted(estimates) == [o.index for o in server.observations()]
        assert server.judge(estimates).ok
    assert os.environ.get("ANTHROPIC_API_KEY") != server.key


@pytest.mark.live
def test_the_real_cli_works_a_task_scenario_through_its_fake_agent_across_a_restart() -> None:
    from claude_agent_sdk import AssistantMessage, ResultMessage, TextBlock

    from ctxsim.live import TaskServer
    from ctxsim.reference import (
        CHECKPOINT_REQUEST_PROMPT,
        CONTINUE_PROMPT,
        build_continuation_prompt,
        extract_checkpoint,
    )
    from ctxsim.scenario import TaskScenario

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


def test_ctxsim_serve_a_task_prints_the_loop_prompts_it_reads_and_on_sigterm_the_agents_record() -> None:
    ctxsim = [sys.executable, "-m", "ctxsim.cli", "serve", "multi-restart-40-steps", "--json", "--timeout", "60"]
    process = subprocess.Popen(ctxsim, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        settings = json.loads(process.stdout.readline())
        assert settings["prompts"][0].startswith("Work through task 'multi-restart-40-steps': 40 steps")
        assert settings["loop_prompts"]["checkpoint_request"].startswith("'CONTEXT LIMIT APPROACHING")
        status, record = call(settings["truth_url"], key=settings["env"]["ANTHROPIC_API_KEY"])
        assert status == 200 and record["sessions"] == [] and record["skipped"][:2] == ["s01", "s02"]
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 1, err  # nothing was done: the task is not finished
    assert json.loads(out.strip().splitlines()[-1])["record"]["finished"] is False
