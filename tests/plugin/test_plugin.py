"""The pytest plugin: ``--ctx-scenarios`` collection, item outcomes and reports, inertness, xdist."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import hypothesis  # noqa: F401
import pytest

import ctxsim.check
import ctxsim.corpus
import ctxsim.scenario
import ctxsim.trackers

# pytester's in-process runs put sys.modules back as they found it after every run, so a module first imported
# inside one (the SDK, or hypothesis, whose plugin imports it for its terminal summary) is imported again, and
# assertion-rewritten, by the next run: seconds each. Importing them here keeps them across runs.

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

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


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with an ini (quiet about pytest-asyncio's loop scope; its scenarios under ``scenarios/``) and no
    scenarios yet."""
    pytester.makeini(f"{INI}ctx_scenarios = scenarios\n")
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
        "ctxsim scenarios: scenarios (ini ctx_scenarios)",
        "scenarios/good.yaml::reference PASSED*",
        "scenarios/good.yaml::mala-overwrite-fails-as-declared PASSED*",
    ])
    assert result.ret == pytest.ExitCode.OK


def test_tracker_that_does_not_fail_is_reported_with_the_table(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/tracked.yaml", TRACKED)
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*_ scenario tracked: arbiter-msgid-fails-as-declared _*",
        "scenarios/tracked.yaml:8: arbiter-msgid must fail on scenario 'tracked' (expect.fail), "
        "but tracks it within ±0 tokens",
        "ctxsim: arbiter-msgid tracks session 'tracked' (tolerance ±0 tokens, window 200,000)",
        "*#  point*truth*estimate*error",
        "*1  q1 call 1*45,003..45,013*45,004*ok",
        "FAILED scenarios/tracked.yaml::arbiter-msgid-fails-as-declared - *",
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
        ">*2  q1 result*12,103..12,153*53*-12,050 (-6.0%)*your number is the latest result*",
        "*(as in mala-overwrite*",  # the likely cause wrapped, never cut
        "first failing point: #2 q1 result (scenarios/wrong.yaml:3)",
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
    project.makeini(INI)
    scenario(project, "scenarios/good.yaml", GOOD)
    scenario(project, "scenarios/bad.yaml", BAD)
    project.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = project.runpytest("-v")
    result.assert_outcomes(passed=1)
    assert ".yaml" not in result.stdout.str() and "ctxsim scenarios" not in result.stdout.str()


@pytest.fixture
def user_project(project: pytest.Pytester) -> pytest.Pytester:
    """A user's project: tests under ``tests/`` (its testpaths), scenarios under ``scenarios/``, other YAML."""
    project.makeini(f"{INI}testpaths = tests\n")
    scenario(project, "scenarios/good.yaml", GOOD)
    scenario(project, "tests/data/not_a_scenario.yaml", "just: data\n")
    scenario(project, "tests/test_x.py", "def test_x():\n    pass\n")
    scenario(project, "tests/test_y.py", "def test_y():\n    pass\n")
    return project


TESTS = ["tests/test_x.py::test_x", "tests/test_y.py::test_y"]
GOOD_ITEMS = ["scenarios/good.yaml::reference", "scenarios/good.yaml::mala-overwrite-fails-as-declared"]


def collected(project: pytest.Pytester, *args: str) -> list[str]:
    result = project.runpytest(*args, "--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    return [line for line in result.stdout.lines if "::" in line]


def bundled_items(*names: str) -> list[str]:
    """The node ids of the bundled corpus (the scenarios named, else all), as pytest shows them."""
    items = []
    for path in ctxsim.corpus.bundled_scenarios():
        sc = ctxsim.scenario.load_scenario(path)
        if names and path.stem not in names:
            continue
        if isinstance(sc, ctxsim.scenario.TaskScenario):
            kinds = ["reference-loop", *sc.loop_expect.must_fail, *sc.loop_expect.must_pass]
        else:
            kinds = ["reference", *(f"{t}-fails-as-declared" for t in sc.must_fail), *sc.must_pass]
        items += [f"bundled/{path.name}::{kind}" for kind in kinds]
    return items


def test_what_the_flag_collects(user_project: pytest.Pytester) -> None:
    # no path on the command line: the scenario path alone, never the tests around it
    assert collected(user_project, "--ctx-scenarios=scenarios") == GOOD_ITEMS
    assert collected(user_project, "--ctx-scenarios=scenarios/good.yaml") == GOOD_ITEMS
    assert collected(user_project, "--ctx-scenarios") == bundled_items()  # no ini path: the bundled corpus
    # paths on the command line: those, and the scenario path given by =PATH
    assert collected(user_project, "--ctx-scenarios=scenarios", "tests") == TESTS + GOOD_ITEMS
    assert collected(user_project, "--ctx-scenarios=scenarios", "tests/test_x.py") == TESTS[:1] + GOOD_ITEMS
    assert collected(user_project, "tests", "--ctx-scenarios") == TESTS  # the bundled corpus only when asked
    assert collected(user_project, "tests", "--ctx-scenarios=bundled") == TESTS + bundled_items()
    # paths that reach into the scenarios select them; YAML without a scenario's keys is no scenario
    assert collected(user_project, "scenarios/good.yaml", "--ctx-scenarios") == GOOD_ITEMS
    assert collected(user_project, "scenarios", "--ctx-scenarios") == GOOD_ITEMS
    assert collected(user_project, ".", "--ctx-scenarios") == GOOD_ITEMS + TESTS
    # without the flag, neither the scenarios nor any hint (no ctx_scenarios in the ini)
    result = user_project.runpytest()
    result.assert_outcomes(passed=2)
    assert "ctxsim scenarios" not in result.stdout.str() and ".yaml" not in result.stdout.str()


def test_a_scenario_file_named_on_the_command_line_runs_alone_beside_a_broken_test(
        user_project: pytest.Pytester) -> None:
    scenario(user_project, "bug.yaml", GOOD)
    scenario(user_project, "test_broken.py", "import no_such_module\n")
    scenario(user_project, "tests/test_broken.py", "import no_such_module\n")
    for args in (["bug.yaml"], ["--ctx-scenarios=bug.yaml"], ["bug.yaml", "--ctx-scenarios"]):
        result = user_project.runpytest(*args, "-v")
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["bug.yaml::reference PASSED*",
                                     "bug.yaml::mala-overwrite-fails-as-declared PASSED*"])
    # a directory collects its scenario files, with the flag
    scenario(user_project, "mine/one.yaml", GOOD)
    scenario(user_project, "mine/data.yaml", "just: data\n")
    assert collected(user_project, "mine", "--ctx-scenarios") == ["mine/one.yaml::reference",
                                                                  "mine/one.yaml::mala-overwrite-fails-as-declared"]
    assert collected(user_project, "mine") == ["mine/one.yaml::reference",  # without it too, as a test folder
                                               "mine/one.yaml::mala-overwrite-fails-as-declared"]


def test_a_bare_word_after_the_flag_is_a_path_to_collect(user_project: pytest.Pytester) -> None:
    result = user_project.runpytest("--ctx-scenarios", "tests/test_x.py")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ctxsim: 'tests/test_x.py' after --ctx-scenarios is a path to collect "
                                 "(--ctx-scenarios=tests/test_x.py names a scenario path)"])
    assert collected(user_project, "--ctx-scenarios", "tests/test_x.py", "scenarios") == TESTS[:1] + GOOD_ITEMS
    assert collected(user_project, "tests/test_y.py", "--ctx-scenarios", "tests/test_x.py") == TESTS[::-1]
    assert collected(user_project, "--ctx-scenarios", "scenarios") == GOOD_ITEMS  # the scenarios alone
    assert collected(user_project, "--ctx-scenarios", "bundled") == bundled_items()
    scenario(user_project, "corpus/other.yaml", GOOD)
    other = ["corpus/other.yaml::reference", "corpus/other.yaml::mala-overwrite-fails-as-declared"]
    assert collected(user_project, "--ctx-scenarios", "corpus") == other
    assert collected(user_project, "--ctx-scenarios=corpus") == other
    # in addopts too: the flag there would swallow the first path of the command line
    user_project.makeini(f"{INI}testpaths = tests\nctx_scenarios = scenarios\naddopts = --ctx-scenarios\n")
    assert collected(user_project, "tests/test_y.py") == TESTS[1:] + GOOD_ITEMS
    result = user_project.runpytest("--ctx-scenarios=tests/test_x.py")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ctxsim: --ctx-scenarios: *tests/test_x.py is not a scenario file (*.yaml, "
                                 "*.yml) or a directory of them"])


