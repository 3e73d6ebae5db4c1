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
on a task: for checking your own restart loop). All are synchronous, so they work alike from sync tests and from
async tests under pytest-asyncio (strict or auto mode) or anyio. The ``ctx(**world)`` marker sets ``ctx_session``'s
world defaults.

The plugin is loaded in every pytest session where ``pytest-ctxsim`` is installed, so this package imports only
pytest: YAML, the SDK and the rest of ctxsim are imported inside hooks, items and fixtures, once asked for.

The package: the options and hooks here; the scenario files and their items in :mod:`._items`; the fixtures in
:mod:`._fixtures`; what they share in :mod:`._shared`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._fixtures import InlineSessions, ctx_session, ctx_tracker, fake_agent, fake_claude
from ._items import LoopItem, MalformedScenario, ScenarioFailed, ScenarioFile, ScenarioItem
from ._shared import TRACKERS, shown

if TYPE_CHECKING:
    from ..trackers.resolve import TrackerSpec

__all__ = ["InlineSessions", "LoopItem", "MalformedScenario", "ScenarioFailed", "ScenarioFile", "ScenarioItem",
           "ctx_session", "ctx_tracker", "fake_agent", "fake_claude"]

# Before pytest or a test imports them, so their asserts report like a test's own.
pytest.register_assert_rewrite("ctxsim.testing", "ctxsim.check")

_FROM_INI = ""
"""The value of a bare ``--ctx-scenarios``: use the ini value. A string, so xdist can ship the option to workers."""

_SUFFIXES = (".yaml", ".yml")
_BACKENDS = {"inprocess": "", "live": "the live backend (the real Claude Code CLI against a fake Messages API on "
                                      "127.0.0.1) is not available yet in this version of ctxsim; use inprocess"}
"""Every backend name, and why it cannot be used (empty: it can)."""
_ROOT = pytest.StashKey[Path]()


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
        config.stash[TRACKERS] = _resolve_trackers(config, specs)
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
    from ..trackers.resolve import TrackerSpecError, resolve

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
        lines.append(f"ctxsim scenarios: {shown(root, config)}")
    for spec in config.stash.get(TRACKERS, []):
        lines.append(f"ctxsim tracker under test: {spec.name} ({spec.spec})")
    return lines


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    root = parent.config.stash.get(_ROOT, None)
    if root is None or file_path.suffix not in _SUFFIXES:
        return None
    if file_path != root and root not in file_path.parents:
        return None  # a YAML file outside the scenario path (fixtures, CI config...)
    return ScenarioFile.from_parent(parent, path=file_path)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    specs = metafunc.config.stash.get(TRACKERS, [])
    if "ctx_tracker" in metafunc.fixturenames and len(specs) > 1:
        metafunc.parametrize("ctx_tracker", specs, indirect=True, ids=[s.name for s in specs])
