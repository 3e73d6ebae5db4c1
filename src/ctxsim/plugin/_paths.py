"""How ``--ctx-scenarios`` joins pytest's run: where the scenarios are, what pytest collects, which YAML files are
scenario files.

The scenario path is the flag's ``=PATH`` (relative to the invocation directory), else the ``ctx_scenarios`` ini
value (relative to the rootdir), else, when no path is given on the command line, the corpus bundled with ctxsim
(:mod:`ctxsim.corpus`); ``bundled`` names that corpus wherever a path is expected. What pytest collects:

- no path on the command line: the scenario path alone (``pytest --ctx-scenarios`` runs the bundled corpus from
  any directory, ``pytest --ctx-scenarios=bug.yaml`` that one file, never the tests around it);
- paths on the command line: those, and the scenario path given by ``=PATH`` or the ini unless one of those paths
  already reaches into it (contains it, or lies inside it: then those are what runs of it). The bundled corpus
  joins given paths only when asked (``--ctx-scenarios=bundled``).

Every YAML file under the scenario path is a scenario file (a malformed one is a failing ``load`` item); in a
directory given on the command line, a YAML file is one when it has a top-level ``queries``, ``stream`` or ``task``
key (other YAML there, fixtures or CI configuration, is left alone). A YAML file named on the command line is a
scenario file, with or without the flag (``pytest bug.yaml``). Everything is computed from the command line alone,
so every xdist worker collects the same items in the same order.

``--ctx-scenarios WORD`` (a bare word after the flag): argparse takes WORD as the flag's value, while whoever wrote
it usually meant a path to collect (``pytest --ctx-scenarios tests/test_x.py``). WORD is taken as a path to
collect, as after any flag without a value; the report header says so.

Node ids rerun: a scenario file of the bundled corpus is ``bundled/NAME.yaml`` (a path nowhere on disk), so such
an id on the command line (``pytest "bundled/b19-....yaml::my-tracker"``, or as pytest's summary prints it from
another directory, ``../bundled/...``) is read as that file of the corpus (:func:`bundled_ids`), and ``--lf``
finds the corpus files among the last failures (:func:`last_failed_bundled`).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..corpus import BUNDLED, SUFFIXES, bundled_dir
from ._shared import shown

__all__ = ["FROM_INI", "NOTES", "SUFFIXES", "ScenarioPath", "bundled_ids", "ini_hint", "is_scenario_file",
           "last_failed_bundled", "scenario_path"]

FROM_INI = ""
"""The value of a bare ``--ctx-scenarios``: use the ini value. A string, so xdist can ship the option to workers."""

NOTES = pytest.StashKey[list[str]]()
"""Lines for the report header: how the command line was read, when it could be read two ways."""

_FLAG = "--ctx-scenarios"
_SCENARIO_KEY = re.compile(rb"^(queries|stream|task)\s*:", re.MULTILINE)
"""A top-level key only a scenario file has."""


@dataclass(frozen=True)
class ScenarioPath:
    """Where this run's scenarios are (``--ctx-scenarios`` was given)."""

    root: Path | None
    """Every YAML file under it is a scenario file; None when the scenarios are those of the paths given."""
    source: str
    """How the header names where ``root`` came from."""


def scenario_path(config: pytest.Config) -> ScenarioPath | None:
    """This run's scenario path (None without ``--ctx-scenarios``); sets ``config.args`` as above."""
    value = config.getoption("ctx_scenarios", None)
    if value is None:
        return None
    tokens = _command_line(config)
    at = _bare_word(tokens, value)
    if at is not None and value == BUNDLED and not Path(value).exists():
        at = None  # `--ctx-scenarios bundled` can only mean the corpus
    if at is not None:
        _collect_word(config, tokens, at)
    given = config.args_source == pytest.Config.ArgsSource.ARGS
    ini = config.getini("ctx_scenarios")
    if value != FROM_INI and at is None:
        root: Path | None = _resolve(value, config.invocation_params.dir)
        source, where = "", "--ctx-scenarios"
    elif ini:
        root, source, where = _resolve(ini, config.rootpath), "ini ctx_scenarios", "ini ctx_scenarios"
    elif not given:
        root, source, where = bundled_dir(), "bundled with ctxsim", "the default"
    else:
        return ScenarioPath(None, "in the paths given")
    assert root is not None
    if not root.exists():
        raise pytest.UsageError(f"ctxsim: --ctx-scenarios: no such file or directory: {root} ({where})")
    if root.is_file() and root.suffix not in SUFFIXES:
        raise pytest.UsageError(f"ctxsim: --ctx-scenarios: {root} is not a scenario file (*.yaml, *.yml) or a "
                                f"directory of them")
    if not given:
        config.args = [str(root)]
        config.args_source = pytest.Config.ArgsSource.ARGS
    elif not any(_overlap(_arg_path(config, arg), root) for arg in config.args):
        config.args = [*config.args, str(root)]
    return ScenarioPath(root, source)


def is_scenario_file(path: Path, scenarios: ScenarioPath | None, session: pytest.Session) -> bool:
    """Whether pytest should collect ``path`` as a scenario file (see the module's rules)."""
    if path.suffix not in SUFFIXES:
        return False
    if session.isinitpath(path):
        return True  # named on the command line
    if scenarios is None:
        return False
    if scenarios.root is not None and (path == scenarios.root or scenarios.root in path.parents):
        return True
    try:
        with path.open("rb") as file:
            head = file.read(1 << 16)
    except OSError:
        return False
    return _SCENARIO_KEY.search(head) is not None


