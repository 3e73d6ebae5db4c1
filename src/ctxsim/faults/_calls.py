"""Faults on the messages of API calls: duplicates, replays, partial records, stale outputs, synthetic and ids.

Each class is public through :mod:`ctxsim.faults`, where the catalogue is documented.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

from ..wire import Frame
from ._base import Fault, FaultStream
from ._units import SYNTHETIC_MODEL, USAGE_KEYS, Unit, is_count, prompt_of

__all__ = [
    "DuplicateBlocks",
    "MissingRequestIds",
    "RepeatedMessageDelta",
    "ReplayedMessages",
    "ReusedMessageIds",
    "StaleOutputTokens",
    "StreamingPartials",
    "SyntheticErrorMessages",
]


def _with_assistant(unit: Unit) -> bool:
    return bool(unit.assistant_frames())


def _insert(unit: Unit, before: dict[int, list[Frame]], after: dict[int, list[Frame]] | None = None) -> None:
    """Insert new frames before (and after) frames of ``unit``, by the original frame's ``id``."""
    frames: list[Frame] = []
    for frame in unit.frames:
        frames.extend(before.get(id(frame), ()))
        frames.append(frame)
        frames.extend((after or {}).get(id(frame), ()))
    unit.frames = frames


def _set_output(stream: FaultStream, frame: Frame, output: int, stop_reason: str | None) -> None:
    message = stream.message(frame)
    if message is None:
        return
    message["stop_reason"] = stop_reason
    if isinstance(message.get("usage"), dict):
        message["usage"]["output_tokens"] = output


def _before_results(stream: FaultStream, after: tuple[int, int]) -> list[tuple[int, int]]:
    """Where a frame can go right before a result, after position ``after``."""
    return [(si, ui) for si, ui, _ in stream.units("result") if (si, ui) > after]


# --- duplicates -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DuplicateBlocks(Fault):
    """Per-block messages written more than once, byte for byte (same uuid, ``message.id`` and usage).

    One assistant message per content block, each repeating the call's usage, and the same line seen again: published
    transcripts (marot/spotter, d-kimuson/claude-code-viewer; docs/explanation/wire.md), sirmalloc/ccstatusline#549 (180
    rows, 89 ids), jhlee0409/claude-code-history-viewer#283 (2,094 of 4,837 rows duplicates), steipete/CodexBar#647 (the
    same message in two files). The copies go right before their original. Keeps the truth.
    """

    name = "duplicate_blocks"
    source = ("marot/spotter and d-kimuson/claude-code-viewer transcripts; sirmalloc/ccstatusline#549; "
              "jhlee0409/claude-code-history-viewer#283; steipete/CodexBar#647")
    rate: float = 0.5
    """The share of calls with repeated blocks (at least one call)."""
    copies: int = 1
    """Extra copies of each repeated block."""

    bounds: ClassVar = {"copies": (1, 10)}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for _, _, unit in stream.pick(rng, stream.calls(where=_with_assistant), self.rate):
            chosen = stream.pick(rng, unit.assistant_frames(), 0.5)
            _insert(unit, {id(f): [stream.copy(f) for _ in range(self.copies)] for f in chosen})


@dataclass(frozen=True)
class ReplayedMessages(Fault):
    """A call's assistant messages emitted again as new messages: new uuids, same ``message.id`` and usage.

    Resume and subagent copies of earlier lines: danielmiessler/LifeOS#1894 (requestIds x2.10),
    juliantanx/aiusage#32 (32,724 records for 14,674), steipete/CodexBar#647 (per-file dedupe 3.08x), ccusage's
    note that sidechain logs replay parent messages. ``where="after"`` puts the copy right after its call;
    ``"later"`` right before a later result, once the context has moved on (a latest-line tracker takes the old
    value, a first-wins one is fine). Keeps the truth: a replay changes nothing.
    """

    name = "replayed_messages"
    source = "danielmiessler/LifeOS#1894; juliantanx/aiusage#32; steipete/CodexBar#647; Bugs in the wild"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    where: str = "later"
    """``after`` its call, or ``later`` (before a later result)."""

    choices: ClassVar = {"where": ("after", "later")}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        targets = stream.pick(rng, stream.calls(where=_with_assistant), self.rate)
        placed = []
        for n, (si, ui, unit) in enumerate(targets):
            copies = [stream.copy(f, rng) for f in unit.assistant_frames()]
            spots = _before_results(stream, (si, ui)) if self.where == "later" else []
            placed.append((rng.choice(spots) if spots else (si, ui + 1), n,
                           Unit("replay", copies, unit.message_id, unit.parent)))
        for (si, ui), _, replay in sorted(placed, key=lambda p: p[:2], reverse=True):
            stream.scripts[si].units.insert(ui, replay)  # replays at one spot keep their calls' order