def test_the_ini_path_without_the_flag_says_how_to_run_it(user_project: pytest.Pytester) -> None:
    user_project.makeini(f"{INI}testpaths = tests\nctx_scenarios = scenarios\n")
    hint = ("ctxsim scenarios: scenarios (ini ctx_scenarios) are not collected without the flag: pytest "
            "--ctx-scenarios runs them")
    result = user_project.runpytest()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([hint])
    result = user_project.runpytest("-q", "-k", "nothing_matches")  # no header under -q: the summary says it
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines([hint])
    result = user_project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=2)
    assert "not collected" not in result.stdout.str()
    result = user_project.runpytest("tests", "--ctx-scenarios")
    result.assert_outcomes(passed=4)


@pytest.mark.slow
def test_xdist_collects_the_tests_and_the_scenarios_alike_on_every_worker(user_project: pytest.Pytester) -> None:
    for name in ("c", "a", "b"):
        scenario(user_project, f"scenarios/{name}.yaml", GOOD)
    result = user_project.runpytest_subprocess("-n", "2", "tests", "--ctx-scenarios=scenarios", "-p",
                                               "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:faker")
    result.assert_outcomes(passed=10)
    assert "Different tests were collected" not in result.stdout.str()
    # the bundled corpus, outside the rootdir, alike on every worker too
    result = user_project.runpytest_subprocess("-n", "2", "--ctx-scenarios", "-k", "compaction", "-p",
                                               "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:faker")
    result.assert_outcomes(passed=len([i for i in bundled_items() if "compaction" in i.lower()]))
    assert "Different tests were collected" not in result.stdout.str()


