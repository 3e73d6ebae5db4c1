"""Claude Code's stream-json: a :class:`~ctxsim.world.Session` rendered as the CLI writes it on stdout.

:func:`render` turns each query of a session into a :class:`Script`, the list of stream-json dicts the CLI
writes on stdout for it, in order. The rendering reproduces what the real CLI does, as checked against the captures
of every recorded release (:mod:`ctxsim.wire`; the tests replay each, and play the installed CLI live):

1. one ``assistant`` message per content block; the blocks of one call share ``message.id`` and carry the same
   ``usage`` (each message its own dict, as the CLI parses each line separately);
2. that ``usage.output_tokens`` is the stale ``message_start`` placeholder, never the final count;
3. with partial messages on, ``stream_event`` frames (``message_start`` ... ``message_delta`` with the final
   output count and, as the Messages API sends them, the cumulative input and cache counts, ``message_stop``)
   around the assistant messages;
4. tool results as ``user`` messages; subagent messages carry ``parent_tool_use_id``;
5. ``system/init`` at the start of every query (after the work of a command that opens it: ``/clear``'s reset,
   ``/compact``'s status frames), ``system/compact_boundary`` for a compaction (none for a
   subagent's own compaction, whose summary request counts in ``modelUsage`` and the cost only);
6. one ``result`` per query whose ``usage`` sums that query's main-chain calls (final output included) and whose
   ``modelUsage`` is cumulative over the session, subagents included, with ``contextWindow``;
7. the ``system`` frames beside the messages where the CLI places them (:mod:`._system_frames`): the session's
   state (``running`` first, host-only; the ``idle`` after the result :class:`~ctxsim.sdk.FakeTransport` writes,
   as it closes the turn), a thinking block's estimate, a subagent's progress.

Frames that close an observation point carry an :class:`Observation` with the truth from that frame on.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from ..world import (
    Call,
    Compaction,
    ConversationReset,
    Query,
    Session,
    Step,
    SubagentCompaction,
    SubagentStart,
    TaskNotification,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
    Truth,
    keeps_segment,
)
from ._blocks import block_delta, block_dict, empty_block
from ._boundary import stream_compact_metadata
from ._frames import Frame, Observation, Script
from ._labels import query_subagents, subagent_label
from ._prices import cost as call_cost
from ._result import model_usage_entry, num_turns, result_data, subagent_stats
from ._system_frames import progress_before_tool_use, session_state, task_progress, thinking_tokens
from ._tasks import launch, task_end, task_start
from ._versions import resolve_cli

__all__ = ["PLACEHOLDER_OUTPUT_TOKENS", "Renderer", "cli_version_rendered", "render", "render_stream",
           "rendered_version"]


def cli_version_rendered(asked: str | None = None) -> str:
    """The Claude Code version a rendering stands for (its ``init`` frame's ``claude_code_version``, and the
    release whose rules it follows): ``asked``, a version or a range (:func:`~ctxsim.wire.resolve_cli`), else the
    installed CLI's, else the newest captured one."""
    return resolve_cli(asked)


def rendered_version(session: Session, asked: str | None = None) -> str:
    """The Claude Code version ``session`` renders as: the release it names (:attr:`~ctxsim.world.Session.cli`),
    else ``asked`` (a tool's version), else the CLI in use (:func:`cli_version_rendered`)."""
    return cli_version_rendered(session.cli or asked)

COMPACT_SUMMARY_PREAMBLE = ("This session is being continued from a previous conversation that ran out of context. "
                            "The summary below covers the earlier portion of the conversation.")
"""How the CLI opens the user message that carries a compaction's summary."""

PLACEHOLDER_OUTPUT_TOKENS = 1
"""The ``output_tokens`` the CLI copies from ``message_start`` into every per-block assistant message."""

def _assistant_usage(call: Call, reported_input: int) -> dict[str, int]:
    return {
        "input_tokens": reported_input,
        "cache_creation_input_tokens": call.cache_creation_input_tokens,
        "cache_read_input_tokens": call.cache_read_input_tokens,
        "output_tokens": PLACEHOLDER_OUTPUT_TOKENS,
    }


