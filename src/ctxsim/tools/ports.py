"""Ports of real trackers: the buggy formula of a published context gauge and the formula its fix moved to, each
written here in Python from the public bug report it comes from (the report's address in each class's docstring).

A port is not the project's code: it is the formula the report shows, fed what the original is fed, so that a
likely cause (:func:`ctxsim.check.diagnose`) can be measured on a bug that happened, not only on the catalogue that
ctxsim wrote. Each :class:`Port` names the corpus scenario built from its report (:attr:`Port.scenario`), the
readings its two versions are (:attr:`Port.buggy_reading`, :attr:`Port.fixed_reading`: what a likely cause must
name), and the catalogue entry whose bug the buggy version carries (:attr:`Port.cause`).
``benchmarks/bench_causes.py`` runs both versions over the corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from claude_agent_sdk import AssistantMessage, ResultMessage

from ..trackers import Reading

__all__ = ["PORTS", "Port"]


def _tokens(usage: Mapping[str, Any] | None, *names: str) -> int:
    """The named usage fields added up (absent or null fields as 0), as the originals add them."""
    if not usage:
        return 0
    return sum(int(usage.get(name) or 0) for name in names)


_PROMPT = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class _LatestMainCall:
    """The fix most reports end on: the latest main-chain assistant message's input + cache writes + cache reads
    (a subagent's message, which carries ``parent_tool_use_id``, and an all-zero error message skipped)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.value: int | None = None

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            prompt = _tokens(message.usage, *_PROMPT)
            if prompt:
                self.value = prompt

    def context_tokens(self) -> int | None:
        return self.value


class AgentroveResultUsage:
    """agentrove's context meter before its fix: each ``ResultMessage.usage`` (input + cache writes + cache reads)
    taken as the context, which Claude Code sums over every call of the query, so a tool-heavy turn reads as
    "14.8M/200k". The fix reads the latest assistant message's usage instead.

    Source: https://github.com/Mng-dev-ai/agentrove/pull/298
    """

    name = "agentrove-result-usage"

    def __init__(self) -> None:
        self.value: int | None = None

    def observe(self, message: object) -> None:
        if isinstance(message, ResultMessage) and message.usage:
            self.value = _tokens(message.usage, *_PROMPT)

    def context_tokens(self) -> int | None:
        return self.value


class AbtopWithoutCacheWrites:
    """abtop after its pull request #56: to stop a 346% reading (whose cause lay elsewhere) it took cache writes out
    of the context, ``input + cache reads``, so a turn that rewrites the cache (an expired or invalidated cache)
    reads near empty. The formula before it, ``input + cache reads + cache writes``, was the right one.

    Source: https://github.com/graykode/abtop/pull/56
    """

    name = "abtop-without-cache-writes"

    def __init__(self) -> None:
        self.value: int | None = None

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            prompt = _tokens(message.usage, *_PROMPT)
            if prompt:
                self.value = _tokens(message.usage, "input_tokens", "cache_read_input_tokens")

    def context_tokens(self) -> int | None:
        return self.value


class OpenclawSummedPrompt:
    """OpenClaw's context counter on the claude-cli path: ``input + cacheRead + cacheWrite`` of each turn added to
    a running total, so the cached prefix is counted again on every call and the counter passes the window after a
    few cache hits (800k shown against a 200k window). The fix keeps the latest call's prompt.

    Source: https://github.com/openclaw/openclaw/issues/68794
    """

    name = "openclaw-summed-prompt"

    def __init__(self) -> None:
        self.total = 0
        self.seen: set[str] = set()

    def observe(self, message: object) -> None:
        if (isinstance(message, AssistantMessage) and message.parent_tool_use_id is None and message.usage
                and message.message_id not in self.seen):
            self.seen.add(str(message.message_id))
            self.total += _tokens(message.usage, *_PROMPT)

    def context_tokens(self) -> int | None:
        return self.total


class OpenclawInputOnly:
    """OpenClaw Control UI's per-message ``ctx%``: the non-cached ``input`` tokens alone over the window, so a
    mostly cached context (input 3, cache read 98k) shows 0%. The fix adds the cached tokens.

    Source: https://github.com/openclaw/openclaw/issues/70972
    """

    name = "openclaw-input-only"

    def __init__(self) -> None:
        self.value: int | None = None

    def observe(self, message: object) -> None:
        if (isinstance(message, AssistantMessage) and message.parent_tool_use_id is None
                and _tokens(message.usage, *_PROMPT)):
            self.value = _tokens(message.usage, "input_tokens")

    def context_tokens(self) -> int | None:
        return self.value


class HapiLatestLine:
    """hapi's context display: the latest assistant line's ``input + cache writes + cache reads`` with no
    sidechain filter, so while a Task subagent runs its own, smaller context becomes the session's ("ctx 82k/1.0M"
    jumping). The fix skips sidechain (subagent) messages.

    Source: https://github.com/tiann/hapi/issues/1256
    """

    name = "hapi-latest-line"

    def __init__(self) -> None:
        self.value: int | None = None

    def observe(self, message: object) -> None:
        if isinstance(message, AssistantMessage) and message.usage is not None:
            self.value = _tokens(message.usage, *_PROMPT)

    def context_tokens(self) -> int | None:
        return self.value


@dataclass(frozen=True)
class Port:
    """One real tracker's bug and fix, ported."""

    name: str
    source: str
    """The public bug report (or pull request) the formulas come from."""
    bug: str
    """What the buggy version gets wrong, in one line."""
    buggy: Callable[[], Any]
    """Makes a fresh tracker of the formula as reported."""
    fixed: Callable[[], Any]
    """Makes a fresh tracker of the formula the fix moved to."""
    buggy_reading: Reading
    fixed_reading: Reading | None
    """What the fixed version's numbers are where it still fails (a fault it never handled)."""
    scenario: str
    """The corpus scenario built from the report, where the buggy version's headline bug shows."""
    cause: str
    """The catalogue entry (:data:`ctxsim.trackers.catalogue.CATALOGUE`) whose bug the buggy version carries."""


def _fixed(name: str) -> Callable[[], _LatestMainCall]:
    return lambda: _LatestMainCall(name)


PORTS: dict[str, Port] = {p.name: p for p in (
    Port("agentrove-result-usage", "https://github.com/Mng-dev-ai/agentrove/pull/298",
         "the result message's usage (summed over the query's calls) read as the context",
         AgentroveResultUsage, _fixed("agentrove-fixed"), Reading("result"), Reading("row", at_reset="keep"),
         "b08-result-usage-as-context", "result-usage-as-context"),
    Port("abtop-without-cache-writes", "https://github.com/graykode/abtop/pull/56",
         "cache writes left out of the context: a cache rewrite reads near empty",
         AbtopWithoutCacheWrites, _fixed("abtop-fixed"), Reading("row", keys=("in", "cr"), at_reset="keep"),
         Reading("row", at_reset="keep"),
         "b13-cache-creation-ignored", "cache-creation-ignored"),
    Port("openclaw-summed-prompt", "https://github.com/openclaw/openclaw/issues/68794",
         "each call's prompt added to a running total: the cached prefix counted again on every call",
         OpenclawSummedPrompt, _fixed("openclaw-summed-fixed"), Reading("call", "sum"),
         Reading("row", at_reset="keep"),
         "b11-cumulative-statusline-totals", "cumulative-statusline-totals"),
    Port("openclaw-input-only", "https://github.com/openclaw/openclaw/issues/70972",
         "the non-cached input alone: a cached context reads 0%",
         OpenclawInputOnly, _fixed("openclaw-input-fixed"), Reading("row", keys=("in",), at_reset="keep"),
         Reading("row", at_reset="keep"),
         "b12-input-tokens-only", "input-only"),
    Port("hapi-latest-line", "https://github.com/tiann/hapi/issues/1256",
         "the latest assistant line whatever its chain: a subagent's context becomes the session's",
         HapiLatestLine, _fixed("hapi-fixed"), Reading("row", chain="all", at_reset="keep"),
         Reading("row", at_reset="keep"),
         "b19-subagent-line-as-latest", "ccusage-fallback"),
)}
"""Every port, by name."""
