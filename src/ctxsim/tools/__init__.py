"""Real trackers from the wild: the statusline tools people use, at pinned versions, as ctxsim runs them; and
(:mod:`ctxsim.tools.ports`) ports of real trackers' formulas written from their public bug reports.

:data:`TOOLS` lists them; :func:`install` puts one into the tools directory (``$CTXSIM_TOOLS_DIR``, default
``~/.cache/ctxsim/tools``) from its registry, :func:`installed` finds an installed one and :func:`tracker` makes its
:class:`~ctxsim.trackers.CommandTracker`. Nothing runs at import; ``ctxsim tools install`` and the ``tools`` test
tier use them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._shipped import (
        MODES as MODES,
        RESEARCHED_CLI as RESEARCHED_CLI,
        TOOLS as TOOLS,
        InstallError as InstallError,
        Tool as Tool,
        install as install,
        installed as installed,
        tools_dir as tools_dir,
        tracker as tracker,
    )

__getattr__, __dir__ = lazy_face(globals())
