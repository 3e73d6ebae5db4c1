"""The differences between the in-process fake and the real CLI that the conformance suite knows of, each with the
change to the world or the transport that removes it (the lead's area). A test fails on any other difference, and
on a known one that no longer occurs (then delete it here)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxsim.live.projection import Difference

SUMMARY_CALL = ("the compaction summary request's usage counts in the result's modelUsage (cumulative) and "
                "total_cost_usd, in no other frame; the world's Compaction carries no summary call")
AUTOCOMPACT_WINDOW = ("with CLAUDE_CODE_AUTO_COMPACT_WINDOW=100000 the CLI's maxTokens/rawMaxTokens/threshold use "
                      "that window while modelUsage.contextWindow stays the model's 200,000; the world has one window")
CLEAR_CONTEXT = ("after /clear the CLI's context usage is its fresh-conversation estimate plus the /clear command's "
                 "own messages (+118 tokens); the world says the baseline")
THINKING_TAIL = ("after a call whose first block is thinking, get_context_usage adds a chars/4 estimate of the "
                 "call's later blocks to its prompt; FakeTransport answers the prompt alone")

MU = "model_usage[claude-sonnet-4-5]."
_SUMMARY_FIELDS = (MU + "inputTokens", MU + "outputTokens", MU + "cacheReadInputTokens",
                   MU + "cacheCreationInputTokens", "total_cost_usd")

KNOWN: dict[str, dict[tuple[int, str], str]] = {
    "several-queries": {(3, "totalTokens"): THINKING_TAIL},
    "partial-messages": {},
    "subagent": {},
    "compact": {(step, f): SUMMARY_CALL for step in (3, 4) for f in _SUMMARY_FIELDS},
    "autocompact": {**{(step, MU + "contextWindow"): AUTOCOMPACT_WINDOW for step in (1, 2, 3)},
                    **{(3, f): SUMMARY_CALL for f in _SUMMARY_FIELDS}},
    "autocompact-midturn": {**{(step, MU + "contextWindow"): AUTOCOMPACT_WINDOW for step in (1, 2)},
                            **{(2, f): SUMMARY_CALL for f in _SUMMARY_FIELDS}},
    "clear": {(2, "totalTokens"): CLEAR_CONTEXT},
}
"""Per scripted session: ``(step, field)`` -> why it differs."""


def unexplained(name: str, differences: Sequence[Difference]) -> str:
    """"" when ``differences`` are exactly the known ones of session ``name``; else what is new or gone."""
    known = KNOWN[name]
    new = [str(d) for d in differences if (d.step, d.field) not in known]
    seen = {(d.step, d.field) for d in differences}
    gone = [f"step {s} {f} ({why[:40]}...)" for (s, f), why in known.items() if (s, f) not in seen]
    lines = []
    if new:
        lines += [f"{len(new)} differing field(s) of session {name!r} that are not known:", *new]
    if gone:
        lines += [f"known differences of session {name!r} that no longer occur (delete them from live_known.py):",
                  *gone]
    return "\n".join(lines)
