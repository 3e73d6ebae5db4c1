"""The transcript Claude Code's interactive REPL writes (``entrypoint: repl``), as statusline tools read it.

The SDK's transcript (:mod:`._writer`) and the REPL's carry the same calls, tool results and compactions; what
differs is what a hand-written tracker trips on when it reads the last row's type or follows ``parentUuid``. As
recorded from the REPL of every recorded release (``ctxsim/wire/captures/claude-code-*/repl/``), the REPL's file:

- opens with ``mode``, ``permission-mode`` and ``atis-latch`` lines, writes a ``file-history-snapshot`` line before
  each prompt and compaction, and no ``queue-operation`` lines;
- writes the prompt as a ``user`` row with ``promptSource: typed``, ``permissionMode: default``, ``origin``,
  ``turnOrigin`` and ``turnPosition``, followed by ``attachment`` rows in the chain (the environment, the model,
  tools, agents, skills, ``total_tokens_reminder``, ``session_context``, the date, ``remote_session_change``,
  ``prompt_snapshot``; on later turns a ``total_tokens_reminder`` alone, after ``/model`` with the model and
  ``remote_session_change`` around it); a fresh turn (one whose prompt brought ``prompt_snapshot``) writes another
  ``prompt_snapshot`` once its first round is done, and every request after a turn's first gets a
  ``total_tokens_reminder`` before it;
- writes the request lines (:mod:`._repl_requests`: ``api-request-shape``, ``api-request-blob``, ``api-request``)
  before each main-thread reply, and the reply's rows with ``requestRef`` (the request's id), ``requestedModel``,
  ``promptCacheRequested``, ``perTurnEffort`` and ``madeBy``;
- ends each turn with a ``system``/``turn_duration`` row in the chain (so a boundary's ``logicalParentUuid`` and a
  kept segment's ``tailUuid`` point at it; ``messageCount`` the length of the chain), then ``last-prompt``,
  ``mode``, ``permission-mode`` and ``atis-latch``;
- re-injects the environment, model, tool, agent and skill attachments after a compaction's rows; an autocompaction
  writes ``session_context`` and the date between its boundary and its summary, and ``remote_session_change`` and
  ``prompt_snapshot`` after the re-injected ones;
- names the tools of a file's first turn in ``tools-used`` when the file opens; closes a file ``/clear`` ends with
  ``cost-state`` (the session-title requests of rule ``repl-session-title`` counted in); starts the new file with
  ``mode`` and ``file-history-snapshot`` lines before the command's rows;
- where rule ``transcript-api-request-route`` holds (:data:`ctxsim.world.RULES`), closes each group of mode lines
  with an ``api-request-route`` line (:data:`ROUTE`);
- writes a ``/model`` switch as a command of its own: a ``file-history-snapshot`` naming its command row, then the
  command's caveat, name and output rows under a prompt id of their own (the one the statusline payload after it
  carries); the next prompt brings the ``model`` attachment (the new model's id) and ``remote_session_change`` (the
  commit attribution names the model) beside ``total_tokens_reminder``;
- where rule ``transcript-command-row-source`` holds, marks a command's rows with ``rowSource``: ``harness`` on its
  caveat, ``local`` on its name and output.

``entrypoint`` says ``cli``. Attachment bodies are short stand-ins for the CLI's (trackers skip them).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from ...world import Call, Compaction, ConversationReset, Session, SubagentStart, ToolUse, holds, keeps_segment
from .._prompt_ids import prompt_id
from .._titles import title_calls
from ._files import iso
from ._repl_requests import ConversationCost, RequestLog, merged_messages
from ._writer import _Writer

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
ROUTE = {"provider": "customEndpoint", "credential": "key"}
"""What an ``api-request-route`` row says (rule ``transcript-api-request-route``): as recorded against ctxsim's fake
API, an endpoint named by ``ANTHROPIC_BASE_URL`` and an API key."""
_TURN_AFTER_COMPACTION = ("total_tokens_reminder", "session_context", "date", "remote_session_change",
                          "prompt_snapshot")
"""The attachments after the first prompt that follows a compaction."""
_BEFORE_AUTO_SUMMARY = ("session_context", "date")
"""The attachments an autocompaction writes between its boundary and its summary (the summary's parent)."""
_AFTER_AUTO_COMPACTION = (*_AFTER_COMPACTION, "remote_session_change", "prompt_snapshot")
"""The attachments an autocompaction re-injects after its summary, before the request it interrupted."""


class ReplWriter(_Writer):
    """Writes a session's rows in the shape of the REPL's transcript (see the module's docstring)."""

    entrypoint = "cli"

    def __init__(self, session: Session, cwd: str, cli_version: str, started_at: datetime | None) -> None:
        super().__init__(session, cwd, cli_version, started_at)
        self.prompts = 0
        self.turns = 0
        """Turns no prompt opened (a background subagent's notification opens one)."""
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
        self.snapshot_due = False
        """Whether the turn owes a ``prompt_snapshot`` after its first round (a turn whose prompt brought one, or
        that an autocompaction re-injected)."""
        self.requests_in_turn = 0
        self.request_ref: str | None = None
        self.launched = False
        """Whether a background subagent was launched since the last request (its reply goes out again changed)."""
        self.requests = RequestLog(self.session_id, cli_version, self.line, self.uuid)
        self.cost = ConversationCost()
        self.titles = title_calls(session, cli_version)
        """The session-title requests still to count, by query index (:func:`title_calls`)."""
        self.conversation_started = self.now
        self.manual = True
        """Whether the compaction being written is a ``/compact``."""
        self.reminder: str | None = None
        """The uuid of the reminder a mid-turn autocompaction drew for the request it interrupted."""
        self.in_command = False
        """Whether the rows being written are a local command's."""

    def state(self, opening: bool = False) -> None:
        """The mode lines the REPL writes when a file opens and after each turn; a file opens once its first turn
        is done, so it names the tools that turn used (``tools-used``), if any."""
        for row in ({"type": "mode", "mode": "normal"}, {"type": "permission-mode", "permissionMode": "default"},
                    {"type": "atis-latch", "atis": ""}):
            self.line({**row, "sessionId": self.session_id})
        steps = self.session.queries[self.query_index].steps
        tools = [b.name for c in steps if isinstance(c, Call) and c.is_main for b in c.blocks
                 if isinstance(b, ToolUse)]
        if opening and tools:
            self.line({"type": "tools-used", "tools": list(dict.fromkeys(tools)), "sessionId": self.session_id})
        if holds("transcript-api-request-route", self.version):
            self.line({"type": "api-request-route", **ROUTE, "sessionId": self.session_id})

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
            self.state(opening=True)
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
        self.snapshot_due, self.requests_in_turn = "prompt_snapshot" in self.attachments, 0
        self.chained("user", {"promptId": self.prompt_id, "message": {"role": "user", "content": text},
                              "permissionMode": "default", "origin": {"kind": "human"}, "promptSource": "typed",
                              "turnOrigin": "human",
                              "turnPosition": {"promptIndex": self.prompts, "turnIndex": self.prompts + self.turns}})
        for kind in self.attachments:
            self.attachment(kind)
        self.attachments = _LATER_TURN

    def api_request(self, call: Call) -> None:
        """A main-thread request: after a turn's first, the attachments the CLI adds before it (the turn's
        ``prompt_snapshot`` if owed, a ``total_tokens_reminder``), then its lines (:class:`RequestLog`)."""
        if self.requests_in_turn:
            self.owed_snapshot()
            self.attachment("total_tokens_reminder")
        self.requests_in_turn += 1
        self.request_ref = self.requests.request(call, self.tick(20), self.session.max_output_tokens,
                                                 reply_resent=self.launched)
        self.launched = False

    def owed_snapshot(self) -> None:
        if self.snapshot_due:
            self.attachment("prompt_snapshot")
            self.snapshot_due = False

    def reply_fields(self, call: Call) -> dict[str, Any]:
        ref = {"requestRef": self.request_ref} if call.is_main else {}
        return {**ref, "requestedModel": call.model, "promptCacheRequested": "5m", "perTurnEffort": None,
                "madeBy": "model", "session_id": self.session_id}

    def call(self, call: Call) -> None:
        super().call(call)
        title = self.titles.pop(self.query_index, None) if call.is_main else None
        if title is not None:  # the session title the prompt asked for, before its first call
            self.cost.add(title)
        self.cost.add(call)

    def close(self, prompt: str, command: bool) -> None:
        if command:
            return
        self.owed_snapshot()
        elapsed = int((self.now - self.turn_started) / timedelta(milliseconds=1))
        self.chained("system", {"subtype": "turn_duration", "durationMs": elapsed,
                                "messageCount": self.chain_length(),
                                **({"pendingBackgroundAgentCount": self.pending_agents} if self.pending_agents else {}),
                                "isMeta": False})
        self.line({"type": "last-prompt", "lastPrompt": prompt, "leafUuid": self.tail, "sessionId": self.session_id})
        self.state()

    def notified(self, fields: dict[str, Any]) -> None:
        """A notification's turn as the REPL opens it: a prompt id of its own, the next turn's place."""
        self.turns += 1
        self.turn_started, self.requests_in_turn = self.now, 0
        self.prompt_id = self.command_prompt = fields["promptId"]
        super().notified({**fields, "permissionMode": "default",
                          "turnPosition": {"promptIndex": self.prompts, "turnIndex": self.prompts + self.turns}})

    def subagent(self, start: SubagentStart) -> None:
        super().subagent(start)
        self.launched = self.launched or start.background

    def compaction(self, step: Compaction, manual: bool) -> None:
        if manual:  # an autocompaction happens inside a prompt's turn, after its snapshot
            self.snapshot()
        for summary in step.summary_requests:
            self.cost.add(summary)
        self.manual = manual
        self.reminder = None
        if not manual and self.requests_in_turn:  # mid-turn: the next request's reminder is drawn before it
            self.reminder = self.tail = self.uuid()
            self.kept += [self.reminder] if self.kept else []
        kept = self.kept if keeps_segment(step, self.calls_since) and self.kept else []
        rows = {r["uuid"]: r for r in self.files[self.main_path].rows if "uuid" in r}
        roles = [str(rows[u]["type"]) if u in rows else "attachment" for u in kept
                 if u not in rows or rows[u]["type"] != "system"]
        self.requests.restart(self.session_id, merged_messages(
            ["user", *("assistant" if r == "assistant" else "user" for r in roles), "user"]))
        super().compaction(step, manual)

    def command(self, name: str, stdout: str | None, args: str = "") -> None:
        self.in_command = True
        try:
            super().command(name, stdout, args)
        finally:
            self.in_command = False

    def chained(self, kind: str, fields: dict[str, Any], *, agent: str | None = None, ms: int = 5,
                uid: str | None = None) -> str:
        if self.command_prompt is not None and kind == "user" and agent is None:
            fields = {"promptId": self.command_prompt, **fields}
        if self.in_command and kind == "user" and holds("transcript-command-row-source", self.version):
            fields = {**fields, "rowSource": "harness" if fields.get("isMeta") else "local"}
        uid = super().chained(kind, fields, agent=agent, ms=ms, uid=uid)
        if self.pending_snapshot is not None and kind == "user" and agent is None and not fields.get("isMeta"):
            self.pending_snapshot["messageId"] = self.pending_snapshot["snapshot"]["messageId"] = uid
            self.pending_snapshot = None
        return uid

    def chain_length(self) -> int:
        """A ``turn_duration``'s ``messageCount``: the rows of the file's chain so far. It is the chain's length back
        through each boundary's ``logicalParentUuid``, except after a mid-turn autocompaction, whose links circle
        (the boundary's ``logicalParentUuid`` is the reminder written after its summary): the CLI counts each row
        once."""
        return sum(1 for r in self.files[self.main_path].rows if "uuid" in r)

    def summary(self, uid: str) -> None:
        if not self.manual:
            for kind in _BEFORE_AUTO_SUMMARY:
                self.attachment(kind)
        super().summary(uid)
        if self.command_prompt is not None:
            row = self.files[self.main_path].rows[-1]
            row["promptId"] = self.command_prompt

    def after_compaction(self) -> None:
        if self.reminder is not None:  # written now, after the summary, under the uuid the boundary names
            self.chained("attachment", {"attachment": {"type": "total_tokens_reminder"}}, ms=1, uid=self.reminder)
        for kind in _AFTER_COMPACTION if self.manual else _AFTER_AUTO_COMPACTION:
            self.attachment(kind)
        self.attachments = _TURN_AFTER_COMPACTION if self.manual else _LATER_TURN
        if not self.manual:  # the interrupted request is the turn's first again; its round owes the snapshot
            self.requests_in_turn, self.snapshot_due = 0, True

    def reset(self, step: ConversationReset) -> None:
        self.command_prompt = None
        if self.main_path in self.files:
            elapsed = int((self.now - self.conversation_started) / timedelta(milliseconds=1))
            self.line(self.cost.row(self.session_id, elapsed))
        self.cost, self.conversation_started = ConversationCost(), self.now
        self.session_id = step.new_session_id
        self.requests.restart(self.session_id)
        self.tail, self.kept, self.calls_since = None, [], 0
        self.files_started.add(self.main_path)
        self.line({"type": "mode", "mode": "normal", "sessionId": self.session_id})
        self.snapshot()
        self.command("clear", None)
        self.attachments = _FIRST_TURN
