"""The environment Claude Code's settings give it: what ``--ctx-block-real`` reads before the CLI starts.

Claude Code applies the ``env`` of its settings over the environment it was started with, so a local
``ANTHROPIC_BASE_URL`` can be overridden by a settings layer: the user's (``$CLAUDE_CONFIG_DIR/settings.json``, else
``~/.claude/settings.json``), the project's (``.claude/settings.json`` and ``.claude/settings.local.json`` in the
working directory), ``--settings FILE-OR-JSON`` on its command line, and the machine's managed settings. Each layer
is read here, lowest precedence first, and :func:`effective_env` is the environment the CLI would run with.

Only the standard library is used: a guarded child's Python start-up hook imports this module too.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["effective_env", "settings_layers"]

MANAGED = (Path("/etc/claude-code/managed-settings.json"),
           Path("/Library/Application Support/ClaudeCode/managed-settings.json"))
"""Where the machine's managed settings live (Linux, macOS): the highest layer."""
_READ_LIMIT = 1 << 20
"""Bytes of a settings file read (a larger one is not Claude Code's settings: it is judged by its start)."""
_ROUTING = ("BASE_URL", "PROXY", "CLAUDE_CODE_USE_")
"""Parts of the variable names that route requests: an unreadable layer mentioning one is taken as routing."""


def _flag(argv: Sequence[str]) -> list[str]:
    """The values of ``--settings`` on ``argv`` (``--settings X`` and ``--settings=X``)."""
    out: list[str] = []
    for i, word in enumerate(argv):
        if word == "--settings" and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif word.startswith("--settings="):
            out.append(word.partition("=")[2])
    return out


def _read(path: Path) -> str | None:
    try:
        if not path.is_file():  # a FIFO or a device is nothing the CLI reads as settings (and would block)
            return None
        with open(path, "rb") as f:
            return f.read(_READ_LIMIT).decode("utf-8", errors="replace")
    except OSError:
        return None


def _env_of(text: str, where: str) -> tuple[dict[str, str], str]:
    """The ``env`` of one layer's text, and ``where`` it came from; an unreadable layer that mentions a routing
    variable counts as setting ``ANTHROPIC_BASE_URL`` to something unknown (refused: the CLI may read it)."""
    try:
        data = json.loads(text)
    except ValueError:
        return ({"ANTHROPIC_BASE_URL": "unreadable"} if any(r in text for r in _ROUTING) else {}), where
    env = data.get("env") if isinstance(data, dict) else None
    if not isinstance(env, dict):
        return {}, where
    return {str(k): str(v) for k, v in env.items()}, where


def settings_layers(argv: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None
                    ) -> list[tuple[dict[str, str], str]]:
    """Each settings layer's ``env`` with where it came from, lowest precedence first."""
    config = env.get("CLAUDE_CONFIG_DIR")
    home = env.get("HOME") or os.path.expanduser("~")
    user = Path(config) / "settings.json" if config else Path(home) / ".claude" / "settings.json"
    project = Path(cwd) if cwd is not None else Path.cwd()
    files = [user, project / ".claude" / "settings.json", project / ".claude" / "settings.local.json"]
    layers = [_env_of(text, str(path)) for path in files if (text := _read(path)) is not None]
    for value in _flag(argv):
        stripped = value.strip()
        if stripped.startswith("{"):
            layers.append(_env_of(stripped, "--settings"))
        else:
            path = Path(value) if os.path.isabs(value) else project / value
            text = _read(path)
            if text is not None:
                layers.append(_env_of(text, f"--settings {value}"))
    layers += [_env_of(text, str(path)) for path in MANAGED if (text := _read(path)) is not None]
    return [(layer, where) for layer, where in layers if layer]


def effective_env(argv: Sequence[str], env: Mapping[str, str], cwd: str | os.PathLike[str] | None
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """The environment Claude Code started as ``argv`` with ``env`` in ``cwd`` runs with (its settings' ``env``
    applied), and for each variable a settings layer set, which layer."""
    out = dict(env)
    origin: dict[str, str] = {}
    for layer, where in settings_layers(argv, env, cwd):
        out.update(layer)
        origin.update(dict.fromkeys(layer, where))
    return out, origin
