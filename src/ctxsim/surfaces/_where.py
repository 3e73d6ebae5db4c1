"""Where each fault is real: on the SDK stream, in the transcript files, or in the statusline payload.

Claude Code shows a session on three surfaces, and trackers read different ones: an agent's tracker reads the SDK
stream (the messages ``query()``/``ClaudeSDKClient`` yield, parsed from the CLI's stream-json), a statusline
command reads the payload Claude Code pipes to it and the transcript files under ``~/.claude/projects``. A failure
seen in the wild is real on the surfaces it was reported from, and a tracker is judged only on faults its input can
carry (:func:`judged_on`): an SDK-stream tracker is never failed for a replay that only transcript files have.

:data:`FAULT_SURFACES` says, for every fault (:data:`ctxsim.faults.REGISTRY` and the transcript faults), on which
surfaces it is real and where that is reported; a fault of the API's own usage (a gateway's, a model's) is real on
all three.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..faults import COUNTERPARTS, REGISTRY, TRANSCRIPT_REGISTRY
from ._payload import PAYLOAD_FORMS

__all__ = ["FAULT_SURFACES", "SURFACES", "Surfaces", "carried_on", "judged_on", "surfaces_of"]

SURFACES: Mapping[str, str] = {
    "sdk": "the SDK stream",
    "transcript": "the transcript files",
    "statusline": "the statusline payload",
}
"""The surfaces Claude Code shows a session on, by name, as reports say them."""

_ALL = frozenset(SURFACES)
_API = "the API's own usage (what a gateway or a model reports), which every surface shows"


@dataclass(frozen=True)
class Surfaces:
    """Where one fault is real, and the reports that say so."""

    names: frozenset[str]
    source: str

    def shown(self) -> str:
        """``the SDK stream and the transcript files``."""
        names = [SURFACES[n] for n in SURFACES if n in self.names]
        return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _on(*names: str, source: str) -> Surfaces:
    return Surfaces(frozenset(names) if names else _ALL, source)


FAULT_SURFACES: Mapping[str, Surfaces] = {
    "duplicate_blocks": _on("transcript", source="JSONL transcripts repeat a call's per-block rows "
                            "(claude-code-history-viewer#283: 2,094 of 4,837 rows; ccstatusline#549)"),
    "replayed_messages": _on("transcript", source="resume copies a session's lines into a new file with the same "
                             "message ids (aiusage#32, LifeOS#1894: 2.10x), subagent lines appear in two files "
                             "(CodexBar#647); no report shows the SDK stream replaying a message"),
    "streaming_partials": _on("transcript", source="before Claude Code 2.1.97 per-block transcript rows carried the "
                              "streaming placeholder (claude-code#22686; ccusage#901, #797)"),
    "stale_output_tokens": _on("sdk", "transcript", source="the SDK docs: a step's output_tokens is a placeholder "
                               "until the result or message_delta; transcript rows before 2.1.97 (ccusage#901)"),
    "repeated_message_delta": _on("sdk", source="message_delta stream events, which only the SDK stream carries "
                                  "(anthropic-sdk-typescript 6e78091; Claude Code 2.1.214)"),
    "synthetic_errors": _on("sdk", "transcript", source="API errors and interrupts are <synthetic> assistant "
                            "messages on the stream and rows in the file (ccstatusline#98, framework#686)"),
    "reused_message_ids": _on("sdk", "transcript", source="proxies reuse message ids (Bugs in the wild; ccusage keys "
                              "on message.id:requestId), which the stream and the rows carry; the statusline payload "
                              "has no message id (its keys in the Claude Code 2.1.330-2.1.332 captures)"),
    "missing_request_ids": _on("transcript", source="transcript rows without requestId (ccusage#797, #985, #976; "
                               "tokscale#563); the SDK's messages have no request id to miss"),
    "cache_read_drop": _on(source=f"{_API}: a cache miss (claude-code#42338, #94177; crush#3841)"),
    "nested_cache_creation": _on(source=f"{_API}: cache writes only in usage.cache_creation (Claude Code 2.1.152)"),
    "uncached_gateway_usage": _on(source=f"{_API}: a gateway without cache fields (ollama#17130)"),
    "usage_iterations": _on(source=f"{_API}: usage.iterations (claude-code-statusline#9, claude-hud#666)"),
    "missing_usage": _on("sdk", "transcript", source="AssistantMessage.usage is optional in the SDK; usage not "
                         "tracked on the non-streaming fallback (Claude Code 2.1.77); ccusage#797"),
    "garbage_values": _on(source=f"{_API}: gateways reporting other types (omlx#1487, ollama#17130, aider#5516)"),
    "interleaved_subagents": _on("sdk", "transcript", source="subagent messages arrive between main-chain ones on "
                                 "the stream, and older Claude Code interleaved them in the main file (hapi#1256, "
                                 "ccstatusline#70)"),
    "missing_result": _on("sdk", source="a query without its ResultMessage (claude-agent-sdk-typescript#427, "
                          "claude-agent-sdk-python#277); results are SDK-stream messages"),
    "zeroed_error_result": _on("sdk", source="an error_during_execution ResultMessage with zeroed usage (the SDK's "
                               "cost-tracking docs)"),
    "compaction_metadata": _on("sdk", "transcript", source="compact_boundary without post_tokens in older versions, "
                               "on the stream and in the file (claude-code#72600; ccstatusline#524)"),
    "inserted_compaction": _on("sdk", "transcript", source="a compact_boundary where the session compacts "
                               "(ccstatusline#524, openclaw#72140, mux#2303)"),
    "model_switch": _on(source="a /model switch changes the model and window every surface shows (claude-code#76751, "
                        "LifeOS#1358, abtop#109)"),
    "wrong_context_window": _on("sdk", "statusline", source="the result's modelUsage and the payload's "
                                "context_window_size report 200,000 on a 1M session (claude-code#76751; Claude Code "
                                "2.1.208, 2.1.117)"),
    "truncated_stream": _on("sdk", source="the SDK stream stops part-way (claude-agent-sdk-typescript#427, "
                            "claude-code#22686)"),
    "interleaved_sidechains": _on("transcript", source="older Claude Code wrote subagent rows into the main file "
                                  "(hapi#1256, ccstatusline#70)"),
    "replayed_rows": _on("transcript", source="resumed sessions repeat rows in a new file (LifeOS#1894, "
                         "aiusage#32)"),
    "synthetic_error_rows": _on("transcript", source="<synthetic> error rows (ccstatusline#98, framework#686)"),
    "compaction_without_post_tokens": _on("transcript", source="compactMetadata without postTokens "
                                          "(claude-code#72600, ccstatusline#524)"),
    "half_written_row": _on("transcript", source="a JSONL file read while Claude Code appends to it: a torn last row"),
}
"""Every fault's surfaces and source, by fault name."""


