"""The ctxsim pytest plugin (entry point ``pytest11``): scenario files as test items, and fixtures.

Options (each with an ini equivalent; the command line wins):

``--ctx-scenarios[=PATH]`` (ini ``ctx_scenarios``: the PATH of a bare flag, default ``bundled``; the flag may be
repeated)
    Collect ctxsim scenario files (:mod:`ctxsim.scenario`) as test items. With no path on the command line, the scenario
    path alone: ``=PATH`` (relative to the invocation directory; a file or a directory; each ``=PATH`` when the flag is
    repeated), else the ini's (relative to the rootdir), else the corpus bundled with ctxsim (:mod:`ctxsim.corpus`;
    ``bundled`` names it anywhere a PATH goes). With paths on the command line, those, with the scenario files in them,
    and ``=PATH`` or the ini's path (the bundled corpus only when asked). A scenario file named on the command line is
    collected with or without the flag (``pytest bug.yaml``), and so are the scenario files of a folder named there
    (``pytest scenarios/``), as pytest collects a test folder (not ``testpaths``). A bare word after the flag is a path
    to collect (the how-to guide on reproducing a bug report has the rules). Without the flag, an ini
    ``ctx_scenarios`` gets a line saying how to run them.
``--ctx-tracker=SPEC`` (ini ``ctx_tracker``, one SPEC a line; the flag may be repeated)
    Check the tracker SPEC on every scenario as well: ``module:factory`` (a tracker class or a function without
    arguments that returns a tracker, or one with a ``world`` parameter, told each scenario's
    :class:`~ctxsim.trackers.TrackerWorld`; ``module`` is imported as is, else from the rootdir) or a
    catalogued name, or a command in any language (``cmd:COMMAND``, ``stream:COMMAND``).
    Each scenario gets one more item named after the tracker, which must do what the scenario's
    ``expect.ctx_tracker`` says: track it (the default, when the reference must), fail, or be skipped. Two trackers
    that would be named alike (two factories making one class, two commands of one basename) both get their item,
    the second named ``NAME[SPEC]``; a catalogued tracker, by name or by its own factory, is judged as the scenario
    says of it, once. The ``ctx_tracker`` fixture makes this tracker (one test per SPEC when there are several,
    with the same ids; with none, a test using it fails saying how to name one).
``--ctx-env=NAME`` (ini ``ctx_env``: names, space- or line-separated; the flag may be repeated)
    Pass the environment variable NAME (or every match of a glob, ``TRACKER_*``) through to the ``cmd:`` and
    ``stream:`` commands under test, as tox's ``passenv`` does. Without it a command gets ``PATH``, ``HOME``,
    ``LANG``, ``TERM`` and the world's ``CTXSIM_*`` variables only, so a run does not depend on the shell it is
    started from. A name that is not set passes nothing.
``--ctx-loop=SPEC`` (ini ``ctx_loop``, one SPEC a line; the flag may be repeated)
    Run your restart loop SPEC over every task scenario as well: ``module:function`` (a function taking a
    :class:`~ctxsim.loops.LoopRig`, sync or async; imported like a tracker's factory) or a catalogued loop's name.
    It runs with the ``policy`` and ``prompts`` it declares as attributes (else the scenario's policy, handed to it
    in the rig, and design 003's prompts); its item must keep every invariant of :mod:`ctxsim.loops`. With
    ``--ctx-tracker``, the loop is given that tracker (one item per tracker fed SDK messages), else the reference.
``--ctx-block-real`` (ini ``ctx_block_real = true``)
    Fail any test that starts a Claude Code not pointed at ctxsim's fake API on 127.0.0.1, or opens a connection
    (or looks up a name) beyond 127.0.0.1, with a ``ctxsim:`` error naming the test and what tried, even where
    its code caught the refusal.
``--ctx-cli=VERSION`` (ini ``ctx_cli``)
    Render every session that names no Claude Code release (a scenario's ``world.cli``) as Claude Code
    ``VERSION``, the rules that differ between releases included (:data:`ctxsim.world.RULES`); default: the CLI in
    use, ``CTXSIM_CLI``'s where it names one, else the one bundled in the installed ``claude-agent-sdk``.
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
name each unmet expectation with its ``file:line`` and show the loop's timeline (:func:`ctxsim.runner.agent_timeline`).

Fixtures: ``fake_claude`` (SDK clients built during the test play simulated sessions), ``ctx_session`` (build a
session inline from scenario YAML, or get a :class:`~ctxsim.world.SessionBuilder`), ``ctx_tracker`` (a fresh
tracker under test, as named), ``fake_agent`` (SDK clients built during the test talk to the reactive fake agent working
on a task: for checking your own restart loop). All are synchronous, so they work alike from sync tests and from
async tests under pytest-asyncio (strict or auto mode) or anyio. The ``ctx(**world)`` marker sets ``ctx_session``'s
world defaults.

The plugin is loaded in every pytest session where ``pytest-ctxsim`` is installed, so this package imports only
pytest: YAML, the SDK and the rest of ctxsim are imported inside hooks, items and fixtures, once asked for.
With ``--ctx-freeze-gc`` (opt-in), once scenarios are collected and again once the first scenario item has loaded
the SDK, the objects the imports left are frozen out of the cyclic collector's way (``gc.freeze()``,
:func:`ctxsim.runner.freeze_imports`); the run's last cleanup unfreezes them.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Generator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from ._fixtures import InlineSessions, ctx_session, ctx_tracker, fake_agent, fake_claude
from ._guard import Guard, refuse_until_exit
from ._items import LoopItem, MalformedScenario, ScenarioFailed, ScenarioFile, ScenarioItem
from ._paths import (
    FROM_INI,
    NOTES,
    ScenarioPath,
    bundled_ids,
    header,
    ini_hint,
    is_scenario_file,
    last_failed_bundled,
    node_id,
    scenario_path,
)
from ._shared import AGENTS, BACKEND, FREEZE_GC, LOOPS, TRACKERS, freeze_if_asked

T = TypeVar("T")

if TYPE_CHECKING:
    from ..loops import LoopSpec
    from ..trackers import TrackerSpec

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
_SCENARIOS = pytest.StashKey[ScenarioPath]()
_BLOCK_REAL = pytest.StashKey[bool]()
_GUARD = pytest.StashKey[Guard]()
_BETWEEN = pytest.StashKey[Guard]()
"""The session's guard, active between tests (``--ctx-block-real``)."""
_NOTICE = pytest.StashKey["str | None"]()
"""The run's :func:`ctxsim.live.release_notice`, once asked."""


