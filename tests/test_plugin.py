"""The pytest plugin: ``--ctx-scenarios`` collection, item outcomes and reports, inertness, xdist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import hypothesis  # noqa: F401
import pytest

import ctxsim.check  # noqa: F401
import ctxsim.scenario  # noqa: F401
import ctxsim.trackers  # noqa: F401

# pytester's in-process runs put sys.modules back as they found it after every run, so a module first imported
# inside one (the SDK, or hypothesis, whose plugin imports it for its terminal summary) is imported again, and
# assertion-rewritten, by the next run: seconds each. Importing them here keeps them across runs.

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

GOOD = """\
source: "unit test: a cached call"
queries:
  - prompt: "go"
    steps:
      - call: {in: 3, cc: 100, cr: 12000, out: 50}
expect:
  fail: [mala-overwrite]
"""

# arbiter-msgid tracks this one (no cache creation, one block): listing it under expect.fail is wrong.
TRACKED = """\
source: "unit test: the Arbiter formula is right here"
description: "no cache creation, one content block"
queries:
  - steps:
      - call: {in: 3, cc: 0, cr: 45000, out: 10}
expect:
  fail:
    - arbiter-msgid
"""

BAD = """\
queries:
  - steps:
      - call: {in: 3, cc: 0, cr: -5}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with an ini (quiet about pytest-asyncio's loop scope) and no scenarios yet."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def scenario(pytester: pytest.Pytester, relpath: str, text: str) -> Path:
    path = pytester.path / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_good_scenario_runs_reference_and_expected_failure(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/good.yaml", GOOD)
    result = project.runpytest("--ctx-scenarios", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "ctxsim scenarios: scenarios",
        "scenarios/good.yaml::reference PASSED*",
        "scenarios/good.yaml::mala-overwrite PASSED*",
    ])
    assert result.ret == pytest.ExitCode.OK


def test_tracker_that_does_not_fail_is_reported_with_the_table(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/tracked.yaml", TRACKED)
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*_ scenario tracked: arbiter-msgid _*",
        "scenarios/tracked.yaml:8: arbiter-msgid must fail on scenario 'tracked' (expect.fail), "
        "but tracks it within ±0 tokens",
        "ctxsim: arbiter-msgid tracks session 'tracked' (tolerance ±0 tokens, window 200,000)",
        "*#  point*truth*estimate*error",
        "*1  q1 call 1*45,003..45,013*45,004*ok",
        "FAILED scenarios/tracked.yaml::arbiter-msgid - scenarios/tracked.yaml:8:*",
    ])
    out = result.stdout.str()
    assert "Traceback" not in out and "def runtest" not in out and "source:" not in out


def test_verbose_failure_shows_the_source(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/tracked.yaml", TRACKED)
    result = project.runpytest("--ctx-scenarios", "-v")
    result.stdout.fnmatch_lines([
        "source: unit test: the Arbiter formula is right here",
        "description: no cache creation, one content block",
        "tracker arbiter-msgid: max(cache_read)*",
    ])


def test_failing_reference_names_the_first_bad_point_and_its_line(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/wrong.yaml", GOOD.replace("fail: [mala-overwrite]", "pass: [mala-overwrite]"))
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "scenarios/wrong.yaml:7: mala-overwrite must track scenario 'wrong' (expect.pass), but does not",
        # a results-only tracker is judged at result points only
        ">*2  q1 result*12,103..12,153*53*-12,050 (-6.0%)",
        "first failing point: q1 result (scenarios/wrong.yaml:3)",
    ])


