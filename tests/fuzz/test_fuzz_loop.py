"""ctxsim fuzz --loop: generated tasks find a restart loop's bug, shrink it to a task scenario, and the printed
pytest command reproduces it from another directory; a correct loop gets no counterexample."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from ctxsim.cli import main
from ctxsim.fuzz import LoopTaskFailed, check_loop_task, fuzz_loop, loop_spec, tasks_for
from ctxsim.loops import CATALOGUE, LoopSpec, resolve_loop
from ctxsim.loops.mutants import MUTANTS
from ctxsim.reference import PressurePolicy
from ctxsim.runner import run_task
from ctxsim.scenario import TaskScenario, load_scenario
from ctxsim.strategies import GeneratedTask

USER_LOOP = '''\
"""A user's restart loop: a session per context window, a checkpoint at each restart."""
from claude_agent_sdk import AssistantMessage, ClaudeSDKClient, ResultMessage, TextBlock

from ctxsim.reference import (CHECKPOINT_REQUEST_PROMPT, CONTINUE_PROMPT, DONE_MARKER, build_continuation_prompt,
                              extract_checkpoint)


async def _turn(client, prompt, tracker=None):
    await client.query(prompt)
    texts, result = [], None
    async for message in client.receive_response():
        if tracker is not None:
            tracker.observe(message)
        if isinstance(message, AssistantMessage):
            texts += [b.text for b in message.content if isinstance(b, TextBlock)]
        elif isinstance(message, ResultMessage):
            result = message
    return "\\n".join(texts), result


async def _run(rig, fresh_tracker):
    threshold, prompt, restarts = rig.threshold_tokens, rig.prompt, 0
    tracker = rig.make_tracker()
    while True:
        if fresh_tracker:
            tracker = rig.make_tracker()
        async with ClaudeSDKClient(rig.options) as client:
            next_prompt = prompt
            while True:
                text, result = await _turn(client, next_prompt, tracker)
                if result is not None and not result.is_error and DONE_MARKER in (result.result or text):
                    return restarts
                tokens = tracker.context_tokens()
                if (result is not None and result.is_error) or (tokens is not None and tokens >= threshold):
                    break
                next_prompt = CONTINUE_PROMPT
            text, result = await _turn(client, CHECKPOINT_REQUEST_PROMPT)
            error = result is None or result.is_error
            checkpoint = extract_checkpoint(f"{text}\\n{result.result}" if error and result else text,
                                            stop_reason=result.stop_reason if result else None, is_error=error)
        restarts += 1
        prompt = build_continuation_prompt(checkpoint)


async def restart_loop(rig):
    return await _run(rig, fresh_tracker=False)   # BUG: one tracker for every session


async def restart_loop_fresh(rig):
    return await _run(rig, fresh_tracker=True)


