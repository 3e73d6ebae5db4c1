"""Scrubbing a recording so it can be shared: every string replaced, unless it is a known-safe structural field.

:class:`Scrubber` walks the stream-json frames of a recording and returns copies in which

- every number, boolean and null is kept (every usage count, compaction size, cost and duration);
- ids are **re-keyed**: the value of a field whose name says it holds an id (``id``, ``uuid``, ``session_id``,
  ``parentUuid``, ``tool_use_id``, ``agentId``, ``requestId``, ...) is replaced by a counter in the same format and
  of the same length (a UUID stays a UUID, ``msg_...`` stays ``msg_...``), the same value everywhere it occurs,
  so message-id dedupe, parent links and subagent structure hold;
- a short allow-list of structural fields keeps its value when the value has the expected shape: the kinds
  (``type``, ``subtype``, ``role``, ``stop_reason``, ``trigger``, ``state``, ``status`` as one lowercase word),
  the model (``claude-...`` or ``<synthetic>``), the version (``2.1.39``), the ISO ``timestamp``, and a tool
  use's ``name`` when it is one of Claude Code's built-in tools;
- **everything else** is replaced by filler of the same length in characters (whitespace kept where it was), so
  character-based estimators see the same sizes: free text, paths (also in Claude Code's slug form), user and
  host names, e-mail addresses, URLs, keys and tokens, whatever the field;
- a tool's ``input``, a tool result's ``content`` and the transcript's ``toolUseResult`` are opaque: their keys
  are re-keyed too (same length), and nothing in them is kept but numbers.

It is an allow-list, not a deny-list: a field nobody thought of is scrubbed. On top of it, anything shaped like a
secret is never kept, wherever it sits (a mapping key, an allow-listed field, a model name's suffix): an AWS key
id, a GitHub, GitLab, Slack, Google, Hugging Face (``hf_``), npm, PyPI or ``sk-`` API token, a JSON web token, 24
or more hex digits, or 20 or more letters and digits mixed without a break (:func:`looks_secret`). The output is
deterministic: the same frames in the same order give the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

__all__ = ["BUILTIN_TOOLS", "Scrubber", "filler", "looks_secret"]

BUILTIN_TOOLS = frozenset({
    "Agent", "Task", "Bash", "BashOutput", "KillShell", "KillBash", "Read", "Write", "Edit", "MultiEdit", "Glob",
    "Grep", "LS", "NotebookEdit", "NotebookRead", "WebFetch", "WebSearch", "TodoWrite", "TodoRead", "ExitPlanMode",
    "EnterPlanMode", "SlashCommand", "Skill", "AskUserQuestion", "TaskOutput", "TaskStop", "ListMcpResourcesTool",
    "ReadMcpResourceTool", "CronCreate", "CronDelete", "CronList", "EnterWorktree", "ExitWorktree",
})
"""Tool names kept as they are (a ``Task``/``Agent`` tool use is what makes a subagent); others are filler."""

_KINDS = frozenset({"type", "subtype", "role", "stop_reason", "trigger", "state", "status", "terminal_reason",
                    "service_tier", "operation", "level"})
_KIND = re.compile(r"[a-z]{1,16}(?:_[a-z0-9]{1,16}){0,4}")
"""A kind: one to five short lowercase words joined by ``_`` (``end_turn``, ``compact_boundary``); a long lowercase
token is no kind."""
_MODEL = re.compile(r"(?:claude-[a-z0-9][a-z0-9.-]{0,60}(?:\[1m\])?|<synthetic>)")
_VERSION = re.compile(r"\d{1,4}\.\d{1,4}\.\d{1,6}")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)")
_ID_KEY = re.compile(r"(?:id|uuid|[a-z0-9_]*_id|[a-z][A-Za-z0-9]*(?:Id|ID|Uuid|UUID))")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_ID_PREFIX = re.compile(r"(msg|toolu|srvtoolu|req|call|task|run)_|(acompact|aprompt_suggestion)-")
_OPAQUE = frozenset({"input", "toolUseResult", "tool_use_result"})
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_WORDS = ("lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore "
          "et dolore magna aliqua ")
_WHITESPACE = frozenset("\n\r\t ")
_SECRET_SHAPES = (
    r"(?i:(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16})"  # AWS access key ids
    r"|(?i:gh[oprsu]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{16,})"  # GitHub tokens
    r"|(?i:sk-[A-Za-z0-9_-]{16,})"  # Anthropic, OpenAI and other sk- keys
    r"|(?i:xox[abprs]-[A-Za-z0-9-]{8,})"  # Slack tokens
    r"|AIza[0-9A-Za-z_-]{20,}"  # Google API keys
    r"|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JSON web tokens
    r"|(?i:[0-9a-f]{24,})"  # hex keys and digests
    r"|hf_[A-Za-z0-9]{16,}|glpat-[A-Za-z0-9_-]{16,}|npm_[A-Za-z0-9]{16,}|pypi-[A-Za-z0-9_-]{16,}"  # HF, GitLab...
)
_SECRET = re.compile(_SECRET_SHAPES)
_TOKEN_PART = re.compile(r"(?:^|_)(?:[A-Za-z0-9]{21,}|[A-Za-z]*[0-9]{6,})(?:_|$)")
"""A part of a key (between ``_``) no field name has: over 20 characters, or six digits or more."""
_RUN = re.compile(r"[A-Za-z0-9+/]{20,}")
"""A long unbroken run of key characters: a key when it mixes letters and digits (a word or a number does not)."""


def filler(text: str) -> str:
    """Text of the same length as ``text``, with its line breaks and tabs where they were, saying nothing."""
    words = _WORDS * (len(text) // len(_WORDS) + 1)
    return "".join(c if c in _WHITESPACE and c != " " else words[i] for i, c in enumerate(text))


def looks_secret(text: str) -> bool:
    """Whether ``text`` holds something shaped like a credential (see the module's docstring)."""
    if _SECRET.search(text):
        return True
    return any(any(c.isdigit() for c in run) and any(c.isalpha() for c in run) for run in _RUN.findall(text))


def _digits(n: int, width: int) -> str:
    return str(n).rjust(width, "0")


class Scrubber:
    """Scrubs the frames of one recording; one instance per import, so ids are re-keyed consistently."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}
        """Every id re-keyed, original to replacement (never written anywhere)."""
        self._keys: dict[str, str] = {}

    def frames(self, frames: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Scrubbed copies of ``frames``, in order."""
        return [self.value(frame) for frame in frames]

    def value(self, value: Any, key: str | None = None, *, opaque: bool = False, parent: str | None = None) -> Any:
        """``value`` scrubbed; ``key`` is the field it sits in, ``opaque`` true inside tool inputs and results."""
        if isinstance(value, dict):
            inner = opaque or key in _OPAQUE
            out = {}
            block = value.get("type") if isinstance(value.get("type"), str) else None
            for k, v in value.items():
                child_opaque = inner or (block == "tool_result" and k == "content")
                out[self.key(k, opaque=inner, parent=key)] = self.value(v, k, opaque=child_opaque, parent=block)
            return out
        if isinstance(value, list):
            return [self.value(v, key, opaque=opaque, parent=parent) for v in value]
        if not isinstance(value, str):
            return value
        if opaque or key is None:
            return filler(value)
        return self.string(key, value, parent)

    def key(self, key: str, *, opaque: bool = False, parent: str | None = None) -> str:
        """A mapping's key: kept when structural, re-keyed (same length) inside opaque values or when odd."""
        usage = parent in ("modelUsage", "model_usage")
        structural = _MODEL.fullmatch(key) if usage else not opaque and _KEY.fullmatch(key)
        if structural and not looks_secret(key) and not _TOKEN_PART.search(key):  # a key shaped like a secret is
            # re-keyed, whatever field it is
            return key
        if key not in self._keys:
            self._keys[key] = "k" + _digits(len(self._keys) + 1, max(len(key) - 1, 1))
        return self._keys[key]

    def string(self, key: str, value: str, parent: str | None = None) -> str:
        """A string field outside opaque values: re-keyed id, kept structural value, or filler."""
        if _ID_KEY.fullmatch(key):
            return self.rekey(value)
        keep = ((key in _KINDS and _KIND.fullmatch(value))
                or (key == "model" and _MODEL.fullmatch(value))
                or (key in ("version", "claude_code_version") and _VERSION.fullmatch(value))
                or (key == "timestamp" and _TIMESTAMP.fullmatch(value))
                or (key == "name" and parent == "tool_use" and value in BUILTIN_TOOLS))
        return value if keep and not looks_secret(value) else filler(value)

    def rekey(self, value: str) -> str:
        """The replacement of the id ``value``: the same one each time, in its format and of its length."""
        if not value:
            return value
        if value in self.ids:
            return self.ids[value]
        n = len(self.ids) + 1
        if _UUID.fullmatch(value):
            h = f"{n:032x}"
            new = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
        else:
            prefix = m.group(0) if (m := _ID_PREFIX.match(value)) else ""
            new = prefix + _digits(n, max(len(value) - len(prefix), 1))
        self.ids[value] = new
        return new