def test_path_from_the_command_line_or_the_ini(project: pytest.Pytester) -> None:
    scenario(project, "corpus/sub/good.yaml", GOOD)
    result = project.runpytest("--ctx-scenarios=corpus", "-q")
    result.assert_outcomes(passed=2)
    result = project.runpytest("--ctx-scenarios=corpus/sub/good.yaml", "-q")
    result.assert_outcomes(passed=2)
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_scenarios = corpus\n")
    result = project.runpytest("--ctx-scenarios", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["ctxsim scenarios: corpus (ini ctx_scenarios)",
                                 "corpus/sub/good.yaml::reference PASSED*"])


def test_missing_path_is_a_usage_error(project: pytest.Pytester) -> None:
    result = project.runpytest("--ctx-scenarios=nowhere")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ctxsim: --ctx-scenarios: no such file or directory: *nowhere (--ctx-scenarios)"])


def test_items_are_ordered_marked_and_located(project: pytest.Pytester) -> None:
    two = GOOD.replace("fail: [mala-overwrite]", "fail: [mala-overwrite, debussy-chars]")
    scenario(project, "scenarios/b.yaml", two)
    scenario(project, "scenarios/a.yml", GOOD)
    scenario(project, "scenarios/sub/c.yaml", BAD)
    scenario(project, "scenarios/ignored.txt", GOOD)
    expected = ["scenarios/a.yml::reference", "scenarios/a.yml::mala-overwrite-fails-as-declared",
                "scenarios/b.yaml::reference", "scenarios/b.yaml::mala-overwrite-fails-as-declared",
                "scenarios/b.yaml::debussy-chars-fails-as-declared", "scenarios/sub/c.yaml::load"]
    for _ in range(2):
        items, _ = project.inline_genitems("--ctx-scenarios")
        assert [item.nodeid for item in items] == expected
    assert all(item.get_closest_marker("ctx_scenario") for item in items)
    # reportinfo: the line that states the expectation (0-based, as pytest wants it)
    assert [item.location[:2] for item in items[2:]] == [
        ("scenarios/b.yaml", 5), ("scenarios/b.yaml", 6), ("scenarios/b.yaml", 6), ("scenarios/sub/c.yaml", 2)]
    result = project.runpytest("--ctx-scenarios", "-m", "not ctx_scenario", "--strict-markers")
    result.assert_outcomes(deselected=6)


