"""The plugin's fixtures: ``fake_claude``, ``ctx_session``, ``ctx_tracker`` and the ``ctx`` marker, from sync tests
and from async ones under pytest-asyncio (strict mode) and anyio."""

from __future__ import annotations

import hypothesis  # noqa: F401 - kept across pytester's in-process runs (see test_plugin.py)
import pytest

import ctxsim.check
import ctxsim.scenario  # noqa: F401

MY_TRACKERS = """
from ctxsim.reference import ContextTracker


class MyTracker(ContextTracker):
    pass


class Summing(ContextTracker):
    pass
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """A project with an ini (quiet about pytest-asyncio's loop scope) and a tracker module at its root."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(mytrackers=MY_TRACKERS)
    return pytester


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


FIXTURE_TESTS = '''
import pytest
from claude_agent_sdk import ClaudeSDKClient
from ctxsim.world import Session, SessionBuilder

TEXT = """
    queries:
      - steps:
          - call: {in: 3, cc: 100, cr: 20000}
          - compact: {post: 9000}
          - call: {in: 3, cc: 500, cr: 9000}
"""


def test_inline_session(ctx_session):
    session = ctx_session(TEXT)
    assert isinstance(session, Session) and [c.prompt for c in session.main_calls] == [20103, 9503]
    assert ctx_session.scenario(TEXT).tolerance == 0 and session.name == "test_inline_session"


@pytest.mark.ctx(window=1_000_000, baseline=5000)
def test_marker_sets_the_world(ctx_session):
    assert ctx_session("queries: [{steps: [{call: {}}]}]").window == 1_000_000
    builder = ctx_session.builder(seed=3)
    assert isinstance(builder, SessionBuilder) and (builder.window, builder.baseline) == (1_000_000, 5000)


def test_inline_mistakes_name_the_test(ctx_session):
    name = "test_uses_ctx_fixtures.py::test_inline_mistakes_name_the_test"
    with pytest.raises(ValueError, match=rf"^ctxsim: <inline scenario of {name}>:1: queries: expected a list"):
        ctx_session("queries: 3")


def test_ctx_tracker_is_fresh_and_tracks(ctx_tracker, request):
    assert ctx_tracker.context_tokens() is None
    expected = "MyTracker" if request.config.getoption("ctx_tracker") == ["mytrackers:MyTracker"] else "ContextTracker"
    assert type(ctx_tracker).__name__ == expected


async def play(session, fake_claude, tracker):
    fake = fake_claude(session)
    async with ClaudeSDKClient() as client:
        await client.query("go")
        async for message in client.receive_response():
            tracker.observe(message)
    return fake


@pytest.mark.asyncio
async def test_async_under_pytest_asyncio(ctx_session, ctx_tracker, fake_claude):
    fake = await play(ctx_session(TEXT), fake_claude, ctx_tracker)
    assert ctx_tracker.context_tokens() == 9503 and fake.last.prompts == ["go"]


@pytest.mark.anyio
async def test_async_under_anyio(ctx_session, ctx_tracker, fake_claude):
    await play(ctx_session(TEXT), fake_claude, ctx_tracker)
    assert ctx_tracker.context_tokens() == 9503
'''


def test_fixtures_work_from_sync_and_async_tests(project: pytest.Pytester) -> None:
    project.makepyfile(test_uses_ctx_fixtures=FIXTURE_TESTS)
    project.runpytest("test_uses_ctx_fixtures.py", "-p", "anyio", "--ctx-tracker=reference").assert_outcomes(passed=7)
    project.runpytest("test_uses_ctx_fixtures.py", "--ctx-tracker=mytrackers:MyTracker").assert_outcomes(passed=7)


def test_ctx_tracker_without_a_tracker_named_says_how_to_name_one(project: pytest.Pytester) -> None:
    project.makepyfile(test_uses_ctx_tracker="def test_it(ctx_tracker):\n    pass\n")
    result = project.runpytest("test_uses_ctx_tracker.py")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ctxsim: the ctx_tracker fixture has no tracker to make: name yours with "
                                 "--ctx-tracker=module:factory*"])
    assert "ContextTracker" not in result.stdout.str()


