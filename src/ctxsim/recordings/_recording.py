"""Recorded streams as scenarios: stream-json or a Claude Code transcript, played to the SDK, truth derived.

A recording is read once (:func:`read_recording`): every JSON line is checked, a transcript is converted to the
stream-json frames the CLI would have written (:func:`transcript_frame`), and every frame is parsed by the SDK's own
parser so a bad line is an error naming its line, not a crash mid-run. :meth:`Recording.scripts` then builds
fresh :class:`~ctxsim.wire.Script`\\ s for each run, with :class:`~ctxsim.wire.Observation`\\ s whose truth is
*derived* from the recording by the API's documented rules (docs/explanation/truth-band.md and wire.md), read
by :mod:`._truth`, which shares no code with the reference the recording judges:

- after each main-chain call (not a sidechain, no ``parent_tool_use_id``, not ``<synthetic>``, a usable usage;
  the lines of one message id are one call, a message id seen before with the same prompt is a replay): that
  call's ``input + cache_creation + cache_read`` (``input`` alone under ``world.usage: inclusive``) up to that plus
  its final output (a ``message_delta`` count, else the largest ``output_tokens`` its lines report); a call whose
  size no line tells is not knowable;
- after a ``compact_boundary`` with a post-compaction size: the CLI's own ``get_context_usage()`` figure where the
  recording carries it (a capture's ``context_usage`` line after the query), exactly; otherwise not knowable, with
  the band a tracker may answer: the summary plus what the session's first call shows of the system prefix (its
  cache read .. its whole prompt). Without a size the truth is unknown and no point is checked until the next
  main-chain call;
- after a ``conversation_reset`` or a ``system/init`` with a new session id: a new conversation, not knowable (only
  None passes) until its first call;
- at a subagent call and at a result: the main truth as it stands (when known).

The point of a call sits on the last frame of the call (its last per-block message, or a stream event after it).
Frames the SDK client keeps to itself (:func:`ctxsim.sdk.kept_by_client`: the ``session_state_changed`` frames
Claude Code writes for the SDK host) are played to the client but are never a point.
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..wire import Frame, Observation, Script, number_subagents
from ..world import MAX_SYSTEM_PREFIX, Truth
from ._files import MAX_DEPTH, MAX_LINES, MAX_RECORDING_BYTES, cut, deeper_than, read_bounded
from ._truth import SYNTHETIC, read_usage

__all__ = ["Recording", "RecordingError", "read_jsonl", "read_recording", "transcript_frame", "transcript_frames"]

FORMATS = ("auto", "stream-json", "transcript")
_DROPPED = frozenset({"control_request", "control_response", "control_cancel_request", "keep_alive"})
"""stream-json line types that belong to the control protocol, not to the recorded session."""
_AGENT_TOOLS = frozenset({"Task", "Agent"})
_SYNTHETIC = SYNTHETIC


class RecordingError(ValueError):
    """A recording that cannot be played; ``line`` is the 1-based line of the recording at fault (0: none)."""

    def __init__(self, line: int, message: str, *, last_line: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.last_line = last_line
        """The fault is on the file's last line (a file still being written ends in a cut-off line)."""


