"""Claude Code's statusline payload: the JSON the interactive CLI pipes to ``statusLine.command``, at each point.

The REPL runs the user's statusline command after each turn with a payload on stdin; every statusline tool
(ccstatusline, ccusage, ccline, cc-statusline...) reads it and, for what it lacks, the transcript at its
``transcript_path``. :func:`statusline_payloads` renders that payload at each observation point of a session (the
points of :func:`ctxsim.wire.render`, in the same order), computed as the bundled CLI computes it
(docs/explanation/wire.md, held to the real REPL by :mod:`ctxsim.live._statusline`):

- ``context_window`` from the last metered main-chain call since the last compaction (subagent calls never count):
  ``current_usage`` that call's ``input_tokens``, ``output_tokens``, ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``; ``total_input_tokens`` their prompt part (input + cache writes + cache reads);
  ``total_output_tokens`` its output; ``used_percentage`` ``round(total_input / window * 100)`` clamped to 0..100
  and ``remaining_percentage`` the rest; ``context_window_size`` the model's window;
- before any call: ``current_usage``, ``used_percentage`` and ``remaining_percentage`` null, totals 0;
- right after a compaction, until the next call, a gauge that says nothing true of the context then (which holds
  the system prompt, tools and the summary): ``null`` as before any call, as recorded from each CLI version
  (:data:`AFTER_COMPACTION`), or, with ``compaction="zero"``, the **all-zero** ``current_usage`` and 0% the
  research page reports; after ``/clear``, as before any call;
- ``session_id``, ``transcript_path``, ``cwd``, ``prompt_id`` (once a prompt was sent), ``model {id,
  display_name}``, ``workspace``, ``version``, ``output_style``, ``cost`` (cumulative, subagents and compaction
  summaries included; the durations are the rendering's own), ``exceeds_200k_tokens``, ``fast_mode`` and
  ``thinking``. The CLI's ``prompt_cache`` statistics are not rendered.

``with_context_window=False`` leaves ``context_window`` out, as CLIs did before they sent it: the payload every
tool's transcript fallback reads.
"""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable, Mapping
from pathlib import PurePosixPath
from typing import Any, Literal

from ..world import Call, Compaction, ConversationReset, Session
from ._stream_json import Renderer, cli_version_rendered
from ._transcript import DEFAULT_CWD, project_slug
from ._versions import version_key

__all__ = ["AFTER_COMPACTION", "after_compaction", "context_window", "display_name", "statusline_payloads"]

AfterCompaction = Literal["zero", "null"]

AFTER_COMPACTION: Mapping[str, AfterCompaction] = {
    "2.1.330": "null",
    "2.1.331": "null",
    "2.1.332": "null",
}
"""What the CLI's ``context_window`` said right after a compaction, by the version ``ctxsim record --statusline``
recorded it with (the recordings ship beside the captures, and the tests hold this table and the rendering to
them): ``null``, ``current_usage`` and the percentages null as before any call. ``zero``, an all-zero
``current_usage`` and 0%, is what the research measured from a 2.1.331 REPL (docs/explanation/shipped-trackers.md);
ctxsim's recording of that version under tmux did not reproduce it, so it is an option (``compaction="zero"``), not a
version's default. A release measured to differ is a new entry."""


def after_compaction(cli_version: str) -> AfterCompaction:
    """What CLI ``cli_version``'s payload says right after a compaction: :data:`AFTER_COMPACTION`'s entry for it,
    else for the nearest version measured below it, else for the oldest measured."""
    measured = sorted(AFTER_COMPACTION, key=version_key)
    below = [v for v in measured if version_key(v) <= version_key(cli_version)]
    return AFTER_COMPACTION[below[-1] if below else measured[0]]


_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def display_name(model: str) -> str:
    """The name the CLI shows for ``model``: ``claude-sonnet-4-5`` -> ``Sonnet 4.5``, a ``[1m]`` variant with
    ``(1M context)``; an id it cannot read, as it is."""
    match = re.fullmatch(r"claude-([a-z]+)-(\d+)(?:-(\d{1,2}))?(?:-\d{8})?(\[1m\])?", model)
    if match is None:
        return model
    family, major, minor, wide = match.groups()
    name = f"{family.capitalize()} {major}" + (f".{minor}" if minor else "")
    return name + (" (1M context)" if wide else "")


def context_window(usage: dict[str, int] | None, window: int) -> dict[str, Any]:
    """The payload's ``context_window`` for the ``current_usage`` ``usage`` (None: no metered call yet) of a
    ``window``-token context, as the CLI computes it."""
    if usage is None:
        return {"total_input_tokens": 0, "total_output_tokens": 0, "context_window_size": window,
                "current_usage": None, "used_percentage": None, "remaining_percentage": None}
    total = usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]
    used = min(100, max(0, _round_half_up(total / window * 100)))
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
    ``compaction`` is what ``context_window`` says right after a compaction (default: what that CLI version sends,
    :func:`after_compaction`).
    """
    version = cli_version_rendered(cli_version)
    compacted = compaction or after_compaction(version)
    prompt_ids = random.Random(f"ctxsim.wire._statusline:{session.seed}:{session.session_id}")
    prompt_id: str | None = None
    path_of = _path_of(session, transcript_path, cwd)
    renderer = Renderer(session, False, False, cwd, version)
    usage: dict[str, int] | None = None
    payloads: list[dict[str, Any]] = []
    elapsed_ms = 0
    api_ms = 0
    for index, query in enumerate(session.queries):
        if not query.prompt.startswith("/"):
            prompt_id = str(uuid.UUID(int=prompt_ids.getrandbits(128), version=4))
        for step, frames in renderer.walk(index, query):
            if isinstance(step, Call):
                api_ms += 150
                if step.is_main:
                    usage = {"input_tokens": session.reported_input(step), "output_tokens": step.output_tokens,
                             "cache_creation_input_tokens": step.cache_creation_input_tokens,
                             "cache_read_input_tokens": step.cache_read_input_tokens}
            elif isinstance(step, Compaction):
                usage = dict.fromkeys(_USAGE_KEYS, 0) if compacted == "zero" else None
            elif isinstance(step, ConversationReset):  # a new session: no call, no prompt yet
                usage, prompt_id = None, None
            elapsed_ms += 200 if step is not None else 0
            for frame in frames:
                if frame.observation is None:
                    continue
                sid = renderer.session_id
                payload: dict[str, Any] = {
                    "session_id": sid,
                    "transcript_path": path_of(sid),
                    "cwd": cwd,
                    **({"prompt_id": prompt_id} if prompt_id is not None else {}),
                    "model": {"id": session.model, "display_name": display_name(session.model)},
                    "workspace": {"current_dir": cwd, "project_dir": project_dir or cwd, "added_dirs": []},
                    "version": version,
                    "output_style": {"name": "default"},
                    "cost": {"total_cost_usd": renderer.total_cost, "total_duration_ms": elapsed_ms,
                             "total_api_duration_ms": api_ms, "total_lines_added": 0, "total_lines_removed": 0},
                }
                if with_context_window:
                    payload["context_window"] = context_window(usage, frame.observation.window)
                payload.update({"exceeds_200k_tokens": _exceeds(usage), "fast_mode": False,
                                "thinking": {"enabled": True}})
                payloads.append(payload)
    return payloads


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


def _exceeds(usage: dict[str, int] | None) -> bool:
    """Whether the last call's prompt passed 200,000 tokens (the CLI's long-context pricing mark)."""
    if usage is None:
        return False
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"] > 200_000
