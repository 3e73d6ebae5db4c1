"""Claude Code's interactive REPL, driven under tmux in a private home and recorded: every statusline payload, the
transcript, the calls served; and the rendering held to those recordings.

:func:`record_repl_command` (``ctxsim record --repl``) records :data:`REPL_SESSIONS` whole;
:func:`record_statusline_command` (``ctxsim record --statusline``) records the payloads of :data:`STATUSLINE_SESSIONS`;
:class:`ReplRecording` is one recording read back, which ``compare_repl_payloads``, ``compare_repl_transcripts`` and
``compare_repl_boundaries`` hold the rendering to; :func:`tmux_skip_reason` says why the REPL cannot be driven here
(no tmux).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._compare import (
        ReplRecording as ReplRecording,
        compare_repl_boundaries as compare_repl_boundaries,
        compare_repl_payloads as compare_repl_payloads,
        compare_repl_transcripts as compare_repl_transcripts,
    )
    from ._recorder import (
        REPL_SESSIONS as REPL_SESSIONS,
        record_repl as record_repl,
        record_repl_command as record_repl_command,
    )
    from ._statusline import (
        STATUSLINE_SESSIONS as STATUSLINE_SESSIONS,
        record_statusline_command as record_statusline_command,
    )
    from ._tmux import tmux_skip_reason as tmux_skip_reason

__getattr__, __dir__ = lazy_face(globals())
