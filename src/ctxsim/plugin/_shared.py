"""What the plugin's hooks, scenario items and fixtures share: the resolved trackers under test, and paths as the
user would type them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..loops import LoopSpec
    from ..trackers import TrackerSpec

BACKEND = pytest.StashKey[str]()
"""Where scenario sessions play: ``inprocess`` or ``live`` (``--ctx-backend``)."""

AGENTS = pytest.StashKey[list[Any]]()
"""The fake agents a test made with the ``fake_agent`` fixture (their timelines go into a failing test's report)."""

LOOPS = pytest.StashKey[list["LoopSpec"]]()
"""The restart loops under test (``--ctx-loop``, else the ``ctx_loop`` ini lines), resolved at configure time."""

TRACKERS = pytest.StashKey[list["TrackerSpec"]]()
"""The trackers under test (``--ctx-tracker``, else the ``ctx_tracker`` ini lines), resolved at configure time."""


def shown(path: Path, config: pytest.Config) -> str:
    """``path`` as a user would type it from where pytest was started."""
    try:
        rel = os.path.relpath(path, config.invocation_params.dir)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith(os.pardir + os.sep) else rel


FREEZE_GC = pytest.StashKey[bool]()
"""Whether this run asked for the collector tuning (``--ctx-freeze-gc``, ini ``ctx_freeze_gc``)."""


def freeze_if_asked(config: pytest.Config) -> None:
    """Freeze what the imports left out of the cyclic collector's way (:func:`ctxsim.runner.freeze_imports`), in a
    run that asked for it; nothing otherwise."""
    if config.stash.get(FREEZE_GC, False):
        from ..runner import freeze_imports

        freeze_imports()