def test_shipped_scenarios_hold(pytester: pytest.Pytester) -> None:
    # an empty directory, no ini: a bare flag runs the bundled corpus, every item passing
    result = pytester.runpytest("--ctx-scenarios", "-q", "-p", "no:asyncio")
    result.assert_outcomes(passed=len(bundled_items()))  # reference (or reference-loop) + each it names
    assert {p.name for p in ctxsim.corpus.bundled_scenarios()} == {p.name for p in SCENARIOS.glob("*.yaml")}


REWRITTEN = """
from _pytest.assertion.rewrite import AssertionRewritingHook
import ctxsim.check, ctxsim.testing


def test_helper_modules_are_assertion_rewritten():
    assert isinstance(ctxsim.check.__loader__, AssertionRewritingHook)
    assert isinstance(ctxsim.testing.__loader__, AssertionRewritingHook)
"""


@pytest.mark.slow
def test_xdist_collects_the_same_items_on_every_worker(project: pytest.Pytester) -> None:
    for name in ("c", "a", "b", "d"):
        scenario(project, f"scenarios/{name}.yaml", GOOD)
    scenario(project, "scenarios/e.yaml", BAD)
    project.makepyfile(mytrackers=MY_TRACKERS, test_ctxsim_rewritten=REWRITTEN)
    # hypothesis' and faker's plugins have nothing to do with this and cost seconds per worker
    result = project.runpytest_subprocess("-n", "2", "--ctx-scenarios=scenarios", "scenarios",
                                          "test_ctxsim_rewritten.py",
                                          "--ctx-tracker=mytrackers:MyTracker", "-p", "no:cacheprovider",
                                          "-p", "no:hypothesispytest", "-p", "no:faker")
    result.assert_outcomes(passed=13, failed=1)
    assert "Different tests were collected" not in result.stdout.str()