def node_id(path: Path, config: pytest.Config) -> str | None:
    """The node id of the scenario file ``path`` when pytest's own would not do: ``bundled/NAME.yaml`` for the
    bundled corpus (pytest would name it relative to site-packages, or leave it empty), the path as typed for
    another file outside the rootdir; None (pytest's own) for a file under the rootdir."""
    corpus = bundled_dir()
    if corpus in path.parents:
        return f"{BUNDLED}/{path.relative_to(corpus).as_posix()}"
    if config.rootpath in path.parents:
        return None
    return Path(shown(path, config)).as_posix()


def bundled_ids(config: pytest.Config) -> None:
    """Make each command-line argument that names a file of the bundled corpus by its node id (``bundled/NAME.yaml``,
    with ``::item`` or not; relative to the invocation directory or, as pytest's summary prints it from elsewhere,
    to the rootdir) the file's real path, so a failed item's id reruns it."""
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        return
    config.args = [_bundled_arg(arg, config) for arg in config.args]


def _bundled_arg(arg: str, config: pytest.Config) -> str:
    path, sep, names = arg.partition("::")
    here = config.invocation_params.dir
    if not path or (here / path).exists():
        return arg
    typed = Path(path)
    absolute = Path(os.path.abspath(here / path))
    for rel in (typed, _relative(absolute, config.rootpath)):
        if rel is not None and not rel.is_absolute() and rel.parts[:1] == (BUNDLED,):
            found = bundled_dir().joinpath(*rel.parts[1:])
            if found.exists():
                return f"{found}{sep}{names}"
    return arg


def _relative(path: Path, root: Path) -> Path | None:
    try:
        return path.relative_to(root)
    except ValueError:
        return None


def last_failed_bundled(config: pytest.Config) -> None:
    """With ``--lf`` (or ``--ff``), tell pytest's last-failed plugin where the bundled corpus's last failures are:
    it looks for them under the rootdir, where ``bundled/NAME.yaml`` is not, and would leave them uncollected once
    a failure of another file is found."""
    plugin = config.pluginmanager.get_plugin("lfplugin")
    known = getattr(plugin, "_last_failed_paths", None)
    if not isinstance(known, set):
        return
    corpus = bundled_dir()
    for nodeid in getattr(plugin, "lastfailed", {}):
        path = str(nodeid).split("::")[0]
        if path.startswith(BUNDLED + "/"):
            found = corpus / path[len(BUNDLED) + 1:]
            if found.exists():
                known.add(found)
                known.update(found.parents)


def header(scenarios: ScenarioPath, config: pytest.Config) -> str:
    """The report header's line for the scenario path."""
    if scenarios.root is None:
        return f"ctxsim scenarios: {scenarios.source}"
    where = "bundled" if scenarios.root == bundled_dir() else shown(scenarios.root, config)
    return f"ctxsim scenarios: {where}" + (f" ({scenarios.source})" if scenarios.source else "")


def ini_hint(config: pytest.Config) -> str | None:
    """Without ``--ctx-scenarios`` but with ``ctx_scenarios`` in the ini: how to run those scenarios."""
    ini = config.getini("ctx_scenarios")
    if config.getoption("ctx_scenarios", None) is not None or not ini:
        return None
    where = "bundled" if ini == BUNDLED else shown(config.rootpath / ini, config)
    return (f"ctxsim scenarios: {where} (ini ctx_scenarios) are not collected without the flag: pytest "
            f"--ctx-scenarios runs them")


def _resolve(value: str, base: Path) -> Path:
    """A scenario path as written (``bundled``: the corpus shipped with ctxsim), made absolute from ``base``."""
    if value == BUNDLED:
        return bundled_dir()
    return Path(os.path.abspath(base / value))


def _command_line(config: pytest.Config) -> list[str]:
    """The arguments as pytest's parser read them: the ini's addopts, ``PYTEST_ADDOPTS``, the command line."""
    return [*config.getini("addopts"), *shlex.split(os.environ.get("PYTEST_ADDOPTS", "")),
            *(str(arg) for arg in config.invocation_params.args)]


def _bare_word(tokens: list[str], value: str) -> int | None:
    """Where in ``tokens`` is the word argparse took as the flag's value from ``--ctx-scenarios WORD`` (the last
    time the flag is given wins); None when the value was given as ``=PATH``, or none was."""
    last = max((i for i, t in enumerate(tokens) if t == _FLAG or t.startswith(_FLAG + "=")), default=None)
    if last is None or tokens[last] != _FLAG or last + 1 >= len(tokens) or tokens[last + 1] != value:
        return None
    return last + 1


def _collect_word(config: pytest.Config, tokens: list[str], at: int) -> None:
    """Make ``tokens[at]`` (the WORD of ``--ctx-scenarios WORD``) a path to collect, in its place among the command
    line's."""
    word = tokens[at]
    positional = list(config.args) if config.args_source == pytest.Config.ArgsSource.ARGS else []
    place = 0
    for token in tokens[:at]:
        if place < len(positional) and token == positional[place]:
            place += 1
    positional.insert(place, word)
    config.args = positional
    config.args_source = pytest.Config.ArgsSource.ARGS
    config.stash.setdefault(NOTES, []).append(
        f"ctxsim: {word!r} after --ctx-scenarios is a path to collect (--ctx-scenarios={word} names a scenario "
        f"path)")


def _arg_path(config: pytest.Config, arg: str) -> Path:
    return Path(os.path.abspath(config.invocation_params.dir / arg.split("::")[0]))


def _overlap(path: Path, root: Path) -> bool:
    """``path`` is ``root``, contains it or lies inside it."""
    return path == root or path in root.parents or root in path.parents
