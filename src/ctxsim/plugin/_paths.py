"""How ``--ctx-scenarios`` joins pytest's run: where the scenarios are, and the paths pytest collects.

The scenario path is the flag's ``=PATH`` (relative to the invocation directory), else the ``ctx_scenarios`` ini
value (relative to the rootdir), else ``scenarios``. It is added to what pytest collects anyway (the paths on the
command line, else ``testpaths``, else the invocation directory), unless one of those paths already reaches into it
(contains it, or names files or directories inside it: then those are what runs). The args are computed from the
command line alone, so every xdist worker collects the same items in the same order.

``--ctx-scenarios WORD`` (a bare word after the flag) is ambiguous: argparse takes WORD as the flag's value, while
whoever wrote it usually meant a path to collect (``pytest --ctx-scenarios tests/test_x.py``). WORD is taken as a
path to collect, as after any flag without a value, and the scenario path comes from the ini (the report header
says so when WORD lies outside it); when WORD itself looks like scenarios outside that path (a YAML file, or a
directory with YAML files in it), or the ini's path does not exist, pytest stops with a usage error that says how
to write what was meant.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from ._shared import shown

__all__ = ["FROM_INI", "NOTES", "SUFFIXES", "ini_hint", "scenario_root"]

FROM_INI = ""
"""The value of a bare ``--ctx-scenarios``: use the ini value. A string, so xdist can ship the option to workers."""

SUFFIXES = (".yaml", ".yml")

NOTES = pytest.StashKey[list[str]]()
"""Lines for the report header: how the command line was read, when it could be read two ways."""

_FLAG = "--ctx-scenarios"


def scenario_root(config: pytest.Config) -> Path | None:
    """The scenario path of this run (None without ``--ctx-scenarios``); adds it to ``config.args`` as above."""
    value = config.getoption("ctx_scenarios", None)
    if value is None:
        return None
    tokens = _command_line(config)
    at = _bare_word(tokens, value)
    word = None if at is None else value
    ini = config.getini("ctx_scenarios")
    if value == FROM_INI or word is not None:
        root = Path(os.path.abspath(config.rootpath / (ini or "scenarios")))
        source = f"the ctx_scenarios ini value {ini!r}" if ini else "the default, no ctx_scenarios in the ini"
    else:
        root = Path(os.path.abspath(config.invocation_params.dir / value))
        source = ""
    if at is not None:
        _collect_word(config, tokens, at, root, source)
    if not root.exists():
        raise pytest.UsageError(f"ctxsim: --ctx-scenarios: no such file or directory: {root}"
                                + (f" ({source})" if source else ""))
    if root.is_file() and root.suffix not in SUFFIXES:
        raise pytest.UsageError(f"ctxsim: --ctx-scenarios: {root} is not a scenario file (*.yaml, *.yml) or a "
                                f"directory of them")
    if not any(_overlap(_arg_path(config, arg), root) for arg in config.args):
        config.args = [*config.args, str(root)]
    return root


def ini_hint(config: pytest.Config) -> str | None:
    """Without ``--ctx-scenarios`` but with ``ctx_scenarios`` in the ini: how to run those scenarios."""
    ini = config.getini("ctx_scenarios")
    if config.getoption("ctx_scenarios", None) is not None or not ini:
        return None
    return (f"ctxsim scenarios: {shown(config.rootpath / ini, config)} (ini ctx_scenarios) are not collected "
            f"without the flag: pytest --ctx-scenarios runs them with the tests")


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


def _collect_word(config: pytest.Config, tokens: list[str], at: int, root: Path, source: str) -> None:
    """Make ``tokens[at]`` (the WORD of ``--ctx-scenarios WORD``) a path to collect, in its place among the command
    line's."""
    word = tokens[at]
    path = _arg_path(config, word)
    scenarios_like = path.suffix in SUFFIXES or (path.is_dir() and any(
        p.suffix in SUFFIXES for p in path.iterdir()))
    if not root.exists():
        raise pytest.UsageError(
            f"ctxsim: --ctx-scenarios: no such file or directory: {root} ({source}); {word!r} after the flag is a "
            f"path to collect: write --ctx-scenarios={word} if the scenarios are there")
    if scenarios_like and not _overlap(path, root):
        raise pytest.UsageError(
            f"ctxsim: --ctx-scenarios {word}: a word after the flag is a path to collect, and {word!r} holds YAML "
            f"outside the scenario path {shown(root, config)} ({source}), which would not run: write "
            f"--ctx-scenarios={word} to run its scenarios with the tests, or pytest {word} --ctx-scenarios={word} "
            f"to run them alone")
    positional = list(config.args) if config.args_source == pytest.Config.ArgsSource.ARGS else []
    place = 0
    for token in tokens[:at]:
        if place < len(positional) and token == positional[place]:
            place += 1
    positional.insert(place, word)
    config.args = positional
    config.args_source = pytest.Config.ArgsSource.ARGS
    if not _overlap(path, root):
        config.stash.setdefault(NOTES, []).append(
            f"ctxsim: {word!r} after --ctx-scenarios is a path to collect; the scenarios are under "
            f"{shown(root, config)} (--ctx-scenarios=PATH names another scenario path)")


def _arg_path(config: pytest.Config, arg: str) -> Path:
    return Path(os.path.abspath(config.invocation_params.dir / arg.split("::")[0]))


def _overlap(path: Path, root: Path) -> bool:
    """``path`` is ``root``, contains it or lies inside it."""
    return path == root or path in root.parents or root in path.parents
