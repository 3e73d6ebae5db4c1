"""The wire: a :class:`~ctxsim.world.Session` rendered as Claude Code writes it, one module per format.

- :mod:`.stream_json` — what the CLI writes on stdout for the SDK (``--output-format stream-json``), query by query;
- :mod:`.transcript` — the session transcript JSONL the CLI appends to (``projects/<slug>/<session>.jsonl``);
- :mod:`.statusline` — the JSON payload the interactive CLI pipes to ``statusLine.command``;
- :mod:`.context_usage` — its answer to the ``get_context_usage`` control request;
- :mod:`.frames` — the lines of every format, grouped by query, and the observation points they close;
- :mod:`.content` — reading the text of a message's content;
- :mod:`.versions` — the Claude Code installed, and the versions the wire is checked against.
"""

from __future__ import annotations

from .content import prompt_text, text_blocks
from .context_usage import context_usage_response, thinking_tail
from .frames import Frame, Observation, Script
from .statusline import statusline_payloads
from .stream_json import PLACEHOLDER_OUTPUT_TOKENS, Renderer, cli_version_rendered, render, render_stream
from .transcript import TranscriptFile, TranscriptPoint, TranscriptRender, project_slug, render_transcript

__all__ = [
    "PLACEHOLDER_OUTPUT_TOKENS",
    "Frame",
    "Observation",
    "Renderer",
    "Script",
    "TranscriptFile",
    "TranscriptPoint",
    "TranscriptRender",
    "cli_version_rendered",
    "context_usage_response",
    "project_slug",
    "prompt_text",
    "render",
    "render_stream",
    "render_transcript",
    "statusline_payloads",
    "text_blocks",
    "thinking_tail",
]
