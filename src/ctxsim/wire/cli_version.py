"""Which Claude Code version a rendering claims to be: the CLI bundled in the installed ``claude-agent-sdk``.

Read from the wheel's ``_bundled/claude.version`` file without importing the SDK or starting the CLI, so the wire
(below every layer that runs the CLI) can stamp its rows and payloads with the version a user actually has.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

from .stream_json import CLAUDE_CODE_VERSION

__all__ = ["installed_cli_version", "resolve_cli_version"]


@functools.cache
def installed_cli_version() -> str | None:
    """The version of the CLI bundled in the installed ``claude-agent-sdk`` (the first word of
    ``_bundled/claude.version``), or None where the SDK, the file or a version in it is missing."""
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        try:
            words = (Path(location) / "_bundled" / "claude.version").read_text().split()
        except OSError:
            continue
        if words:
            return words[0]
    return None


def resolve_cli_version(cli_version: str | None) -> str:
    """``cli_version`` when given, else :func:`installed_cli_version`, else the version of the captures the
    stream-json rendering reproduces (:data:`~ctxsim.wire.CLAUDE_CODE_VERSION`)."""
    return cli_version or installed_cli_version() or CLAUDE_CODE_VERSION
