"""The plugin's fixtures: ``fake_claude``, ``ctx_session`` (with :class:`InlineSessions`), ``ctx_tracker`` and
``fake_agent``. Each imports what it needs when a test asks for it."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from ._shared import AGENTS, TRACKERS

if TYPE_CHECKING:
    from ..scenario import SessionScenario, TaskScenario
    from ..world import Session, SessionBuilder

__all__ = ["InlineSessions", "ctx_session", "ctx_tracker", "fake_agent", "fake_claude"]

_WORLD_KEYS = ("model", "window", "baseline", "max_output", "seed")
"""The keywords of the ``ctx(**world)`` marker."""


@pytest.fixture
def fake_claude() -> Iterator[Any]:
    """Run code that builds its own SDK clients against simulated sessions, for this test only.

    Call it with a session (every connection plays it), a list of sessions (successive connections play them
    in turn) or a factory ``options -> FakeTransport``; it returns the :class:`~ctxsim.sdk.SdkPatch` that
    records every transport made. Every ``ClaudeSDKClient(options)`` and ``query()`` without a transport gets a
    :class:`~ctxsim.sdk.FakeTransport` until the test ends::

        def test_agent(fake_claude):
            fake = fake_claude(session)
            run_my_agent()
            assert fake.last.prompts == ["do the task"]
    """
    from contextlib import ExitStack

    from ..sdk import patch_sdk

    with ExitStack() as stack:
        yield lambda target: stack.enter_context(patch_sdk(target))


class InlineSessions:
    """What the ``ctx_session`` fixture gives: sessions built inside a test.

    Call it with scenario YAML (indentation is removed) for the :class:`~ctxsim.world.Session` it describes;
    :meth:`scenario` gives the whole :class:`~ctxsim.scenario.Scenario`, :meth:`builder` a
    :class:`~ctxsim.world.SessionBuilder`. The test's ``ctx(**world)`` marker supplies world defaults::

        def test_compaction(ctx_session, fake_claude):
            session = ctx_session('''
                queries:
                  - steps:
                      - call: {in: 3, cc: 2000, cr: 148000}
                      - compact: {post: 20000}
                      - call: {}
            ''')
            fake_claude(session)
    """

    def __init__(self, name: str, world: dict[str, Any]) -> None:
        self.name = name
        """How errors name the inline scenario (the test's node id)."""
        self.world = world

    def __call__(self, text: str) -> Session:
        return self.scenario(text).session

    def scenario(self, text: str) -> SessionScenario | TaskScenario:
        """The scenario ``text`` describes, of its kind; a mistake raises :class:`~ctxsim.scenario.ScenarioError`."""
        from ..scenario import parse_scenario

        return parse_scenario(textwrap.dedent(text).strip("\n") + "\n", file=f"<inline scenario of {self.name}>",
                              world=self.world, name=self.name.rpartition("::")[2])

    def builder(self, **kwargs: Any) -> SessionBuilder:
        """A :class:`~ctxsim.world.SessionBuilder` with the marker's world, overridden by ``kwargs``."""
        from ..world import SessionBuilder

        world = {("max_output_tokens" if k == "max_output" else k): v for k, v in self.world.items()}
        return SessionBuilder(**{**world, **kwargs})


@pytest.fixture
def ctx_session(request: pytest.FixtureRequest) -> InlineSessions:
    """Build sessions inline: ``ctx_session(yaml_text)``, ``ctx_session.scenario(...)``, ``.builder(**kwargs)``."""
    world: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("ctx"))):
        unknown = sorted(set(marker.kwargs) - set(_WORLD_KEYS))
        if unknown or marker.args:
            pytest.fail(f"ctxsim: @pytest.mark.ctx takes world keywords ({', '.join(_WORLD_KEYS)}); got "
                        f"{', '.join(unknown) or 'positional arguments'}", pytrace=False)
        world.update(marker.kwargs)
    return InlineSessions(request.node.nodeid, world)


_NO_TRACKER = ("ctxsim: the ctx_tracker fixture has no tracker to make: name yours with --ctx-tracker=module:factory "
              "(a tracker class, or a function returning one), or ctx_tracker = [\"module:factory\"] under "
              "[tool.pytest.ini_options]; --ctx-tracker=reference checks ctxsim's reference tracker")


@pytest.fixture
def ctx_tracker(request: pytest.FixtureRequest) -> Any:
    """A fresh tracker under test, made by ``--ctx-tracker`` (each in turn, when several: the test is parametrized)
    or the ini's ``ctx_tracker``. With none named the test fails saying how to name one: it never quietly checks
    some other tracker. A factory with a ``world`` parameter is told the default world
    (:class:`~ctxsim.trackers.TrackerWorld`)."""
    from ..trackers import make_tracker

    spec = getattr(request, "param", None)
    if spec is None:
        specs = request.config.stash.get(TRACKERS, [])
        if not specs:
            pytest.fail(_NO_TRACKER, pytrace=False)
        spec = specs[0]
    return make_tracker(spec.factory)


@pytest.fixture
def fake_agent(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Drive your own restart loop against the reactive fake agent (:class:`~ctxsim.agent.FakeAgent`), for this test.

    Call it with a :class:`~ctxsim.agent.Task` (and the agent's keywords: ``checkpoints``, ``max_prompts``,
    ``max_connections``); it returns the agent. Every ``ClaudeSDKClient(options)`` and ``query()`` made until
    the test ends talks to it, a new connection a new session. Then look at what it did::

        def test_my_loop(fake_agent):
            agent = fake_agent(Task.uniform(40, 7_400, window=100_000, baseline=10_000))
            anyio.run(my_restart_loop, agent.task.prompt)
            assert agent.counts() == {step: 1 for step in agent.task.ids}

    ``prompts=LoopPrompts(...)`` declares what your loop says (:class:`~ctxsim.agent.LoopPrompts`); a prompt the
    agent cannot classify raises a ``ctxsim:`` error quoting it. When the test fails, its report shows every
    agent's turn timeline (session, prompt kind, steps, true context, zone, what the loop did next).
    :func:`ctxsim.loops.check_restart_loop` judges a loop against every invariant instead.
    """
    from contextlib import ExitStack

    from ..loops import fake_agent as agent

    made = request.node.stash.setdefault(AGENTS, [])

    def make(task: Any, **kw: Any) -> Any:
        made.append(stack.enter_context(agent(task, **kw)))
        return made[-1]

    with ExitStack() as stack:
        yield make
