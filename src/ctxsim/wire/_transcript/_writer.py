"""Claude Code's session transcript: a :class:`~ctxsim.world.Session` rendered as the JSONL files the CLI writes.

The CLI appends every session to ``$CLAUDE_CONFIG_DIR/projects/<slug>/<session id>.jsonl`` (``<slug>``: the working
directory with every character but letters and digits made ``-``, :func:`project_slug`), and a subagent's rows to
``<session id>/subagents/agent-<agent id>.jsonl`` beside it. Statusline tools read the main file at the payload's
``transcript_path``. :func:`render_transcript` renders what the CLI writes there, as the bundled CLI was seen
writing it (the captures of each release and the live backend, :mod:`ctxsim.lab`):

1. one ``assistant`` row per content block of a call, sharing ``message.id``, ``requestId`` (where the API sent a
   request id) and the call's usage; unlike stream-json, every row is finalized: ``stop_reason`` and the final
   ``output_tokens`` on each (``apiBlockIndex`` numbers the blocks);
2. rows chained by ``uuid``/``parentUuid``, ISO ``timestamp``\\ s that only move forward (derived from the session's
   seed, so the same session gives the same bytes), ``sessionId``, ``cwd``, ``version``, ``isSidechain``;
3. a ``user`` row for each prompt and for each tool result (``sourceToolAssistantUUID`` names the row of its
   ``tool_use``);
4. a compaction as a ``system``/``compact_boundary`` row (``parentUuid`` null, ``logicalParentUuid`` the row before)
   with ``compactMetadata {trigger, preTokens, postTokens}``, then the ``user`` row of the summary
   (``isCompactSummary``); ``/compact`` and ``/clear`` add the rows of a local command; ``/clear`` starts a new file
   (a new session id); a subagent's own compaction writes the same two rows in the subagent's file only
   (``isSidechain``, its ``agentId``; recorded with 2.1.332);
5. a subagent's rows (``isSidechain`` true, ``agentId``) in its own file, first its prompt (the older layout that
   interleaved them in the main file is the fault :class:`ctxsim.faults.InterleavedSidechains`);
6. the other line kinds trackers must skip: ``queue-operation``, ``attachment``, ``api-request``, ``mode`` and
   ``last-prompt`` lines (with no ``uuid`` but for attachments).

Synthetic error rows (``<synthetic>``, ``isApiErrorMessage``), replays, a compaction without ``postTokens`` and a
row half-written when read are faults (:mod:`ctxsim.faults`), as they are for stream-json.

The observation points are the stream-json rendering's (:func:`ctxsim.wire.render`: the same
:class:`~ctxsim.wire.Observation` objects' labels, kinds and truths, in the same order): for each,
:class:`TranscriptPoint` says how many rows of each file are written by then, so a tool can be run on the
transcript as it stood at that point (:meth:`TranscriptRender.write`)::

    render = render_transcript(session)
    for index, point in enumerate(render.points):
        path = render.write(config_dir / "projects" / render.slug, index)   # the main file, truncated there
"""

from __future__ import annotations

import itertools
import random
import uuid
from datetime import datetime, timedelta
from typing import Any

from ...world import (
    Call,
    Compaction,
    ConversationReset,
    Session,
    Step,
    SubagentCompaction,
    SubagentStart,
    TaskNotification,
    ToolResult,
    ToolUse,
    display_name,
    keeps_segment,
)
from .._blocks import block_dict
from .._boundary import compact_metadata
from .._frames import Observation
from .._prompt_ids import notification_prompt_id
from .._stream_json import COMPACT_SUMMARY_PREAMBLE, Renderer
from .._tasks import TURN_COMPANION, notification_text
from ._files import EPOCH, TranscriptFile, TranscriptPoint, counted, iso

__all__ = ["_Writer"]