def test_importing_the_plugin_is_cheap() -> None:
    code = ("import sys, ctxsim.plugin; heavy = {'yaml', 'claude_agent_sdk', 'ctxsim.check', 'ctxsim.scenario', "
            "'anyio'} & set(sys.modules); print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- the tracker under test: --ctx-tracker ----------------------------------------------------------------------

MY_TRACKERS = '''
from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage


class MyTracker:
    """A user's tracker: the latest main-chain call's in + cc + cr; after a compaction, its post size plus the
    system prefix the first call read from cache."""

    def __init__(self):
        self.tokens = self.prefix = None

    def observe(self, message):
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None and message.usage:
            u = message.usage
            self.tokens = u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
            if self.prefix is None:
                self.prefix = u["cache_read_input_tokens"]
        elif isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            self.tokens = message.data["compact_metadata"]["post_tokens"] + (self.prefix or 0)

    def context_tokens(self):
        return self.tokens


class Summing(MyTracker):
    """Adds every message's usage up: counts the content blocks of one call again and again."""

    def observe(self, message):
        if isinstance(message, AssistantMessage) and message.usage:
            u = message.usage
            self.tokens = (self.tokens or 0) + u["input_tokens"] + u["cache_read_input_tokens"]


class Lagging(MyTracker):
    """The right number, 5,000 tokens low: within a loose tolerance, yet it never sees 90%."""

    def context_tokens(self):
        return None if self.tokens is None else self.tokens - 5000


class Raising(MyTracker):
    """Reads a key the usage does not have (it is cache_read_input_tokens)."""

    def observe(self, message):
        if isinstance(message, AssistantMessage) and message.usage:
            self.cached(message.usage)
        super().observe(message)

    def cached(self, usage):
        return usage["cache_read"]


def make_broken():
    raise RuntimeError("no config")


NOT_CALLABLE = 3
'''

COMPACTION = """\
name: compaction
source: "unit test: a compaction"
queries:
  - steps:
      - call: {in: 3, cc: 138000, cr: 12000, out: 300}
  - steps:
      - compact: {post: 20000}
      - call: {}
expect:
  tolerance: 2000
  fail: [arbiter-msgid]
"""


@pytest.fixture
def tracked(project: pytest.Pytester) -> pytest.Pytester:
    """A project with its own tracker module at the root and two scenarios."""
    project.makepyfile(mytrackers=MY_TRACKERS)
    scenario(project, "scenarios/a_good.yaml", GOOD)
    scenario(project, "scenarios/b_compaction.yaml", COMPACTION)
    return project


def test_ctx_tracker_adds_an_item_per_scenario_named_after_the_tracker(tracked: pytest.Pytester) -> None:
    result = tracked.runpytest("--ctx-scenarios", "--ctx-tracker=mytrackers:MyTracker", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines([
        "ctxsim tracker under test: MyTracker (mytrackers:MyTracker)",
        "scenarios/a_good.yaml::reference PASSED*",
        "scenarios/a_good.yaml::mala-overwrite-fails-as-declared PASSED*",
        "scenarios/a_good.yaml::MyTracker PASSED*",
        "scenarios/b_compaction.yaml::reference PASSED*",
        "scenarios/b_compaction.yaml::arbiter-msgid-fails-as-declared PASSED*",
        "scenarios/b_compaction.yaml::MyTracker PASSED*",
    ])


def test_a_buggy_tracker_under_test_fails_with_the_timeline(tracked: pytest.Pytester) -> None:
    result = tracked.runpytest("--ctx-scenarios", "--ctx-tracker=mytrackers:Summing")
    result.assert_outcomes(passed=4, failed=2)
    result.stdout.fnmatch_lines([
        "*_ scenario compaction: Summing _*",
        # no expect.ctx_tracker: the line of expect
        "scenarios/b_compaction.yaml:9: Summing must track scenario 'compaction' (expect.ctx_tracker: pass, "
        "--ctx-tracker=mytrackers:Summing), but does not",
        # blind to cache creation, it adds each call's input + cache read (3 + the 12,000 cached system prefix):
        # 12,003 twice, where the context after compaction is that prefix and the 20,000-token summary
        ">*4  q2 call 1*32,000..32,120*24,006*",
        "first failing point: *",
    ])
    assert "Traceback" not in result.stdout.str()


def test_what_the_scenario_expects_of_the_tracker_under_test(tracked: pytest.Pytester) -> None:
    scenario(tracked, "scenarios/a_good.yaml", GOOD + "  ctx_tracker: fail\n")
    scenario(tracked, "scenarios/b_compaction.yaml", COMPACTION + "  ctx_tracker: skip\n")
    result = tracked.runpytest("--ctx-scenarios", "--ctx-tracker=mytrackers:Summing", "-rs")
    result.assert_outcomes(passed=5, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*expect.ctx_tracker: skip (line 12)"])


def test_the_threshold_column_shows_where_the_tracker_should_have_fired(tracked: pytest.Pytester) -> None:
    scenario(tracked, "scenarios/b_compaction.yaml",
             COMPACTION.replace("tolerance: 2000", "tolerance: 6000\n  threshold: {at: 0.75, fires: [q1 call 1]}"))
    result = tracked.runpytest("--ctx-scenarios=scenarios/b_compaction.yaml", "--ctx-tracker=mytrackers:Lagging")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "scenarios/b_compaction.yaml:9: Lagging must track scenario 'compaction' *, but does not",
        "ctxsim: Lagging tracks session 'compaction' (tolerance ±6,000 tokens, window 200,000)",
        "*#  point*truth*estimate*error  threshold",
        "*1  q1 call 1*150,003..150,303*145,003*-5,000 (-2.5%)  75% truth crosses; tracker does not fire",
        "threshold 75% (150,000 tokens): the truth crosses at q1 call 1; the tracker does not fire",
    ])


def test_a_tracker_that_raises_shows_the_traceback_through_its_own_code(tracked: pytest.Pytester) -> None:
    result = tracked.runpytest("--ctx-scenarios=scenarios/a_good.yaml", "--ctx-tracker=mytrackers:Raising")
    result.assert_outcomes(passed=2, failed=1)
    source = (tracked.path / "mytrackers.py").read_text().splitlines()
    call, read = (source.index(line) + 1 for line in ('            self.cached(message.usage)',
                                                      '        return usage["cache_read"]'))
    result.stdout.fnmatch_lines([
        "scenarios/a_good.yaml:6: Raising must track scenario 'a_good' *, but does not",
        "ctxsim: tracker Raising raised KeyError: 'cache_read' on message #2 (AssistantMessage *, q1 call 1)",
        "Traceback (most recent call last; ctxsim's and the SDK's frames left out):",
        f'  File "*mytrackers.py", line {call}, in observe',
        "    self.cached(message.usage)",
        f'  File "*mytrackers.py", line {read}, in cached',
        '    return usage["cache_read"]',
        "*",
        "KeyError: 'cache_read'",
    ])
    assert "src/ctxsim" not in result.stdout.str() and "claude_agent_sdk" not in result.stdout.str()


def test_the_ini_names_trackers_too_and_a_catalogued_name_is_not_run_twice(tracked: pytest.Pytester) -> None:
    tracked.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_scenarios = scenarios\n"
                    "ctx_tracker =\n    mytrackers:MyTracker\n    mala-overwrite\n")
    items, _ = tracked.inline_genitems("--ctx-scenarios")
    assert [i.nodeid.split("::")[1] for i in items] == [
        "reference", "mala-overwrite-fails-as-declared", "MyTracker", "reference", "arbiter-msgid-fails-as-declared",
        "MyTracker", "mala-overwrite"]


