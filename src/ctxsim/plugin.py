"""The ctxsim pytest plugin (entry point ``pytest11``): scenario files as test items, and fixtures.

Options (each with an ini equivalent; the command line wins):

``--ctx-scenarios[=PATH]`` (ini ``ctx_scenarios``: the PATH of a bare flag, default ``scenarios``)
    Collect every ``*.yaml``/``*.yml`` scenario (:mod:`ctxsim.scenario`) under PATH (relative to the invocation
    directory; the ini value is relative to the rootdir). Write it with ``=``: a bare word after the flag is
    taken as its value. Without test paths on the command line only the scenarios are collected; with them,
    scenario files among those paths are collected too.
``--ctx-tracker=SPEC`` (ini ``ctx_tracker``, one SPEC a line; the flag may be repeated)
    Check the tracker SPEC on every scenario as well: ``module:factory`` (a tracker class or a function without
    arguments that returns a tracker; ``module`` is imported as is, else from the rootdir) or a catalogued name.
    Each scenario gets one more item named after the tracker, which must do what the scenario's
    ``expect.ctx_tracker`` says: track it (the default, when the reference must), fail, or be skipped. The
    ``ctx_tracker`` fixture makes this tracker (one test per SPEC when there are several).
``--ctx-backend=inprocess|live`` (ini ``ctx_backend``)
    Where sessions play: ``inprocess`` (the real SDK client over :class:`~ctxsim.sdk.FakeTransport`, the
    default); ``live`` (the real CLI against a fake API) is not available in this version.

Each scenario file yields, in order: ``reference``, one item per tracker in ``expect.fail`` (passes when that
tracker fails), one per tracker in ``expect.pass``, and one per ``--ctx-tracker``. A tracker passes a scenario
when it tracks the truth within the tolerance at every point and fires every ``expect.threshold`` where the truth
does. Failures show the timeline table (point, truth, estimate, error, threshold) and the scenario's
``file:line``, not a traceback; ``-v`` adds the scenario's source and the tracker's known bug. A malformed file
is one failing ``load`` item with the loader's one-line ``ctxsim:`` error; the others still run. Items carry the
``ctx_scenario`` marker.

A task scenario (a ``task`` section) yields ``reference-loop`` instead (the reference restart loop works the task
through the fake agent, judged by :mod:`ctxsim.loops`, and must meet every ``expect`` number), one item per loop
of ``expect.loop.fail`` (passes when the loop checks catch the loop breaking the invariant the catalogue names)
and of ``expect.loop.pass``, and one per ``--ctx-tracker`` (the reference loop given that tracker). Failures
name each unmet expectation with its ``file:line`` and show the loop's timeline (:mod:`ctxsim.task_run`).

Fixtures: ``fake_claude`` (SDK clients built during the test play simulated sessions), ``ctx_session`` (build a
session inline from scenario YAML, or get a :class:`~ctxsim.world.SessionBuilder`), ``ctx_tracker`` (a fresh
tracker under test), ``fake_agent`` (SDK clients built during the test talk to the reactive fake agent working
on a task: for checking your own restart loop). All are synchronous, so they work alike from sync tests and from async tests under
pytest-asyncio (strict or auto mode) or anyio. The ``ctx(**world)`` marker sets ``ctx_session``'s world defaults.

The plugin is loaded in every pytest session where ``pytest-ctxsim`` is installed, so this module imports only
pytest: YAML, the SDK and the rest of ctxsim are imported inside hooks and fixtures, once asked for.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from .trackers.resolve import TrackerSpec
    from .scenario import Scenario, ScenarioError
    from .world import Session, SessionBuilder

__all__ = ["InlineSessions", "LoopItem", "MalformedScenario", "ScenarioFailed", "ScenarioFile", "ScenarioItem"]

# Before pytest or a test imports them, so their asserts report like a test's own.
pytest.register_assert_rewrite("ctxsim.testing", "ctxsim.check")

_FROM_INI = ""
"""The value of a bare ``--ctx-scenarios``: use the ini value. A string, so xdist can ship the option to workers."""

_SUFFIXES = (".yaml", ".yml")
_BACKENDS = {"inprocess": "", "live": "the live backend (the real Claude Code CLI against a fake Messages API on "
                                      "127.0.0.1) is not available yet in this version of ctxsim; use inprocess"}
"""Every backend name, and why it cannot be used (empty: it can)."""
_WORLD_KEYS = ("model", "window", "baseline", "max_output", "seed")
_ROOT = pytest.StashKey[Path]()
_TRACKERS = pytest.StashKey[list["TrackerSpec"]]()


# --- hooks -----------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxsim", "ctxsim context-window scenarios")
    group.addoption(
        "--ctx-scenarios", dest="ctx_scenarios", nargs="?", const=_FROM_INI, default=None, metavar="PATH",
        help="run the ctxsim scenario files (*.yaml, *.yml) under PATH as test items (default PATH: the "
             "ctx_scenarios ini value, relative to the rootdir). Without test path arguments only the scenarios "
             "are collected. Give PATH as --ctx-scenarios=PATH.")
    group.addoption(
        "--ctx-tracker", dest="ctx_tracker", action="append", default=None, metavar="SPEC",
        help="also check this tracker on every scenario, and make it the ctx_tracker fixture: module:factory "
             "(a tracker class or a function returning a tracker) or a catalogued name. Repeatable.")
    group.addoption(
        "--ctx-backend", dest="ctx_backend", choices=tuple(_BACKENDS), default=None,
        help="where sessions play: inprocess (the real SDK client over a fake transport; default) or live "
             "(not available yet).")
    parser.addini("ctx_scenarios", "directory (or file) of ctxsim scenarios for a bare --ctx-scenarios, relative "
                                   "to the rootdir", default="scenarios")
    parser.addini("ctx_tracker", "trackers to check on every scenario (module:factory or a catalogued name), one "
                                 "a line; --ctx-tracker replaces them", type="linelist", default=[])
    parser.addini("ctx_backend", "where sessions play: inprocess (default) or live", default="inprocess")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ctx_scenario: a ctxsim scenario check (collected by --ctx-scenarios)")
    config.addinivalue_line("markers", "ctx(**world): world defaults (model, window, baseline, max_output, seed) "
                                       "for the ctx_session fixture")
    backend = config.getoption("ctx_backend", None) or config.getini("ctx_backend") or "inprocess"
    if backend not in _BACKENDS:
        raise pytest.UsageError(f"ctxsim: ctx_backend: unknown backend {backend!r} (choose from "
                                f"{', '.join(_BACKENDS)})")
    if _BACKENDS[backend]:
        raise pytest.UsageError(f"ctxsim: --ctx-backend={backend}: {_BACKENDS[backend]}")
    specs = config.getoption("ctx_tracker", None) or config.getini("ctx_tracker")
    if specs:
        config.stash[_TRACKERS] = _resolve_trackers(config, specs)
    value = config.getoption("ctx_scenarios", None)
    if value is None:
        return
    if value == _FROM_INI:
        root = config.rootpath / (config.getini("ctx_scenarios") or "scenarios")
    else:
        root = config.invocation_params.dir / value
    root = Path(os.path.abspath(root))
    if not root.exists():
        raise pytest.UsageError(f"ctxsim: --ctx-scenarios: no such file or directory: {root}")
    config.stash[_ROOT] = root
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        # No paths on the command line: collect the scenarios instead of testpaths / the invocation directory.
        # Every xdist worker parses the same command line and makes the same choice. The args now come from
        # the command line (the flag), so say so: the header would otherwise claim testpaths were collected.
        config.args = [str(root)]
        config.args_source = pytest.Config.ArgsSource.ARGS


def _resolve_trackers(config: pytest.Config, specs: list[str]) -> list[TrackerSpec]:
    from .trackers.resolve import TrackerSpecError, resolve

    search = [str(config.rootpath), str(config.invocation_params.dir)]
    out = []
    for spec in specs:
        try:
            out.append(resolve(spec, search=search))
        except TrackerSpecError as exc:
            raise pytest.UsageError(f"ctxsim: --ctx-tracker={spec}: {exc}") from None
    return out


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    root = config.stash.get(_ROOT, None)
    if root is not None:
        lines.append(f"ctxsim scenarios: {_shown(root, config)}")
    for spec in config.stash.get(_TRACKERS, []):
        lines.append(f"ctxsim tracker under test: {spec.name} ({spec.spec})")
    return lines


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    root = parent.config.stash.get(_ROOT, None)
    if root is None or file_path.suffix not in _SUFFIXES:
        return None
    if file_path != root and root not in file_path.parents:
        return None  # a YAML file outside the scenario path (fixtures, CI config...)
    return ScenarioFile.from_parent(parent, path=file_path)  # type: ignore[no-any-return]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    specs = metafunc.config.stash.get(_TRACKERS, [])
    if "ctx_tracker" in metafunc.fixturenames and len(specs) > 1:
        metafunc.parametrize("ctx_tracker", specs, indirect=True, ids=[s.name for s in specs])


def _shown(path: Path, config: pytest.Config) -> str:
    """``path`` as a user would type it from where pytest was started."""
    try:
        rel = os.path.relpath(path, config.invocation_params.dir)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith(os.pardir + os.sep) else rel


# --- collection ------------------------------------------------------------------------------------------------


class ScenarioFile(pytest.File):
    """A scenario file: ``reference``, then one item per tracker the scenario names, then the trackers under test."""

    def collect(self) -> Iterator[pytest.Item]:
        from .scenario import ScenarioError, load_scenario

        try:
            scenario = load_scenario(self.path, display=_shown(self.path, self.config))
        except ScenarioError as error:
            # Raising here would be a collection error, and pytest stops the whole session on one ("Interrupted:
            # 1 error during collection") unless --continue-on-collection-errors. A typo in one scenario must
            # not keep the others from running, so a malformed file becomes a single item that fails with the
            # loader's one-line message.
            yield MalformedScenario.from_parent(self, name="load", error=error)
            return
        if scenario.task is not None:
            yield from self._loop_items(scenario)
            return
        yield ScenarioItem.from_parent(self, name="reference", scenario=scenario, tracker="reference",
                                       expect_ok=scenario.expect_reference)
        for tracker in scenario.must_fail:
            yield ScenarioItem.from_parent(self, name=tracker, scenario=scenario, tracker=tracker, expect_ok=False)
        for tracker in scenario.must_pass:
            yield ScenarioItem.from_parent(self, name=tracker, scenario=scenario, tracker=tracker, expect_ok=True)
        taken = {"reference", *scenario.must_fail, *scenario.must_pass}
        for spec in self.config.stash.get(_TRACKERS, []):
            if spec.catalogued and spec.name in taken:
                continue  # the scenario already says what this tracker must do
            name = spec.name if spec.name not in taken else spec.spec
            taken.add(name)
            item = ScenarioItem.from_parent(self, name=name, scenario=scenario, tracker=spec.name,
                                            expect_ok=scenario.ctx_tracker == "pass", spec=spec)
            if scenario.ctx_tracker == "skip":
                item.add_marker(pytest.mark.skip(reason=f"expect.ctx_tracker: skip (line {item.line})"))
            yield item


    def _loop_items(self, scenario: Scenario) -> Iterator[pytest.Item]:
        """A task scenario's items: ``reference-loop``, each catalogued loop it names, the trackers under test."""
        from .task_run import REFERENCE_LOOP

        yield LoopItem.from_parent(self, name=REFERENCE_LOOP, scenario=scenario, loop=REFERENCE_LOOP,
                                   expected="meet")
        for loop in scenario.loop_expect.must_fail:
            yield LoopItem.from_parent(self, name=loop, scenario=scenario, loop=loop, expected="caught")
        for loop in scenario.loop_expect.must_pass:
            yield LoopItem.from_parent(self, name=loop, scenario=scenario, loop=loop, expected="kept")
        taken = {REFERENCE_LOOP, *scenario.loop_expect.must_fail, *scenario.loop_expect.must_pass}
        for spec in self.config.stash.get(_TRACKERS, []):
            name = spec.name if spec.name not in taken else spec.spec
            taken.add(name)
            expected = {"pass": "meet", "fail": "miss"}.get(scenario.ctx_tracker, "none")
            item = LoopItem.from_parent(self, name=name, scenario=scenario, loop=REFERENCE_LOOP, expected=expected,
                                        spec=spec)
            if scenario.ctx_tracker == "skip":
                item.add_marker(pytest.mark.skip(reason=f"expect.ctx_tracker: skip (line {item.line})"))
            yield item