# --- partial and stale records ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamingPartials(Fault):
    """Streaming placeholders written before the final record: first-wins dedupe keeps the stale copy.

    Before Claude Code 2.1.97 each block was first written as a streaming partial (``stop_reason: null``, the
    ``message_start`` placeholder output) and then finalised: anthropics/claude-code#22686, ryoppippi/ccusage#901
    and #797 (first-wins kept out 9 instead of 159), getagentseal/codeburn#201. Each per-block message of a main
    call gets ``partials`` earlier copies (new uuids) with a stale output (1..9) and no stop reason; the call's last
    message carries the final output and stop reason. Keeps the truth (every copy has the same prompt).
    """

    name = "streaming_partials"
    source = "anthropics/claude-code#22686; ryoppippi/ccusage#901, #797; getagentseal/codeburn#201"
    rate: float = 0.5
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    partials: int = 2
    """Stale copies written before each per-block message."""

    bounds: ClassVar = {"partials": (1, 10)}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        eligible = stream.calls(main_only=True, where=lambda u: _with_assistant(u) and u.output_tokens is not None)
        for _, _, unit in stream.pick(rng, eligible, self.rate):
            stale = rng.randint(1, 9)
            frames = unit.assistant_frames()
            for frame in frames:
                _set_output(stream, frame, stale, None)
            _insert(unit, {id(f): [stream.copy(f, rng) for _ in range(self.partials)] for f in frames})
            _set_output(stream, frames[-1], unit.output_tokens or 0, unit.stop_reason)


@dataclass(frozen=True)
class StaleOutputTokens(Fault):
    """Per-block ``output_tokens`` that stay stale (``stale``), or stay stale and end at the final count (``growing``).

    Published transcripts and stream-json (docs/explanation/wire.md): stream-json never corrects the placeholder
    (``out 6`` for a 13,956-character summary; per-message outs summing to 144 against a result's 5,381); on-disk
    transcripts correct it on the call's last line (``9,9,9 -> 243``, ``30,30,30,30 -> 285``). Main calls. Keeps the
    truth (only outputs change).
    """

    name = "stale_output_tokens"
    source = "marot/spotter transcripts; ryoppippi/ccusage#901"
    rate: float = 0.5
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    mode: str = "growing"
    """``stale`` (one small value on every block) or ``growing`` (stale, then the final count)."""

    choices: ClassVar = {"mode": ("stale", "growing")}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        eligible = stream.calls(main_only=True, where=lambda u: _with_assistant(u) and u.output_tokens is not None)
        for _, _, unit in stream.pick(rng, eligible, self.rate):
            stale = rng.randint(1, 9)
            frames = unit.assistant_frames()
            for frame in frames:
                _set_output(stream, frame, stale, None)
            if self.mode == "growing":
                _set_output(stream, frames[-1], max(unit.output_tokens or 0, stale), None)


@dataclass(frozen=True)
class RepeatedMessageDelta(Fault):
    """Several cumulative ``message_delta`` events for one call (with partial messages on).

    ``message_delta.usage.output_tokens`` is cumulative: assign it, never add it (anthropics/anthropic-sdk-typescript
    commit 6e78091); Claude Code 2.1.214 fixed double counting on streams that emit several cumulative deltas.
    ``with_prompt`` repeats the (cumulative) input and cache fields too, as server-tool streams do
    (langchain-ai/langchain#32518), for calls whose usage has the plain shape. The last delta carries the final
    count. Keeps the truth; changes nothing on streams without ``stream_event`` frames.
    """

    name = "repeated_message_delta"
    source = "anthropics/anthropic-sdk-typescript 6e78091; Claude Code 2.1.214 changelog; langchain-ai/langchain#32518"
    rate: float = 0.5
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    deltas: int = 3
    """How many ``message_delta`` events the call ends with."""
    with_prompt: bool = False
    """Whether the deltas repeat the call's input and cache counts."""

    bounds: ClassVar = {"deltas": (2, 10)}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        def eligible(unit: Unit) -> bool:
            deltas = unit.event_frames("message_delta")
            usage = deltas[-1].data["event"].get("usage") if deltas else None
            return isinstance(usage, dict) and is_count(usage.get("output_tokens"))

        for _, _, unit in stream.pick(rng, stream.calls(where=eligible), self.rate):
            delta = unit.event_frames("message_delta")[-1]
            final = delta.data["event"]["usage"]["output_tokens"]
            prompt = unit.first_usage() if self.with_prompt and unit.plain_usage() else None
            frames = [delta] + [stream.copy(delta, rng) for _ in range(self.deltas - 1)]
            for n, frame in enumerate(frames, 1):
                usage = stream.own(frame)["event"]["usage"]
                usage["output_tokens"] = final * n // self.deltas
                if prompt is not None:
                    usage.update({k: prompt[k] for k in USAGE_KEYS if k in prompt})
            _insert(unit, {}, {id(delta): frames[1:]})


# --- synthetic messages and ids ---------------------------------------------------------------------------------


_API_ERROR = 'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}'


