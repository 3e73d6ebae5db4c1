"""Which Claude Code the wire stands for: the CLI installed with the SDK, and the versions it is checked against.

Read from files, without importing or starting anything (the pytest header asks on every run): the installed
``claude-agent-sdk``'s version from its metadata, its bundled CLI's from ``claude.version`` beside the bundled CLI
(:func:`sdk_bundled_file`, ctxsim's one door to that private directory of the SDK), and the
captured versions from the directories of the captures ctxsim ships (:data:`CAPTURES`, written by ``ctxsim
fidelity --record``). No version is written into the code: a release that ships tomorrow is read, not assumed.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
from pathlib import Path

from ..world import version_key

__all__ = ["CAPTURES", "captured_versions", "cli_in_use", "installed_cli_version", "installed_sdk_version",
           "is_version", "resolve_cli", "sdk_bundled_file", "use_cli", "version_key"]

CAPTURES = Path(__file__).resolve().parent / "captures"
"""The captures that ship with ctxsim: ``claude-code-<version>/<scripted session>.json``."""


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


@functools.cache
def installed_cli_version() -> str | None:
    """The version of the Claude Code CLI bundled in the installed ``claude-agent-sdk`` (None: no SDK, or no CLI
    bundled in it). Read once a process: every rendering that names no release asks it (a gauge at every message)."""
    path = sdk_bundled_file("claude.version")
    if path is None:
        return None
    try:
        words = path.read_text().split()  # "2.1.330 (Claude Code)"
    except OSError:
        return None
    return words[0] if words else None


_chosen: list[str] = []
"""The release chosen to stand for the CLI in use (``--ctx-cli``, ``ctxsim --cli-version``, ``CTXSIM_CLI``'s), if
any."""


def use_cli(version: str | None) -> None:
    """Render as Claude Code ``version`` wherever a session names no release (``pytest --ctx-cli``, ``ctxsim
    run --cli-version``); None: as the CLI in use again. ``version`` must name one version (a ``ctxsim:``
    :class:`ValueError` otherwise)."""
    if version is not None and not is_version(version.strip()):
        raise ValueError(f"ctxsim: {version!r} is not a Claude Code version (2.1.337)")
    _chosen[:] = [version.strip()] if version is not None else []


def cli_in_use() -> str | None:
    """The Claude Code a session that names no release renders as: the one chosen by :func:`use_cli`, else the
    CLI bundled in the installed SDK (None: neither)."""
    return _chosen[0] if _chosen else installed_cli_version()


def is_version(text: str) -> bool:
    """Whether ``text`` names one Claude Code version (``2.1.337``), not a range of them."""
    return bool(text) and all(part.isdigit() for part in text.split("."))


def resolve_cli(stated: str | None, *, in_use: str | None = None) -> str:
    """The Claude Code version a rendering stands for, given the release a session or a caller ``stated``: a version
    as it is; a range (a PEP 440 specifier set: ``>=2.1.337``, ``<2.1.337``, ``>=2.1.330,<2.1.337``) the CLI in use
    (``in_use``, default :func:`cli_in_use`) where it falls in the range, else the newest recorded release
    (:func:`captured_versions`) that does; None the CLI in use, else the newest recorded release. A range no recorded
    release falls in, or that cannot be read, is a :class:`ValueError` with a ``ctxsim:`` message."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    current = in_use or cli_in_use()
    if stated is None:
        return current or (captured_versions() or ["unknown"])[-1]
    stated = stated.strip()
    if is_version(stated):
        return stated
    try:
        wanted = SpecifierSet(stated)
    except InvalidSpecifier:
        raise ValueError(f"ctxsim: {stated!r} is neither a Claude Code version (2.1.337) nor a range of them "
                         f"(>=2.1.337, <2.1.337)") from None
    if current is not None and wanted.contains(current, prereleases=True):
        return current
    recorded = [v for v in captured_versions() if wanted.contains(v, prereleases=True)]
    if not recorded:
        raise ValueError(f"ctxsim: no recorded Claude Code release is in {stated!r} (recorded: "
                         f"{', '.join(captured_versions()) or 'none'})")
    return recorded[-1]
