"""Child processes run bounded and tidy: output capped, every wait bounded, the whole tree reaped.

:func:`run_command` runs one shell command to completion (a statusline command at one point); :class:`LineProcess`
keeps one child for a whole session and exchanges one line at a time with it (a ``stream:`` tracker). Both kill
whatever the child left behind, found by ancestry: a ``setsid`` escape, a double fork or a cleaned environment
included where the platform allows it (Linux: :func:`subreaper`).
:func:`printable` escapes what a child (or any input) wrote that a terminal would act on; :func:`write_whole`
writes result files whole or not at all (a full disk leaves no partial file). Internal: the layer ``cmd:`` and
``stream:`` trackers are built on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._commandline import (
        join_spec as join_spec,
        passed_environment as passed_environment,
        program as program,
        split_spec as split_spec,
        tail as tail,
        unstartable as unstartable,
    )
    from ._files import (
        FileNotWritten as FileNotWritten,
        refuse_non_files as refuse_non_files,
        write_whole as write_whole,
    )
    from ._lines import LINE_LIMIT as LINE_LIMIT, LineError as LineError, LineProcess as LineProcess
    from ._run import (
        OUTPUT_LIMIT as OUTPUT_LIMIT,
        TOKEN_ENV as TOKEN_ENV,
        Outcome as Outcome,
        exited as exited,
        kill_tree as kill_tree,
        not_started as not_started,
        run_command as run_command,
        starting as starting,
        subreaper as subreaper,
        under_way as under_way,
    )
    from ._shown import described as described, printable as printable, unprintable as unprintable

__getattr__, __dir__ = lazy_face(globals())