def test_malformed_scenario_is_one_failing_item_and_the_others_still_run(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/a_good.yaml", GOOD)
    scenario(project, "scenarios/b_bad.yaml", BAD)
    scenario(project, "scenarios/c_good.yaml", GOOD)
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([
        "ctxsim: scenarios/b_bad.yaml:3: queries[0].steps[0].call.cr: expected a non-negative integer, got -5",
        "FAILED scenarios/b_bad.yaml::load - ctxsim: scenarios/b_bad.yaml:3:*",
    ])
    out = result.stdout.str()
    assert "Traceback" not in out and "Interrupted" not in out and "error" not in out.splitlines()[-1]


def test_inert_without_the_flag(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/good.yaml", GOOD)
    scenario(project, "scenarios/bad.yaml", BAD)
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=1)
    assert ".yaml" not in result.stdout.str() and "ctxsim scenarios" not in result.stdout.str()


def test_flag_collects_only_scenarios_unless_paths_are_given(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/good.yaml", GOOD)
    scenario(project, "fixtures/not_a_scenario.yaml", "just: data\n")
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest("--ctx-scenarios", "--collect-only", "-q")
    result.stdout.fnmatch_lines(["scenarios/good.yaml::reference", "scenarios/good.yaml::mala-overwrite", ""])
    assert "test_plain" not in result.stdout.str()
    # explicit paths win: the tests there run, scenario files among them too, other YAML never
    result = project.runpytest(".", "--ctx-scenarios")
    result.assert_outcomes(passed=3)
    result = project.runpytest("scenarios/good.yaml", "--ctx-scenarios", "-q")
    result.assert_outcomes(passed=2)


def test_path_from_the_command_line_or_the_ini(project: pytest.Pytester) -> None:
    scenario(project, "corpus/sub/good.yaml", GOOD)
    result = project.runpytest("--ctx-scenarios=corpus", "-q")
    result.assert_outcomes(passed=2)
    result = project.runpytest("--ctx-scenarios=corpus/sub/good.yaml", "-q")
    result.assert_outcomes(passed=2)
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_scenarios = corpus\n")
    result = project.runpytest("--ctx-scenarios", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["ctxsim scenarios: corpus", "corpus/sub/good.yaml::reference PASSED*"])


def test_missing_path_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-scenarios=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ctxsim: --ctx-scenarios: no such file or directory: *nowhere"])


def test_items_are_ordered_marked_and_located(project: pytest.Pytester) -> None:
    two = GOOD.replace("fail: [mala-overwrite]", "fail: [mala-overwrite, debussy-chars]")
    scenario(project, "scenarios/b.yaml", two)
    scenario(project, "scenarios/a.yml", GOOD)
    scenario(project, "scenarios/sub/c.yaml", BAD)
    scenario(project, "scenarios/ignored.txt", GOOD)
    expected = ["scenarios/a.yml::reference", "scenarios/a.yml::mala-overwrite", "scenarios/b.yaml::reference",
                "scenarios/b.yaml::mala-overwrite", "scenarios/b.yaml::debussy-chars", "scenarios/sub/c.yaml::load"]
    for _ in range(2):
        items, _ = project.inline_genitems("--ctx-scenarios")
        assert [item.nodeid for item in items] == expected
    assert all(item.get_closest_marker("ctx_scenario") for item in items)
    # reportinfo: the line that states the expectation (0-based, as pytest wants it)
    assert [item.location[:2] for item in items[2:]] == [
        ("scenarios/b.yaml", 5), ("scenarios/b.yaml", 6), ("scenarios/b.yaml", 6), ("scenarios/sub/c.yaml", 2)]
    result = project.runpytest("--ctx-scenarios", "-m", "not ctx_scenario", "--strict-markers")
    result.assert_outcomes(deselected=6)


def test_shipped_scenarios_hold(project: pytest.Pytester) -> None:
    shutil.copytree(SCENARIOS, project.path / "scenarios")
    result = project.runpytest("--ctx-scenarios", "-q")
    result.assert_outcomes(passed=15)


def test_xdist_collects_the_same_items_on_every_worker(project: pytest.Pytester) -> None:
    for name in ("c", "a", "b", "d"):
        scenario(project, f"scenarios/{name}.yaml", GOOD)
    scenario(project, "scenarios/e.yaml", BAD)
    # hypothesis' and faker's plugins have nothing to do with this and cost seconds per worker
    result = project.runpytest_subprocess("-n", "2", "--ctx-scenarios", "-p", "no:cacheprovider",
                                          "-p", "no:hypothesispytest", "-p", "no:faker")
    result.assert_outcomes(passed=8, failed=1)
    assert "Different tests were collected" not in result.stdout.str()


def test_importing_the_plugin_is_cheap() -> None:
    code = ("import sys, ctxsim.plugin; heavy = {'yaml', 'claude_agent_sdk', 'ctxsim.check', 'ctxsim.scenario', "
            "'anyio'} & set(sys.modules); print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_fake_claude_fixture_patches_clients_for_one_test(project: pytest.Pytester) -> None:
    project.makepyfile(test_user_agent='''
        import anyio
        from claude_agent_sdk import ClaudeSDKClient, ResultMessage
        from claude_agent_sdk._internal.transport import subprocess_cli
        from ctxsim import SessionBuilder

        SESSION = SessionBuilder(seed=1).query("do it").call(prompt=40_000).build()

        def my_agent():
            async def main():
                async with ClaudeSDKClient() as client:
                    await client.query("do the task")
                    kinds = [type(m) async for m in client.receive_response()]
                    return kinds, (await client.get_context_usage())["totalTokens"]
            return anyio.run(main)

        def test_agent(fake_claude):
            fake = fake_claude(SESSION)
            kinds, total = my_agent()
            assert kinds[-1] is ResultMessage and total == 40_000
            assert fake.last.prompts == ["do the task"]

        def test_restored_after():
            assert subprocess_cli.SubprocessCLITransport.__name__ == "SubprocessCLITransport"
    ''')
    project.runpytest().assert_outcomes(passed=2)
