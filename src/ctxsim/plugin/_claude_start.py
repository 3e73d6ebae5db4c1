"""What ``--ctx-block-real`` reads in a process start: whether it starts Claude Code (directly, or through a shell
line, a script or another program), and whether an environment keeps requests on this machine (its base URLs and
proxies read as Claude Code's WHATWG URL parser reads them).

Only the standard library is used: a guarded child's Python start-up hook imports this module too.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "ROUTES", "SWITCHES", "argv_of", "claude_started", "local", "local_url", "points_locally",
           "reaching"]

LOCAL_HOSTS = frozenset({"127.0.0.1", "::1", "localhost", "ip6-localhost"})
"""Names a test may look up under the guard; it may connect to these and to every loopback address."""

_CLAUDE_NAMES = frozenset({"claude", "claude.exe", "claude-code"})
_CLAUDE_PACKAGE = "@anthropic-ai/claude-code"
_LAUNCHERS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "busybox", "env", "nohup", "setsid",
                        "timeout", "xargs", "sudo", "doas", "npx", "bunx", "pnpx", "pnpm", "yarn", "npm", "node",
                        "bun", "deno", "script", "stdbuf", "nice", "ionice", "time", "exec", "command", "unbuffer"})
"""Programs that start the program named in their arguments or shell line."""
SWITCHES = ("CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY")
"""Variables that send Claude Code to a cloud provider, whatever ``ANTHROPIC_BASE_URL`` says."""
ROUTES = ("ANTHROPIC_BEDROCK_BASE_URL", "ANTHROPIC_VERTEX_BASE_URL", "ANTHROPIC_FOUNDRY_BASE_URL", "HTTP_PROXY",
           "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
"""Variables that route a child's requests (the providers' base URLs, the proxies): pointed at the refuser."""
_SHELL_PUNCTUATION = re.compile(r"[\s;|&()`'\"$<>{}=]+")
"""What separates the words of a shell line, crudely (an assignment's value is a word of its own)."""


def local(host: Any) -> bool:
    """Whether ``host`` (a name or an address) is this machine."""
    if host is None:
        return True
    name = host.decode(errors="replace") if isinstance(host, bytes) else str(host)
    if name in LOCAL_HOSTS or name == "":
        return True
    try:
        return ipaddress.ip_address(name.split("%", 1)[0]).is_loopback
    except ValueError:
        return False


_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
"""Schemes whose URLs the WHATWG URL standard (what Node, Bun and so Claude Code parse URLs by) reads a backslash
in as a slash."""


def _url_host(url: str) -> str | None:
    """The host of ``url`` as the WHATWG URL standard reads it (Claude Code's parser), not as ``urlsplit`` alone
    does: leading and trailing spaces and controls dropped, tabs and newlines removed, and in a special scheme a
    backslash is a slash (``http://remote\\@127.0.0.1/`` is ``remote``). None when there is none."""
    text = url.strip("".join(map(chr, range(0x21)))).translate({0x09: None, 0x0A: None, 0x0D: None})
    if "://" not in text and not text.lower().startswith(tuple(f"{s}:" for s in _SPECIAL_SCHEMES)):
        text = f"http://{text}"
    scheme, _, rest = text.partition(":")
    if scheme.lower() in _SPECIAL_SCHEMES:
        rest = rest.replace("\\", "/")
        text = f"{scheme}://{rest.lstrip('/')}"
    try:
        return urlsplit(text).hostname
    except ValueError:
        return None


def local_url(url: str, *, empty: bool = True) -> bool:
    if not url:
        return empty
    host = _url_host(url)
    return host is not None and local(host)


def _switched_on(value: str | None) -> bool:
    return value is not None and value.strip().lower() not in ("", "0", "false", "no", "off")


def reaching(env: Mapping[str, str]) -> list[str]:
    """The variables of ``env`` that would send a request beyond this machine (a switch on, a route elsewhere)."""
    return [k for k in SWITCHES if _switched_on(env.get(k))] + [
        k for k in ROUTES if not local_url(env.get(k, ""))]


def points_locally(env: Mapping[str, str]) -> bool:
    """Whether ``env`` keeps Claude Code on this machine: ``ANTHROPIC_BASE_URL`` at a loopback address, no
    Bedrock, Vertex or Foundry switch on, and no base URL or proxy beyond this machine."""
    return local_url(env.get("ANTHROPIC_BASE_URL", ""), empty=False) and not reaching(env)


def argv_of(args: Any, *, shell: bool) -> list[str]:
    """A ``Popen`` argument as words (with ``shell=True``: the shell's line)."""
    if isinstance(args, (str, bytes, os.PathLike)):
        text = os.fsdecode(args)
        return ["/bin/sh", "-c", text] if shell else [text]
    if isinstance(args, Sequence):
        words = [os.fsdecode(a) for a in args if isinstance(a, (str, bytes, os.PathLike))]
        return ["/bin/sh", "-c", " ".join(words)] if shell else words
    return []


def claude_started(argv: list[str]) -> tuple[str, bool] | None:
    """``(program, direct)`` when ``argv`` starts Claude Code, directly (its first word) or through a shell line or
    another program; else None."""
    if not argv:
        return None
    first = PurePath(argv[0]).name
    if first in _CLAUDE_NAMES:
        return argv[0], True
    if first in ("node", "node.exe") and len(argv) > 1 and PurePath(argv[1]).name == "cli.js":
        return f"{argv[0]} {argv[1]}", True
    script = _script_namingclaude_started(argv[0])
    if script is not None:
        return script, False
    if first not in _LAUNCHERS and not first.endswith("sh"):
        return None
    for word in argv[1:]:
        for part in _SHELL_PUNCTUATION.split(word):
            name = PurePath(part).name if part else ""
            if name in _CLAUDE_NAMES or name == "cli.js" or _CLAUDE_PACKAGE in part:
                return part, False
        script = _script_namingclaude_started(word)
        if script is not None:
            return script, False
    return None


_SCRIPT_HEAD = 64 * 1024
"""Bytes of a script read for the word ``claude``."""


def _script_namingclaude_started(path: str) -> str | None:
    """``claude`` (as the script names it) when ``path`` is a script (``#!``) whose first
    :data:`_SCRIPT_HEAD` bytes start Claude Code (read as crudely as a shell line), else None."""
    try:
        if not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            head = f.read(_SCRIPT_HEAD)
    except (OSError, ValueError):
        return None
    if not head.startswith(b"#!"):
        return None
    for part in _SHELL_PUNCTUATION.split(head.decode(errors="replace")):
        name = PurePath(part).name if part else ""
        if name in _CLAUDE_NAMES or name == "cli.js" or _CLAUDE_PACKAGE in part:
            return f"{part} (in the script {path})"
    return None