class ScenarioFailed(Exception):
    """A scenario item's expectation was not met; the message is what the user reads, in full."""


class _ScenarioNode(pytest.Item):
    """What both item kinds share: the marker, and failures reported without a traceback."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_marker("ctx_scenario")

    def repr_failure(self, excinfo: ExceptionInfo[BaseException], style: Any = None) -> str | TerminalRepr:
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)  # a bug in the harness: show the traceback


class _CheckItem(_ScenarioNode):
    """What the items checking a loaded scenario share: the scenario, the tracker under test, the line they
    stand for."""

    def __init__(self, *, scenario: Scenario, subject: str, spec: TrackerSpec | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.spec = spec
        """The tracker under test (``--ctx-tracker``) this item checks; None for a catalogued one."""
        self._subject = subject

    @property
    def line(self) -> int:
        """The line of the scenario file that states what this item checks."""
        if self.spec is not None:
            reference = "reference" if self.scenario.task is None else "reference-loop"
            return self.scenario.lines.get("expect.ctx_tracker") or self.scenario.line_of(reference)
        return self.scenario.line_of(self._subject)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, self.line - 1, f"scenario {self.scenario.name}: {self.name}"


class ScenarioItem(_CheckItem):
    """One tracker on one scenario: passes when the tracker tracks the session (``expect_ok``) or fails on it."""

    def __init__(self, *, scenario: Scenario, tracker: str, expect_ok: bool, spec: TrackerSpec | None = None,
                 **kwargs: Any) -> None:
        super().__init__(scenario=scenario, subject=tracker, spec=spec, **kwargs)
        self.tracker = tracker
        self.expect_ok = expect_ok

    def _rule(self) -> str:
        if self.spec is not None:
            return f"expect.ctx_tracker: {'pass' if self.expect_ok else 'fail'}, --ctx-tracker={self.spec.spec}"
        if self.tracker == "reference":
            return f"expect.reference: {'pass' if self.expect_ok else 'fail'}"
        return "expect.pass" if self.expect_ok else "expect.fail"

    def runtest(self) -> None:
        from .scenario_run import explain, run_scenario
        from .trackers import CATALOGUE, make

        tracker = self.spec.factory() if self.spec is not None else make(self.tracker)
        run = run_scenario(self.scenario, tracker, name=self.tracker)
        if run.ok == self.expect_ok:
            return
        scenario = self.scenario
        where = f"{_shown(self.path, self.config)}:{self.line}"
        if self.expect_ok:
            head = f"{where}: {self.tracker} must track scenario {scenario.name!r} ({self._rule()}), but does not"
        elif run.thresholds:
            head = (f"{where}: {self.tracker} must fail on scenario {scenario.name!r} ({self._rule()}), but tracks "
                    f"it within ±{scenario.tolerance:,} tokens and fires every threshold where the truth does")
        else:
            head = (f"{where}: {self.tracker} must fail on scenario {scenario.name!r} ({self._rule()}), "
                    f"but tracks it within ±{scenario.tolerance:,} tokens")
        entry = CATALOGUE.get(self.tracker) if self.spec is None else None
        raise ScenarioFailed(explain(run, head, verbosity=self.config.get_verbosity(),
                                     bug=getattr(entry, "bug", ""), shown=lambda p: _shown(p, self.config)))


_LOOP_RULES = {"miss": "expect.ctx_tracker: fail", "caught": "expect.loop.fail", "kept": "expect.loop.pass",
               "none": "expect.ctx_tracker: skip"}
"""The key behind what a loop item expects, as its failure names it (the reference loop's: every ``expect`` key)."""


class LoopItem(_CheckItem):
    """One restart loop on a task scenario: the reference loop (with the reference tracker or a tracker under test)
    must meet the scenario's expectations; a loop of ``expect.loop.fail`` must be caught breaking the invariant the
    catalogue names; a loop of ``expect.loop.pass`` must keep every invariant."""

    def __init__(self, *, scenario: Scenario, loop: str, expected: str, spec: TrackerSpec | None = None,
                 **kwargs: Any) -> None:
        super().__init__(scenario=scenario, subject=loop, spec=spec, **kwargs)
        self.loop = loop
        """``reference-loop`` or a catalogued loop's name (the reference loop given ``spec``, when set)."""
        self.expected = expected
        """What the run must be: see :meth:`ctxsim.task_run.TaskRun.verdict`."""

    def runtest(self) -> None:
        from .task_run import explain_task, run_task

        spec = self.spec
        run = run_task(self.scenario, loop=self.loop, tracker_factory=spec.factory if spec is not None else None,
                       tracker=spec.name if spec is not None else "reference")
        met, does = run.verdict(self.expected)
        if met:
            return
        problems = run.problems() if self.expected in ("meet", "miss") else []
        line = problems[0].line if problems and self.expected == "meet" else self.line
        who = self.loop if spec is None else f"{self.loop} with tracker {spec.name} (--ctx-tracker={spec.spec})"
        rule = f" ({_LOOP_RULES[self.expected]})" if self.expected in _LOOP_RULES else ""
        head = f"{_shown(self.path, self.config)}:{line}: {who} on scenario {self.scenario.name!r}{rule}: {does}"
        raise ScenarioFailed(explain_task(run, head, verbosity=self.config.get_verbosity(),
                                          shown=lambda p: _shown(p, self.config),
                                          expectations=self.expected == "meet"))


class MalformedScenario(_ScenarioNode):
    """A scenario file the loader rejected: one item that fails with the loader's ``ctxsim:`` message."""

    def __init__(self, *, error: ScenarioError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise ScenarioFailed(str(self.error))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, (self.error.line or 1) - 1, f"malformed scenario {self.path.name}"


# --- fixtures --------------------------------------------------------------------------------------------------


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

    from .sdk import patch_sdk

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

    def scenario(self, text: str) -> Scenario:
        """The scenario ``text`` describes; a mistake raises :class:`~ctxsim.scenario.ScenarioError`."""
        from .scenario import parse_scenario

        return parse_scenario(textwrap.dedent(text).strip("\n") + "\n", file=f"<inline scenario of {self.name}>",
                              world=self.world, name=self.name.rpartition("::")[2])

    def builder(self, **kwargs: Any) -> SessionBuilder:
        """A :class:`~ctxsim.world.SessionBuilder` with the marker's world, overridden by ``kwargs``."""
        from .world import SessionBuilder

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


@pytest.fixture
def ctx_tracker(request: pytest.FixtureRequest) -> Any:
    """A fresh tracker under test: made by ``--ctx-tracker`` (each, when several), else the reference tracker."""
    spec = getattr(request, "param", None)
    if spec is None:
        specs = request.config.stash.get(_TRACKERS, [])
        spec = specs[0] if specs else None
    if spec is not None:
        return spec.factory()
    from .reference import ContextTracker

    return ContextTracker()


@pytest.fixture
def fake_agent() -> Iterator[Any]:
    """Drive your own restart loop against the reactive fake agent (:class:`~ctxsim.agent.FakeAgent`), for this test.

    Call it with a :class:`~ctxsim.agent.Task` (and the agent's keywords: ``checkpoints``, ``max_prompts``,
    ``max_connections``); it returns the agent. Every ``ClaudeSDKClient(options)`` and ``query()`` made until
    the test ends talks to it, a new connection a new session. Then look at what it did::

        def test_my_loop(fake_agent):
            agent = fake_agent(Task.uniform(40, 7_400, window=100_000, baseline=10_000))
            anyio.run(my_restart_loop, agent.task.prompt)
            assert agent.counts() == {step: 1 for step in agent.task.ids}

    :func:`ctxsim.loops.check_restart_loop` judges a loop against every invariant instead.
    """
    from contextlib import ExitStack

    from .loops import fake_agent as agent

    with ExitStack() as stack:
        yield lambda task, **kw: stack.enter_context(agent(task, **kw))
