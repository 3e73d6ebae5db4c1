"""The differences between the in-process fake and the real CLI that the fidelity suite knows of, each with why.
A test fails on any other difference, and on a known one that no longer occurs (then delete it here).

None today: the four the suite found (the summary call counted in modelUsage and the cost, the auto-compact window
apart from the model's, the context after /clear, /context's thinking tail) are modelled by the world and the
transport (Compaction.summary, Session.auto_compact_window, ConversationReset.context_tokens, wire.thinking_tail).
Nor in the hook calls: where the in-process order or inputs differed from CLI 2.1.330 (UserPromptSubmit for /compact
and /clear, the compaction's SubagentStop, the input keys, a subagent's agent_type on its tool hooks, a PreToolUse
denial's text, permission prompts for read-only tools), ctxsim.sdk._hooks now does what the CLI does."""

from __future__ import annotations

from collections.abc import Sequence

from ctxsim.lab._projection import Difference

KNOWN: dict[str, dict[tuple[int, str], str]] = {
    "several-queries": {},
    "partial-messages": {},
    "parallel-tools": {},
    "subagent": {},
    "background-subagent": {},
    "compact": {},
    "autocompact": {},
    "autocompact-midturn": {},
    "autocompact-refused-summary": {},
    "clear": {},
    "hook-deny": {},
    "permissions": {},
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
