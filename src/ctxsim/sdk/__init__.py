"""A ``claude_agent_sdk`` :class:`Transport` that plays a simulated session, so the real SDK runs on top.

:class:`FakeTransport` stands where the Claude Code subprocess would: the SDK's own ``query()``,
``ClaudeSDKClient``, control protocol and message parser run unchanged on it. It answers the control requests
(``initialize``, ``get_context_usage`` from the truth, ``interrupt``, ``set_model``, ...), plays one scripted
turn per user message the SDK writes, and ends its stream once the SDK has closed input and every turn asked
for has been played. Instead of a fixed list of scripts it can ask a *responder* for each turn's script, given the
user message the SDK wrote, so that a reactive fake agent (:mod:`ctxsim.agent`) decides what to answer. It never
touches the network or spawns a process, and works under asyncio and trio.

:func:`patch_sdk` makes code that builds its own ``ClaudeSDKClient(options)`` or calls ``query()`` without a
transport get a :class:`FakeTransport` instead of the CLI subprocess.

This module is ctxsim's one door to the SDK's private parts: :func:`parse_message` (the SDK's own parser, for
paths that read frames without a client), the rule for which frames the client keeps to itself
(:func:`kept_by_client`, :func:`client_message`: every prediction of what the client yields uses it), the
transport class :func:`patch_sdk` replaces, and that class built as the client builds it
(:func:`subprocess_transport`, for a caller that wraps the real CLI's transport). The files the SDK bundles (its
Claude Code CLI and that CLI's version) are found by :func:`ctxsim.wire.sdk_bundled_file`, one layer down, since the
wire reads that version.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._hooks import (
        HOOK_EVENTS as HOOK_EVENTS,
        HookAnswer as HookAnswer,
        HookPlayer as HookPlayer,
        HookRequest as HookRequest,
    )
    from ._transport import (
        CLIENT_ONLY_TYPES as CLIENT_ONLY_TYPES,
        FakeTransport as FakeTransport,
        Responder as Responder,
        SdkPatch as SdkPatch,
        client_message as client_message,
        kept_by_client as kept_by_client,
        parse_message as parse_message,
        patch_sdk as patch_sdk,
        subprocess_pid as subprocess_pid,
        subprocess_transport as subprocess_transport,
    )

__getattr__, __dir__ = lazy_face(globals(), stable=("HOOK_EVENTS", "HookRequest", "HookAnswer", "SdkPatch"))
