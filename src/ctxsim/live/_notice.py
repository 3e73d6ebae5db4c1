"""Said at run time: the Claude Code in use is newer than every release ctxsim recorded.

ctxsim's truth for a CLI release is what its captures hold (``ctxsim/wire/captures/claude-code-<version>/``). A
user whose CLI came out after the newest of them runs on a truth that may be a release behind, and
:func:`release_notice` is the one line that tells them so: the pytest header prints it, and each ``ctxsim``
command that plays sessions ends its run with it on stderr. The CLI in use is the one named by ``CTXSIM_CLI`` (the CLI
``ctxsim serve``'s wrapper runs), else the one bundled in ``claude-agent-sdk`` (its version read from the wheel,
without starting it). Asking ``CTXSIM_CLI --version`` is bounded (:data:`NOTICE_TIMEOUT`); a CLI that hangs or
prints no version gets one line saying so, never a traceback. The versions are read, never written here: the
newest recorded release is the newest capture directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from ..processes import printable
from ..wire import captured_versions, installed_cli_version, version_key

__all__ = ["BUNDLED_MARK", "NOTICE_TIMEOUT", "bundled_cli_notice", "release_notice", "render_as_named_cli"]

NOTICE_TIMEOUT = 10.0
"""Seconds :func:`release_notice` waits for ``$CTXSIM_CLI --version`` (the bundled CLI's version is read from a
file): a CLI that hangs delays a pytest header or a command by at most this."""


def release_notice(env: Mapping[str, str] | None = None, *, recorded: Sequence[str] | None = None) -> str | None:
    """The one line that says the Claude Code in use is newer than the newest release ctxsim recorded, naming
    both versions and ``ctxsim fidelity``; None for a recorded release, an older one, or no CLI at all.

    ``env`` (default: the process's environment) names the CLI in use in ``CTXSIM_CLI``, else it is the bundled
    one; ``recorded``: the recorded releases (default: :func:`~ctxsim.wire.captured_versions`). Versions compare
    numerically, part by part (a patch release 1000 is newer than 99). A ``CTXSIM_CLI`` that cannot tell its
    version within :data:`NOTICE_TIMEOUT` gets a one-line note saying so instead."""
    releases = captured_versions() if recorded is None else list(recorded)
    if not releases:
        return None
    newest = max(releases, key=version_key)
    named = (os.environ if env is None else env).get("CTXSIM_CLI", "")
    fidelity = "`ctxsim fidelity`"
    if named:  # as the wrapper's ${CTXSIM_CLI:-bundled}: empty is unset
        from ._claude import LiveError, cli_version

        try:
            version = cli_version(named, timeout=NOTICE_TIMEOUT)
        except LiveError as exc:
            return printable(f"{exc}; so whether CTXSIM_CLI is newer than the newest release ctxsim recorded "
                             f"({newest}) is not known")
        fidelity = "`ctxsim fidelity --cli \"$CTXSIM_CLI\"`"
    else:
        version = installed_cli_version() or ""
    if not version or version_key(version) <= version_key(newest):
        return None
    return printable(f"ctxsim: Claude Code {version} is newer than the newest release ctxsim recorded ({newest}): "
                     f"its truth may be a release behind; {fidelity} compares them field by field")


def render_as_named_cli(env: Mapping[str, str] | None = None) -> str | None:
    """Where ``CTXSIM_CLI`` (in ``env``, default the process's environment) names the CLI in use, make its version
    the release sessions that name none render as (:func:`ctxsim.wire.use_cli`) and return it; None, changing
    nothing, where it names none or gives no version within :data:`NOTICE_TIMEOUT` (the bundled CLI's rules stand,
    and :func:`release_notice` says why)."""
    named = (os.environ if env is None else env).get("CTXSIM_CLI", "")
    if not named:
        return None
    from ..wire import use_cli
    from ._claude import LiveError, cli_version

    try:
        version = cli_version(named, timeout=NOTICE_TIMEOUT)
        use_cli(version)
    except (LiveError, ValueError):
        return None
    return version


BUNDLED_MARK = "bundled-cli"
"""What ``ctxsim serve``'s CLI wrapper leaves in serve's directory once it ran the bundled CLI, no ``CTXSIM_CLI``
naming another: serve then says :func:`bundled_cli_notice`."""


def bundled_cli_notice() -> str:
    """The line ``ctxsim serve`` says once its CLI wrapper ran the CLI bundled with the Python ``claude-agent-sdk``,
    no ``CTXSIM_CLI`` naming another: which CLI that is, and how a client of another SDK runs its own."""
    from ._claude import bundled_cli_path

    version = installed_cli_version() or "?"
    return printable(f"ctxsim: serve: the CLI wrapper (cli_path) runs Claude Code {version}, the "
                     f"CLI bundled with the Python claude-agent-sdk ({bundled_cli_path()}): neither the client's "
                     f"environment nor serve's names one in CTXSIM_CLI; to run your SDK's own CLI (the TypeScript SDK "
                     f"carries one), set CTXSIM_CLI to its path, for serve or in the environment the client gives the "
                     f"CLI (ctxsim-client sets it to the Agent SDK's own)")
