"""The ctxsim pytest plugin (entry point ``pytest11``): scenario files as test items, and fixtures.

Options (each with an ini equivalent; the command line wins):

``--ctx-scenarios[=PATH]`` (ini ``ctx_scenarios``: the PATH of a bare flag, default ``scenarios``)
    Collect every ``*.yaml``/``*.yml`` scenario (:mod:`ctxsim.scenario`) under PATH (relative to the invocation
    directory; the ini value is relative to the rootdir) along with what pytest collects anyway: ``pytest
    --ctx-scenarios`` runs the tests (``testpaths``, else the invocation directory) and the scenarios,
    ``pytest --ctx-scenarios=scenarios tests/`` both. Paths on the command line that reach into PATH select
    what runs of it (``pytest scenarios/a.yaml --ctx-scenarios``). Write PATH with ``=``: a bare word after the
    flag is a path to collect (``pytest --ctx-scenarios scenarios`` runs only the scenarios), and one that looks
    like scenarios outside PATH is a usage error saying how to write either meaning (:mod:`._paths`). Without
    the flag, an ini ``ctx_scenarios`` gets a line saying how to run them.
``--ctx-tracker=SPEC`` (ini ``ctx_tracker``, one SPEC a line; the flag may be repeated)
    Check the tracker SPEC on every scenario as well: ``module:factory`` (a tracker class or a function without
    arguments that returns a tracker; ``module`` is imported as is, else from the rootdir) or a catalogued name.
    Each scenario gets one more item named after the tracker, which must do what the scenario's
    ``expect.ctx_tracker`` says: track it (the default, when the reference must), fail, or be skipped. The
    ``ctx_tracker`` fixture makes this tracker (one test per SPEC when there are several).
``--ctx-loop=SPEC`` (ini ``ctx_loop``, one SPEC a line; the flag may be repeated)
    Run your restart loop SPEC over every task scenario as well: ``module:function`` (a function taking a
    :class:`~ctxsim.loops.LoopRig`, sync or async; imported like a tracker's factory) or a catalogued loop's name.
    It runs with the ``policy`` and ``prompts`` it declares as attributes (else the scenario's policy, handed to it
    in the rig, and seed 003's prompts); its item must keep every invariant of :mod:`ctxsim.loops`.
``--ctx-backend=inprocess|live`` (ini ``ctx_backend``)
    Where sessions play: ``inprocess`` (the real SDK client over :class:`~ctxsim.sdk.FakeTransport`, the
    default); ``live``: the real Claude Code CLI bundled in ``claude-agent-sdk`` against ctxsim's fake Messages API
    on 127.0.0.1 (:mod:`ctxsim.live`), serving each scenario's world; a scenario (or tracker) that cannot run live
    is skipped with the reason, task scenarios too.

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
on a task: for checking your own restart loop). All are synchronous, so they work alike from sync tests and from
async tests under pytest-asyncio (strict or auto mode) or anyio. The ``ctx(**world)`` marker sets ``ctx_session``'s
world defaults.

The plugin is loaded in every pytest session where ``pytest-ctxsim`` is installed, so this package imports only
pytest: YAML, the SDK and the rest of ctxsim are imported inside hooks, items and fixtures, once asked for.
Once scenarios are collected (``--ctx-scenarios``), and again once the first scenario item has loaded the
SDK, the objects the imports left are frozen out of the cyclic collector's way (``gc.freeze()``,
:func:`ctxsim._lazy.freeze_imports`); the run's last cleanup unfreezes them.

The package: the options and hooks here; the scenario files and their items in :mod:`._items`; the fixtures in
:mod:`._fixtures`; what they share in :mod:`._shared`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from .._lazy import freeze_imports, thaw_imports
from ._fixtures import InlineSessions, ctx_session, ctx_tracker, fake_agent, fake_claude
from ._items import LoopItem, MalformedScenario, ScenarioFailed, ScenarioFile, ScenarioItem
from ._paths import FROM_INI, NOTES, SUFFIXES, ini_hint, scenario_root
from ._shared import AGENTS, BACKEND, LOOPS, TRACKERS, shown

T = TypeVar("T")

if TYPE_CHECKING:
    from ..loops.resolve import LoopSpec
    from ..trackers.resolve import TrackerSpec

__all__ = ["DRIFT_PROPERTY", "InlineSessions", "LoopItem", "MalformedScenario", "ScenarioFailed", "ScenarioFile",
           "ScenarioItem", "ctx_session", "ctx_tracker", "fake_agent", "fake_claude"]

DRIFT_PROPERTY = "ctxsim_drift"
"""A test's ``record_property(DRIFT_PROPERTY, line)`` puts ``line`` in the run's terminal summary under "ctxsim
drift": what a Claude Code release changed that fails nothing (it travels in the report, so pytest-xdist workers'
lines reach it)."""

# Before pytest or a test imports them, so their asserts report like a test's own.
pytest.register_assert_rewrite("ctxsim.testing", "ctxsim.check")

_BACKENDS = {"inprocess": "", "live": ""}
"""Every backend name, and why it cannot be used (empty: it can)."""
_ROOT = pytest.StashKey[Path]()


# --- hooks -----------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxsim", "ctxsim context-window scenarios")
    group.addoption(
        "--ctx-scenarios", dest="ctx_scenarios", nargs="?", const=FROM_INI, default=None, metavar="PATH",
        help="also run the ctxsim scenario files (*.yaml, *.yml) under PATH as test items, with the tests pytest "
             "collects anyway (default PATH: the ctx_scenarios ini value, relative to the rootdir, else "
             "scenarios). Give PATH as --ctx-scenarios=PATH: a bare word after the flag is a path to collect.")
    group.addoption(
        "--ctx-tracker", dest="ctx_tracker", action="append", default=None, metavar="SPEC",
        help="also check this tracker on every scenario, and make it the ctx_tracker fixture: module:factory "
             "(a tracker class or a function returning a tracker) or a catalogued name. Repeatable.")
    group.addoption(
        "--ctx-loop", dest="ctx_loop", action="append", default=None, metavar="SPEC",
        help="also run this restart loop over every task scenario: module:function (taking a LoopRig; it may "
             "declare policy and prompts attributes) or a catalogued loop. Repeatable.")
    group.addoption(
        "--ctx-backend", dest="ctx_backend", choices=tuple(_BACKENDS), default=None,
        help="where sessions play: inprocess (the real SDK client over a fake transport; default) or live "
             "(the bundled Claude Code CLI against a fake Messages API on 127.0.0.1).")
    parser.addini("ctx_scenarios", "directory (or file) of ctxsim scenarios for a bare --ctx-scenarios, relative "
                                   "to the rootdir (default: scenarios)", default="")
    parser.addini("ctx_tracker", "trackers to check on every scenario (module:factory or a catalogued name), one "
                                 "a line; --ctx-tracker replaces them", type="linelist", default=[])
    parser.addini("ctx_loop", "restart loops to run over every task scenario (module:function or a catalogued "
                              "loop), one a line; --ctx-loop replaces them", type="linelist", default=[])
    parser.addini("ctx_backend", "where sessions play: inprocess (default) or live", default="inprocess")


def pytest_configure(config: pytest.Config) -> None:
    # Registered before pytest's own cleanups, so run after them: its last full collections (unraisable
    # exceptions) still find the imports frozen and skip them.
    config.add_cleanup(thaw_imports)
    config.addinivalue_line("markers", "ctx_scenario: a ctxsim scenario check (collected by --ctx-scenarios)")
    config.addinivalue_line("markers", "ctx(**world): world defaults (model, window, baseline, max_output, seed) "
                                       "for the ctx_session fixture")
    backend = config.getoption("ctx_backend", None) or config.getini("ctx_backend") or "inprocess"
    if backend not in _BACKENDS:
        raise pytest.UsageError(f"ctxsim: ctx_backend: unknown backend {backend!r} (choose from "
                                f"{', '.join(_BACKENDS)})")
    if _BACKENDS[backend]:
        raise pytest.UsageError(f"ctxsim: --ctx-backend={backend}: {_BACKENDS[backend]}")
    config.stash[BACKEND] = backend
    specs = config.getoption("ctx_tracker", None) or config.getini("ctx_tracker")
    if specs:
        config.stash[TRACKERS] = _resolve_trackers(config, specs)
    loops = config.getoption("ctx_loop", None) or config.getini("ctx_loop")
    if loops:
        config.stash[LOOPS] = _resolve_loops(config, loops)
    root = scenario_root(config)  # the scenarios join what pytest collects anyway (see ._paths)
    if root is not None:
        config.stash[_ROOT] = root


def _resolve_trackers(config: pytest.Config, specs: list[str]) -> list[TrackerSpec]:
    from ..trackers.resolve import TrackerSpecError, resolve

    return _resolved(config, specs, resolve, TrackerSpecError, "--ctx-tracker")


def _resolve_loops(config: pytest.Config, specs: list[str]) -> list[LoopSpec]:
    from ..loops.resolve import LoopSpecError, resolve_loop

    return _resolved(config, specs, resolve_loop, LoopSpecError, "--ctx-loop")


def _resolved(config: pytest.Config, specs: list[str], resolve: Callable[..., T], error: type[Exception],
              option: str) -> list[T]:
    """Each of ``specs`` resolved (``module`` imported from the rootdir or the invocation directory when it is not
    importable as is); one that names nothing usable is a usage error naming ``option``."""
    search = [str(config.rootpath), str(config.invocation_params.dir)]
    out = []
    for spec in specs:
        try:
            out.append(resolve(spec, search=search))
        except error as exc:
            raise pytest.UsageError(f"ctxsim: {option}={spec}: {exc}") from None
    return out


def pytest_report_header(config: pytest.Config) -> list[str]:
    from ..wire.versions import captured_versions, installed_cli_version, installed_sdk_version

    checked = captured_versions()
    lines = [f"ctxsim: Claude Code {installed_cli_version() or '(none installed)'} (claude-agent-sdk "
             f"{installed_sdk_version() or '(not installed)'}); wire checked against Claude Code "
             f"{', '.join(checked) if checked else '(no capture)'}"]
    root = config.stash.get(_ROOT, None)
    if root is not None:
        lines.append(f"ctxsim scenarios: {shown(root, config)}")
    notes: list[str] = config.stash.get(NOTES, [])
    lines.extend(notes)
    hint = ini_hint(config)
    if hint is not None:
        lines.append(hint)
    for spec in config.stash.get(TRACKERS, []):
        lines.append(f"ctxsim tracker under test: {spec.name} ({spec.spec})")
    for loop in config.stash.get(LOOPS, []):
        lines.append(f"ctxsim restart loop under test: {loop.name} ({loop.spec})")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    hint = ini_hint(config)
    if hint is not None and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        terminalreporter.write_line(hint)  # the header (and its hint) is not shown under -q
    drift = sorted({str(value) for reports in terminalreporter.stats.values() for report in reports
                    for name, value in getattr(report, "user_properties", ()) if name == DRIFT_PROPERTY})
    if drift:
        terminalreporter.section("ctxsim drift (listed, not failed)")
        for line in drift:
            terminalreporter.write_line(line)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    root = parent.config.stash.get(_ROOT, None)
    if root is None or file_path.suffix not in SUFFIXES:
        return None
    if file_path != root and root not in file_path.parents:
        return None  # a YAML file outside the scenario path (fixtures, CI config...)
    return ScenarioFile.from_parent(parent, path=file_path)


def pytest_collection_finish(session: pytest.Session) -> None:
    # A run of ctxsim's scenarios (--ctx-scenarios): the objects the imports left (~110k: the SDK, mcp, pydantic,
    # Hypothesis) move out of the cyclic collector's way (ctxsim._lazy). A run without it is left as it is.
    if session.config.stash.get(_ROOT, None) is not None:
        freeze_imports()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    agents = item.stash.get(AGENTS, None)
    if agents and report.failed and call.when == "call":
        from ..task_run import agent_timeline

        for n, agent in enumerate(agents, 1):
            label = f"ctxsim fake agent {n}" if len(agents) > 1 else "ctxsim fake agent"
            report.sections.append((f"{label}: task {agent.task.name!r}, turn timeline", agent_timeline(agent)))
    return report


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    specs = metafunc.config.stash.get(TRACKERS, [])
    if "ctx_tracker" in metafunc.fixturenames and len(specs) > 1:
        metafunc.parametrize("ctx_tracker", specs, indirect=True, ids=[s.name for s in specs])