def test_several_trackers_under_test_parametrize_the_fixture(project: pytest.Pytester) -> None:
    project.makepyfile(test_uses_ctx_tracker="def test_it(ctx_tracker):\n"
                                             "    assert ctx_tracker.context_tokens() is None\n")
    result = project.runpytest("test_uses_ctx_tracker.py", "--ctx-tracker=mytrackers:MyTracker",
                               "--ctx-tracker=mytrackers:Summing", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["test_uses_ctx_tracker.py::test_it[[]MyTracker[]] PASSED*",
                              "test_uses_ctx_tracker.py::test_it[[]Summing[]] PASSED*"])


def test_a_bad_ctx_marker_fails_the_test_plainly(project: pytest.Pytester) -> None:
    project.makepyfile(test_bad_ctx_marker="import pytest\n@pytest.mark.ctx(windw=5)\n"
                                           "def test_it(ctx_session):\n    pass\n")
    result = project.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ctxsim: @pytest.mark.ctx takes world keywords (model, window, baseline, "
                                 "max_output, seed); got windw"])


AGENT_TESTS = '''
import anyio
from ctxsim.agent import FakeAgent, Task
from ctxsim.reference import PressurePolicy, run_with_restarts
from ctxsim.reference._restart import DONE_MARKER

# 16 steps of 7,400 in a 100k window: after n one-step turns the context is 10,000 + 200n + 100(2n - 1) + 7,400n,
# first at or over 90,000 at n = 11 (95,700; n = 10 is 87,900): one restart, 11 steps then 5.
TASK = Task.uniform(16, 7_400, window=100_000, baseline=10_000, prompt_tokens=200, output_tokens=100)


def my_loop(prompt):
    return anyio.run(lambda: run_with_restarts(prompt, policy=PressurePolicy(window=100_000)))


def test_my_loop_against_the_fake_agent(fake_agent):
    agent = fake_agent(TASK)
    result = my_loop(agent.task.prompt)
    assert isinstance(agent, FakeAgent) and result.result.startswith(DONE_MARKER)
    assert agent.counts() == {step: 1 for step in TASK.ids}
    assert [len(c.work_turns) for c in agent.connections] == [11, 5]


def test_the_agents_keywords_pass_through(fake_agent):
    agent = fake_agent(TASK, checkpoints=["refusal"])
    my_loop(agent.task.prompt)
    # no state after the refusal: the minimal continuation prompt has the agent inspect the work, and it finds the
    # 11 steps of session 1 there
    assert agent.redone == 0 and agent.connections[0].checkpoint_turns[0].degradation == "refusal"
    assert [len(c.work_turns) for c in agent.connections] == [11, 5]


def test_two_agents_in_one_test_the_later_one_answers(fake_agent):
    first, second = fake_agent(TASK), fake_agent(TASK)
    my_loop(TASK.prompt)
    assert first.connections == [] and len(second.connections) == 2


def test_no_agent_after_the_test():
    from claude_agent_sdk._internal.transport import subprocess_cli
    assert subprocess_cli.SubprocessCLITransport.__name__ == "SubprocessCLITransport"
'''


def test_fake_agent_fixture_drives_your_loop_for_one_test(project: pytest.Pytester) -> None:
    project.makepyfile(test_uses_fake_agent=AGENT_TESTS)
    project.runpytest("test_uses_fake_agent.py").assert_outcomes(passed=4)


# --- the oracle's helpers from async tests ------------------------------------------------------------------------