@dataclass
class Recording:
    """A recorded session: stream-json frames (converted from a transcript if need be), one list per query."""

    path: Path
    format: str
    """``stream-json`` or ``transcript``."""
    queries: list[list[tuple[int, dict[str, Any]]]] = field(default_factory=list)
    """Per query, ``(line in the recording, stream-json dict)`` of every frame, in order."""
    prompts: list[str] = field(default_factory=list)
    model: str | None = None
    """The model of the first main-chain call."""
    session_id: str = ""
    points: dict[str, int] = field(default_factory=dict)
    """The recording's line behind each observation point, by label (set by :meth:`scripts`)."""
    context_usage: dict[int, int] = field(default_factory=dict)
    """``totalTokens`` of the ``get_context_usage()`` the recording carries after a query, by query index (a CLI
    capture's ``{"context_usage": ..., "after_query": ...}`` lines): the CLI's own figure."""

    def scripts(self, window: int, usage: str = "additive") -> list[Script]:
        """Fresh scripts of the recording (each run may change them), with the derived truth at every point;
        ``usage`` is the provider's convention (``inclusive``: ``input_tokens`` is the whole prompt)."""
        scripts = [Script(i, prompt, [Frame(copy.deepcopy(d)) for _, d in frames])
                   for i, (prompt, frames) in enumerate(zip(self.prompts, self.queries))]
        deriver = _Deriver(window, inclusive=usage == "inclusive", context_usage=self.context_usage)
        self.points = deriver.run(scripts, [[line for line, _ in q] for q in self.queries])
        return scripts

    @property
    def main_calls(self) -> int:
        """How many main-chain calls with usage the recording holds."""
        return sum(1 for q in self.queries for _, d in q if _main_prompt(d) is not None)


