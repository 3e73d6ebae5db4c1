"""Which Claude Code the wire stands for: the CLI installed with the SDK, and the versions it is checked against.

Read from files, without importing or starting anything (the pytest header asks on every run): the installed
``claude-agent-sdk``'s version from its metadata, its bundled CLI's from ``claude.version`` beside the bundled CLI
(:func:`sdk_bundled_file`, ctxsim's one door to that private directory of the SDK), and the
captured versions from the directories of the captures ctxsim ships (:data:`CAPTURES`, written by ``ctxsim
fidelity --record``). No version is written into the code: a release that ships tomorrow is read, not assumed.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

__all__ = ["CAPTURES", "captured_versions", "installed_cli_version", "installed_sdk_version", "sdk_bundled_file",
           "version_key"]

CAPTURES = Path(__file__).resolve().parent / "captures"
"""The captures that ship with ctxsim: ``claude-code-<version>/<scripted session>.json``."""


def version_key(version: str) -> tuple[int, ...]:
    """``2.1.330`` as ``(2, 1, 330)``, for ordering versions (a part that is not a number counts as 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


def captured_versions(directory: Path = CAPTURES) -> list[str]:
    """The CLI versions with captures under ``directory``, oldest first."""
    return sorted((p.name.removeprefix("claude-code-") for p in directory.glob("claude-code-*") if p.is_dir()),
                  key=version_key)


def installed_sdk_version() -> str | None:
    """The installed ``claude-agent-sdk``'s version (None: not installed)."""
    try:
        return importlib.metadata.version("claude-agent-sdk")
    except importlib.metadata.PackageNotFoundError:
        return None


def sdk_bundled_file(name: str) -> Path | None:
    """The file ``name`` of the installed ``claude-agent-sdk``'s private ``_bundled`` directory: ``claude``, the
    Claude Code CLI it bundles, and ``claude.version``, that CLI's version. It may be absent; None when no SDK is
    installed. Found without importing the SDK.

    ctxsim's one reference to that directory (every caller goes through here, so a move upstream is one edit). It
    lives in the wire layer, below :mod:`ctxsim.sdk`, because the wire reads the bundled CLI's version.
    """
    spec = importlib.util.find_spec("claude_agent_sdk")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "_bundled" / name


def installed_cli_version() -> str | None:
    """The version of the Claude Code CLI bundled in the installed ``claude-agent-sdk`` (None: no SDK, or no CLI
    bundled in it)."""
    path = sdk_bundled_file("claude.version")
    if path is None:
        return None
    try:
        words = path.read_text().split()  # "2.1.330 (Claude Code)"
    except OSError:
        return None
    return words[0] if words else None