class Renderer:
    """Renders one session query by query; holds the running state the CLI keeps (session id, cumulative model
    usage, uuids), so a caller that grows a session turn by turn (the fake agent, the state machine) renders only
    the new query. :func:`render` is the whole-session form."""

    def __init__(self, session: Session, include_partial_messages: bool, forward_subagent_text: bool,
                 cwd: str, cli_version: str | None = None) -> None:
        self.session = session
        self.cli_version = rendered_version(session, cli_version)
        self.partial = include_partial_messages
        self.forward_subagent_text = forward_subagent_text
        self.cwd = cwd
        self.rng = random.Random(f"ctxsim.wire:{session.seed}:{session.session_id}")
        self.session_id = session.session_id
        self.model = session.model
        """The model in force (``/model`` switches it between queries): the window follows it."""
        self.model_usage: dict[str, dict[str, Any]] = {}
        self.since_last: dict[str, dict[str, Any]] = {}
        """``model_usage_since_last_result``: what was spent since the last result."""
        self.results = 0
        self.total_cost = 0.0
        self.calls_since = 0
        """Main-chain calls since the conversation began or was last compacted."""
        self.kept: list[str] = []
        """The uuids of the main chain's frames from its last call on: what a compaction keeps."""
        self.tail: str | None = None
        """The uuid of the main chain's last frame."""
        self.dropped = 0
        """Tokens the compactions so far dropped (``cumulative_dropped_tokens``)."""
        self.tasks: dict[str, tuple[str, str]] = {}
        """Per running subagent (by the tool use that started it): its task id and run id."""
        self.task_tokens: dict[str, int] = {}
        """Per running subagent: its last call's prompt and output (``task_notification.usage.total_tokens``)."""
        self.task_uses: dict[str, int] = {}
        """Per subagent: the tool uses it asked for so far (``task_progress.usage.tool_uses``)."""
        self.background: set[str] = set()
        """The background subagents running (by the tool use that started them)."""
        self.launched: set[str] = set()
        """The background subagents whose launch result was written."""
        self.descriptions: dict[str, str] = {}
        self.prompts: dict[str, str] = {}
        self.turn_calls = 0
        """The query's main-chain calls in turns already closed (a background subagent's launch ends one)."""
        self.truth: Truth | None = None
        self.observations = 0
        self.subagents: dict[str, int] = {}
        """The place of each subagent of the query being walked (by its ``parent_tool_use_id``), when it has more
        than one: their calls' labels carry it (:func:`subagent_label`)."""
        # Frame uuids: a seeded random uuid4 whose last 48 bits count the frames (unique within the session,
        # one format per frame instead of a random draw).
        prefix = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))[:24]
        self.uuids = (f"{prefix}{n:012x}" for n in itertools.count(1))

    def uuid(self) -> str:
        return next(self.uuids)

    def observe(self, frame: Frame, label: str, kind: str) -> None:
        if self.truth is None:
            return
        self.observations += 1
        frame.observation = Observation(self.observations, label, kind, self.truth,
                                        self.session.window_of(self.model))

    # frames ----------------------------------------------------------------------------------------------------

    def system(self, subtype: str, **fields: Any) -> Frame:
        return Frame({"type": "system", "subtype": subtype, **fields, "session_id": self.session_id,
                      "uuid": self.uuid()})

    def init(self, model: str) -> Frame:
        return Frame({
            "type": "system", "subtype": "init", "cwd": self.cwd, "session_id": self.session_id,
            "tools": ["Task", "Bash", "Edit", "Glob", "Grep", "Read", "WebFetch", "WebSearch", "Write"],
            "mcp_servers": [], "model": model, "permissionMode": "bypassPermissions",
            "slash_commands": ["compact", "context", "clear", "cost", "init", "review"],
            "apiKeySource": "ANTHROPIC_API_KEY", "claude_code_version": self.cli_version,
            "output_style": "default", "agents": ["general-purpose", "Explore", "Plan"], "skills": [],
            "plugins": [], "uuid": self.uuid(),
        })

    def stream_event(self, event: dict[str, Any], parent: str | None) -> Frame:
        return Frame({"type": "stream_event", "uuid": self.uuid(), "session_id": self.session_id, "event": event,
                      "parent_tool_use_id": parent})

    def assistant(self, call: Call, block: Thinking | Text | ToolUse, usage: dict[str, int]) -> Frame:
        head, message = self._assistant_templates(call)
        return self._assistant(head, message, block, usage)

    def _assistant_templates(self, call: Call) -> tuple[dict[str, Any], dict[str, Any]]:
        """The ``assistant`` frame and its ``message`` for ``call``, built once a call and copied per block."""
        message = {"id": call.message_id, "type": "message", "role": "assistant", "model": call.model,
                   "content": None, "stop_reason": None, "stop_sequence": None, "usage": None}
        head = {"type": "assistant", "message": None, "parent_tool_use_id": call.parent_tool_use_id,
                "session_id": self.session_id, "uuid": None}
        if call.request_id is not None:
            head["request_id"] = call.request_id
        return head, message

    def _assistant(self, head: dict[str, Any], message: dict[str, Any], block: Thinking | Text | ToolUse,
                   usage: dict[str, int]) -> Frame:
        """One block's frame from the call's templates: its own dicts (``message`` and ``usage`` copied), as the
        CLI parses each line separately."""
        inner = message.copy()
        inner["content"] = [block_dict(block)]
        inner["usage"] = usage.copy()
        data = head.copy()
        data["message"] = inner
        data["uuid"] = next(self.uuids)
        return Frame(data)

    def call_frames(self, call: Call, label: str, kind: str) -> list[Frame]:
        main = call.is_main
        # A foreground subagent's text reaches no frame; a background one's does (recorded, 2.1.332).
        shown = call.blocks if main or self.forward_subagent_text or call.parent_tool_use_id in self.background else [
            b for b in call.blocks if isinstance(b, ToolUse)]
        frames: list[Frame] = []
        usage = _assistant_usage(call, self.session.reported_input(call))
        head, message = self._assistant_templates(call)
        assistant = self._assistant
        streaming = self.partial and main
        if streaming:
            frames.append(self.system("status", status="requesting"))
            frames.append(self.stream_event({"type": "message_start", "message": {
                "id": call.message_id, "type": "message", "role": "assistant", "model": call.model,
                "content": [], "stop_reason": None, "stop_sequence": None,
                "usage": _assistant_usage(call, self.session.reported_input(call))}},
                call.parent_tool_use_id))
        before = progress_before_tool_use(call.parent_tool_use_id in self.background)
        for index, block in enumerate(shown):
            if main and isinstance(block, Thinking):
                frames.append(thinking_tokens(self, block))
            progress = self.progress(call, block)
            if progress is not None and before:
                frames.append(progress)
            if streaming:
                frames.append(self.stream_event({"type": "content_block_start", "index": index,
                                                 "content_block": empty_block(block)}, None))
                frames.append(self.stream_event({"type": "content_block_delta", "index": index,
                                                 "delta": block_delta(block)}, None))
                frames.append(assistant(head, message, block, usage))
                frames.append(self.stream_event({"type": "content_block_stop", "index": index}, None))
            else:
                frames.append(assistant(head, message, block, usage))
            if progress is not None and not before:
                frames.append(progress)
        if streaming:
            frames.append(self.stream_event({"type": "message_delta",
                                             "delta": {"stop_reason": call.stop_reason, "stop_sequence": None},
                                             "usage": self.delta_usage(usage, call)}, None))
            frames.append(self.stream_event({"type": "message_stop"}, None))
        if main:
            self.kept = [f.data["uuid"] for f in frames if f.data["type"] == "assistant"]
            self.tail = self.kept[-1] if self.kept else self.tail
            self.calls_since += 1
        closing = next((f for f in reversed(frames) if f.data["type"] != "system"), None)
        if closing is not None:  # the call's last message (a subagent's progress after it closes nothing)
            self.observe(closing, label, kind)
        return frames

    def progress(self, call: Call, block: Thinking | Text | ToolUse) -> Frame | None:
        """A subagent's ``task_progress`` for ``block``, if it is a tool use (:mod:`._system_frames`)."""
        if call.is_main or not isinstance(block, ToolUse):
            return None
        parent = call.parent_tool_use_id or ""
        self.task_uses[parent] = self.task_uses.get(parent, 0) + 1
        return task_progress(self, call, block, self.task_uses[parent])

    def tool_result(self, result: ToolResult) -> Frame:
        frame = Frame({
            "type": "user",
            "message": {"role": "user", "content": [{
                "tool_use_id": result.tool_use_id, "type": "tool_result", "content": result.content,
                "is_error": result.is_error}]},
            "parent_tool_use_id": result.parent_tool_use_id,
            "session_id": self.session_id,
            "uuid": self.uuid(),
            "tool_use_result": {"stdout": result.content, "stderr": "", "interrupted": False,
                                "isImage": False},
        })
        if result.parent_tool_use_id is None:
            self.tail = frame.data["uuid"]
            if self.kept:
                self.kept.append(self.tail)
        return frame

    def delta_usage(self, usage: dict[str, int], call: Call) -> dict[str, int]:
        """``message_delta``'s usage, as the session's provider sends it (:data:`~ctxsim.world.DeltaUsage`)."""
        if self.session.delta_usage == "output":
            return {"output_tokens": call.output_tokens}
        return {**usage, "output_tokens": call.output_tokens}

    def compaction(self, step: Compaction, q: str, before_any_call: bool) -> list[Frame]:
        """A compaction's frames: the two ``system/status`` frames (compacting, then done), the boundary with every
        key of its ``compact_metadata`` (the transcript's ``compactMetadata`` in snake case) and its
        ``logical_parent_uuid`` (the last row before it), then the summary. An autocompaction keeps, after the
        last reply, the rows the stream never shows: before a query its prompt, and the attachment the CLI adds
        (their uuids point at transcript rows)."""
        for summary in step.summary_requests:
            self.add_model_usage(summary)  # counted in modelUsage and the cost, shown in no frame
        compacting: dict[str, Any] = {"status": "compacting"}
        if step.trigger == "auto":
            compacting["compact_output_chars"] = 0
        frames = [self.system("status", **compacting), self.system("status", status=None, compact_result="success")]
        unseen = ([self.uuid()] if before_any_call else []) + [self.uuid()] if step.trigger == "auto" else []
        segment = [*self.kept, *unseen] if self.kept else []
        kept = segment if keeps_segment(step, self.calls_since) and segment else None
        parent = unseen[-1] if unseen else self.tail
        anchor = self.uuid()
        self.dropped += max(0, step.pre_tokens - step.post_tokens)
        boundary = self.system("compact_boundary",
                               compact_metadata=stream_compact_metadata(step, kept, anchor, self.dropped),
                               logical_parent_uuid=parent)
        self.observe(boundary, f"{q} compaction", "compaction")
        self.calls_since, self.kept, self.tail = 0, [], anchor
        return [*frames, boundary, *self.compaction_messages(step, anchor)]

    def compaction_messages(self, step: Compaction, anchor: str | None = None) -> list[Frame]:
        """The user frames the CLI writes after a boundary: the summary that now opens the conversation
        (``isSynthetic``; a text block after an autocompaction, a string after ``/compact``), and for ``/compact``
        the command's output, replayed (``isReplay``)."""
        written = next((b.text for b in step.summary.blocks if isinstance(b, Text)), "") if step.summary else ""
        summary = f"{COMPACT_SUMMARY_PREAMBLE}\n\nSummary:\n{written}"
        content: str | list[dict[str, Any]] = summary if step.trigger == "manual" else [
            {"type": "text", "text": summary}]
        frames = [self.user(content, isReplay=False, isSynthetic=True) if step.trigger == "manual"
                  else self.user(content, isSynthetic=True)]
        if anchor is not None:
            frames[0].data["uuid"] = anchor
        if step.trigger == "manual":
            frames.append(self.user("<local-command-stdout>Compacted </local-command-stdout>", isReplay=True))
        return frames

    def user(self, content: str | list[dict[str, Any]], **flags: bool) -> Frame:
        """A user frame that carries no tool result (a summary, a command's output)."""
        return Frame({"type": "user", "message": {"role": "user", "content": content}, "parent_tool_use_id": None,
                      "session_id": self.session_id, "uuid": self.uuid(), **flags})

    def add_model_usage(self, call: Call) -> None:
        cost = call_cost(call.model, call)
        for table in (self.model_usage, self.since_last):
            entry = table.get(call.model)
            if entry is None:
                entry = table[call.model] = model_usage_entry(call.model, self.session.window_of(call.model),
                                                              self.session.max_output_tokens)
            entry["inputTokens"] += self.session.reported_input(call)
            entry["outputTokens"] += call.output_tokens
            entry["cacheReadInputTokens"] += call.cache_read_input_tokens
            entry["cacheCreationInputTokens"] += call.cache_creation_input_tokens
            entry["costUSD"] += cost
        self.total_cost += cost

    def result(self, query: Query, calls: list[Call], label: str, turn: slice = slice(None)) -> Frame:
        """The ``result`` of the turn ``turn`` of ``query`` (the whole query, unless a background subagent's
        notification split it in turns), with every key the CLI writes; ``calls``: its main-chain calls since the
        last reset."""
        usage = {
            "input_tokens": sum(self.session.reported_input(c) for c in calls),
            "cache_creation_input_tokens": sum(c.cache_creation_input_tokens for c in calls),
            "cache_read_input_tokens": sum(c.cache_read_input_tokens for c in calls),
            "output_tokens": sum(c.output_tokens for c in calls),
        }
        last = calls[-1] if calls else None
        text = next((b.text for b in reversed(last.blocks) if isinstance(b, Text)), "") if last else ""
        steps = query.steps[turn]
        main = sum(1 for s in steps if isinstance(s, Call) and s.is_main)
        turns = num_turns(main, sum(1 for s in steps if isinstance(s, ToolResult) and s.parent_tool_use_id is None),
                          sum(1 for s in steps if isinstance(s, Compaction) and s.trigger == "auto"))
        command = query.prompt.strip()[1:].split(" ")[0] if query.prompt.startswith("/") and not main else None
        frame = Frame(result_data(
            session_id=self.session_id, uuid=self.uuid(), usage=usage,
            model_usage={m: dict(u) for m, u in self.model_usage.items()},
            since_last={m: dict(u) for m, u in self.since_last.items()}, total_cost=self.total_cost, turns=turns,
            text=text, stop_reason=last.stop_reason if last and command is None else None, local_command=command,
            index=self.results, subagents=subagent_stats(query.steps[:turn.stop])))
        notified = next((s for s in reversed(steps) if isinstance(s, TaskNotification)), None)
        if notified is not None:  # a turn the notification started says so (recorded, 2.1.332)
            frame.data["origin"] = {"kind": "task-notification", "producer": "session-task",
                                    "runId": f"run-{notified.task_id}"}
        self.results += 1
        self.since_last.clear()
        self.observe(frame, label, "result")
        return frame

    # steps -----------------------------------------------------------------------------------------------------

    def script(self, query_index: int, query: Query | None = None) -> Script:
        """The frames of query ``query_index`` (0-based) of the session, or of ``query`` given as that query."""
        if query is None:
            query = self.session.queries[query_index]
        script = Script(query_index, query.prompt)
        for _, frames in self.walk(query_index, query):
            script.frames.extend(frames)
        return script

    def walk(self, query_index: int, query: Query) -> Iterator[tuple[Step | None, list[Frame]]]:
        """The frames of ``query`` (query ``query_index``, 0-based) step by step: ``(None, [running, init])`` (the
        session's state, host-only), then ``(step, its frames)`` for each step, then ``(None, [result])`` (the
        ``idle`` after it is the transport's to write: a script ends with its result).
        A command that opens the query writes its init inside its own frames: ``/clear`` after its reset,
        ``/compact`` after its status frames (then the first step carries ``running``). Other formats (the transcript,
        the statusline payload) walk a session this way to close the same observation points in the same order."""
        q = f"q{query_index + 1}"
        main_calls: list[Call] = []
        # A command that opens the query (/clear, /compact) writes its init once its own work is under way.
        first = query.steps[0] if query.steps else None
        clears = isinstance(first, ConversationReset) or (isinstance(first, Compaction) and first.trigger == "manual")
        self.model = self.session.model_at(query_index)
        running = session_state(self, "running")
        if not clears:
            yield None, [running, self.init(self.model)]
        sub_counts: dict[str, int] = {}
        self.subagents = query_subagents(query)
        notified = [i for i, s in enumerate(query.steps) if isinstance(s, TaskNotification)]
        turn, self.turn_calls = 0, 0
        for index, step in enumerate(query.steps):
            frames = self.step(step, q, main_calls, sub_counts)
            if clears:  # after a reset's frames, after a compaction's status frames
                at = next((i for i, f in enumerate(frames) if f.data.get("subtype") not in ("status", None)),
                          len(frames)) if isinstance(step, Compaction) else len(frames)
                frames[at:at] = [self.init(self.model)]
                frames.insert(0, running)
                clears = False
            yield step, frames
            if isinstance(step, ConversationReset):
                main_calls.clear()
            elif (isinstance(step, Call) and step.is_main and step.stop_reason == "end_turn"
                  and any(i > index for i in notified)):
                # The main turn ends while a background subagent runs: its result now, the notification's turn later.
                yield None, [self.result(query, main_calls, f"{q} turn {turn + 1} result",
                                         slice(turn, index + 1))]
                self.turn_calls += len(main_calls)
                main_calls.clear()
                turn = index + 1
        yield None, [self.result(query, main_calls, f"{q} result", slice(turn, None))]

    def step(self, step: Step, q: str, main_calls: list[Call], sub_counts: dict[str, int]) -> list[Frame]:
        """The frames of ``step``, in order."""
        if isinstance(step, ToolResult) and step.tool_use_id in self.background - self.launched:
            return [launch(self, step)]
        if isinstance(step, TaskNotification):
            return task_end(self, step.tool_use_id, sub_counts.get(step.tool_use_id, 0), step)
        if isinstance(step, ToolResult):  # the truth moves with calls, compactions and resets only
            ended = (task_end(self, step.tool_use_id, sub_counts.get(step.tool_use_id, 0))
                     if step.parent_tool_use_id is None and step.tool_use_id in self.tasks else [])
            return [*ended, self.tool_result(step)]
        self.truth = self.session.truth_after(step, self.truth)
        if isinstance(step, Call):
            self.add_model_usage(step)
            if step.is_main:
                main_calls.append(step)
                label, kind = f"{q} call {len(main_calls) + self.turn_calls}", "call"
            else:
                n = sub_counts[step.parent_tool_use_id or ""] = sub_counts.get(step.parent_tool_use_id or "", 0) + 1
                label, kind = subagent_label(q, self.subagents.get(step.parent_tool_use_id or ""), n), "subagent"
            if not step.is_main:
                self.task_tokens[step.parent_tool_use_id or ""] = step.prompt + step.output_tokens
            return self.call_frames(step, label, kind)
        elif isinstance(step, SubagentStart):
            return task_start(self, step)
        elif isinstance(step, Compaction):
            return self.compaction(step, q, not main_calls)
        elif isinstance(step, SubagentCompaction):  # in the subagent's own transcript: no frame (recorded)
            if step.summary is not None:
                self.add_model_usage(step.summary)  # counted in modelUsage and the cost (recorded)
            return []
        elif isinstance(step, ConversationReset):
            conversation = self.uuid()
            frame = Frame({"type": "conversation_reset", "new_conversation_id": conversation, "uuid": conversation,
                           "trigger": "clear", "user_message_uuid": self.uuid(), "session_id": self.session_id})
            tasks = self.system("background_tasks_changed", tasks=[])
            self.session_id = step.new_session_id
            self.model_usage.clear()
            self.since_last.clear()
            self.total_cost = 0.0
            self.calls_since, self.kept, self.tail = 0, [], None
            self.observe(frame, f"{q} reset", "reset")
            return [frame, tasks]
        return []


