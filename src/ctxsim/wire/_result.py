"""The stream-json ``result`` frame with every key Claude Code writes, and the turns it counts.

Recorded from the CLI bundled in ``claude-agent-sdk`` (Claude Code 2.1.330 to 2.1.332 wrote the same keys): a
query the model answered carries the timing keys (``ttft_ms``, ``time_to_request_ms``, ...), ``api_error_status``
and ``terminal_reason: completed``; a local command (``/compact``, ``/clear``) carries ``local_command`` with the
command's name instead, no ``terminal_reason``, ``stop_reason`` null, ``num_turns`` 0 and an empty ``result``.
``modelUsage`` is cumulative over the conversation, ``model_usage_since_last_result`` what was spent since the
previous result (a compaction's summary request included), ``result_index`` the result's 0-based place in the
session.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ..world import Step, SubagentStart, TaskNotification

__all__ = ["SUBAGENT_STATS_ZERO", "model_usage_entry", "num_turns", "result_data", "subagent_stats"]

SUBAGENT_STATS_ZERO: Mapping[str, Any] = {
    "spawned": 0, "requested": {"background": 0, "foreground": 0, "unset": 0}, "started_in_background": 0,
    "max_depth": 0, "spawned_by_subagents": 0, "completed": 0, "failed": 0,
    "killed": {"parent": 0, "user": 0, "system": 0}, "refused": {"depth_limit": 0, "concurrency_limit": 0, "budget": 0},
    "by_type": {}}
"""``subagent_stats`` of a query that started no subagent."""


def subagent_stats(steps: Sequence[Step]) -> dict[str, Any]:
    """``subagent_stats`` of a result, given the steps of its query up to it: each subagent started there, in the
    foreground (counted completed at once) or the background (completed once its notification came; recorded,
    2.1.332: 0 in the result of the turn that launched it, 1 in the notification's)."""
    starts = [s for s in steps if isinstance(s, SubagentStart)]
    stats = copy.deepcopy(dict(SUBAGENT_STATS_ZERO))
    if starts:
        background = sum(s.background for s in starts)
        stats.update({"spawned": len(starts), "max_depth": 1, "by_type": {"general-purpose": len(starts)},
                      "requested": {"background": background, "foreground": len(starts) - background, "unset": 0},
                      "started_in_background": background,
                      "completed": len(starts) - background + sum(isinstance(s, TaskNotification) for s in steps)})
    return stats


def model_usage_entry(model: str, window: int, max_output_tokens: int) -> dict[str, Any]:
    """An empty ``modelUsage`` entry for ``model``, with every key the CLI writes, in its order."""
    return {"inputTokens": 0, "outputTokens": 0, "cacheReadInputTokens": 0, "cacheCreationInputTokens": 0,
            "webSearchRequests": 0, "costUSD": 0.0, "contextWindow": window, "maxOutputTokens": max_output_tokens,
            "thinkingTokens": 0, "cacheCreationEphemeral5mInputTokens": 0, "cacheCreationEphemeral1hInputTokens": 0,
            "canonicalModel": model, "provider": "firstParty", "costBasis": "list"}


def num_turns(main_calls: int, main_tool_results: int, autocompactions: int) -> int:
    """The result's ``num_turns`` as the CLI counts it: nothing for a query the model never answered (a local
    command), else one turn, one more for each tool result the main chain sent back (each of a parallel tool use's
    results; a subagent's own tool results not) and one more for each autocompaction. Recorded: 3 for a call with
    two parallel tool uses then a call; 2 for a call before which the CLI compacted; 2 for an ``Agent`` call whose
    subagent ran a tool, then a call."""
    if main_calls == 0:
        return 0
    return 1 + main_tool_results + autocompactions


def result_data(*, session_id: str, uuid: str, usage: dict[str, Any], model_usage: dict[str, Any],
                since_last: dict[str, Any], total_cost: float, turns: int, text: str, stop_reason: str | None,
                local_command: str | None, index: int, subagents: Mapping[str, Any]) -> dict[str, Any]:
    """The ``result`` frame's data (``local_command``: the command the query ran, e.g. ``compact``, or None)."""
    answered = local_command is None
    usage = {"input_tokens": usage["input_tokens"], "cache_creation_input_tokens": usage["cache_creation_input_tokens"],
             "cache_read_input_tokens": usage["cache_read_input_tokens"], "output_tokens": usage["output_tokens"],
             "output_tokens_details": {"thinking_tokens": 0},
             "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": "standard",
             "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
             "inference_geo": "", "iterations": [], "speed": "standard", "fallback_credit": None}
    data: dict[str, Any] = {
        "type": "result", "subtype": "success", "is_error": False,
        "duration_ms": 120 * max(turns, 1), "duration_api_ms": 100 * turns,
        "num_turns": turns, "result": text, "stop_reason": stop_reason, "session_id": session_id,
        "total_cost_usd": total_cost, "usage": usage, "modelUsage": model_usage, "permission_denials": [],
    }
    if answered:
        data.update({"terminal_reason": "completed", "api_error_status": None, "ttft_ms": 75, "ttft_stream_ms": 74,
                     "time_to_request_ms": 62, "first_content_frame_ms": 74})
    else:
        data["local_command"] = local_command
    data.update({"fast_mode_state": "off", "fast_mode_disabled_reason": "sdk_opt_in_required",
                 "subagent_stats": dict(subagents), "safety_stops": 0, "queued_turn_count": 0,
                 "result_index": index, "model_usage_since_last_result": since_last, "uuid": uuid})
    return data