# --- reading ----------------------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` for every non-blank line of the JSON-lines file at ``path``; raises
    :class:`RecordingError` naming the first line that is not a JSON object (line 0: the file is not UTF-8), that
    nests deeper than :data:`MAX_DEPTH`, or that passes :data:`MAX_LINES`. The file must be a regular file of at
    most :data:`~._files.MAX_RECORDING_BYTES` (``OSError`` otherwise: :class:`~._files.FileRefused`)."""
    data_bytes = read_bounded(path, MAX_RECORDING_BYTES)
    try:
        text = data_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordingError(0, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    del data_bytes
    lines: list[tuple[int, dict[str, Any]]] = []
    raws = text.splitlines()
    last = max((n for n, raw in enumerate(raws, 1) if raw.strip()), default=0)
    for number, raw in enumerate(raws, 1):
        if not raw.strip():
            continue
        if len(lines) >= MAX_LINES:
            raise RecordingError(number, f"more than {MAX_LINES:,} lines: ctxsim reads at most that many")
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise RecordingError(number, f"not a JSON line ({cut(str(exc))})", last_line=number == last) from None
        except RecursionError:
            raise RecordingError(number, f"nested deeper than {MAX_DEPTH} levels") from None
        if deeper_than(data, MAX_DEPTH):
            raise RecordingError(number, f"nested deeper than {MAX_DEPTH} levels")
        if not isinstance(data, dict):
            raise RecordingError(number, f"a line is a JSON object, got {type(data).__name__}")
        lines.append((number, data))
    return lines


def read_recording(path: Path, fmt: str = "auto") -> Recording:
    """Read and check the recording at ``path``; raises :class:`RecordingError` on the first bad line."""
    from ..sdk import parse_message

    lines = read_jsonl(path)
    said: list[tuple[int, int]] = []
    if lines and all("raw" in d or "context_usage" in d for _, d in lines):  # a CLI capture: {"raw": frame} lines
        lines, said = _unwrap_capture(lines)
    if fmt == "auto":
        fmt = "transcript" if any("isSidechain" in d or "parentUuid" in d for _, d in lines) else "stream-json"
    recording = Recording(path, fmt)
    frames = _from_transcript(lines) if fmt == "transcript" else [
        (n, d) for n, d in lines if d.get("type") not in _DROPPED]
    for number, data in frames:
        try:
            parse_message(data)
        except Exception as exc:  # the SDK's MessageParseError, or worse on odd shapes
            raise RecordingError(number, f"the SDK cannot parse this line: {exc}") from None
    _split(recording, frames)
    for line, total in said:  # the query that ended last before the line
        ended = [i for i, q in enumerate(recording.queries) if q and q[0][0] < line]
        if ended:
            recording.context_usage[ended[-1]] = total
    if not recording.main_calls:
        raise RecordingError(0, "no main-chain call with usage: nothing to check against (a subagent's own "
                                "transcript has only sidechain calls)")
    return recording


def _unwrap_capture(lines: list[tuple[int, dict[str, Any]]]) -> tuple[list[tuple[int, dict[str, Any]]],
                                                                        list[tuple[int, int]]]:
    """A capture's lines (``{"raw": frame}`` or ``{"context_usage": ..., "after_query": ...}``) as the frames and
    the ``(line, totalTokens)`` of each ``get_context_usage()`` answer."""
    frames: list[tuple[int, dict[str, Any]]] = []
    said: list[tuple[int, int]] = []
    for number, data in lines:
        if "raw" in data:
            if not isinstance(data["raw"], dict):
                raise RecordingError(number, "a capture's raw line is a JSON object")
            frames.append((number, data["raw"]))
            continue
        usage = data.get("context_usage")
        total = usage.get("totalTokens") if isinstance(usage, dict) else None
        if type(total) is not int or total < 0:
            raise RecordingError(number, "a context_usage line without a totalTokens count")
        said.append((number, total))
    return frames, said


def _split(recording: Recording, frames: list[tuple[int, dict[str, Any]]]) -> None:
    """Queries: a stream-json query ends with its ``result`` and the host-only ``idle`` that follows it (the
    session state the SDK client tracks, then drops); a transcript is one query."""
    from ..sdk import kept_by_client

    current: list[tuple[int, dict[str, Any]]] = []
    ended = False
    for number, data in frames:
        if ended and not (data.get("subtype") == "session_state_changed" and data.get("state") == "idle"
                          and kept_by_client(data)):
            recording.queries.append(current)
            current, ended = [], False
        current.append((number, data))
        if recording.model is None and _main_prompt(data) is not None:
            recording.model = data["message"].get("model")
        if not recording.session_id and isinstance(data.get("session_id"), str):
            recording.session_id = data["session_id"]
        if data.get("type") == "result" and recording.format == "stream-json":
            ended = True
    if current or not recording.queries:
        recording.queries.append(current)
    recording.prompts = [f"(recorded query {i + 1})" for i in range(len(recording.queries))]


# --- transcripts ------------------------------------------------------------------------------------------------


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def transcript_frame(line: dict[str, Any], parent: str | None) -> dict[str, Any] | None:
    """The stream-json frame the CLI writes for one transcript line, or None for lines it does not stream.

    ``parent`` is the ``parent_tool_use_id`` to give a sidechain line (transcripts record only
    ``isSidechain``).
    """
    kind = line.get("type")
    common = {"session_id": line.get("sessionId", ""), "uuid": line.get("uuid", "")}
    if kind in ("assistant", "user"):
        message = line.get("message")
        frame = {"type": kind, "message": message, "parent_tool_use_id": parent, **common}
        if kind == "assistant" and isinstance(line.get("requestId"), str):
            frame["request_id"] = line["requestId"]
        if kind == "user" and isinstance(line.get("toolUseResult"), dict):
            frame["tool_use_result"] = line["toolUseResult"]
        return frame
    if kind == "system" and line.get("subtype") == "compact_boundary" and not line.get("isSidechain"):
        meta = line.get("compactMetadata") or line.get("compact_metadata") or {}
        snake = {_snake(k): v for k, v in meta.items()} if isinstance(meta, dict) else {}
        return {"type": "system", "subtype": "compact_boundary", "compact_metadata": snake, **common}
    return None


def transcript_frames(lines: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """Transcript lines (``(line number, line)``) as the stream-json frames :func:`read_recording` plays, each
    with its line number (for ``ctxsim import``, which merges transcripts before playing them)."""
    return _from_transcript(lines)


def _from_transcript(lines: list[tuple[int, dict[str, Any]]]) -> list[tuple[int, dict[str, Any]]]:
    """Transcript lines as stream-json frames. A sidechain line's parent is the main chain's open ``Task``/
    ``Agent`` tool use (1.0.x transcripts write subagents inline), else ``sidechain:<agentId>``."""
    open_agents: list[str] = []
    out = []
    for number, line in lines:
        side = line.get("isSidechain") is True
        parent = None
        if side:
            parent = open_agents[-1] if open_agents else f"sidechain:{line.get('agentId') or 'unknown'}"
        frame = transcript_frame(line, parent)
        if frame is None:
            continue
        if not isinstance(frame.get("message", {}), dict):
            raise RecordingError(number, f"a {frame['type']} line without a message object")
        content = frame.get("message", {}).get("content")
        if not side and isinstance(content, list):
            for block in content:
                if not isinstance(block, dict):
                    continue
                if block.get("type") == "tool_use" and block.get("name") in _AGENT_TOOLS:
                    open_agents.append(str(block.get("id")))
                elif block.get("type") == "tool_result" and block.get("tool_use_id") in open_agents:
                    open_agents.remove(block["tool_use_id"])
        out.append((number, frame))
    return out


# --- the derived truth ------------------------------------------------------------------------------------------


def _main_prompt(data: dict[str, Any], inclusive: bool = False) -> int | None:
    """The prompt of a main-chain assistant frame with a usable usage, else None."""
    if data.get("type") != "assistant" or data.get("parent_tool_use_id") is not None:
        return None
    message = data.get("message")
    if not isinstance(message, dict) or message.get("model") == _SYNTHETIC:
        return None
    read = read_usage(message.get("usage"), inclusive=inclusive)
    return read.prompt if read.state == "counts" else None


def _all_zero(usage: Any) -> bool:
    """All-zero counts: the usage Claude Code puts on messages it makes up (errors, interrupts), no call at all."""
    return isinstance(usage, dict) and all(
        usage.get(k) == 0 for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def _output(usage: Any) -> int:
    value = usage.get("output_tokens") if isinstance(usage, dict) else None
    return value if type(value) is int and value >= 0 else 0


class _Deriver:
    """Walks the frames once, keeping the reference's state, and puts an observation on each point's frame."""

    def __init__(self, window: int, *, inclusive: bool = False, context_usage: dict[int, int] | None = None) -> None:
        self.window = window
        self.inclusive = inclusive
        self.context_usage = context_usage or {}
        """The CLI's ``get_context_usage()`` figure after a query, by query index."""
        self.index = 0
        self._last: Frame | None = None
        """The frame of the latest point placed."""

    def run(self, scripts: list[Script], lines: list[list[int]]) -> dict[str, int]:
        from ..sdk import kept_by_client

        outputs = self._final_outputs(scripts)
        readable = self._readable_ids(scripts, self.inclusive)
        session: str | None = None
        """The conversation's session id, as its ``init`` frames tell it."""
        points: dict[str, int] = {}
        truth: Truth | None = None
        first: tuple[int, int] | None = None
        """``(cache read, prompt)`` of the session's first main-chain call: the system prefix's bounds."""
        seen: set[tuple[Any, ...]] = set()
        """Every main-chain call so far, by ``(message id, prompt)``: the same pair again is a replay."""
        current: tuple[Any, ...] | None = None
        """The main-chain call the latest main-chain line belongs to."""
        for script, numbers in zip(scripts, lines):
            q = f"q{script.query_index + 1}"
            main = 0
            subs: dict[str, int] = {}
            # The open call: (index of its last frame so far, label, kind, group key).
            pending: tuple[int, str, str, tuple[Any, ...]] | None = None
            frames = script.frames
            for i, frame in enumerate(frames):
                data = frame.data
                if kept_by_client(data):
                    continue  # never yielded (session state): neither a point nor the end of a call
                kind = data.get("type")
                prompt = _main_prompt(data, self.inclusive)
                unreadable = prompt is None and self._unreadable_call(data, readable)
                if prompt is not None or unreadable:
                    ident = data["message"].get("id")
                    key = ident if isinstance(ident, str) and ident else None
                    group: tuple[Any, ...] = ("main", key, prompt)
                    if group != current and group in seen:
                        continue  # a replay of an earlier call changes nothing
                    if pending is None or pending[3] != group:
                        self._close(frames, numbers, pending, truth, points)
                        if group == current and self._reopen(frames, points):
                            main -= 1  # the same call's later lines, after its tool results: its point moves
                        main += 1
                        pending = (i, f"{q} call {main}", "call", group)
                    seen.add(group)
                    current = group
                    if prompt is None:  # a new call whose size the stream does not tell
                        truth = Truth(truth.prompt if truth else 0, 0, knowable=False,
                                      first_call=truth.first_call if truth else None)
                    else:
                        usage = data["message"].get("usage")
                        first = first or (read_usage(usage, inclusive=self.inclusive).cache_read, prompt)
                        truth = Truth(prompt, max(outputs.get(key or "", 0), _output(usage)), first_call=first)
                    pending = (i, *pending[1:])
                elif kind == "stream_event" and data.get("parent_tool_use_id") is None and pending is not None:
                    pending = (i, *pending[1:])
                elif kind == "assistant" and data.get("parent_tool_use_id") is not None:
                    message = data.get("message") or {}
                    parent = str(data["parent_tool_use_id"])
                    group = ("subagent", parent, message.get("id") if isinstance(message, dict) else None)
                    if pending is None or pending[3] != group:
                        self._close(frames, numbers, pending, truth, points)
                        subs[parent] = subs.get(parent, 0) + 1
                        pending = (i, f"{q} subagent call {subs[parent]}", "subagent", group)
                    pending = (i, *pending[1:])
                else:
                    self._close(frames, numbers, pending, truth, points)
                    pending = None
                    if kind == "system" and data.get("subtype") == "compact_boundary":
                        meta = data.get("compact_metadata")
                        post = meta.get("post_tokens") if isinstance(meta, dict) else None
                        truth = None
                        if type(post) is int and post >= 0:
                            said = self.context_usage.get(script.query_index)
                            last = not any(_main_prompt(f.data, self.inclusive) is not None for f in frames[i + 1:])
                            truth = _after_compaction(post, said if last else None, first)
                        current = None
                        self._point(frame, f"{q} compaction", "compaction", truth, points, numbers[i])
                    elif kind == "conversation_reset":  # a new conversation on the same system prefix
                        truth, current = _new_conversation("/clear (a conversation_reset) began a new "
                                                           "conversation"), None
                    elif kind == "system" and data.get("subtype") == "init":
                        ident = data.get("session_id")
                        if isinstance(ident, str) and ident:
                            if session is not None and ident != session:
                                truth, current = _new_conversation("a new session id began a new conversation"), None
                            session = ident
                    elif kind == "result":
                        self._point(frame, f"{q} result", "result", truth, points, numbers[i])
            self._close(frames, numbers, pending, truth, points)
            for old, new in (number_subagents(q, frames, list(subs)) if len(subs) > 1 else {}).items():
                points[new] = points.pop(old)  # a query of several subagents: each one's points numbered
        return points

    def _close(self, frames: list[Frame], numbers: list[int], pending: tuple[Any, ...] | None, truth: Truth | None,
               points: dict[str, int]) -> None:
        """Put the open call's point on its last frame."""
        if pending is not None:
            index, label, kind, _ = pending
            self._point(frames[index], label, kind, truth, points, numbers[index])

    def _point(self, frame: Frame, label: str, kind: str, truth: Truth | None, points: dict[str, int],
               line: int) -> None:
        if truth is None or frame.observation is not None:
            return
        self.index += 1
        frame.observation = Observation(self.index, label, kind, truth, self.window)
        points.setdefault(label, line)
        self._last = frame

    def _reopen(self, frames: list[Frame], points: dict[str, int]) -> bool:
        """Take back the point just placed on a call whose lines go on after its tool results (Claude Code writes
        a call's blocks one line each, the results of its parallel tool uses between them): its point moves to
        its last line. False where that point is not the latest placed."""
        last = self._last
        if last is None or last.observation is None or last.observation.index != self.index or last not in frames:
            return False
        del points[last.observation.label]
        last.observation = None
        self.index -= 1
        return True

    @staticmethod
    def _unreadable_call(data: dict[str, Any], readable: set[str]) -> bool:
        """A main-chain line of a call no line of which has a readable usage (not a made-up error message)."""
        if data.get("type") != "assistant" or data.get("parent_tool_use_id") is not None:
            return False
        message = data.get("message")
        if not isinstance(message, dict) or message.get("model") == _SYNTHETIC or _all_zero(message.get("usage")):
            return False
        ident = message.get("id")
        return not (isinstance(ident, str) and ident in readable)

    @staticmethod
    def _readable_ids(scripts: list[Script], inclusive: bool) -> set[str]:
        """The message ids of the main-chain calls some line of which has a readable usage."""
        return {f.data["message"].get("id") for s in scripts for f in s.frames
                if _main_prompt(f.data, inclusive) is not None and isinstance(f.data["message"].get("id"), str)}

    @staticmethod
    def _final_outputs(scripts: list[Script]) -> dict[str, int]:
        """The final output of each main-chain message id: a ``message_delta`` count, else the largest seen."""
        largest: dict[str, int] = {}
        final: dict[str, int] = {}
        current: str | None = None
        for script in scripts:
            for frame in script.frames:
                data = frame.data
                if data.get("type") == "assistant" and data.get("parent_tool_use_id") is None:
                    message = data.get("message") or {}
                    ident = message.get("id") if isinstance(message, dict) else None
                    if isinstance(ident, str):
                        current = ident
                        largest[ident] = max(largest.get(ident, 0), _output(message.get("usage")))
                elif data.get("type") == "stream_event" and data.get("parent_tool_use_id") is None:
                    event = data.get("event") or {}
                    if event.get("type") == "message_start" and isinstance(event.get("message"), dict):
                        current = event["message"].get("id")
                    elif event.get("type") == "message_delta" and current:
                        final[current] = _output(event.get("usage"))
        return {**largest, **final}