def render(session: Session, *, include_partial_messages: bool = False, forward_subagent_text: bool = False,
           cwd: str = "/home/dev/project", cli_version: str | None = None) -> list[Script]:
    """Render ``session`` as the stream-json the CLI writes: one :class:`Script` per query.

    Deterministic: the same session renders to the same frames, uuids included. ``cli_version`` is the Claude Code
    the rendering stands for (:func:`cli_version_rendered`).
    """
    renderer = Renderer(session, include_partial_messages, forward_subagent_text, cwd, cli_version)
    return [renderer.script(i) for i in range(len(session.queries))]


def render_stream(session: Session, *, queries: Iterable[Query] | None = None, include_partial_messages: bool = False,
                  forward_subagent_text: bool = False, cwd: str = "/home/dev/project") -> Iterator[Script]:
    """:func:`render`, one query at a time: each :class:`Script` is made when it is asked for, so a caller that
    checks it and lets it go (:func:`ctxsim.check.run_tracker_parsed` takes any iterable) holds one query's frames
    at a time, not the whole session's. The same frames as :func:`render`.

    ``queries`` (an iterable, e.g. a generator over :meth:`ctxsim.world.SessionBuilder.take`) renders those queries
    in order, in ``session``'s world, instead of ``session.queries``: a session too long to hold is built, rendered
    and checked a query at a time."""
    renderer = Renderer(session, include_partial_messages, forward_subagent_text, cwd)
    given = enumerate(session.queries if queries is None else queries)
    return (renderer.script(i, query) for i, query in given)


