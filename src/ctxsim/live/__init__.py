"""The live backend: the real Claude Code CLI bundled in ``claude-agent-sdk``, against a fake Messages API.

:class:`FakeMessagesAPI` is the fake Anthropic Messages API on 127.0.0.1; :class:`LiveClaude` the lifecycle that runs
the bundled CLI against it through the real ``ClaudeSDKClient``; :func:`check_release` (``ctxsim conformance``) the
scripted sessions played live and in-process and compared field by field; :func:`record_command` (``ctxsim record``)
the captures written into the package; :func:`run_scenario_live` a scenario through the CLI
(``--ctx-backend=live``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._api import (
        ApiRequest as ApiRequest,
        FakeMessagesAPI as FakeMessagesAPI,
        Reply as Reply,
        ScriptedModel as ScriptedModel,
        Served as Served,
        prompt_too_long as prompt_too_long,
    )
    from ._claude import LiveClaude as LiveClaude, LiveError as LiveError
    from ._record import CAPTURES as CAPTURES, record_command as record_command
    from ._release import check_release as check_release
    from ._scenarios import (
        live_skip_reason as live_skip_reason,
        run_scenario_live as run_scenario_live,
        tracker_skip_reason as tracker_skip_reason,
    )
    from ._statusline import (
        STATUSLINE_SESSIONS as STATUSLINE_SESSIONS,
        record_statusline_command as record_statusline_command,
    )

__getattr__, __dir__ = lazy_face(globals())
