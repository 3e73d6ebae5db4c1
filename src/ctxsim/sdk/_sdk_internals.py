"""The one place ctxsim reaches into ``claude_agent_sdk``'s private modules, and the versions it was checked on.

The SDK has no public hook for a fake transport or for its message parser, so ctxsim uses three private names:
the parser (``_internal.message_parser.parse_message``) and the two modules that look the CLI's transport class up
when a client connects (``_internal.client`` and ``_internal.transport.subprocess_cli``, both through the attribute
:data:`TRANSPORT_ATTRIBUTE`). Every other module of ctxsim imports them from here;
``tests/architecture/test_adapters.py`` checks, for the installed SDK, that each still exists and that the installed
version is one :data:`SUPPORTED` admits.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from claude_agent_sdk import Message
from claude_agent_sdk._internal.message_parser import parse_message as _parse_message

__all__ = ["SUPPORTED", "TRANSPORT_ATTRIBUTE", "parse_message", "transport_modules"]

SUPPORTED = (">=0.2.187", "<0.3")
"""The claude-agent-sdk versions these hooks are known to hold for: the bounds ``pyproject.toml`` declares."""

TRANSPORT_ATTRIBUTE = "SubprocessCLITransport"
"""The name both transport modules look the CLI's transport class up by."""


def parse_message(data: dict[str, Any]) -> Message | None:
    """The SDK's own parser: one stream-json dict into the SDK's ``Message`` (None for a frame it drops)."""
    return _parse_message(data)


def transport_modules() -> tuple[ModuleType, ModuleType]:
    """The two private modules that look :data:`TRANSPORT_ATTRIBUTE` up when a client connects: the client's and the
    subprocess transport's (patching both hands every new client another transport)."""
    from claude_agent_sdk._internal import client
    from claude_agent_sdk._internal.transport import subprocess_cli

    return client, subprocess_cli