ASYNC_TESTS = '''
import anyio
import pytest
from claude_agent_sdk import AssistantMessage
from ctxsim import SessionBuilder, TrackingError, assert_tracks, assert_tracks_async, run_tracker
from ctxsim.reference import ContextTracker
from ctxsim.runner._scenario import run_scenario
from ctxsim.testing import run_tracker_conformance

# 150,003 tokens in the context, compacted to a 20,000-token summary after the 12,000-token cached system prefix
SESSION = (SessionBuilder(seed=1, name="compaction")
           .query("work").call(input=3, cache_creation=2000, cache_read=148_000, output=200)
           .compact(20_000).query("more").call().build())


class AsyncTracker:
    """A user's tracker with async methods: the reference's numbers, handed over after an await."""

    def __init__(self):
        self.inner = ContextTracker()

    async def observe(self, message):
        await anyio.sleep(0)
        self.inner.observe(message)

    async def context_tokens(self):
        return self.inner.context_tokens()


class KeepsMaximum:
    """The largest prompt ever seen: 150,003 still after the compaction."""

    def __init__(self):
        self.top = None

    def observe(self, message):
        if isinstance(message, AssistantMessage) and message.usage:
            u = message.usage
            self.top = max(self.top or 0, u["input_tokens"] + u["cache_creation_input_tokens"]
                           + u["cache_read_input_tokens"])

    def context_tokens(self):
        return self.top


def check_all(ctx_session):
    assert_tracks(ContextTracker(), SESSION, tolerance=1000)
    assert_tracks(AsyncTracker(), SESSION, tolerance=1000)
    with pytest.raises(TrackingError, match="KeepsMaximum is off on 4 of 5 points"):
        assert_tracks(KeepsMaximum(), SESSION, tolerance=1000)
    report = run_tracker(AsyncTracker(), SESSION)  # judged at both calls, the compaction and both results
    assert report.crash is None and [p.ok for p in report.points] == [True] * 5
    scenario = ctx_session.scenario("queries: [{steps: [{call: {in: 3, cc: 100, cr: 20000}}]}]")
    assert run_scenario(scenario, AsyncTracker()).ok
    run_tracker_conformance(AsyncTracker, only={"single-call", "latest-not-sum"})


@pytest.mark.asyncio
async def test_under_pytest_asyncio(ctx_session):
    check_all(ctx_session)
    await assert_tracks_async(AsyncTracker(), SESSION, tolerance=1000)
    with pytest.raises(TrackingError, match="KeepsMaximum is off on 4 of 5 points"):
        await assert_tracks_async(KeepsMaximum(), SESSION, tolerance=1000)


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


@pytest.mark.anyio
async def test_under_anyio(ctx_session):
    check_all(ctx_session)
    await assert_tracks_async(AsyncTracker(), SESSION, tolerance=1000)


def test_from_sync_code(ctx_session):
    check_all(ctx_session)
'''


def test_the_oracle_works_from_asyncio_and_anyio_tests_and_awaits_async_trackers(project: pytest.Pytester) -> None:
    project.makepyfile(test_async_oracle=ASYNC_TESTS)
    result = project.runpytest("test_async_oracle.py", "-p", "anyio", "-W", "error::RuntimeWarning")
    result.assert_outcomes(passed=4)
    out = result.stdout.str()
    assert "never awaited" not in out and "Already running" not in out


WORLD_TRACKERS = '''
from ctxsim.reference import ContextTracker
from ctxsim.trackers._base import TrackerWorld

class Mine(ContextTracker):
    name = "mine"


def told(world: TrackerWorld) -> Mine:
    return Mine(usage=world.usage)


def untold() -> Mine:
    return Mine()
'''


def test_a_tracker_factory_may_take_the_scenarios_world(project: pytest.Pytester) -> None:
    import ctxsim.corpus

    project.makepyfile(worldtrackers=WORLD_TRACKERS)
    gateway = str(ctxsim.corpus.find_scenario("gateway-inclusive-usage-aider-5516"))
    result = project.runpytest(f"--ctx-scenarios={gateway}", "--ctx-tracker=worldtrackers:told", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["bundled/gateway-inclusive-usage-aider-5516.yaml::mine PASSED*"])
    # the same tracker, not told the gateway's usage convention, adds the cache read twice
    result = project.runpytest(f"--ctx-scenarios={gateway}", "--ctx-tracker=worldtrackers:untold")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*mine must track scenario 'gateway-inclusive-usage-aider-5516'*"])


def test_make_tracker_tells_a_world_factory_the_sessions_world() -> None:
    from ctxsim import SessionBuilder
    from ctxsim.trackers._base import TrackerWorld, make_tracker, takes_world

    seen: list[TrackerWorld] = []

    def told(world: TrackerWorld) -> object:
        seen.append(world)
        return object()

    session = SessionBuilder(window=1_000_000, usage="inclusive", model="claude-opus-4-1").query("q").call().build()
    make_tracker(told, session)
    make_tracker(told)
    assert seen == [TrackerWorld(window=1_000_000, usage="inclusive", model="claude-opus-4-1",
                                 auto_compact_threshold=session.auto_compact_threshold), TrackerWorld()]
    assert takes_world(told) and not takes_world(list) and not takes_world(lambda: None)
