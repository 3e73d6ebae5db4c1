"""The transcript Claude Code's interactive REPL writes (``entrypoint: repl``), as statusline tools read it.

The SDK's transcript (:mod:`._transcript`) and the REPL's carry the same calls, tool results and compactions; what
differs is what a hand-written tracker trips on when it reads the last row's type or follows ``parentUuid``. As
recorded from the REPL of Claude Code 2.1.330-2.1.332 (``ctxsim/wire/captures/claude-code-*/repl/``), the
REPL's file:

- opens with ``mode``, ``permission-mode`` and ``atis-latch`` lines, writes a ``file-history-snapshot`` line before
  each prompt and compaction, and no ``queue-operation`` lines;
- writes the prompt as a ``user`` row with ``promptSource: typed``, ``permissionMode: default``, ``origin``,
  ``turnOrigin`` and ``turnPosition``, followed by ``attachment`` rows in the chain (the environment, the model,
  tools, agents, skills, ``total_tokens_reminder``, the date, ``prompt_snapshot``...; on later turns a
  ``total_tokens_reminder`` alone);
- writes ``api-request-shape``, ``api-request-blob`` and ``api-request`` lines before each reply, and the reply's
  rows with ``requestRef``, ``requestedModel``, ``promptCacheRequested``, ``perTurnEffort`` and ``madeBy``;
- ends each turn with a ``system``/``turn_duration`` row in the chain (so a boundary's ``logicalParentUuid`` and a
  kept segment's ``tailUuid`` point at it), then ``last-prompt``, ``mode``, ``permission-mode`` and ``atis-latch``;
- re-injects the environment, model, tool, agent and skill attachments after a compaction's rows;
- starts a ``/clear``'s new file with ``mode`` and ``file-history-snapshot`` lines before the command's rows;
- writes a ``/model`` switch as a command of its own: a ``file-history-snapshot`` naming its command row, then the
  command's caveat, name and output rows under a prompt id of their own (the one the statusline payload after it
  carries); the next prompt brings the ``model`` attachment (the new model's id) and ``remote_session_change`` (the
  commit attribution names the model) beside ``total_tokens_reminder``;
- from 2.1.331 on, marks a command's rows with ``rowSource``: ``harness`` on its caveat, ``local`` on its name and
  output (2.1.330 wrote none).

``entrypoint`` says ``cli``. Attachment bodies are short stand-ins for the CLI's (trackers skip them).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ..world import Call, ConversationReset, Session
from ._prompt_ids import prompt_id
from ._transcript import _Writer, iso
from ._versions import version_key

__all__ = ["ReplWriter"]

_FIRST_TURN = ("environment", "model", "deferred_tools_delta", "agent_listing_delta", "skill_listing",
               "total_tokens_reminder", "session_context", "date", "remote_session_change", "prompt_snapshot")
"""The attachments after a conversation's first prompt, in the CLI's order."""
_AFTER_COMPACTION = ("deferred_tools_delta", "agent_listing_delta", "skill_listing", "environment", "model")
"""The attachments re-injected after a compaction's rows."""
_LATER_TURN = ("total_tokens_reminder",)
"""The attachments after any other prompt."""
_TURN_AFTER_SWITCH = ("model", "total_tokens_reminder", "remote_session_change")
"""The attachments after the first prompt that follows a ``/model`` switch."""
_ROW_SOURCE_SINCE = (2, 1, 331)
"""The first CLI recorded to mark a command's rows with ``rowSource``."""
_TURN_AFTER_COMPACTION = ("total_tokens_reminder", "session_context", "date", "remote_session_change",
                          "prompt_snapshot")
"""The attachments after the first prompt that follows a compaction."""


