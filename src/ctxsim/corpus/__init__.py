"""The bundled corpus of reported context-pressure bugs, and finding scenario files by path or by name.

The corpus's home in a checkout is the repository's top-level ``scenarios/`` directory; the package reaches it
through ``ctxsim/corpus/scenarios`` (a link in the checkout, so a contributor adds a scenario there and an editable
install runs it at once) and the wheel carries the files themselves there (package data), so
``pytest --ctx-scenarios`` and ``ctxsim score`` have something to run right after ``pip install pytest-ctxsim``,
from any directory.

:data:`BUNDLED` (``"bundled"``) is how a user names it wherever a scenario path is expected:
``pytest --ctx-scenarios=bundled``, ``ctx_scenarios = "bundled"`` in the ini, ``ctxsim score bundled``.
:func:`find_scenario` resolves what a command is given: a path, else the name of a bundled scenario
(``ctxsim run compaction``). This module imports nothing heavy: the pytest plugin uses it at configure time.
"""

from __future__ import annotations

import difflib
from pathlib import Path

__all__ = ["BUNDLED", "SUFFIXES", "ScenarioNotFound", "bundled_dir", "bundled_scenarios", "find_scenario",
           "scenario_files"]

BUNDLED = "bundled"
"""The word that names the bundled corpus wherever a scenario path is expected."""

SUFFIXES = (".yaml", ".yml")
"""The suffixes of scenario files."""


class ScenarioNotFound(FileNotFoundError):
    """A scenario reference names no file and no bundled scenario; the message is one ``ctxsim:`` line."""


def bundled_dir() -> Path:
    """The directory of the bundled corpus, inside the installed package."""
    return (Path(__file__).resolve().parent / "scenarios").resolve()


def bundled_scenarios() -> list[Path]:
    """Every bundled scenario file, sorted by name."""
    return scenario_files(bundled_dir())


def scenario_files(path: Path) -> list[Path]:
    """The scenario files ``path`` names: itself when it is a file, else every ``*.yaml``/``*.yml`` under it,
    sorted by path (every run, and every xdist worker, sees the same order); :data:`BUNDLED` is the corpus."""
    if str(path) == BUNDLED and not path.exists():
        path = bundled_dir()
    if path.is_dir():
        return sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
    return [path]


def find_scenario(ref: str | Path) -> Path:
    """The scenario file ``ref`` names: a path to a file, else the name of a bundled scenario (with or without
    ``.yaml``, or ``bundled/NAME.yaml`` as pytest's node ids show it). Raises :class:`ScenarioNotFound` when it
    names neither, with the closest bundled names."""
    path = Path(ref)
    if path.exists():
        return path
    name = path.name.removesuffix(".yaml").removesuffix(".yml")
    names = {p.stem: p for p in bundled_scenarios()}
    if path.parent in (Path(), Path(BUNDLED)) and name in names:  # as named, or as pytest's node ids show it
        return names[name]
    close = difflib.get_close_matches(name, list(names), n=3)
    hint = f"did you mean {', '.join(close)}?" if close else "`ctxsim scenario list` lists the bundled ones"
    raise ScenarioNotFound(f"ctxsim: {ref}: no such file, nor a bundled scenario of that name; {hint}")