restart_loop.policy = restart_loop_fresh.policy = 0.9
'''


def test_the_reference_loop_gets_no_counterexample() -> None:
    result = fuzz_loop(resolve_loop("ctxsim.loops.mutants:reference"), examples=80, progress=None)
    assert result.task is None and result.examples == 80, result.report


def test_a_reused_tracker_is_found_shrunk_and_reproduced_from_the_file(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reused_agent.py").write_text(USER_LOOP)
    monkeypatch.syspath_prepend(str(tmp_path))
    from reused_agent import restart_loop  # type: ignore[import-not-found]

    result = fuzz_loop(restart_loop, examples=200, progress=None)
    assert result.task is not None, "ctxsim: fuzz did not find the reused tracker"
    assert result.broken == ("tracker-reset",)
    assert len(result.task.document["task"]["steps"]) <= 12  # shrunk: the first session and a step of the next
    assert "-- session 2 (connection 2" in result.report and "turn  prompt" in result.report  # the timeline
    path = tmp_path / "found.yaml"
    path.write_text(result.task.text())
    scenario = load_scenario(path)
    assert isinstance(scenario, TaskScenario)
    assert run_task(scenario, loop=loop_spec(restart_loop)).report.broken == {"tracker-reset"}
    assert run_task(scenario).report.ok  # the reference loop keeps every invariant on it


def test_a_loop_that_declares_no_policy_is_handed_each_drawn_one() -> None:
    # a catalogued seed-003 loop reads only rig.threshold_tokens: drawn zones and tool-call fallbacks catch it
    result = fuzz_loop(CATALOGUE["seed003"].loop, examples=200, progress=None)
    assert result.task is not None and "restart-count" in result.broken
    assert set(result.task.document["task"]["policy"]) & {"zones", "max_tool_calls"}


@pytest.mark.parametrize(("threshold", "reserve"), [(0.75, 0), (0.9, 33_000)])
def test_the_catalogued_correct_loop_keeps_every_invariant_under_the_policy_its_label_names(
        threshold: float, reserve: int) -> None:
    # seed003 is catalogued "none under one restart threshold": tasks drawn for one threshold never break it, and
    # its label names what tasks drawn with zones and fallbacks break (the test above)
    entry = CATALOGUE["seed003"]
    assert entry.bug.startswith("none under one restart threshold") and "restart-count" in entry.bug
    spec = LoopSpec("seed003", "seed003", entry.loop, PressurePolicy(restart_at=threshold, reserve=reserve))
    result = fuzz_loop(spec, examples=100, progress=None)
    assert result.task is None, result.report


@pytest.mark.parametrize("name", ["threshold-strict", "refusal-as-state"])
def test_a_loop_mutant_is_found_by_fuzzing_alone(name: str) -> None:
    mutant = MUTANTS[name]
    result = fuzz_loop(resolve_loop(mutant.spec), examples=600, progress=None)
    assert result.task is not None, f"ctxsim: fuzz did not find {name} in 600 tasks"
    assert run_task(load_scenario_text(result.task)).report.ok


def load_scenario_text(task: GeneratedTask) -> TaskScenario:
    return task.scenario


def test_the_given_recipe_reports_the_corpus_timeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "user_agent.py").write_text(USER_LOOP)
    monkeypatch.syspath_prepend(str(tmp_path))
    from user_agent import restart_loop, restart_loop_fresh  # type: ignore[import-not-found]

    failures: list[str] = []

    @settings(max_examples=30, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(tasks_for(restart_loop))
    def property_of(task: GeneratedTask) -> None:
        check_loop_task(restart_loop_fresh, task)  # the fixed loop: never raises
        try:
            check_loop_task(restart_loop, task)
        except LoopTaskFailed as failed:
            failures.append(str(failed))

    property_of()
    assert failures, "ctxsim: 30 generated tasks never restarted the buggy loop"
    assert "broke invariant 'tracker-reset'" in failures[0] and "turn  prompt" in failures[0]


def test_the_command_finds_a_users_loop_and_its_reproduction_runs_from_another_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "my_agent.py").write_text(USER_LOOP)
    (elsewhere / "conftest.py").write_text("raise RuntimeError('a broken conftest that must not be loaded')\n")
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    monkeypatch.delitem(sys.modules, "my_agent", raising=False)  # a docs example of the same name, run before
    assert main(["fuzz", "--loop", "my_agent:restart_loop", "--examples", "200", "--out", "found.yaml"]) == 1
    out = capsys.readouterr().out
    assert "the shrunk counterexample is found.yaml" in out and "broke invariant 'tracker-reset'" in out
    command = out.rsplit("reproduce it, from any directory: ", 1)[1].strip()
    assert command.startswith(f"PYTHONPATH={project} pytest ")
    assert f"--ctx-loop=my_agent:restart_loop {project / 'found.yaml'}" in command
    text = (project / "found.yaml").read_text()
    assert "# Found by: ctxsim fuzz --loop my_agent:restart_loop --seed 0 --examples 200" in text
    assert command in text

    env_part, _, rest = command.partition(" ")
    argv = shlex.split(rest)
    env = {"PYTHONPATH": env_part.split("=", 1)[1], "PATH": str(Path(sys.executable).parent)}
    done = subprocess.run([sys.executable, "-m", *argv], cwd=elsewhere, capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout  # the reference loop passes, the user's loop fails
    assert "broke invariant 'tracker-reset'" in done.stdout and "turn  prompt" in done.stdout

    assert main(["fuzz", "--loop", "my_agent:restart_loop_fresh", "--examples", "60"]) == 0
    assert "restart_loop_fresh kept every invariant on all 60 generated tasks" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["fuzz"], "give --tracker SPEC"),
    (["fuzz", "--loop", "keep-tracker", "--tolerance", "5"], "--tolerance is a tracker's allowed error"),
    (["fuzz", "--loop", "no-such-loop"], "--loop=no-such-loop"),
    (["fuzz", "--loop", "keep-tracker", "--examples", "0"], "--examples must be at least 1"),
    (["fuzz", "--loop", "keep-tracker", "--tracker", "cmd:true"], "a restart loop needs a tracker fed"),
])
def test_usage_errors_are_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxsim:") and message in err and err.count("\n") == 1


def test_a_tracker_under_test_is_given_to_the_loop_and_to_its_reproduction(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # the reference loop keeps every invariant with the reference tracker; given the catalogue's input-only tracker
    # (it reads the latest call's input_tokens) the first task with garbled usage makes it raise inside
    # the loop, which ends before the task is done
    monkeypatch.chdir(tmp_path)
    assert main(["fuzz", "--loop", "ctxsim.loops.mutants:reference", "--tracker", "input-only", "--examples", "100",
                 "--out", "found.yaml"]) == 1
    out = capsys.readouterr().out
    assert "reference (tracker input-only)" in out and "broke invariant 'termination'" in out
    assert "the loop raised TypeError" in out and "+garbled" in out
    command = out.rsplit("reproduce it, from any directory: ", 1)[1].strip()
    assert "--ctx-loop=ctxsim.loops.mutants:reference --ctx-tracker=input-only" in command
    env_part, _, rest = command.partition(" ")
    assert env_part == f"PYTHONPATH={tmp_path}"
    done = subprocess.run([sys.executable, "-m", *shlex.split(rest)], cwd=tmp_path.parent, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "reference with tracker input-only (--ctx-tracker=input-only)" in done.stdout
    assert "broke invariant 'termination'" in done.stdout and "TypeError" in done.stdout


def _draw_tasks(examples: int) -> list[str]:
    from hypothesis import Phase, seed as seed_of

    from ctxsim.fuzz import independent_backend
    from ctxsim.strategies import task_scenarios

    drawn: list[str] = []

    @seed_of(3)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), backend=independent_backend())
    @given(task_scenarios())
    def draw(task: GeneratedTask) -> None:
        drawn.append(task.text())

    draw()
    return drawn


def test_the_search_draws_every_task_afresh_and_still_shrinks() -> None:
    drawn = _draw_tasks(150)
    assert len(drawn) == 150 and len(set(drawn)) == 150  # no copy of an earlier task
    # shrinking runs on Hypothesis' own provider whatever the backend: the sizes shrink to the strategy's least
    found = fuzz_loop(MUTANTS["checkpoint-not-carried"].edit, examples=100, seed=0, progress=None)
    assert found.task is not None and found.broken == ("steps-once",)
    doc = found.task.document
    assert (doc["world"]["baseline"], doc["task"]["prompt_tokens"], doc["task"]["output_tokens"]) == (8_000, 50, 20)
    assert len(set(doc["task"]["steps"])) == 1, found.task.text()  # every step the largest size


_DRAW_IN_A_PROCESS = """
{imports}
import hashlib
from hypothesis import HealthCheck, Phase, given, seed, settings
from ctxsim.fuzz import independent_backend
from ctxsim.strategies import task_scenarios
drawn = []
@seed(3)
@settings(max_examples=60, deadline=None, database=None, phases=[Phase.generate],
          suppress_health_check=list(HealthCheck), backend=independent_backend())
@given(task_scenarios())
def draw(task):
    drawn.append(task.text())
draw()
print(hashlib.sha256("".join(drawn).encode()).hexdigest())
"""


def test_the_same_seed_draws_the_same_tasks_whatever_modules_are_loaded() -> None:
    # Hypothesis' own provider also draws constants it finds in the local modules loaded, so the same seed drew
    # other tasks in a process that had imported the CLI and the plugin (checked by hand with backend="hypothesis");
    # the search's provider draws none
    digests = {subprocess.run([sys.executable, "-c", _DRAW_IN_A_PROCESS.format(imports=imports)], check=True,
                              capture_output=True, text=True, timeout=120).stdout.strip()
               for imports in ("", "import ctxsim.cli, ctxsim.plugin")}
    assert len(digests) == 1, digests