@pytest.mark.parametrize(("spec", "message"), [
    ("mytrackers", "'mytrackers' is not in the catalogue; give a catalogued name (*) or module:factory"),
    ("arbiter-msgd", "'arbiter-msgd' is not in the catalogue (did you mean 'arbiter-msgid'?)*"),
    ("nomodule:Tracker", "cannot import 'nomodule': ModuleNotFoundError: No module named 'nomodule'"),
    ("mytrackers:Nope", "module 'mytrackers' has no 'Nope'"),
    ("mytrackers:NOT_CALLABLE", "mytrackers:NOT_CALLABLE is a int, not a class or function that makes a tracker"),
    ("mytrackers:make_broken", "mytrackers:make_broken() raised RuntimeError: no config (the factory is called "
                               "without arguments)"),
    ("mytrackers:AssistantMessage", "mytrackers:AssistantMessage() raised TypeError:*"),
    ("mytrackers:", "'mytrackers:' is not module:factory (e.g. mypackage.tracking:MyTracker)"),
])
def test_a_bad_tracker_spec_is_a_usage_error(tracked: pytest.Pytester, spec: str, message: str) -> None:
    result = tracked.runpytest("--ctx-scenarios", f"--ctx-tracker={spec}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: ctxsim: --ctx-tracker={spec}: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_a_factory_that_makes_no_tracker_is_a_usage_error(tracked: pytest.Pytester) -> None:
    result = tracked.runpytest("--ctx-tracker=collections:OrderedDict")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ctxsim: --ctx-tracker=collections:OrderedDict: collections:OrderedDict() "
                                 "made a OrderedDict, which has no observe or context_tokens(): *"])


def test_backends(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/good.yaml", GOOD)
    project.runpytest("--ctx-scenarios", "--ctx-backend=inprocess").assert_outcomes(passed=2)
    # --ctx-backend=live runs the real CLI: tests/test_live.py (marked live) checks it.
    result = project.runpytest("--ctx-backend=remote")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--ctx-backend: invalid choice: 'remote' (choose from 'inprocess', 'live')"])
    project.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\nctx_backend = remote\n")
    result = project.runpytest("--ctx-scenarios")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: ctxsim: ctx_backend: unknown backend 'remote' (choose from inprocess, live)"])


# --- malformed files and recorded streams -----------------------------------------------------------------------

MALFORMED = Path(__file__).resolve().parents[1] / "malformed"


def test_every_malformed_file_is_one_clear_error_and_the_rest_still_run(project: pytest.Pytester) -> None:
    shutil.copytree(MALFORMED, project.path / "scenarios")
    scenario(project, "scenarios/zz_good.yaml", GOOD)
    files = sorted(MALFORMED.glob("*.yaml"))
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=2, failed=len(files))
    out = result.stdout.lines
    assert not [line for line in out if "Traceback" in line or "Interrupted" in line]
    for path in files:
        expected = f"ctxsim: scenarios/{path.name}:{path.read_text().splitlines()[0].removeprefix('# error: ')}"
        start = next(i for i, line in enumerate(out) if f" malformed scenario {path.name} " in line)
        end = next(i for i in range(start + 1, len(out)) if out[i].startswith(("___", "===")))
        section = [line for line in out[start + 1:end] if line.strip()]
        assert len(section) == 1 and section[0].startswith(expected), (path.name, section)


