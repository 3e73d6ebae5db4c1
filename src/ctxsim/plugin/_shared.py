"""What the plugin's hooks, scenario items and fixtures share: the resolved trackers under test, and paths as the
user would type them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from ..trackers.resolve import TrackerSpec

TRACKERS = pytest.StashKey[list["TrackerSpec"]]()
"""The trackers under test (``--ctx-tracker``, else the ``ctx_tracker`` ini lines), resolved at configure time."""


def shown(path: Path, config: pytest.Config) -> str:
    """``path`` as a user would type it from where pytest was started."""
    try:
        rel = os.path.relpath(path, config.invocation_params.dir)
    except ValueError:
        return str(path)
    return str(path) if rel.startswith(os.pardir + os.sep) else rel