class _Writer:
    """Walks a session with the stream-json :class:`~ctxsim.wire.Renderer` and writes the rows of each step."""

    def __init__(self, session: Session, cwd: str, cli_version: str, started_at: datetime | None) -> None:
        self.session = session
        self.cwd = cwd
        self.version = cli_version
        self.renderer = Renderer(session, False, False, cwd, cli_version)
        rng = random.Random(f"ctxsim.wire._transcript:{session.seed}:{session.session_id}")
        self.rng = rng
        self.now = started_at or EPOCH + timedelta(seconds=rng.randrange(300 * 86_400))
        prefix = str(uuid.UUID(int=rng.getrandbits(128), version=4))[:24]
        self._uuids = (f"{prefix}{n:012x}" for n in itertools.count(1))
        self.files: dict[str, TranscriptFile] = {}
        self.points: list[TranscriptPoint] = []
        self.clock = itertools.count(1)
        self.session_id = session.session_id
        self.tail: str | None = None
        """The uuid of the main chain's last row."""
        self.agents: dict[str, tuple[str, str | None]] = {}
        """Per subagent (by the tool use that started it): its agent id and the uuid of its last row."""
        self.agent_kept: dict[str, list[str]] = {}
        """Per subagent: its rows from the first row of its last call on (what its own compaction keeps)."""
        self.agent_dropped: dict[str, int] = {}
        """Per subagent: the tokens its own compactions dropped so far."""
        self.background: dict[str, SubagentStart] = {}
        self.pending_agents = 0
        """The background subagents running (a ``turn_duration``'s ``pendingBackgroundAgentCount``)."""
        """The background subagents whose launch result is still to be written (by the tool use that started them)."""
        self.tool_rows: dict[str, str] = {}
        """The uuid of the assistant row holding each tool use."""
        self.files_started: set[str] = set()
        self.calls_since = 0
        """Main-chain calls since the conversation began or was last compacted."""
        self.kept: list[str] = []
        """The main chain's rows from the first row of its last call on (what a compaction would keep)."""
        self.dropped = 0
        """Tokens the compactions so far dropped (``cumulativeDroppedTokens``)."""
        self.query_index = 0
        """The query being written (0-based)."""
        self.prompt_id = ""
        """The ``promptId`` of the last prompt."""

    # rows ------------------------------------------------------------------------------------------------------

    def tick(self, ms: int) -> str:
        self.now += timedelta(milliseconds=ms)
        return iso(self.now)

    def uuid(self) -> str:
        return next(self._uuids)

    @property
    def main_path(self) -> str:
        return f"{self.session_id}.jsonl"

    def append(self, path: str, row: dict[str, Any]) -> None:
        file = self.files.setdefault(path, TranscriptFile(path))
        file.rows.append(row)
        file.order.append(float(next(self.clock)))

    entrypoint = "sdk-py"
    """What the rows say ran the session."""

    def common(self, row: dict[str, Any]) -> dict[str, Any]:
        row.update({"userType": "external", "entrypoint": self.entrypoint, "cwd": self.cwd,
                    "sessionId": self.session_id, "version": self.version, "gitBranch": "HEAD"})
        return row

    def chained(self, kind: str, fields: dict[str, Any], *, agent: str | None = None, ms: int = 5,
                uid: str | None = None) -> str:
        """Append a row of ``kind`` to the main chain (or subagent ``agent``'s file) after its last row (its
        ``uuid``: ``uid``, drawn earlier, else a new one)."""
        uid = uid or self.uuid()
        if agent is None:
            path, parent, head = self.main_path, self.tail, {"parentUuid": self.tail, "isSidechain": False}
        else:
            agent_id, parent = self.agents[agent]
            path = f"{self.session_id}/subagents/agent-{agent_id}.jsonl"
            head = {"parentUuid": parent, "isSidechain": True, "agentId": agent_id}
        row = {**head, "type": kind, **fields, "uuid": uid, "timestamp": self.tick(ms)}
        self.append(path, self.common(row))
        if agent is None:
            self.tail = uid
            if self.kept:
                self.kept.append(uid)
        else:
            self.agents[agent] = (self.agents[agent][0], uid)
            if self.agent_kept.get(agent):
                self.agent_kept[agent].append(uid)
        return uid

    def line(self, row: dict[str, Any], *, ms: int = 1) -> None:
        """Append a line that is not part of the chain (no ``uuid``) to the main file."""
        self.append(self.main_path, row)
        self.now += timedelta(milliseconds=ms)

    def prompt(self, text: str, command: bool) -> None:
        """A query's first rows: its queue operations, and (unless it is a local command) its prompt."""
        self.queued(text)
        if command:
            return
        self.prompt_id = self.uuid()
        self.chained("user", {"promptId": self.prompt_id, "message": {"role": "user", "content": text},
                              "permissionMode": "bypassPermissions", "promptSource": "sdk"})
        if self.main_path not in self.files_started:
            self.files_started.add(self.main_path)
            self.chained("attachment", {"attachment": {"type": "date", "date": self.now.date().isoformat()}},
                         ms=1)

    def command(self, name: str, stdout: str | None, args: str = "") -> None:
        """The rows of local command ``name`` (``/compact``, ``/clear``, ``/model``) with ``args``: its caveat and
        name, then its output as a ``user`` row, or (``stdout`` None) an empty output as a
        ``system``/``local_command`` row."""
        self.chained("user", {"message": {"role": "user", "content": (
            "<local-command-caveat>The command below was run directly in Claude Code, not sent to you as a "
            "request, and its output goes straight to the user. It's recorded here as context for later "
            "messages.</local-command-caveat>")}, "isMeta": True})
        self.chained("user", {"message": {"role": "user", "content": (
            f"<command-name>/{name}</command-name>\n            <command-message>{name}</command-message>\n"
            f"            <command-args>{args}</command-args>")}})
        if stdout is not None:
            self.chained("user", {"message": {"role": "user", "content": (
                f"<local-command-stdout>{stdout}</local-command-stdout>")}})
        else:
            self.chained("system", {"subtype": "local_command",
                                    "content": "<local-command-stdout></local-command-stdout>", "level": "info",
                                    "isMeta": False, "commandRun": {"command": name, "args": ""}})

    def call(self, call: Call) -> None:
        agent = None if call.is_main else str(call.parent_tool_use_id)
        if agent is not None and agent not in self.agents:
            self.agents[agent] = (self.agent_id(), None)
        if agent is None:
            self.api_request(call)
        self.now += timedelta(milliseconds=150)
        for index, block in enumerate(call.blocks):
            message = {"id": call.message_id, "type": "message", "role": "assistant",
                       "model": call.model.removesuffix("[1m]"),  # the API's model: the CLI strips the suffix
                       "content": [block_dict(block)], "stop_reason": call.stop_reason, "stop_sequence": None,
                       "usage": self.usage(call), "stop_details": None}
            fields: dict[str, Any] = {"message": message, "apiBlockIndex": index}
            if call.request_id is not None:
                fields["requestId"] = call.request_id
            fields.update(self.reply_fields(call))
            uid = self.chained("assistant", fields, agent=agent)
            if index == 0:
                if agent is None:
                    self.kept = [uid]
                else:
                    self.agent_kept[agent] = [uid]
            if isinstance(block, ToolUse):
                self.tool_rows[block.id] = uid
        if agent is None:
            self.calls_since += 1

    def reply_fields(self, call: Call) -> dict[str, Any]:
        """More fields of a reply's rows (the SDK's transcript: none)."""
        return {}

    def api_request(self, call: Call) -> None:
        """The lines the CLI writes of a main-chain request before its reply."""
        self.line({"type": "api-request", "sessionId": self.session_id, "id": self.uuid(),
                   "timestamp": self.tick(20), "version": self.version, "querySource": "sdk",
                   "params": {"model": call.model, "max_tokens": self.session.max_output_tokens}})

    def usage(self, call: Call) -> dict[str, Any]:
        """A row's usage: the call's, finalized (its own dict on every row, as the CLI writes each line), with
        the keys the CLI adds to the API's (recorded from 2.1.330-2.1.332)."""
        return {
            "input_tokens": self.session.reported_input(call),
            "cache_creation_input_tokens": call.cache_creation_input_tokens,
            "cache_read_input_tokens": call.cache_read_input_tokens,
            "output_tokens": call.output_tokens,
            "output_tokens_details": {"thinking_tokens": 0},
            "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
            "service_tier": "standard",
            "cache_creation": {"ephemeral_1h_input_tokens": 0,
                               "ephemeral_5m_input_tokens": call.cache_creation_input_tokens},
            "inference_geo": "",
            "iterations": [],
            "speed": "standard",
            "fallback_credit": None,
        }

    def tool_result(self, result: ToolResult) -> None:
        agent = result.parent_tool_use_id
        if agent is not None and agent not in self.agents:
            self.agents[agent] = (self.agent_id(), None)
        fields: dict[str, Any] = {
            "message": {"role": "user", "content": [{"tool_use_id": result.tool_use_id, "type": "tool_result",
                                                     "content": result.content, "is_error": result.is_error}]},
            "toolUseResult": {"stdout": result.content, "stderr": "", "interrupted": False, "isImage": False},
        }
        source = self.tool_rows.get(result.tool_use_id)
        if source is not None:
            fields["sourceToolAssistantUUID"] = source
        if agent is None and (launched := self.background.pop(result.tool_use_id, None)) is not None:  # async
            fields["message"]["content"][0]["content"] = [{"type": "text", "text": result.content}]
            fields["toolUseResult"] = {"isAsync": True, "status": "async_launched", "agentId": launched.task_id,
                                       "description": launched.description, "prompt": launched.prompt}
        self.chained("user", fields, agent=agent, ms=100)

    def queued(self, text: str) -> None:
        """The queue operations of a message the CLI takes in (a prompt, a notification): enqueued, dequeued."""
        self.line({"type": "queue-operation", "operation": "enqueue", "timestamp": self.tick(300),
                   "sessionId": self.session_id, "content": text})
        self.line({"type": "queue-operation", "operation": "dequeue", "timestamp": self.tick(2),
                   "sessionId": self.session_id})

    def notification(self, step: TaskNotification) -> None:
        """A background subagent's end as the main chain gets it: queued, then the rows of a turn of its own."""
        self.pending_agents -= 1
        text = notification_text(step)
        self.queued(text)
        origin = {"kind": "task-notification", "producer": "session-task", "runId": f"run-{step.task_id}"}
        self.notified({"promptId": notification_prompt_id(self.session, step.task_id),
                       "message": {"role": "user", "content": text}, "origin": origin,
                       "promptSource": "system", "turnOrigin": "task_notification"})

    def notified(self, fields: dict[str, Any]) -> None:
        """A notification's rows: a meta companion row, then the notification (``fields``, ``origin`` saying so)."""
        self.chained("user", {"promptId": fields["promptId"], "message": {"role": "user", "content": TURN_COMPANION},
                              "isMeta": True, "turnCompanion": True})
        self.chained("user", {"permissionMode": "bypassPermissions", **fields})

    def agent_id(self) -> str:
        return "a" + format(self.rng.getrandbits(64), "016x")

    def subagent(self, start: SubagentStart) -> None:
        self.agents[start.tool_use_id] = (start.task_id, None)
        if start.background:
            self.background[start.tool_use_id] = start
            self.pending_agents += 1
        self.chained("user", {"message": {"role": "user", "content": start.prompt}}, agent=start.tool_use_id,
                     ms=30)

    def compaction(self, step: Compaction, manual: bool) -> None:
        before = self.tail
        uid, summary = self.uuid(), self.uuid()
        kept = self.kept if keeps_segment(step, self.calls_since) and self.kept else None
        self.dropped += max(0, step.pre_tokens - step.post_tokens)
        row = {"parentUuid": None, "logicalParentUuid": before, "isSidechain": False, "type": "system",
               "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info",
               "compactMetadata": compact_metadata(step, kept, summary, self.dropped),
               "uuid": uid, "timestamp": self.tick(400)}
        self.append(self.main_path, self.common(row))
        self.tail, self.kept, self.calls_since = uid, [], 0
        self.summary(summary)
        if manual:
            self.command("compact", "Compacted")
        self.after_compaction()

    def subagent_compaction(self, step: SubagentCompaction) -> None:
        """A subagent's own compaction, in its file only, as recorded (2.1.332): a ``compact_boundary`` row
        (``isSidechain``, its ``agentId``, ``parentUuid`` null, ``logicalParentUuid`` its last row, the segment from
        its last call on kept), then its summary row; the main chain is unmoved."""
        agent = step.tool_use_id
        agent_id, before = self.agents[agent]
        uid, summary = self.uuid(), self.uuid()
        dropped = self.agent_dropped[agent] = self.agent_dropped.get(agent, 0) + max(0, step.pre_tokens
                                                                                     - step.post_tokens)
        meta = compact_metadata(step, self.agent_kept.get(agent) or None, summary, dropped)
        row = {"parentUuid": None, "logicalParentUuid": before, "isSidechain": True, "agentId": agent_id,
               "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False,
               "level": "info", "compactMetadata": meta, "uuid": uid, "timestamp": self.tick(400)}
        path = f"{self.session_id}/subagents/agent-{agent_id}.jsonl"
        self.append(path, self.common(row))
        self.agents[agent], self.agent_kept[agent] = (agent_id, uid), []
        self.chained("user", {"promptId": self.prompt_id,
                              "message": {"role": "user", "content": COMPACT_SUMMARY_PREAMBLE},
                              "isVisibleInTranscriptOnly": True, "isCompactSummary": True,
                              "summarizedTurnPromptUuids": [self.files[path].rows[0]["uuid"]]},
                     agent=agent, uid=summary)

    def after_compaction(self) -> None:
        """What the CLI writes after a compaction's rows (the SDK's transcript: nothing)."""

    def summary(self, uid: str) -> None:
        """The user row of the summary that follows a boundary (its uuid drawn before the boundary names it)."""
        row = {"parentUuid": self.tail, "isSidechain": False, "type": "user",
               "message": {"role": "user", "content": COMPACT_SUMMARY_PREAMBLE},
            "isVisibleInTranscriptOnly": True, "isCompactSummary": True, "uuid": uid, "timestamp": self.tick(5)}
        self.append(self.main_path, self.common(row))
        self.tail = uid

    def reset(self, step: ConversationReset) -> None:
        self.session_id = step.new_session_id
        self.tail, self.kept, self.calls_since = None, [], 0
        self.files_started.add(self.main_path)
        self.line({"type": "mode", "mode": "normal"})
        self.command("clear", None)

    # the walk --------------------------------------------------------------------------------------------------

    def point(self, observation: Observation) -> None:
        point = TranscriptPoint(observation, self.main_path, self.session_id, float(next(self.clock)), {})
        self.points.append(counted(point, self.files))

    def step(self, step: Step, command: bool) -> None:
        if isinstance(step, Call):
            self.call(step)
        elif isinstance(step, ToolResult):
            self.tool_result(step)
        elif isinstance(step, SubagentStart):
            self.subagent(step)
        elif isinstance(step, TaskNotification):
            self.notification(step)
        elif isinstance(step, Compaction):
            self.compaction(step, command)
        elif isinstance(step, SubagentCompaction):
            self.subagent_compaction(step)
        elif isinstance(step, ConversationReset):
            self.reset(step)

    def query(self, index: int) -> None:
        query = self.session.queries[index]
        command = query.prompt.startswith("/")
        self.query_index = index
        self.prompt(query.prompt, command)
        if query.model is not None and query.prompt.split()[0] == "/model":  # the model switch, as the REPL writes it
            self.command("model", f"Set model to `{display_name(query.model)}` and saved as your default for new "
                                  f"sessions", query.model)
        walk = list(self.renderer.walk(index, query))
        for n, (step, frames) in enumerate(walk):
            if step is not None:
                self.step(step, command)
            elif n:  # a result: the closing lines of the query (or of a turn a background subagent's launch ended)
                self.close(query.prompt, command)
            for frame in frames:
                if frame.observation is not None:
                    self.point(frame.observation)


    def close(self, prompt: str, command: bool) -> None:
        """The lines that close a query."""
        self.line({"type": "last-prompt", "lastPrompt": prompt, "leafUuid": self.tail, "sessionId": self.session_id})