class ReplWriter(_Writer):
    """Writes a session's rows in the shape of the REPL's transcript (see the module's docstring)."""

    entrypoint = "cli"

    def __init__(self, session: Session, cwd: str, cli_version: str, started_at: datetime | None) -> None:
        super().__init__(session, cwd, cli_version, started_at)
        self.prompts = 0
        self.prompt_id = ""
        self.pending_snapshot: dict[str, Any] | None = None
        """The last ``file-history-snapshot`` line, until the row it names is written."""
        self.command_prompt: str | None = None
        """The prompt id the main chain's user rows carry now (``promptId``): the prompt's, through its tool
        results and an autocompaction's summary; ``/compact``'s on its summary and its command's rows; none after
        ``/clear`` until the next prompt."""
        self.turn_started = self.now
        self.turn_rows = 0
        self.attachments: tuple[str, ...] = _FIRST_TURN
        """The attachments the next prompt brings."""
        self.in_command = False
        """Whether the rows being written are a local command's."""

    def state(self) -> None:
        """The mode lines the REPL writes when a file opens and after each turn."""
        for row in ({"type": "mode", "mode": "normal"}, {"type": "permission-mode", "permissionMode": "default"},
                    {"type": "atis-latch", "atis": ""}):
            self.line({**row, "sessionId": self.session_id})

    def snapshot(self) -> None:
        """A ``file-history-snapshot`` line; its ``messageId`` is the next user row a person typed (a prompt, or a
        command's name), filled in when that row is written."""
        row: dict[str, Any] = {"type": "file-history-snapshot", "messageId": None,
                               "snapshot": {"messageId": None, "trackedFileBackups": {}, "timestamp": iso(self.now)},
                               "isSnapshotUpdate": False}
        self.line(row)
        self.pending_snapshot = row

    def attachment(self, kind: str) -> None:
        body: dict[str, Any] = {"type": kind}
        if kind == "date":
            body["date"] = self.now.date().isoformat()
        elif kind == "model":
            body["identity"] = {"modelId": self.session.model_at(self.query_index)}
        self.chained("attachment", {"attachment": body}, ms=1)

    def prompt(self, text: str, command: bool) -> None:
        if self.main_path not in self.files:
            self.state()
        self.now += timedelta(milliseconds=300)
        if command:
            name = text.split()[0]
            self.command_prompt = (prompt_id(self.session, self.query_index) if name in ("/compact", "/model")
                                   else None)
            if name == "/model":  # the switch's command row is typed: the file history is snapshotted at it
                self.snapshot()
                if self.attachments == _LATER_TURN:  # a first turn's attachments name the model already
                    self.attachments = _TURN_AFTER_SWITCH
            return
        self.snapshot()
        self.prompts += 1
        self.prompt_id = self.command_prompt = prompt_id(self.session, self.query_index)
        self.turn_started, self.turn_rows = self.now, 0
        self.chained("user", {"promptId": self.prompt_id, "message": {"role": "user", "content": text},
                              "permissionMode": "default", "origin": {"kind": "human"}, "promptSource": "typed",
                              "turnOrigin": "human",
                              "turnPosition": {"promptIndex": self.prompts, "turnIndex": self.prompts}})
        for kind in self.attachments:
            self.attachment(kind)
        self.attachments = _LATER_TURN

    def api_request(self, call: Call) -> None:
        self.line({"type": "api-request-blob", "sessionId": self.session_id, "hash": self.uuid(),
                   "message": {"role": "user", "content": "..."}})
        self.line({"type": "api-request", "sessionId": self.session_id, "id": self.uuid(),
                   "timestamp": self.tick(20), "version": self.version, "querySource": "repl_main_thread",
                   "params": {"model": call.model, "max_tokens": self.session.max_output_tokens}})

    def reply_fields(self, call: Call) -> dict[str, Any]:
        return {"requestedModel": call.model, "promptCacheRequested": "5m", "perTurnEffort": None,
                "madeBy": "model", "session_id": self.session_id}

    def close(self, prompt: str, command: bool) -> None:
        if command:
            return
        elapsed = int((self.now - self.turn_started) / timedelta(milliseconds=1))
        self.chained("system", {"subtype": "turn_duration", "durationMs": elapsed,
                                "messageCount": self.chain_length(), "isMeta": False})
        self.line({"type": "last-prompt", "lastPrompt": prompt, "leafUuid": self.tail, "sessionId": self.session_id})
        self.state()

    def compaction(self, step: Any, manual: bool) -> None:
        if manual:  # an autocompaction happens inside a prompt's turn, after its snapshot
            self.snapshot()
        super().compaction(step, manual)

    def command(self, name: str, stdout: str | None, args: str = "") -> None:
        self.in_command = True
        try:
            super().command(name, stdout, args)
        finally:
            self.in_command = False

    def chained(self, kind: str, fields: dict[str, Any], *, agent: str | None = None, ms: int = 5) -> str:
        if self.command_prompt is not None and kind == "user" and agent is None:
            fields = {"promptId": self.command_prompt, **fields}
        if self.in_command and kind == "user" and version_key(self.version) >= _ROW_SOURCE_SINCE:
            fields = {**fields, "rowSource": "harness" if fields.get("isMeta") else "local"}
        uid = super().chained(kind, fields, agent=agent, ms=ms)
        if self.pending_snapshot is not None and kind == "user" and agent is None and not fields.get("isMeta"):
            self.pending_snapshot["messageId"] = self.pending_snapshot["snapshot"]["messageId"] = uid
            self.pending_snapshot = None
        return uid

    def chain_length(self) -> int:
        """The rows of the main chain up to its last, following each ``parentUuid`` (across a compaction, the
        boundary's ``logicalParentUuid``): a ``turn_duration``'s ``messageCount``."""
        rows = {r["uuid"]: r for r in self.files[self.main_path].rows if "uuid" in r}
        count, at = 0, self.tail
        while at in rows:
            count += 1
            row = rows[at]
            at = row.get("parentUuid") or row.get("logicalParentUuid")
        return count

    def summary(self, uid: str) -> None:
        super().summary(uid)
        if self.command_prompt is not None:
            row = self.files[self.main_path].rows[-1]
            row["promptId"] = self.command_prompt

    def after_compaction(self) -> None:
        for kind in _AFTER_COMPACTION:
            self.attachment(kind)
        self.attachments = _TURN_AFTER_COMPACTION

    def reset(self, step: ConversationReset) -> None:
        self.command_prompt = None
        self.session_id = step.new_session_id
        self.tail, self.kept, self.calls_since = None, [], 0
        self.files_started.add(self.main_path)
        self.line({"type": "mode", "mode": "normal", "sessionId": self.session_id})
        self.snapshot()
        self.command("clear", None)
        self.attachments = _FIRST_TURN
