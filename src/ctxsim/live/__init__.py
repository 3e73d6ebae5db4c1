"""The live backend: the real Claude Code CLI bundled in ``claude-agent-sdk``, against a fake Messages API.

:class:`FakeMessagesAPI` is the fake Anthropic Messages API on 127.0.0.1; :class:`LiveClaude` the lifecycle that runs
the bundled CLI against it through the real ``ClaudeSDKClient``; :func:`run_scenario_live` a scenario through the CLI
(``--ctx-backend=live``); :class:`SessionModel` the responder that answers a session's calls in order, keyed by what
closes each observation point live (:data:`PointKey`); :func:`live_twin` and :class:`TurnEnds` the shapes the live CLI
can be steered into. ``ctxsim serve`` (:mod:`ctxsim.serve`) and the recorders and fidelity check that hold ctxsim to
each CLI release (:mod:`ctxsim.lab`) are built on the names here.
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
        BUNDLED_MARK as BUNDLED_MARK,
        NOTICE_TIMEOUT as NOTICE_TIMEOUT,
        bundled_cli_notice as bundled_cli_notice,
        release_notice as release_notice,
        render_as_named_cli as render_as_named_cli,
    )
    from ._requests import RequestKind as RequestKind
    from ._scenarios import (
        PointKey as PointKey,
        SessionModel as SessionModel,
        inert_block as inert_block,
        keyed_points as keyed_points,
        live_skip_reason as live_skip_reason,
        observation_points as observation_points,
        point_keys as point_keys,
        run_scenario_live as run_scenario_live,
        tracker_skip_reason as tracker_skip_reason,
    )
    from ._tap import FrameEdit as FrameEdit, FrameTap as FrameTap
    from ._twins import (
        AUTOCOMPACT_RESERVE as AUTOCOMPACT_RESERVE,
        GO_ON as GO_ON,
        TurnEnds as TurnEnds,
        autocompact_window as autocompact_window,
        client_model as client_model,
        is_model_query as is_model_query,
        live_twin as live_twin,
        twin_changes as twin_changes,
    )

__getattr__, __dir__ = lazy_face(globals(), stable=("LiveClaude", "live_skip_reason"))
