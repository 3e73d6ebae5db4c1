"""What changed between the Claude Code releases ctxsim recorded: each rule with the releases it holds for.

Claude Code ships several times a week, and some releases change what a tracker reads. Every rendering rule that
differs between releases is a :class:`Rule` of :data:`RULES`, read from the recordings (``ctxsim record``: the
captures ship with ctxsim, one directory per version), never a constant: it holds from ``since`` (the first recorded
release that shows it) up to, not including, ``until``. A release between two recorded ones that nobody recorded
is taken to behave as the newer one (a change is dated by the first recording that shows it), and a release newer
than every recording as the newest (``ctxsim fidelity`` says where that is wrong).

A session renders as the release it names (:attr:`~ctxsim.world.Session.cli`: a version, or a range such as
``>=2.1.337``), else as the CLI in use; :func:`ctxsim.wire.rendered_version` resolves it. :func:`holds` asks a rule
of a version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["RULES", "Rule", "holds", "version_key"]


def version_key(version: str) -> tuple[int, ...]:
    """``2.1.330`` as ``(2, 1, 330)``, for ordering versions (a part that is not a number counts as 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("."))


@dataclass(frozen=True)
class Rule:
    """One way Claude Code's output differs between releases."""

    name: str
    says: str
    """What Claude Code does where the rule holds, in one sentence."""
    shown_by: str
    """The recordings that show it (and, where it held before, those that show the older behaviour)."""
    since: str | None = None
    """The first recorded release it holds for; None: every recorded release before :attr:`until`."""
    until: str | None = None
    """The first recorded release it no longer holds for; None: it still holds in the newest recorded."""

    def holds(self, version: str) -> bool:
        """Whether the rule holds for Claude Code ``version``."""
        key = version_key(version)
        return ((self.since is None or key >= version_key(self.since))
                and (self.until is None or key < version_key(self.until)))


RULES: Mapping[str, Rule] = {rule.name: rule for rule in (
    Rule("statusline-percent-of-autocompact-window",
         "With CLAUDE_CODE_AUTO_COMPACT_WINDOW set and auto-compact on, the statusline payload's used_percentage and "
         "remaining_percentage count against the autocompact window (as /context does), while context_window_size "
         "still gives the model's window; with auto-compact off, or CLAUDE_CODE_MAX_CONTEXT_TOKENS alone, they count "
         "against the model's window as before.",
         "repl/autocompact of 2.1.337 (32,003 tokens shown 32, 80,003 shown 80, of a 100,000 autocompact window) "
         "against 2.1.330-2.1.332 (16 and 40 of 200,000); repl/autocompact-window-disabled and max-context-tokens "
         "unchanged", since="2.1.337"),
    Rule("repl-session-title",
         "The interactive REPL asks the model for a session title (a request without tools, no cache), before the "
         "first call, at each prompt of at least 10 characters while the conversation has no title, and once more at "
         "the prompt after it; its price counts in the statusline payload's cost and the "
         "conversation's cost-state (ctxsim.world.title_asks).",
         "repl/* of 2.1.337 (kind side in the calls served: compact-tool-round, clear, subagent, autocompact, ...) "
         "against 2.1.330-2.1.332 (none)", since="2.1.337"),
    Rule("transcript-api-request-route",
         "The REPL's transcript writes an api-request-route row (provider, credential, sessionId) before each "
         "api-request row.",
         "repl/* transcripts of 2.1.337 against 2.1.330-2.1.332", since="2.1.337"),
    Rule("transcript-reply-resent-as-blob",
         "In the REPL's transcript, a request whose previous reply goes out changed (an Agent call the CLI ran in the "
         "background) writes that reply as an api-request-blob of its own, not as the reply's hash.",
         "repl/subagent of 2.1.331-2.1.332 against 2.1.330", since="2.1.331"),
    Rule("transcript-command-row-source",
         "The REPL's transcript marks a local command's user rows with rowSource (harness for meta rows, else local).",
         "repl/clear and compact-* of 2.1.331 on against 2.1.330", since="2.1.331"),
    Rule("transcript-request-thread",
         "The REPL's transcript api-request rows carry thread ({type: none}) and echoWireToolInputs (false).",
         "repl/* of 2.1.332 on against 2.1.330-2.1.331", since="2.1.332"),
    Rule("context-usage-skills-1555",
         "get_context_usage counts 1,555 tokens of skills and 3 fewer of system tools than before (the total "
         "unchanged): a rewording of the CLI's own listing.",
         "every capture's get_context_usage of 2.1.337 (skills 1,555, system tools 10,012 of a fresh 11,581) "
         "against 2.1.330-2.1.332 (1,552 and 10,015)", since="2.1.337"),
)}
"""Every rule that differs between recorded releases, by name."""


def holds(name: str, version: str) -> bool:
    """Whether rule ``name`` of :data:`RULES` holds for Claude Code ``version``."""
    return RULES[name].holds(version)

