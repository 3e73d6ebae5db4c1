"""The ctxsim pytest plugin (entry point ``pytest11``): scenario files as test items.

``pytest --ctx-scenarios`` collects every ``*.yaml``/``*.yml`` scenario (:mod:`ctxsim.scenario`) under the
``ctx_scenarios`` ini path (default ``scenarios``, relative to the rootdir), or under ``PATH`` with
``--ctx-scenarios=PATH`` (relative to the invocation directory; write it with ``=``, since a bare word after the
flag is taken as its value). Without explicit test paths on the command line, only the scenarios are
collected; with them, scenario files among those paths are collected too.

Each scenario file yields, in this order: ``reference`` (the reference tracker must track the session, within
the scenario's tolerance), one item per tracker in ``expect.fail`` (passes when that tracker fails on the
session) and one per tracker in ``expect.pass``. Every check runs the real ``ClaudeSDKClient`` on a
:class:`~ctxsim.sdk.FakeTransport` (:func:`ctxsim.check.run_tracker`). A failure shows the report table and the
scenario's ``file:line``, not a traceback; ``-v`` adds the scenario's source. Items carry the ``ctx_scenario``
marker.

The plugin is loaded in every pytest session where ``pytest-ctxsim`` is installed, so this module imports only
pytest: YAML, the SDK and the rest of ctxsim are imported inside hooks, once scenarios are asked for.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from _pytest._code.code import ExceptionInfo, TerminalRepr

    from .check import Report
    from .scenario import Scenario, ScenarioError

__all__ = ["MalformedScenario", "ScenarioFailed", "ScenarioFile", "ScenarioItem"]

_FROM_INI = ""
"""The value of a bare ``--ctx-scenarios``: use the ini value. A string, so xdist can ship the option to workers."""

_SUFFIXES = (".yaml", ".yml")
_ROOT = pytest.StashKey[Path]()
_MANY_POINTS = 60
"""Reports with more points than this show only the failing rows unless run with ``-vv``."""


# --- hooks -----------------------------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("ctxsim", "ctxsim context-window scenarios")
    group.addoption(
        "--ctx-scenarios", dest="ctx_scenarios", nargs="?", const=_FROM_INI, default=None, metavar="PATH",
        help="run the ctxsim scenario files (*.yaml, *.yml) under PATH as test items (default PATH: the "
             "ctx_scenarios ini value, relative to the rootdir). Without test path arguments only the scenarios "
             "are collected. Give PATH as --ctx-scenarios=PATH.")
    parser.addini("ctx_scenarios", "directory (or file) of ctxsim scenarios for a bare --ctx-scenarios, relative "
                                   "to the rootdir", default="scenarios")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "ctx_scenario: a ctxsim scenario check (collected by --ctx-scenarios)")
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


def pytest_report_header(config: pytest.Config) -> str | None:
    root = config.stash.get(_ROOT, None)
    return None if root is None else f"ctxsim scenarios: {_shown(root, config)}"


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    root = parent.config.stash.get(_ROOT, None)
    if root is None or file_path.suffix not in _SUFFIXES:
        return None
    if file_path != root and root not in file_path.parents:
        return None  # a YAML file outside the scenario path (fixtures, CI config...)
    return ScenarioFile.from_parent(parent, path=file_path)  # type: ignore[no-any-return]


def _shown(path: Path, config: pytest.Config) -> str:
    """``path`` as a user would type it from where pytest was started."""
    try:
        rel = os.path.relpath(path, config.invocation_params.dir)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith(os.pardir + os.sep) else rel


# --- collection ------------------------------------------------------------------------------------------------


class ScenarioFile(pytest.File):
    """A scenario file: a ``reference`` item, then one item per tracker the scenario names."""

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
        yield ScenarioItem.from_parent(self, name="reference", scenario=scenario, tracker="reference",
                                       expect_ok=scenario.expect_reference)
        for tracker in scenario.must_fail:
            yield ScenarioItem.from_parent(self, name=tracker, scenario=scenario, tracker=tracker, expect_ok=False)
        for tracker in scenario.must_pass:
            yield ScenarioItem.from_parent(self, name=tracker, scenario=scenario, tracker=tracker, expect_ok=True)


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


class ScenarioItem(_ScenarioNode):
    """One tracker on one scenario: passes when the tracker tracks the session (``expect_ok``) or fails on it."""

    def __init__(self, *, scenario: Scenario, tracker: str, expect_ok: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.tracker = tracker
        self.expect_ok = expect_ok

    @property
    def line(self) -> int:
        """The line of the scenario file that states what this tracker must do."""
        return self.scenario.line_of(self.tracker)

    def runtest(self) -> None:
        from .check import run_tracker
        from .trackers import make

        scenario = self.scenario
        report = run_tracker(make(self.tracker), scenario.session, tolerance=scenario.tolerance,
                             include_partial_messages=scenario.partial)
        if report.ok != self.expect_ok:
            raise ScenarioFailed(self._explain(report))

    def _explain(self, report: Report) -> str:
        scenario = self.scenario
        where = f"{_shown(self.path, self.config)}:{self.line}"
        if self.expect_ok:
            rule = "expect.reference: pass" if self.tracker == "reference" else "expect.pass"
            head = f"{where}: {self.tracker} must track scenario {scenario.name!r} ({rule}), but does not"
        else:
            rule = "expect.reference: fail" if self.tracker == "reference" else "expect.fail"
            head = (f"{where}: {self.tracker} must fail on scenario {scenario.name!r} ({rule}), "
                    f"but tracks it within ±{scenario.tolerance:,} tokens")
        verbosity = self.config.get_verbosity()
        lines = [head]
        if verbosity > 0:
            lines += [f"source: {scenario.source}"] if scenario.source else []
            lines += [f"description: {scenario.description}"] if scenario.description else []
            bug = _bug(self.tracker)
            lines += [f"tracker {self.tracker}: {bug}"] if bug else []
        lines.append(report.summary())
        if report.points:
            only_failures = bool(report.failures) and len(report.points) > _MANY_POINTS and verbosity < 2
            if report.failures or len(report.points) <= _MANY_POINTS or verbosity >= 2:
                lines.append(report.table(only_failures=only_failures))
            if only_failures:
                lines.append(f"({len(report.failures)} of {len(report.points)} points shown; -vv shows all)")
            elif not report.failures and len(report.points) > _MANY_POINTS and verbosity < 2:
                lines.append(f"({len(report.points)} points, all within tolerance; -vv shows them)")
        if report.failures:
            first = report.failures[0].observation.label
            line = scenario.points.get(first)
            lines.append(f"first failing point: {first}"
                         + (f" ({_shown(self.path, self.config)}:{line})" if line else ""))
        return "\n".join(lines)

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, self.line - 1, f"scenario {self.scenario.name}: {self.tracker}"


class MalformedScenario(_ScenarioNode):
    """A scenario file the loader rejected: one item that fails with the loader's ``ctxsim:`` message."""

    def __init__(self, *, error: ScenarioError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def runtest(self) -> None:
        raise ScenarioFailed(str(self.error))

    def reportinfo(self) -> tuple[os.PathLike[str] | str, int | None, str]:
        return self.path, (self.error.line or 1) - 1, "malformed scenario"


def _bug(tracker: str) -> str:
    """The catalogue's one-line description of ``tracker``'s known bug, if any."""
    from .trackers import CATALOGUE

    entry = CATALOGUE.get(tracker)
    return getattr(entry, "bug", "") if entry is not None else ""


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
