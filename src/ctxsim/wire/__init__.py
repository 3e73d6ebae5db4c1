"""The wire: a :class:`~ctxsim.world.Session` rendered as Claude Code writes it, one module per format.

- :func:`render` — what the CLI writes on stdout for the SDK (``--output-format stream-json``), query by query;
- :func:`render_transcript` — the session transcript JSONL the CLI appends to (``projects/<slug>/<session>.jsonl``);
- :func:`transcript_outline` — what a tracker walks of one transcript file, every link made a position (two
  renderings of one session match where their outlines do);
- :func:`frame_keys` — the keys a run's raw stream-json frames carry, by frame kind, and which of them trackers read
  (:data:`TRACKED`);
- :func:`statusline_payloads` — the JSON payload the interactive CLI pipes to ``statusLine.command``;
- :func:`context_usage_response` — its answer to the ``get_context_usage`` control request;
- :class:`Frame`, :class:`Script`, :class:`Observation` — the lines of every format, grouped by query, and the
  observation points they close;
- :func:`text_blocks`, :func:`prompt_text` — reading the text of a message's content;
- :func:`installed_cli_version`, :func:`captured_versions` — the Claude Code installed, and the versions the wire is
  checked against; :func:`rendered_version` — the release a session renders as, whose rules
  (:data:`ctxsim.world.RULES`) the rendering follows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._content import prompt_text as prompt_text, text_blocks as text_blocks
    from ._context_usage import context_usage_response as context_usage_response, thinking_tail as thinking_tail
    from ._frame_keys import (
        OPAQUE as OPAQUE,
        RAW_FIELDS as RAW_FIELDS,
        TRACKED as TRACKED,
        FrameKeys as FrameKeys,
        frame_keys as frame_keys,
        frame_kind as frame_kind,
        is_tracked as is_tracked,
        raw_fields as raw_fields,
    )
    from ._frames import Frame as Frame, Observation as Observation, Script as Script
    from ._labels import (
        number_subagents as number_subagents,
        query_subagents as query_subagents,
        subagent_label as subagent_label,
    )
    from ._statusline import (
        after_compaction as after_compaction,
        context_window as context_window,
        exceeds_200k_tokens as exceeds_200k_tokens,
        startup_payload as startup_payload,
        statusline_payloads as statusline_payloads,
    )
    from ._stream_json import (
        PLACEHOLDER_OUTPUT_TOKENS as PLACEHOLDER_OUTPUT_TOKENS,
        Renderer as Renderer,
        cli_version_rendered as cli_version_rendered,
        render as render,
        render_stream as render_stream,
        rendered_version as rendered_version,
    )
    from ._transcript import (
        TIMED_LINES as TIMED_LINES,
        TranscriptFile as TranscriptFile,
        TranscriptPoint as TranscriptPoint,
        TranscriptRender as TranscriptRender,
        iso as iso,
        project_slug as project_slug,
        render_transcript as render_transcript,
        transcript_outline as transcript_outline,
    )
    from ._versions import (
        CAPTURES as CAPTURES,
        captured_versions as captured_versions,
        cli_in_use as cli_in_use,
        installed_cli_version as installed_cli_version,
        installed_sdk_version as installed_sdk_version,
        is_version as is_version,
        resolve_cli as resolve_cli,
        sdk_bundled_file as sdk_bundled_file,
        use_cli as use_cli,
        version_key as version_key,
    )

__getattr__, __dir__ = lazy_face(globals())