def _zero_usage() -> dict[str, object]:
    return {"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0,
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0}, "service_tier": None,
            "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0}}


@dataclass(frozen=True)
class SyntheticErrorMessages(Fault):
    """Assistant messages Claude Code makes up on API errors: ``model: "<synthetic>"`` and all-zero usage.

    API errors, limits and interrupts append such a message (sirmalloc/ccstatusline#98, ai-driven-dev/framework#686,
    Bugs in the wild); its ``usage`` may also be None (claude-agent-sdk-python tests). One goes right before the
    result of chosen queries, with a new message id, so the result point judges a tracker that took it as the
    latest call. Keeps the truth.
    """

    name = "synthetic_errors"
    source = "sirmalloc/ccstatusline#98; ai-driven-dev/framework#686; docs/explanation/bugs-in-the-wild.md"
    rate: float = 0.3
    """The share of queries that end with one (at least one)."""
    usage: str = "zero"
    """``zero`` (every count 0) or ``none`` (``usage: null``)."""

    choices: ClassVar = {"usage": ("zero", "none")}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for si, ui in reversed(stream.pick(rng, _before_results(stream, (-1, -1)), self.rate)):
            mid = stream.new_uuid(rng)
            frame = stream.new({
                "type": "assistant",
                "message": {"id": mid, "type": "message", "role": "assistant", "model": SYNTHETIC_MODEL,
                            "content": [{"type": "text", "text": _API_ERROR}], "stop_reason": "stop_sequence",
                            "stop_sequence": "", "usage": _zero_usage() if self.usage == "zero" else None},
                "parent_tool_use_id": None, "session_id": stream.session_id(si), "uuid": stream.new_uuid(rng),
                "error": "server_error",
            })
            stream.scripts[si].units.insert(ui, Unit("synthetic", [frame], mid))


@dataclass(frozen=True)
class ReusedMessageIds(Fault):
    """Distinct main calls that carry the same ``message.id`` (each keeps its own request id and usage).

    Some gateways and proxies reuse message ids across distinct calls (Bugs in the wild; ccusage keys on
    ``message.id:requestId`` for this reason). ``reuse="previous"`` gives a call the id of the main call before
    it; ``"first"`` the id of the session's first main call; never between two calls with the same prompt (then
    nothing but the request id could tell them from a replay). Keeps the truth: the calls still differ in prompt.
    Real on the SDK stream and in the transcript rows; the statusline payload carries no message id (its keys as
    Claude Code 2.1.330-2.1.332 pipe it), so it is the same with or without.
    """

    name = "reused_message_ids"
    source = "Bugs in the wild (proxies reuse message.id); ryoppippi/ccusage (message.id:requestId key)"
    rate: float = 0.3
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    reuse: str = "previous"
    """``previous`` or ``first``."""

    choices: ClassVar = {"reuse": ("previous", "first")}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        calls = [u for _, _, u in stream.calls(main_only=True) if u.message_id is not None]
        ids = [u.message_id for u in calls]
        prompts: dict[str | None, set[int | None]] = {}
        for unit in calls:
            prompts.setdefault(unit.message_id, set()).add(prompt_of(unit.first_usage()))
        for n in stream.pick(rng, list(range(1, len(calls))), self.rate):
            reused = ids[n - 1] if self.reuse == "previous" else ids[0]
            prompt = prompt_of(calls[n].first_usage())
            if prompt in prompts[reused]:
                continue  # the same id and prompt would make it a replay: nothing could tell them apart
            prompts[reused].add(prompt)
            for frame in (f for u in (calls[n], *calls[n].copies) for f in u.usage_frames()):
                message = stream.message(frame)
                if message is not None:
                    message["id"] = reused
            calls[n].message_id = reused


@dataclass(frozen=True)
class MissingRequestIds(Fault):
    """Assistant messages without a request id (``absent``) or with an empty one (``empty``).

    Third-party gateways and some subagent/thinking paths send none (ryoppippi/ccusage#797, #985; tokscale#563
    on Claude Code 2.1.63); AntCC sends ``""`` (ccusage#976, where dropping such rows undercounted 2.3x). Keeps the
    truth.
    """

    name = "missing_request_ids"
    source = "ryoppippi/ccusage#797, #985, #976; tokscale#563"
    rate: float = 0.5
    """The share of the places it can act on that it acts on (at least one, when there is any)."""
    mode: str = "absent"
    """``absent`` or ``empty``."""

    choices: ClassVar = {"mode": ("absent", "empty")}

    def transform(self, stream: FaultStream, rng: random.Random) -> None:
        for _, _, unit in stream.pick(rng, stream.calls(where=_with_assistant), self.rate):
            for frame in (f for u in (unit, *unit.copies) for f in u.assistant_frames()):
                data = stream.own(frame)
                if self.mode == "absent":
                    data.pop("request_id", None)
                else:
                    data["request_id"] = ""
