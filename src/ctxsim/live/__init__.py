"""The live backend: the real Claude Code CLI bundled in ``claude-agent-sdk``, against a fake Messages API.

:class:`FakeMessagesAPI` is the fake Anthropic Messages API on 127.0.0.1; :class:`LiveClaude` the lifecycle that runs
the bundled CLI against it through the real ``ClaudeSDKClient``; :func:`run_scenario_live` a scenario through the CLI
(``--ctx-backend=live``); :class:`ScenarioServer` and :class:`TaskServer` one scenario served to any client of the
real CLI (``ctxsim serve``). The recorders and the fidelity check that hold ctxsim to each CLI release are the lab
(:mod:`ctxsim.lab`), built on the names here.
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
    from ._claude import (
        LiveClaude as LiveClaude,
        LiveError as LiveError,
        bundled_cli_path as bundled_cli_path,
        bundled_cli_version as bundled_cli_version,
        cli_env as cli_env,
        cli_version as cli_version,
        read_transcripts as read_transcripts,
    )
    from ._notice import (
        NOTICE_TIMEOUT as NOTICE_TIMEOUT,
        release_notice as release_notice,
        render_as_named_cli as render_as_named_cli,
    )
    from ._requests import RequestKind as RequestKind
    from ._scenarios import (
        live_skip_reason as live_skip_reason,
        run_scenario_live as run_scenario_live,
        tracker_skip_reason as tracker_skip_reason,
    )
    from ._serve import (
        Estimates as Estimates,
        EstimatesError as EstimatesError,
        ScenarioServer as ScenarioServer,
        read_estimates as read_estimates,
    )
    from ._serve_client import ServedPoints as ServedPoints, play_served as play_served
    from ._serve_task import (
        TaskServer as TaskServer,
        read_loop_prompts as read_loop_prompts,
        serve_skip_reason as serve_skip_reason,
    )
    from ._tap import FrameEdit as FrameEdit, FrameTap as FrameTap

__getattr__, __dir__ = lazy_face(globals(), stable=("LiveClaude", "live_skip_reason"))
