"""``ctxsim serve``: one scenario served to any client of the real Claude Code CLI, and the verdict on its estimates.

:class:`ScenarioServer` serves a session scenario's calls in order from the fake Messages API of :mod:`ctxsim.live`
(its faults applied to what the CLI writes, its compactions and turns steered), :class:`TaskServer` a task
scenario's reactive fake agent; whatever speaks to the real CLI plays them (the TypeScript Agent SDK, an interactive
``claude``, a Go agent). :func:`read_estimates` reads the estimates a client wrote, which
:meth:`ScenarioServer.judge` holds against the truth; :func:`play_served` plays a server's scenario through the real
``ClaudeSDKClient``. :func:`serve_skip_reason` says why a scenario cannot be served.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._client import ServedPoints as ServedPoints, play_served as play_served
    from ._estimates import Estimates as Estimates, EstimatesError as EstimatesError, read_estimates as read_estimates
    from ._server import ScenarioServer as ScenarioServer, session_serve_reason as session_serve_reason
    from ._task import (
        TaskServer as TaskServer,
        read_loop_prompts as read_loop_prompts,
        serve_skip_reason as serve_skip_reason,
    )

__getattr__, __dir__ = lazy_face(globals())
