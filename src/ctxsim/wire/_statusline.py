"""Claude Code's statusline payload: the JSON the interactive CLI pipes to ``statusLine.command``, at each point.

The REPL runs the user's statusline command after each turn with a payload on stdin; every statusline tool
(ccstatusline, ccusage, ccline, cc-statusline...) reads it and, for what it lacks, the transcript at its
``transcript_path``. :func:`statusline_payloads` renders that payload at each observation point of a session (the
points of :func:`ctxsim.wire.render`, in the same order), computed as the bundled CLI computes it
(its own functions, read from the bundle; held to the real REPL by :mod:`ctxsim.lab`):

- ``context_window`` from the last metered main-chain call since the last compaction (subagent calls never count):
  ``current_usage`` that call's ``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``; ``total_input_tokens`` their prompt part (input + cache writes + cache reads);
  ``total_output_tokens`` its output; ``used_percentage`` ``round(total_input / window * 100)`` clamped to 0..100
  and ``remaining_percentage`` the rest, where the window is the one the release rendered counts them against
  (:meth:`ctxsim.world.ClaudeSettings.percent_window`: the autocompact window, where rule
  ``statusline-percent-of-autocompact-window`` holds and one is set with auto-compact on); ``context_window_size``
  the model's window;
- before any call (the REPL sends two such payloads at start): ``current_usage``, ``used_percentage`` and
  ``remaining_percentage`` null, totals 0;
- right after a compaction, until the next call: an **all-zero** ``current_usage`` and 0% when the compaction
  kept a trailing segment, ``null`` as before any call when it kept none (:func:`after_compaction`: the world's
  :func:`~ctxsim.world.keeps_segment`, recorded from every CLI version); after ``/clear``, as before any call;
- ``exceeds_200k_tokens``: input + cache writes + cache reads + output over 200,000 (:func:`exceeds_200k_tokens`);
- ``prompt_cache`` from the world's calls (:mod:`._prompt_cache`), absent before the conversation's first request;
- ``prompt_id``: a new one for each prompt, for ``/compact`` and for ``/model``, kept through another slash
  command, none after ``/clear`` until the next prompt; after a background subagent's notification, the id of the
  turn it opens;
- ``session_id``, ``transcript_path``, ``cwd``, ``model {id, display_name}``, ``workspace``, ``version``,
  ``output_style``, ``cost`` (cumulative, subagents, compaction summaries and the session-title requests of rule
  ``repl-session-title`` included; the durations are the rendering's own), ``fast_mode`` (false) and
  ``thinking`` (enabled). The REPL recordings of every recorded release (an API key, no git worktree, Sonnet 4.5)
  carry no ``effort``, ``rate_limits`` (claude.ai subscribers only) or
  ``workspace.git_worktree`` (inside a git worktree only), and neither does the rendering.

``with_context_window=False`` leaves ``context_window`` out, as CLIs did before they sent it: the payload every
tool's transcript fallback reads.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any, Literal

from ..world import Call, Compaction, ConversationReset, Session, TaskNotification, display_name, keeps_segment
from ._prompt_cache import PromptCacheStats
from ._prompt_ids import gets_prompt_id, notification_prompt_id, prompt_id
from ._stream_json import Renderer, rendered_version
from ._titles import title_calls
from ._transcript import DEFAULT_CWD, project_slug, session_start

__all__ = ["AfterCompaction", "after_compaction", "context_window", "display_name", "exceeds_200k_tokens",
           "startup_payload", "statusline_payloads"]

AfterCompaction = Literal["zero", "null"]
"""What ``context_window`` says right after a compaction: ``zero``, an all-zero ``current_usage`` and 0%; ``null``,
``current_usage`` and the percentages null as before any call."""


def after_compaction(compaction: Compaction, calls_before: int,
                     forced: AfterCompaction | None = None) -> dict[str, int] | None:
    """``current_usage`` right after ``compaction``, ``calls_before`` main-chain calls after the conversation began
    or was last compacted: all zeros when the compaction keeps a trailing segment (the CLI zeroes the usage of the
    kept reply, and ``current_usage`` comes from the last metered message), None when it keeps none
    (:func:`~ctxsim.world.keeps_segment`), as every REPL recording of Claude Code 2.1.330-2.1.332 shows (one call
    then ``/compact``: null; two or three prompts, a tool round, autocompact after two calls: zeros). ``forced``
    says it instead, for every compaction."""
    kept = keeps_segment(compaction, calls_before) if forced is None else forced == "zero"
    return dict.fromkeys(_USAGE_KEYS, 0) if kept else None


_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _prompt(usage: Mapping[str, int]) -> int:
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]


def context_window(usage: dict[str, int] | None, window: int, percent_of: int | None = None) -> dict[str, Any]:
    """The payload's ``context_window`` for the ``current_usage`` ``usage`` (None: no metered call yet) of a
    ``window``-token context, as the CLI computes it; the percentages count against ``percent_of`` (default
    ``window``: see :meth:`ctxsim.world.ClaudeSettings.percent_window`)."""
    if usage is None:
        return {"total_input_tokens": 0, "total_output_tokens": 0, "context_window_size": window,
                "current_usage": None, "used_percentage": None, "remaining_percentage": None}
    total = _prompt(usage)
    used = min(100, max(0, _round_half_up(total / (percent_of or window) * 100)))
    return {"total_input_tokens": total, "total_output_tokens": usage["output_tokens"],
            "context_window_size": window, "current_usage": dict(usage), "used_percentage": used,
            "remaining_percentage": 100 - used}


def _round_half_up(value: float) -> int:
    """JavaScript's ``Math.round`` (halves go up), not Python's banker's rounding."""
    return int(value // 1 + (1 if value % 1 >= 0.5 else 0))


def statusline_payloads(session: Session, *, transcript_path: str | Callable[[str], str] | None = None,
                        cli_version: str | None = None, with_context_window: bool = True, cwd: str = DEFAULT_CWD,
                        project_dir: str | None = None,
                        compaction: AfterCompaction | None = None) -> list[dict[str, Any]]:
    """The statusline payload at each observation point of ``session``, in order (one per point of
    :func:`ctxsim.wire.render`).

    ``transcript_path`` is the payload's ``transcript_path``: a path (of the session's first transcript file; after
    a ``/clear`` the new session's file beside it), or a function of the session id in force; default: where the
    CLI would write it under ``~/.claude/projects``. ``cli_version`` the ``version`` (default: the CLI bundled in
    the installed ``claude-agent-sdk``, :func:`~ctxsim.wire.cli_version_rendered`). ``with_context_window=False``
    leaves ``context_window`` out. ``cwd`` and ``project_dir`` (default ``cwd``) fill ``cwd`` and ``workspace``.
    ``compaction`` forces what ``context_window`` says right after every compaction (default: what the world
    says, :func:`after_compaction`).
    """
    version = rendered_version(session, cli_version)
    current_prompt: str | None = None
    path_of = _path_of(session, transcript_path, cwd)
    renderer = Renderer(session, False, False, cwd, version)
    usage: dict[str, int] | None = None
    payloads: list[dict[str, Any]] = []
    start = session_start(session).timestamp()
    elapsed_ms = 0
    api_ms = 0
    cache = PromptCacheStats()
    calls = 0  # main-chain calls since the conversation began or was compacted
    titles = title_calls(session, version)
    for index, query in enumerate(session.queries):
        if gets_prompt_id(query.prompt):
            current_prompt = prompt_id(session, index)
        for step, frames in renderer.walk(index, query):
            now = start + elapsed_ms / 1000
            if isinstance(step, Call):
                api_ms += 150
                if step.is_main:
                    title = titles.pop(index, None)
                    if title is not None:  # the session title the prompt asked for, before its first call
                        renderer.add_model_usage(title)
                    usage = {"input_tokens": session.reported_input(step), "output_tokens": step.output_tokens,
                             "cache_creation_input_tokens": step.cache_creation_input_tokens,
                             "cache_read_input_tokens": step.cache_read_input_tokens}
                    cache.call(step.cache_creation_input_tokens, step.cache_read_input_tokens, step.prompt, now)
                    calls += 1
            elif isinstance(step, Compaction):
                usage = after_compaction(step, calls, compaction)
                cache.request(now)
                cache.compacted()
                calls = 0
            elif isinstance(step, TaskNotification):  # the turn it opens has a prompt id of its own
                current_prompt = notification_prompt_id(session, step.task_id)
            elif isinstance(step, ConversationReset):  # a new session: no call, no prompt yet
                usage, current_prompt, cache, calls = None, None, PromptCacheStats(), 0
            elapsed_ms += 200 if step is not None else 0
            for frame in frames:
                if frame.observation is None:
                    continue
                sid = renderer.session_id
                payload = _head(renderer.model, sid, path_of(sid), cwd, project_dir or cwd, version, current_prompt,
                                {"total_cost_usd": renderer.total_cost, "total_duration_ms": elapsed_ms,
                                 "total_api_duration_ms": api_ms, "total_lines_added": 0, "total_lines_removed": 0})
                if with_context_window:
                    window = frame.observation.window
                    payload["context_window"] = context_window(usage, window, session.settings.percent_window(
                        window, auto_compact_window=session.auto_compact_window, cli_version=version))
                payload["exceeds_200k_tokens"] = exceeds_200k_tokens(usage)
                cold = None if usage is None or not any(usage.values()) else _prompt(usage)
                stats = cache.payload(start + elapsed_ms / 1000, cold)
                if stats is not None:
                    payload["prompt_cache"] = stats
                payload.update({"fast_mode": False, "thinking": {"enabled": True}})
                payloads.append(payload)
    return payloads


def _head(model: str, session_id: str, transcript_path: str, cwd: str, project_dir: str, version: str,
          prompt_id: str | None, cost: dict[str, Any]) -> dict[str, Any]:
    """A payload's keys before ``context_window``, in the CLI's order."""
    return {"session_id": session_id, "transcript_path": transcript_path, "cwd": cwd,
            **({"prompt_id": prompt_id} if prompt_id is not None else {}),
            "model": {"id": model, "display_name": display_name(model)},
            "workspace": {"current_dir": cwd, "project_dir": project_dir, "added_dirs": []}, "version": version,
            "output_style": {"name": "default"}, "cost": cost}


def startup_payload(session: Session, *, transcript_path: str | Callable[[str], str] | None = None,
                    cli_version: str | None = None, cwd: str = DEFAULT_CWD,
                    project_dir: str | None = None) -> dict[str, Any]:
    """The payload the REPL sends before the first prompt (twice, as it starts; no observation point of the
    session's is there): no ``prompt_id`` and no ``prompt_cache``, a null ``context_window`` of the model's window,
    no cost. The arguments are :func:`statusline_payloads`'."""
    version = rendered_version(session, cli_version)
    sid = session.session_id
    payload = _head(session.model, sid, _path_of(session, transcript_path, cwd)(sid), cwd, project_dir or cwd,
                    version, None, {"total_cost_usd": 0, "total_duration_ms": 0, "total_api_duration_ms": 0,
                                    "total_lines_added": 0, "total_lines_removed": 0})
    payload.update({"context_window": context_window(None, session.window), "exceeds_200k_tokens": False,
                    "fast_mode": False, "thinking": {"enabled": True}})
    return payload


def _path_of(session: Session, transcript_path: str | Callable[[str], str] | None,
             cwd: str) -> Callable[[str], str]:
    """The payload's ``transcript_path`` as a function of the session id in force."""
    if callable(transcript_path):
        return transcript_path
    first = PurePosixPath(transcript_path or f"/home/dev/.claude/projects/{project_slug(cwd)}/"
                                              f"{session.session_id}.jsonl")

    def path_of(session_id: str) -> str:
        return str(first if session_id == session.session_id else first.with_name(f"{session_id}.jsonl"))

    return path_of


def exceeds_200k_tokens(usage: Mapping[str, int] | None) -> bool:
    """The payload's ``exceeds_200k_tokens`` for ``current_usage`` ``usage``: whether input + cache writes + cache
    reads + **output** passed 200,000 tokens, as the CLI's own function adds them (read from the 2.1.331 bundle;
    the long-context pricing mark). False with no usage."""
    if usage is None:
        return False
    return sum(usage[k] for k in _USAGE_KEYS) > 200_000