def _new_conversation(why: str) -> Truth:
    """The truth from a new conversation until its first call: the system prefix only, whose size no frame has
    told yet."""
    return Truth(0, 0, knowable=False, why=f"{why}; no call has shown its size yet")


def _after_compaction(post: int, said: int | None, first: tuple[int, int] | None) -> Truth:
    """The truth at a compaction whose boundary states ``post`` tokens (the summary alone).

    The context then also holds the system prompt and tools, which the stream shows only through the session's first
    main-chain call (``first``: its cache read, at least the cached prefix; its whole prompt, at most the prefix and
    the first user message): a tracker may answer anything from ``post`` plus the one to ``post`` plus the other.
    Where the recording carries the CLI's own ``get_context_usage()`` right after the compaction (``said``), that is
    the truth, exactly, and an estimate between it and the summary plus the first call's cache read (its whole
    prompt on a cold cache) still passes; otherwise the point is not knowable, and the band is what a tracker may
    answer there (or None).

    A first call that read more from the cache than a system prompt and tools take
    (:data:`~ctxsim.world.MAX_SYSTEM_PREFIX`: a resumed session, a transcript that begins mid-conversation) read
    the conversation too: its cache read is then no lower bound of the prefix, and the band starts at the summary
    alone."""
    if first is None:
        return Truth(said if said is not None else post, 0, knowable=said is not None,
                     why="no call before the compaction showed the system prompt and tools it keeps")
    cached, prompt = first
    resumed = cached > MAX_SYSTEM_PREFIX
    low, high = (post if resumed else post + cached), post + max(cached, prompt)
    if said is not None:  # estimates between the figure and the summary plus what the first call shows track it
        shown = post + (cached or prompt)
        return Truth(said, 0, first_call=first, estimated=(min(said, shown), max(said, shown)))
    why = ("the boundary states the summary's size only (compact_metadata.post_tokens); the system prompt and tools "
           "also in the context show only through the first call, as a band" + (
               f" (it read {cached:,} tokens from the cache: the stream began mid-conversation, so the prefix is "
               f"somewhere below that)" if resumed else ""))
    return Truth(low, high - low, knowable=False, unseen=(low, high), first_call=first, why=why)
