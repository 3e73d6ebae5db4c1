"""A client of ``ctxsim serve`` on the Python SDK: the settings passed on to the real CLI, and the SDK's messages
mapped to serve's observation points (what ``PointMatcher`` of the TypeScript client, ``clients/typescript``, does).

:func:`play_served` plays a :class:`~ctxsim.serve.ScenarioServer`'s scenario through :class:`~ctxsim.live.LiveClaude`
as a user of serve would: the settings' model, environment, CLI (``cli_path``) and prompts, one after another.
:class:`ServedPoints` says which point each message closes, from the truth's ``after``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from claude_agent_sdk import (
    AssistantMessage,
    ConversationResetMessage,
    Message,
    ResultMessage,
    StreamEvent,
    SystemMessage,
)

from ..live import LiveClaude

if TYPE_CHECKING:
    from ._server import ScenarioServer

__all__ = ["ServedPoints", "play_served"]

_STEERED = ("ANTHROPIC_BASE_URL", "CLAUDE_CODE_AUTO_COMPACT_WINDOW")
"""Variables of the settings :class:`LiveClaude` sets from its own arguments."""


class ServedPoints:
    """Which observation point of ``truth`` (what ``GET /ctxsim/truth`` answers) each message closes: feed it every
    message the SDK yields, in order."""

    def __init__(self, truth: Mapping[str, Any]) -> None:
        self._points = {self._after(p["after"]): int(p["index"]) for p in truth["points"]}
        self._query = 1
        self._counts: dict[tuple[str, str], int] = {}

    @staticmethod
    def _after(after: Mapping[str, Any]) -> tuple[Any, ...]:
        kind = str(after["type"])
        return (after["query"], kind, after.get("message_id"), after.get("n"))

    def _count(self, *name: str) -> int:
        key = (name[0], name[1] if len(name) > 1 else "")
        self._counts[key] = self._counts.get(key, 0) + 1
        return self._counts[key]

    def observe(self, message: Message) -> int | None:
        """The number of the point ``message`` closes, or None."""
        q = self._query
        key: tuple[Any, ...] | None = None
        if isinstance(message, AssistantMessage) and message.message_id is not None:
            key = (q, "assistant", message.message_id, self._count("assistant", message.message_id))
        elif isinstance(message, ResultMessage):
            key = (q, "result", None, None)
            self._query += 1
            self._counts.clear()
        elif isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
            key = (q, "compact_boundary", None, self._count("compact_boundary"))
        elif isinstance(message, ConversationResetMessage):
            key = (q, "conversation_reset", None, self._count("conversation_reset"))
        elif isinstance(message, StreamEvent) and message.event.get("type") == "message_stop":
            key = (q, "stream_event", None, self._count("message_stop"))
        return None if key is None else self._points.get(key)


async def play_served(server: ScenarioServer, *, timeout: float = 60.0) -> list[Message]:
    """Every message the SDK yields while the real CLI plays ``server``'s scenario with its settings."""
    settings = server.settings()
    env = {k: v for k, v in settings["env"].items() if k not in _STEERED}
    window = settings["env"].get("CLAUDE_CODE_AUTO_COMPACT_WINDOW")
    messages: list[Message] = []
    async with LiveClaude(server.api, model=settings["model"], env=env, cli=settings.get("cli_path"),
                          autocompact_window=int(window) if window else None, timeout=timeout,
                          include_partial_messages=settings["include_partial_messages"]) as live:
        for prompt in settings["prompts"]:
            messages += await live.ask(prompt)
    return messages
