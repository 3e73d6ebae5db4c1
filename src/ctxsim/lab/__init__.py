"""The lab: what holds ctxsim to each Claude Code release, kept apart from the live backend users run.

Internal: these names serve ``ctxsim record`` and ``ctxsim fidelity`` and the project's own tests; they may change
with any release. :func:`check_release` (``ctxsim fidelity``, judged in :mod:`ctxsim.lab.release`) plays the
scripted sessions live and in-process and compares every field a tracker reads; :func:`record_command` (``ctxsim
record``) writes the captures that ship in the package (:data:`CAPTURES`); :func:`record_repl_command` and
:func:`record_statusline_command` record the interactive REPL under tmux (every statusline payload, the
transcript). Everything here runs the real CLI through :mod:`ctxsim.live`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._record import CAPTURES as CAPTURES, record_command as record_command
    from ._repl import (
        REPL_SESSIONS as REPL_SESSIONS,
        STATUSLINE_SESSIONS as STATUSLINE_SESSIONS,
        record_repl_command as record_repl_command,
        record_statusline_command as record_statusline_command,
        tmux_skip_reason as tmux_skip_reason,
    )
    from .release import check_release as check_release

__getattr__, __dir__ = lazy_face(globals())