def surfaces_of(names: Iterable[str]) -> frozenset[str]:
    """Where a scenario with the faults ``names`` is real: the surfaces every one of them is real on (all three
    without faults)."""
    out = _ALL
    for name in names:
        out &= FAULT_SURFACES[name].names
    return out


def judged_on(names: Iterable[str], reads: frozenset[str]) -> str | None:
    """Why a tracker whose input is the surfaces ``reads`` is not judged on a stream with the faults ``names``
    (the first fault none of those surfaces carries, where it is real and the source), or None when it is."""
    for name in names:
        where = FAULT_SURFACES[name]
        if not where.names & reads:
            return (f"fault {name} is real only on {where.shown()} ({where.source}), and the tracker reads "
                    f"{' and '.join(SURFACES[r] for r in SURFACES if r in reads)}")
    return None


def carried_on(name: str) -> frozenset[str]:
    """The surfaces (:data:`SURFACES`) fault ``name`` is real on and that ctxsim writes it into: the SDK stream for a
    stream fault, the transcript files for a transcript fault or a stream fault with a transcript form
    (:func:`ctxsim.faults.apply_transcript`), the payload for one of :data:`PAYLOAD_FORMS`. A tracker reading none
    of them cannot meet the fault: its input is the same with or without it."""
    written = ({"sdk"} if name in REGISTRY else set()) | (
        {"transcript"} if name in TRANSCRIPT_REGISTRY or name in COUNTERPARTS else set()) | (
        {"statusline"} if name in PAYLOAD_FORMS else set())
    return FAULT_SURFACES[name].names & frozenset(written)
