"""How ``--ctx-scenarios`` joins pytest's run: where the scenarios are, what pytest collects, which YAML files are
scenario files.

The scenario path is the flag's ``=PATH`` (relative to the invocation directory; each one, the flag given again),
else the ``ctx_scenarios`` ini value (relative to the rootdir), else, when no path is given on the command line,
the corpus bundled with ctxsim (:mod:`ctxsim.corpus`); ``bundled`` names that corpus wherever a path is expected.
What pytest collects:

- no path on the command line: the scenario path alone (``pytest --ctx-scenarios`` runs the bundled corpus from
  any directory, ``pytest --ctx-scenarios=bug.yaml`` that one file, never the tests around it);
- paths on the command line: those, and the scenario path given by ``=PATH`` or the ini unless one of those paths
  already reaches into it (contains it, or lies inside it: then those are what runs of it). The bundled corpus
  joins given paths only when asked (``--ctx-scenarios=bundled``).

Every YAML file under the scenario path is a scenario file (a malformed one is a failing ``load`` item); in a
directory given on the command line, a YAML file is one when it has a top-level ``queries``, ``stream`` or ``task``
key (other YAML there, fixtures or CI configuration, is left alone), with or without the flag (``pytest scenarios/``,
as pytest collects a test folder; the ini's ``testpaths`` and the invocation directory pytest falls back to are not
given on the command line). A YAML file named on the command line is a scenario file, with or without the flag
(``pytest bug.yaml``). Everything is computed from the command line alone,
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

    roots: tuple[Path, ...]
    """Every YAML file under them is a scenario file (one root a ``=PATH``, in the order given); empty when the
    scenarios are those of the paths given."""
    source: str
    """How the header names where ``roots`` came from."""


def scenario_path(config: pytest.Config) -> ScenarioPath | None:
    """This run's scenario path (None without ``--ctx-scenarios``); sets ``config.args`` as above. The flag given
    again adds its path (``--ctx-scenarios=a --ctx-scenarios=b`` collects both)."""
    values: list[str] | None = config.getoption("ctx_scenarios", None)
    if not values:
        return None
    tokens = _command_line(config)
    explicit = []
    for value, at in zip(values, _bare_words(tokens, values), strict=True):
        if at is not None and value == BUNDLED and not Path(value).exists():
            at = None  # `--ctx-scenarios bundled` can only mean the corpus
        if at is not None:
            _collect_word(config, tokens, at)
        elif value != FROM_INI and value not in explicit:
            explicit.append(value)
    given = config.args_source == pytest.Config.ArgsSource.ARGS
    ini = config.getini("ctx_scenarios")
    if explicit:
        roots = [_resolve(value, config.invocation_params.dir) for value in explicit]
        source, where = "", "--ctx-scenarios"
    elif ini:
        roots, source, where = [_resolve(ini, config.rootpath)], "ini ctx_scenarios", "ini ctx_scenarios"
    elif not given:
        roots, source, where = [bundled_dir()], "bundled with ctxsim", "the default"
    else:
        return ScenarioPath((), "in the paths given")
    for root in roots:
        if not root.exists():
            raise pytest.UsageError(f"ctxsim: --ctx-scenarios: no such file or directory: {root} ({where})")
        if root.is_file() and root.suffix not in SUFFIXES:
            raise pytest.UsageError(f"ctxsim: --ctx-scenarios: {root} is not a scenario file (*.yaml, *.yml) or a "
                                    f"directory of them")
    if not given:
        config.args = [str(root) for root in roots]
        config.args_source = pytest.Config.ArgsSource.ARGS
    else:
        config.args = [*config.args, *(str(root) for root in roots
                                       if not any(_overlap(_arg_path(config, arg), root) for arg in config.args))]
    return ScenarioPath(tuple(roots), source)


def is_scenario_file(path: Path, scenarios: ScenarioPath | None, session: pytest.Session) -> bool:
    """Whether pytest should collect ``path`` as a scenario file (see the module's rules)."""
    if path.suffix not in SUFFIXES:
        return False
    if session.isinitpath(path):
        return True  # named on the command line
    if scenarios is not None and any(path == root or root in path.parents for root in scenarios.roots):
        return True
    if scenarios is None and not any(folder in path.parents for folder in _folders_given(session.config)):
        return False
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
    if not scenarios.roots:
        return f"ctxsim scenarios: {scenarios.source}"
    where = ", ".join("bundled" if root == bundled_dir() else shown(root, config) for root in scenarios.roots)
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


def _bare_words(tokens: list[str], values: list[str]) -> list[int | None]:
    """For each of ``values`` (the flag's, in the order given), where in ``tokens`` is the word argparse took as its
    value from ``--ctx-scenarios WORD``; None when it was given as ``=PATH``, or none was (every one None when the
    flags among ``tokens`` do not match ``values`` one for one)."""
    flags = [i for i, t in enumerate(tokens) if t == _FLAG or t.startswith(_FLAG + "=")]
    if len(flags) != len(values):
        return [None] * len(values)
    return [at + 1 if tokens[at] == _FLAG and at + 1 < len(tokens) and tokens[at + 1] == value else None
            for at, value in zip(flags, values, strict=True)]


_FOLDERS = pytest.StashKey[list[Path]]()


def _folders_given(config: pytest.Config) -> list[Path]:
    """The directories named on the command line (not the ini's ``testpaths``, nor the invocation directory pytest
    collects when given nothing): their scenario files are collected, as their test files are."""
    if _FOLDERS not in config.stash:
        given = config.args_source == pytest.Config.ArgsSource.ARGS
        paths = [_arg_path(config, arg) for arg in config.args if "::" not in arg] if given else []
        config.stash[_FOLDERS] = [path for path in paths if path.is_dir()]
    return config.stash[_FOLDERS]


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