TRANSCRIPT = """\
{"type": "user", "isSidechain": false, "parentUuid": null, "sessionId": "s", "uuid": "u1", "message": {"role": "user", "content": "go"}}
{"type": "assistant", "isSidechain": false, "parentUuid": "u1", "sessionId": "s", "uuid": "a1", "requestId": "r1", "message": {"id": "m1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "hi"}], "usage": {"input_tokens": 3, "cache_creation_input_tokens": 138000, "cache_read_input_tokens": 12000, "output_tokens": 10}}}
{"type": "system", "subtype": "compact_boundary", "isSidechain": false, "parentUuid": null, "sessionId": "s", "uuid": "c1", "compactMetadata": {"trigger": "auto", "preTokens": 150013, "postTokens": 8000}}
{"type": "assistant", "isSidechain": false, "parentUuid": "c1", "sessionId": "s", "uuid": "a2", "requestId": "r2", "message": {"id": "m2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "ok"}], "usage": {"input_tokens": 3, "cache_creation_input_tokens": 8000, "cache_read_input_tokens": 12000, "output_tokens": 10}}}
"""  # noqa: E501


def test_a_recorded_transcript_runs_and_failures_point_into_the_recording(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/recordings/session.jsonl", TRANSCRIPT)
    scenario(project, "scenarios/recorded.yaml",
             "source: a transcript\nstream: recordings/session.jsonl\nexpect:\n  pass: [arbiter-msgid]\n")
    result = project.runpytest("--ctx-scenarios", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "scenarios/recorded.yaml::reference PASSED*",
        "scenarios/recorded.yaml:4: arbiter-msgid must track scenario 'recorded' (expect.pass), but does not",
        # the 8,000-token summary and the 12,000-token system prefix the first call read from cache; arbiter's
        # max(cache_read) + sum(input) + sum(output) never saw the 138,000 written to the cache
        ">*2  q1 compaction*20,000*12,013*",
        "first failing point: #1 q1 call 1 (scenarios/recordings/session.jsonl:2)",
    ])


def test_a_tracker_judged_at_no_point_fails_whatever_the_scenario_expects(project: pytest.Pytester) -> None:
    # a transcript has no results: a tracker read only at results is compared nowhere, and proves nothing
    scenario(project, "scenarios/recordings/session.jsonl", TRANSCRIPT)
    scenario(project, "scenarios/recorded.yaml", "source: a transcript\nstream: recordings/session.jsonl\n"
                                                 "expect:\n  pass: [result-usage-as-context]\n")
    scenario(project, "scenarios/recorded_fail.yaml", "source: a transcript\nstream: recordings/session.jsonl\n"
                                                      "expect:\n  fail: [result-usage-as-context]\n")
    result = project.runpytest("--ctx-scenarios")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines([
        "scenarios/recorded.yaml:4: result-usage-as-context on scenario 'recorded': it was judged at no point *",
        "ctxsim: result-usage-as-context was judged at no point of session 'recorded'*",
    ])
    result.stdout.fnmatch_lines(["scenarios/recorded_fail.yaml:4: *: it was judged at no point * (expect.fail)"])


def test_a_skip_raised_inside_ctxsim_points_at_the_users_scenario(project: pytest.Pytester) -> None:
    scenario(project, "scenarios/faulted.yaml", GOOD + "faults: [duplicate_blocks]\n")
    result = project.runpytest("--ctx-scenarios", "--ctx-backend=live", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([  # the line each item stands for: the reference's, and expect.fail's
        "SKIPPED [[]1[]] scenarios/faulted.yaml:6: ctxsim: --ctx-backend=live: faults edit the rendered stream*",
        "SKIPPED [[]1[]] scenarios/faulted.yaml:7: ctxsim: --ctx-backend=live: faults edit the rendered stream*"])
    assert "_items.py" not in result.stdout.str()