# --- hooks -----------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxsim", "ctxsim context-window scenarios")
    group.addoption(
        "--ctx-scenarios", dest="ctx_scenarios", nargs="?", const=FROM_INI, default=None, metavar="PATH",
        action="append",
        help="also run the ctxsim scenario files (*.yaml, *.yml) under PATH as test items, with the tests pytest "
             "collects anyway (default PATH: the ctx_scenarios ini value, relative to the rootdir, else "
             "the bundled corpus). Give PATH as --ctx-scenarios=PATH: a bare word after the flag is a path to "
             "collect. Repeatable.")
    group.addoption(
        "--ctx-tracker", dest="ctx_tracker", action="append", default=None, metavar="SPEC",
        help="also check this tracker on every scenario, and make it the ctx_tracker fixture: module:factory "
             "(a tracker class or a function returning a tracker) or a catalogued name. Repeatable.")
    group.addoption(
        "--ctx-env", dest="ctx_env", action="append", default=None, metavar="NAME",
        help="pass this environment variable (or every match of a glob such as TRACKER_*) through to the cmd: and "
             "stream: commands under test, which get only PATH, HOME, LANG, TERM and CTXSIM_* otherwise. "
             "Repeatable.")
    group.addoption(
        "--ctx-loop", dest="ctx_loop", action="append", default=None, metavar="SPEC",
        help="also run this restart loop over every task scenario: module:function (taking a LoopRig; it may "
             "declare policy and prompts attributes) or a catalogued loop. Repeatable.")
    group.addoption(
        "--ctx-block-real", dest="ctx_block_real", action="store_true", default=None,
        help="fail any test that starts a Claude Code not pointed at ctxsim's fake API on 127.0.0.1, or opens a "
             "connection (or looks up a name) beyond 127.0.0.1, with a ctxsim: error naming what tried.")
    group.addoption(
        "--ctx-backend", dest="ctx_backend", choices=tuple(_BACKENDS), default=None,
        help="where sessions play: inprocess (the real SDK client over a fake transport; default) or live "
             "(the bundled Claude Code CLI against a fake Messages API on 127.0.0.1).")
    group.addoption(
        "--ctx-cli", dest="ctx_cli", default=None, metavar="VERSION",
        help="render every session that names no Claude Code release (a scenario's world.cli) as this release, "
             "its rules included (default: the CLI bundled in the installed claude-agent-sdk).")
    parser.addini("ctx_cli", "as --ctx-cli: the Claude Code release sessions that name none render as",
                  default="")
    parser.addini("ctx_scenarios", "directory (or file) of ctxsim scenarios for a bare --ctx-scenarios, relative "
                                   "to the rootdir (default: scenarios)", default="")
    parser.addini("ctx_tracker", "trackers to check on every scenario (module:factory or a catalogued name), one "
                                 "a line; --ctx-tracker replaces them", type="linelist", default=[])
    parser.addini("ctx_env", "environment variables passed through to cmd: and stream: commands under test "
                             "(names or globs, space- or line-separated), as tox's passenv; --ctx-env replaces "
                             "them", type="args", default=[])
    parser.addini("ctx_loop", "restart loops to run over every task scenario (module:function or a catalogued "
                              "loop), one a line; --ctx-loop replaces them", type="linelist", default=[])
    parser.addini("ctx_backend", "where sessions play: inprocess (default) or live", default="inprocess")
    group.addoption(
        "--ctx-freeze-gc", dest="ctx_freeze_gc", action="store_true", default=None,
        help="in a long run, move the objects the imports left out of the cyclic garbage collector's way "
             "(gc.freeze) once they are loaded: faster, and nothing a run computes changes.")
    parser.addini("ctx_freeze_gc", "as --ctx-freeze-gc", type="bool", default=False)
    parser.addini("ctx_block_real", "fail any test that would reach a real model or the network beyond 127.0.0.1 "
                                    "(as --ctx-block-real)", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    # Registered before pytest's own cleanups, so run after them: its last full collections (unraisable
    # exceptions) still find the imports frozen and skip them.
    freeze = config.getoption("ctx_freeze_gc")
    config.stash[FREEZE_GC] = bool(config.getini("ctx_freeze_gc") if freeze is None else freeze)
    if config.stash[FREEZE_GC]:
        from ..runner import thaw_imports

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
    release = config.getoption("ctx_cli", None) or config.getini("ctx_cli")
    if release:
        from ..wire import use_cli

        try:
            use_cli(release)
        except ValueError as exc:
            raise pytest.UsageError(f"{exc} (--ctx-cli)") from None
        config.add_cleanup(lambda: use_cli(None))
    elif os.environ.get("CTXSIM_CLI"):  # the CLI in use is the one it names: sessions render as its release
        from ..live import render_as_named_cli
        from ..wire import use_cli

        if render_as_named_cli() is not None:
            config.add_cleanup(lambda: use_cli(None))
    config.stash[_BLOCK_REAL] = bool(config.getoption("ctx_block_real", None) or config.getini("ctx_block_real"))
    specs = config.getoption("ctx_tracker", None) or config.getini("ctx_tracker")
    if specs:
        config.stash[TRACKERS] = _resolve_trackers(config, specs)
    loops = config.getoption("ctx_loop", None) or config.getini("ctx_loop")
    if loops:
        config.stash[LOOPS] = _resolve_loops(config, loops)
    bundled_ids(config)  # a failed item's id reruns it, a bundled scenario's too (see ._paths)
    scenarios = scenario_path(config)  # what pytest collects with the scenarios (see ._paths)
    if scenarios is not None:
        config.stash[_SCENARIOS] = scenarios
    if scenarios is not None or specs or loops or backend == "live":
        _stop_on_signals(config)


def _stop_on_signals(config: pytest.Config) -> None:
    """For the session: SIGTERM ends it as Ctrl-C does, and both stop the commands and CLIs ctxsim runs at once
    (their temporary directories removed), on whatever thread they run (``terminate_as_interrupt``)."""
    import contextlib

    from .._sync import terminate_as_interrupt

    stack = contextlib.ExitStack()
    stack.enter_context(terminate_as_interrupt())
    config.add_cleanup(stack.close)


def _resolve_trackers(config: pytest.Config, specs: list[str]) -> list[TrackerSpec]:
    """The trackers under test, each with a name of its own (:func:`ctxsim.runner.named_apart`): two that reports
    would name alike are both kept, the second named ``NAME[SPEC]``."""
    from ..runner import named_apart
    from ..trackers import TrackerSpecError, passed_environment, resolve

    names = config.getoption("ctx_env", None) or config.getini("ctx_env")
    return named_apart(_resolved(config, specs, partial(resolve, env=passed_environment(names)), TrackerSpecError,
                                 "--ctx-tracker"))


def _resolve_loops(config: pytest.Config, specs: list[str]) -> list[LoopSpec]:
    from ..loops import LoopSpecError, resolve_loop

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
    from ..wire import captured_versions, installed_cli_version, installed_sdk_version

    checked = captured_versions()
    lines = [f"ctxsim: Claude Code {installed_cli_version() or '(none installed)'} (claude-agent-sdk "
             f"{installed_sdk_version() or '(not installed)'}); wire checked against Claude Code "
             f"{', '.join(checked) if checked else '(no capture)'}"]
    notice = _release_notice(config)
    if notice is not None:
        lines.append(notice)
    release = config.getoption("ctx_cli", None) or config.getini("ctx_cli")
    if release:
        lines.append(f"ctxsim: sessions that name no release render as Claude Code {release} (--ctx-cli)")
    scenarios = config.stash.get(_SCENARIOS, None)
    if scenarios is not None:
        lines.append(header(scenarios, config))
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


def _release_notice(config: pytest.Config) -> str | None:
    """:func:`ctxsim.live.release_notice`, asked once a run (the header shows it, else the summary does)."""
    if _NOTICE not in config.stash:
        from ..live import release_notice

        # an xdist worker says nothing its controller does not (its lines are not shown)
        config.stash[_NOTICE] = None if hasattr(config, "workerinput") else release_notice()
    return config.stash[_NOTICE]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    hint = ini_hint(config)
    if hint is not None and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        terminalreporter.write_line(hint)  # the header (and its hint) is not shown under -q
    if _NOTICE not in config.stash:  # no header was shown (-q, --no-header): the notice closes the run instead
        notice = _release_notice(config)
        if notice is not None:
            terminalreporter.write_line(notice)
    drift = sorted({str(value) for reports in terminalreporter.stats.values() for report in reports
                    for name, value in getattr(report, "user_properties", ()) if name == DRIFT_PROPERTY})
    if drift:
        terminalreporter.section("ctxsim drift (listed, not failed)")
        for line in drift:
            terminalreporter.write_line(line)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    if not is_scenario_file(file_path, parent.config.stash.get(_SCENARIOS, None), parent.session):
        return None  # not YAML, or YAML that is no scenario (fixtures, CI config...)
    return ScenarioFile.from_parent(parent, path=file_path, nodeid=node_id(file_path, parent.config))


def pytest_sessionstart(session: pytest.Session) -> None:
    last_failed_bundled(session.config)  # after the last-failed plugin read its cache (pytest_configure)


def pytest_collection_finish(session: pytest.Session) -> None:
    # A run of ctxsim's scenarios (--ctx-scenarios): the objects the imports left (~110k: the SDK, mcp, pydantic,
    # Hypothesis) move out of the cyclic collector's way, when asked (--ctx-freeze-gc).
    if session.config.stash.get(_SCENARIOS, None) is not None:
        freeze_if_asked(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    _skip_at_the_users_item(item, report)
    guard = item.stash.get(_GUARD, None)
    if guard is not None and guard.refused:
        _fail_for_real_calls(report, guard)
    agents = item.stash.get(AGENTS, None)
    if agents and report.failed and call.when == "call":
        from ..runner import agent_timeline

        for n, agent in enumerate(agents, 1):
            label = f"ctxsim fake agent {n}" if len(agents) > 1 else "ctxsim fake agent"
            report.sections.append((f"{label}: task {agent.task.name!r}, turn timeline", agent_timeline(agent)))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, Any, Any]:
    if not item.config.stash.get(_BLOCK_REAL, False):
        return (yield)
    if _BETWEEN not in item.config.stash:  # from the first test on, what outlives a test is refused too
        between = item.config.stash[_BETWEEN] = Guard("(after its test ended: a thread, timer or handler that "
                                                      "outlived the test)")
        between.install()
    guard = item.stash[_GUARD] = Guard(item.nodeid)  # --ctx-block-real: for setup, call and teardown (._guard)
    guard.install()
    try:
        return (yield)
    finally:
        guard.remove()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    between = session.config.stash.get(_BETWEEN, None)
    if between is None:
        return
    del session.config.stash[_BETWEEN]
    between.remove()
    refuse_until_exit("(after the session ended: a thread or atexit handler)")
    if between.refused:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for message in dict.fromkeys(between.refused):
            if reporter is not None:
                reporter.write_line(message)
            else:
                print(message, file=sys.stderr)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _fail_for_real_calls(report: pytest.TestReport, guard: Guard) -> None:
    """Fail ``report`` for the real calls the guard refused during it, even where the test's code caught the
    refusal; each refusal is reported once."""
    messages, guard.refused[:] = list(guard.refused), []
    if report.failed:  # the refusals its failure does not already show (the one it raised, with its traceback)
        shown = str(report.longrepr)
        text = "\n".join(m for m in messages if m not in shown)
        if text:
            report.sections.append(("ctxsim --ctx-block-real", text))
    else:
        report.outcome = "failed"
        report.longrepr = "\n".join(messages)


_PACKAGE = Path(__file__).resolve().parent.parent
"""ctxsim's own source tree: a skip raised in it is located at the user's test or scenario instead."""


def _skip_at_the_users_item(item: pytest.Item, report: pytest.TestReport) -> None:
    """A skip raised inside ctxsim (``pytest.skip`` in a scenario item, or in ctxsim code a test called) is
    reported at the item's own location, the user's test or scenario file and line, not at ctxsim's line."""
    if not (report.skipped and isinstance(report.longrepr, tuple) and len(report.longrepr) == 3):
        return
    path, _line, reason = report.longrepr
    if _PACKAGE not in Path(path).resolve().parents:
        return
    where, line = item.reportinfo()[:2]
    report.longrepr = (str(where), (line or 0) + 1, reason)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    specs = metafunc.config.stash.get(TRACKERS, [])
    if "ctx_tracker" in metafunc.fixturenames and len(specs) > 1:
        metafunc.parametrize("ctx_tracker", specs, indirect=True, ids=[s.name for s in specs])
