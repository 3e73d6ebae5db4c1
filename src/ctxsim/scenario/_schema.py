"""The scenario schema: every key a scenario file may hold, its type, default and meaning, in one place.

:mod:`ctxsim.scenario` takes the keys each mapping accepts from here (so an unknown key is rejected with the list
below), its documentation is :func:`reference` (appended to that module's docstring), and ``ctxsim scenario keys``
prints the same text. Checking values (types, ranges, cross-key rules) stays in the loader, next to the code that
uses them; this module states them for people.

This module imports nothing heavy: the CLI and the docs read it without YAML or the SDK.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

__all__ = ["SECTIONS", "Key", "Section", "keys", "reference"]

SESSION = "session"
"""The scope of keys that apply to a simulated or recorded session (``queries``, ``stream``), not to a ``task``."""
TASK = "task"
"""The scope of keys that apply to a ``task`` scenario only."""


@dataclass(frozen=True)
class Key:
    """One key of a scenario mapping."""

    name: str
    kind: str
    """Its type, as a reader would say it (``integer >= 0``, ``string``, ``list of ...``)."""
    doc: str
    """What it means."""
    default: str = ""
    """What an absent key means, in words; empty when the key is required or has no default."""
    required: bool = False
    scope: str = ""
    """Empty when the key applies to every scenario, else :data:`SESSION` or :data:`TASK`: the loader rejects
    the key in the other kind of scenario."""


@dataclass(frozen=True)
class Section:
    """A mapping of the scenario format: where it appears, what it is, and its keys."""

    path: str
    """Where it appears, as errors spell key paths (``world``, ``queries[].steps[].call``)."""
    doc: str
    keys: tuple[Key, ...]
    exactly_one: bool = False
    """True when the mapping holds exactly one of its keys (a step)."""


_COUNT = "integer >= 0"

SECTIONS: dict[str, Section] = {s.path: s for s in (
    Section("", "A scenario file is one YAML mapping. Give one of ``queries`` (a simulated session), a recorded "
                "``stream``, or a ``task`` (a task the fake agent works through under a restart loop).", (
        Key("name", "string", "The scenario's name in reports and test ids.", "the file's stem"),
        Key("source", "string", "The public report, issue or design the numbers come from (shown with ``-v``)."),
        Key("description", "string", "One or two sentences on the bug."),
        Key("world", "mapping", "The model and window the session (or the task's sessions) run in (below)."),
        Key("stream", "string or mapping",
            "A recorded stream to play instead of ``queries``: a file name (below), or how to render the "
            "simulated session or the task's sessions (``{partial: true}``)."),
        Key("faults", "list", "Faults injected into the rendered stream, in order (below).", scope=SESSION),
        Key("queries", "non-empty list",
            "The simulated session: one item per ``client.query()``, each closed by one ``ResultMessage``. "
            "Required unless ``stream`` names a recording or a ``task`` is given."),
        Key("task", "mapping",
            "A task of N steps for the reactive fake agent (:mod:`ctxsim.agent`), worked through by a restart "
            "loop over the real SDK client: the reference loop (``ctxsim.reference.run_with_restarts``) must "
            "meet the expectations, and catalogued buggy loops must be caught (below)."),
        Key("expect", "mapping", "What trackers (or restart loops, for a task) must do (below).",
            "the reference must track it (for a task: keep every loop invariant)"),
    )),
    Section("world", "The world the session runs in; every key is optional.", (
        Key("model", "string", "The model name the stream carries.", "``claude-sonnet-4-5``"),
        Key("window", "integer > 0", "The context window in tokens.",
            "1,000,000 for a model with the ``[1m]`` suffix unless ``disable_1m_context``, else 200,000"),
        Key("disable_1m_context", "bool", "``CLAUDE_CODE_DISABLE_1M_CONTEXT``: a ``[1m]`` model runs in 200,000 "
                                          "(the model id and its display name keep the suffix).", "false"),
        Key("auto_compact_window", "integer > 0",
            "``CLAUDE_CODE_AUTO_COMPACT_WINDOW``: the window Claude Code compacts against (its autocompact point "
            "and ``get_context_usage``'s window); the statusline's ``context_window_size`` stays the model's.",
            "the model's window"),
        Key("auto_compact", "bool",
            "Claude Code's auto-compact (``autoCompactEnabled``; ``DISABLE_AUTO_COMPACT`` turns it off). Off, the "
            "point \"until auto-compact\" counts to is the window less the output reserve, with no buffer.", "true"),
        Key("autocompact_pct_override", "integer 1..100",
            "``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE``: recorded to move nothing (the recorded REPLs did not compact at "
            "93,003 nor 103,003 of 200,000 with 50), so the session compacts where it would without.", "none"),
        Key("max_context_tokens", "integer > 0",
            "``CLAUDE_CODE_MAX_CONTEXT_TOKENS``: recorded to move neither the statusline's window nor where the "
            "session compacts, so it moves nothing (a gauge that divides by it is wrong).", "none"),
        Key("subagent_compact_window", "integer >= 100000",
            "An agent definition's ``autoCompactWindow``: the window a subagent compacts against, when below the one "
            "it inherits (it never raises it; the main chain ignores it). Claude Code compacts a subagent past that "
            "window's autocompact point after any call but its first, before its next call (recorded): say so with "
            "a ``compact`` item in its ``calls``; a subagent call that compaction would precede is an error.",
            "the session's"),
        Key("idle_compaction", "bool",
            "``idleCompaction``: in the REPL, a conversation left idle (``queries[].idle``) compacts before its "
            "prompt cache expires when auto-compact is on and the context holds at least "
            "``idle_compact_min_tokens``.", "true"),
        Key("idle_compact_min_tokens", "integer > 0",
            "``CLAUDE_CODE_IDLE_COMPACT_MIN_TOKENS``: the least context an idle compaction needs (never under "
            "100,000).", "200,000"),
        Key("cli", "a Claude Code version (``2.1.337``) or a range (``>=2.1.337``, ``<2.1.337``)",
            "The Claude Code release the session renders as, where what the scenario shows depends on it: its "
            "statusline payload, transcript and ``get_context_usage`` follow that release's rules (a range: the CLI "
            "in use where it falls in it, else the newest recorded release that does). A range no recorded release "
            "falls in is an error.", "the CLI in use (``--ctx-cli``, else the installed one)"),
        Key("entrypoint", "``sdk`` or ``repl``",
            "How the session ran: the shape of its transcript (the Agent SDK's, or the interactive REPL's that "
            "statusline tools read).", "``sdk``"),
        Key("quantity", "``tokens``, ``percent_of_window``, ``percent_until_autocompact`` or ``tokens_left``",
            "What the gauge under test must show: its number is judged as that quantity of the window (or of the "
            "way to the autocompact point), and a gauge showing another fails with a verdict naming the "
            "confusion.", "``tokens``"),
        Key("baseline", _COUNT, "System prompt + tools a fresh conversation starts with.", "12,000"),
        Key("usage", "``additive`` or ``inclusive``",
            "How the provider reports usage: ``additive`` (the Anthropic API: input, cache creation and cache read "
            "are disjoint) or ``inclusive`` (a gateway whose ``input_tokens`` is the whole prompt, e.g. LiteLLM: "
            "the reference is told, and reads ``input_tokens`` alone).", "``additive``"),
        Key("max_output", "integer > 0", "The model's max output tokens (sets Claude Code's autocompact point).",
            "32,000"),
        Key("seed", "integer", "Ids, uuids and filler text derive from it; faults draw from it.", "0"),
    )),
    Section("stream", "How the session reaches the SDK. As a string, ``stream: FILE`` is ``stream: {file: FILE}``.", (
        Key("partial", "bool", "Render with ``include_partial_messages`` (``stream_event`` frames); for a task, "
                               "the loop's clients ask for them. Not with ``file``.", "false"),
        Key("file", "string",
            "A recorded stream, relative to the scenario file: the stream-json lines the CLI writes on stdout "
            "(one query per ``result``), or a Claude Code transcript JSONL (``~/.claude/projects/...``; assistant "
            "lines become assistant messages, ``isSidechain`` lines subagent messages, ``compact_boundary`` lines "
            "compaction boundaries; other line types are not part of the SDK stream and are dropped), or a capture "
            "as ctxsim records it (``{\"raw\": ...}`` lines, with the CLI's ``get_context_usage()`` after a "
            "query). The truth is *derived* from the recording by the API's rules, by a reader that shares no code "
            "with the reference: after each main-chain call, that call's ``input + cache_creation + cache_read`` "
            "(``input`` alone under ``world.usage: inclusive``; deduplicated by message id, ``<synthetic>`` and "
            "sidechain calls skipped) up to that plus its final output; after a compaction, the CLI's own figure "
            "where the capture carries it, else not knowable, with the band a tracker may answer (the summary plus "
            "the cached prefix .. plus the first call's whole prompt). ``world.window``, ``usage`` and ``seed`` "
            "apply to a recording; ``model``, ``baseline`` and ``max_output`` are refused."),
        Key("format", "``auto``, ``stream-json`` or ``transcript``", "The recording's format.",
            "``auto``: a transcript when its lines carry ``isSidechain`` or ``parentUuid``"),
    )),
    Section("queries[]", "One user query.", (
        Key("prompt", "string", "The user's message.", "``Continue with the task.``"),
        Key("prompt_tokens", _COUNT, "Tokens the prompt adds to the next derived call.", "about len(prompt) / 4"),
        Key("model", "string", "``/model`` before this query: its calls and every later one run on this model, and "
                               "the window (the statusline's denominator) and the autocompact point follow it.",
            "the model in force"),
        Key("idle", "bool",
            "The conversation was left idle before this query, past its prompt cache's lifetime: in the REPL it "
            "compacted while idle (trigger ``auto``, a 3,000-token summary) where ``world.idle_compaction`` says so, "
            "and the query starts with that compaction; otherwise the cache expired.", "false"),
        Key("steps", "list", "What happens in the query, in order: each step a mapping with exactly one key "
                             "(below).", "none"),
    )),
    Section("queries[].steps[]", "A step has exactly one of these keys.", (
        Key("call", "mapping", "One API call of the current chain (the main chain, or the subagent being "
                               "described)."),
        Key("repeat", "mapping", "The same call or steps several times."),
        Key("expire_cache", "mapping or empty", "The prompt cache expired (TTL, resume, microcompaction): the next "
                                                "call re-creates what it read."),
        Key("compact", "mapping", "Claude Code compacted the main chain."),
        Key("subagent", "mapping", "A main call starts a subagent (``Agent`` tool) whose calls run in their own "
                                   "context; its answer reaches the main chain."),
        Key("reset", "empty", "``/clear``: a new session id; the main context starts again from the baseline."),
    ), exactly_one=True),
    Section("call", "One API call. ``{}`` is a call derived entirely from growth: the previous prompt plus its "
                    "output plus everything added since, split as a real prompt cache would split it. A prompt is "
                    "1 token up to the window, and a cache read no larger than the window.", (
        Key("in", _COUNT, "Uncached input tokens. Give ``in``, ``cc`` and ``cr`` together (the exact usage) or "
                          "none of them."),
        Key("cc", _COUNT, "Cache creation tokens."),
        Key("cr", _COUNT, "Cache read tokens (at most the window)."),
        Key("prompt", "integer > 0", "The whole prompt, split by the builder (not with in/cc/cr).",
            "the previous prompt + its output + everything added since"),
        Key("out", _COUNT, "Final output tokens.", "120"),
        Key("blocks", "list of ``thinking``, ``text``, ``tool_use``", "The content blocks, in order.",
            "``text`` plus one ``tool_use`` per result"),
        Key("results", f"list of {_COUNT}", "Tokens of each tool result, one per ``tool_use`` block."),
        Key("model", "string", "The model of this call.", "world.model"),
        Key("id", "string", "The message id.", "derived from the seed"),
        Key("request_id", "string or false", "The request id; ``false`` for none.", "derived from the seed"),
        Key("text", "string", "What the model replies: the call's (first) text block, for agents that branch on "
                              "it (``TASK COMPLETE``, a ``<checkpoint>`` block). The usage is unchanged.",
            "filler text"),
    )),
    Section("repeat", "Several calls or steps. A scenario builds at most 20,000 calls in all.", (
        Key("times", "integer 1..10,000", "How many times.", required=True),
        Key("call", "mapping", "One call mapping to repeat (give ``call`` or ``steps``)."),
        Key("steps", "non-empty list", "Steps to repeat, in order."),
    )),
    Section("expire_cache", "An empty value or ``{}`` is fine.", (
        Key("keep_prefix", _COUNT, "Tokens still readable after the expiry.", "0"),
    )),
    Section("compact", "The main chain compacted (a ``compact_boundary``). Give ``post`` or ``context`` (or both): "
                       "a bug report quotes either. The truth after is ``context``.", (
        Key("post", _COUNT, "What the boundary's ``post_tokens`` says: the summary alone (Claude Code 2.1.330 "
                            "reported 2,672 where ``/context`` then showed 14,756).",
            "``context`` less the baseline"),
        Key("context", _COUNT, "What the context holds after: system prompt, tools and skills plus the summary "
                               "(what ``/context`` shows; at most the window).",
            "the baseline plus ``post`` (plus the command's 227 tokens for ``manual``)"),
        Key("pre", _COUNT, "Tokens before.", "the current context (plus 22 tokens the CLI counts more for ``auto``)"),
        Key("trigger", "``auto`` or ``manual``", "What triggered it.", "``auto``"),
        Key("preserved", "bool",
            "Whether it kept the last reply verbatim after the summary (``compactMetadata.preservedSegment``); "
            "right after it, Claude Code's statusline says all zeros when it did and null when not.",
            "as Claude Code decides: when two or more calls came before it"),
        Key("summary", "mapping ``{input, cache_creation, cache_read, output}``",
            "The summary request Claude Code made (counted in the cost and ``modelUsage``, shown in no frame).",
            "derived: the conversation and the summary instructions, read from the main chain's cache, answering "
            "``post``"),
        Key("rejected", "list of mappings ``{input, cache_creation, cache_read, output}``",
            "Summary requests made before it whose replies Claude Code refused (no ``<summary>`` in them: it asked "
            "again); each counted in the cost and ``modelUsage`` as the summary is.", "none"),
    )),
    Section("subagent", "Claude Code forwards only the tool uses of a subagent's calls, so a subagent call without "
                        "a ``tool_use`` block reaches no tracker (and has no observation point).", (
        Key("description", "string", "What the subagent is asked.", "``explore the code``"),
        Key("prompt_tokens", _COUNT, "The subagent's task prompt.", "400"),
        Key("out", _COUNT, "Output of the main call that starts it.", "150"),
        Key("calls", "non-empty list of call mappings",
            "The subagent's calls, in its own context; an item ``compact: {post: N}`` between two of them is "
            "Claude Code compacting the subagent (below).", required=True),
        Key("result", _COUNT, "Tokens of the answer the main chain gets.", "600"),
        Key("background", "boolean", "Run in the background (``run_in_background``): the ``Agent`` tool's result "
            "is the launch, at once, and a main call answers it; the subagent's end reaches the main chain as a "
            "``<task-notification>`` of ``result`` tokens that starts a turn of its own (with a result of its own): "
            "the calls after this step answer it.", "false"),
    )),
    Section("subagent.calls[].compact",
            "Claude Code compacted the subagent on its own (trigger ``auto``), before its next call: only after a "
            "call that is not its first, with the subagent past its autocompact point (``world."
            "subagent_compact_window``; recorded), else an error. The boundary and the summary are written in the "
            "subagent's transcript file only; the stream shows nothing and the main chain's context is unmoved. "
            "Give ``post`` or ``context``.", (
        Key("post", _COUNT, "What the subagent's boundary's ``postTokens`` says: the summary.",
            "``context`` less the baseline"),
        Key("context", _COUNT, "What the subagent holds after: its system prefix and the summary (its next call's "
                               "prompt starts there).", "the baseline plus ``post``"),
        Key("pre", _COUNT, "Tokens before.", "what the subagent holds (plus 22 tokens the CLI counts more)"),
        Key("summary", "mapping ``{input, cache_creation, cache_read, output}``",
            "The summary request, asked with the subagent's system prompt (counted in the cost and ``modelUsage``, "
            "shown in no frame).", "derived from the subagent's cache"),
    )),
    Section("reset", "Takes no keys: write ``reset:`` or ``reset: {}``.", ()),
    Section("faults[]", "Each item names a fault of :mod:`ctxsim.faults`: ``- NAME`` or ``- NAME: {PARAM: VALUE}``. "
                        "The faults transform the rendered (or recorded) stream in order, seeded by world.seed; "
                        "unknown names and parameters are errors.", ()),
    Section("task", "A task for the fake agent (:class:`ctxsim.agent.Task`); ``world`` gives its window, baseline, "
                    "model and seed. A work turn of one step adds ``prompt_tokens + 2 x output_tokens + the step's "
                    "tokens`` to the context: after n one-step turns of a fresh session, the last call's prompt is "
                    "``baseline + n x prompt_tokens + (2n - 1) x output_tokens + the n steps' tokens``. The loop "
                    "judges the context at the end of each turn (the last call's prompt; with "
                    "``stream: {partial: true}`` the reference tracker adds that call's output).", (
        Key("steps", "integer 1..1,000, or a non-empty list",
            "How many steps (each of ``tokens_per_step``), or each step in order: an integer (its tokens), "
            "``{tokens: N, times: K}`` (K steps alike) or ``{id: NAME, tokens: N}``. Steps are named ``s01``, "
            "``s02``, ... unless given an ``id``.", required=True),
        Key("tokens_per_step", _COUNT, "Tokens each step's tool result adds, when ``steps`` is a number.",
            "required with a number of steps"),
        Key("steps_per_turn", "integer >= 1", "Steps the agent performs per turn.", "1"),
        Key("prompt_tokens", _COUNT, "Context each user prompt takes (task, continuation, continue, checkpoint).",
            "about len(prompt) / 4"),
        Key("output_tokens", "integer >= 1", "Output of each work call (the tool call, the closing reply).", "100"),
        Key("policy", "mapping", "When the loop restarts (below).", "``{threshold: 0.9}``"),
        Key("checkpoints", "degradation name, list, or mapping",
            "How the agent answers each checkpoint request (:data:`ctxsim.agent.DEGRADATIONS`): one name for "
            "every restart, a list (the n-th restart gets the n-th, later ones ``well_formed``), or a mapping "
            "from restart number (1-based) to name.", "``well_formed``"),
        Key("max_restarts", _COUNT, "The loop's bound on restarts.", "10"),
        Key("autocompact_at", "integer", "Claude Code's autocompact: a request whose prompt would reach this many "
                                         "tokens is preceded by a compaction (a ``compact_boundary``), after which "
                                         "the context is the baseline plus ``summary_tokens``, plus what the turn "
                                         "added since its last call. Above the baseline + ``summary_tokens``, at "
                                         "most the window.", "none"),
        Key("summary_tokens", _COUNT, "What a compaction's summary takes (the boundary's ``post_tokens``).",
            "3000"),
        Key("unreadable_usage", "list of ``{session: S, turn: T}``",
            "Work turns (1-based, turn T of the S-th session the agent starts) whose calls carry a garbage prompt "
            "count (``\"n/a\"``, as a broken gateway sends): no tracker knows the context at their end.", "none"),
        Key("clear_tool_results", "list of ``{session: S, turn: T, tokens: N}``",
            "Before the first call of work turn T of the S-th session, old tool results worth N tokens are cleared "
            "from the context (at most down to the baseline) with no ``compact_boundary``: Claude Code's "
            "microcompaction and the API's context editing (``clear_tool_uses``). The context falls without a "
            "compaction, so nothing re-arms the policy; the agent's state is untouched.", "none"),
    )),
    Section("task.unreadable_usage[]", "One work turn whose usage is unreadable.", (
        Key("session", "integer >= 1", "The session, in the order the agent starts them.", required=True),
        Key("turn", "integer >= 1", "The work turn of that session (checkpoint requests not counted).",
            required=True),
    )),
    Section("task.clear_tool_results[]", "Old tool results cleared before one work turn.", (
        Key("session", "integer >= 1", "The session, in the order the agent starts them.", required=True),
        Key("turn", "integer >= 1", "The work turn of that session (checkpoint requests not counted).",
            required=True),
        Key("tokens", "integer >= 1", "Tokens cleared from the context.", required=True),
    )),
    Section("task.steps[]", "One step, or several alike. An integer item is ``{tokens: N}``.", (
        Key("tokens", _COUNT, "Tokens the step's tool result adds.", required=True),
        Key("times", "integer >= 1", "How many steps alike (not with ``id``).", "1"),
        Key("id", "string (letters, digits, ``_.-``)", "The step's id.", "``sNN`` by position"),
        Key("traced", "bool", "The step leaves its work in the workspace (an edited file), where an agent told to "
                              "inspect the work (the minimal continuation prompt, a cut-off checkpoint's note) "
                              "finds it; ``false`` for a step that leaves no trace (a deploy, a message sent): "
                              "only a checkpoint tells a new session it was done.", "true"),
    )),
    Section("task.policy", "The pressure policy (:class:`ctxsim.reference.PressurePolicy`), as fractions of the "
                           "effective window (``world.window - reserve``). Give ``threshold`` or ``zones``.", (
        Key("threshold", "number > 0", "Restart at or over this fraction (design 003: 0.9; 1.1 never fires).",
            "0.9"),
        Key("zones", "mapping", "Graduated zones (design 004): ``{mask: 0.7, wind_down: 0.9}``: continue below "
                                "``mask``, mask up to ``wind_down``, wind down the first time at or over it, "
                                "restart when it repeats. ``mask`` is optional."),
        Key("reserve", _COUNT, "Tokens kept out of the window (an autocompact buffer).", "0"),
        Key("max_tool_calls", "integer >= 1", "The tool-call fallback (design 002: 100): restart once a session has "
                                              "made this many tool calls (one a step), whatever its size.",
            "none"),
    )),
    Section("task.policy.zones", "Graduated zones, fractions of the effective window.", (
        Key("mask", "number", "Start of the masking zone (0 < mask < wind_down)."),
        Key("wind_down", "number > 0", "The threshold: wind down the first time, restart when it repeats.",
            required=True),
    )),
    Section("expect", "What trackers must do on the session; for a task, what the restart loops must do. Every "
                      "expected number is the author's, worked out from the task's sizes: the run is checked "
                      "against it, never the other way round.", (
        Key("tolerance", _COUNT, "Tokens a tracker may be off at any observation point.", "0", scope=SESSION),
        Key("reference", "``pass`` or ``fail``",
            "Whether the reference tracker tracks the session; for a task, whether the reference restart loop "
            "keeps every invariant of :mod:`ctxsim.loops`.", "``pass``"),
        Key("fail", "list of catalogued tracker names, each alone or as ``NAME: {first, direction, range}``",
            "Trackers of :mod:`ctxsim.trackers` that must fail on the session (each a test item), and how: the "
            "failure each must show (below). A tracker that raises, stalls or answers nothing at every point never "
            "meets an expected failure.", scope=SESSION),
        Key("pass", "list of catalogued tracker names", "Catalogued trackers that must track the session. A "
                                                          "tracker may appear in only one list, ``reference`` in "
                                                          "neither.", scope=SESSION),
        Key("ctx_tracker", "``pass``, ``fail`` or ``skip``",
            "What the tracker given with ``pytest --ctx-tracker`` (or ``ctxsim run --tracker``) must do; for a "
            "task, the reference loop runs with that tracker and must (``pass``) or must not (``fail``) meet "
            "every expectation.", "``pass`` when the reference must pass, else ``skip``"),
        Key("threshold", "mapping, or a list of them",
            "A pressure threshold and where it fires (below); a tracker must fire where the truth does.",
            scope=SESSION),
        Key("restarts", _COUNT, "How many restarts (new sessions after the first) the reference loop makes.",
            scope=TASK),
        Key("checkpoint", "list of fallback names",
            "The rule :func:`ctxsim.reference.extract_checkpoint` takes at each restart, in order (``block``, "
            "``last_block``, ``unclosed``, ``truncated``, ``empty_block``, ``whole_reply``, ``refusal``, "
            "``empty_reply``, ``prompt_too_long``, ``error``): one entry per restart.", scope=TASK),
        Key("steps", "mapping", "What happened to the task's steps (below).", scope=TASK),
        Key("loop", "mapping", "Catalogued restart loops (:data:`ctxsim.loops.CATALOGUE`) and what the loop checks "
                               "must say of them on this task (below).", scope=TASK),
    )),
    Section("expect.fail[]", "How a tracker of ``expect.fail`` fails (``- cache-read-only: {first: q2 call 1, "
                             "direction: under}``): every key given must hold of the run, and a crash never does.", (
        Key("first", "point label", "The first point outside tolerance (``q1 call 3``, ``q2 compaction``); for a "
                                    "tracker off only on thresholds, the point of its first wrong firing."),
        Key("direction", "``over``, ``under`` or ``none``",
            "Where the estimate lies at ``first``: above the truth band, below it, or no estimate (None) where the "
            "truth is knowable. A tracker off only on thresholds has direction ``over`` when it fires where the "
            "truth does not cross, ``under`` when it misses a crossing."),
        Key("range", "[low, high]", "The estimate at ``first`` lies within (the numbers of the bug report: "
                                    "``[1430000, 1440000]`` for '719% of 200k')."),
    )),
    Section("expect.threshold", "A ratio threshold, fired once per crossing: it fires at the first observation "
                                "point at or over ``at`` x window, and re-arms once the context falls below it "
                                "(a compaction, a reset). The truth fires on the prompt (what ``/context`` shows); "
                                "a tracker fires on its estimate, and may fire early only at points where the truth "
                                "band (prompt .. prompt + output, widened by the tolerance) reaches the threshold. "
                                "Each check is made at the points the tracker is judged at.", (
        Key("at", "number, 0 < at <= 1", "The threshold as a fraction of the window (0.9 is 90%).", required=True),
        Key("fires", "list of point labels",
            "Where the truth crosses, in order (``q1 call 7``, ``q2 compaction``): checked against the session, so "
            "the file says what it means. ``[]`` says it never fires."),
    )),
    Section("expect.steps", "Counts over the task's steps, from the fake agent's record of every step it performed.", (
        Key("done_once", _COUNT, "Steps performed exactly once."),
        Key("redone", _COUNT, "Performances beyond the first, over all steps (a degraded checkpoint costs them)."),
        Key("skipped", _COUNT, "Steps never performed."),
        Key("per_session", f"list of {_COUNT}",
            "Steps performed in each session, in order: one entry per session (restarts + 1). It pins where "
            "each restart happened."),
    )),
    Section("expect.loop", "Catalogued restart loops run on the task, each a test item.", (
        Key("fail", "list of catalogued loop names",
            "Buggy loops the loop checks must catch, each with the invariant the catalogue says it breaks."),
        Key("pass", "list of catalogued loop names", "Loops that must keep every invariant (``seed003``)."),
    )),
)}
"""Every section of the format, by path."""


def keys(path: str) -> tuple[str, ...]:
    """The keys the section at ``path`` accepts, in documentation order."""
    return tuple(k.name for k in SECTIONS[path].keys)


def _key_line(key: Key) -> str:
    notes = [key.kind]
    if key.required:
        notes.append("required")
    elif key.default:
        notes.append(f"default {key.default}")
    if key.scope:
        notes.append(f"{key.scope} scenarios only")
    return f"``{key.name}`` ({'; '.join(notes)}): {key.doc}"


def reference(width: int = 110) -> str:
    """Every section and key, as text (reStructuredText-compatible): the format's reference documentation."""
    out = ["Keys (integers are token counts unless said otherwise; YAML allows ``172_301``):", ""]
    for section in SECTIONS.values():
        out.append(f"``{section.path}``" if section.path else "Top level")
        out += textwrap.wrap(section.doc, width, initial_indent="    ", subsequent_indent="    ")
        for key in section.keys:
            out += textwrap.wrap(_key_line(key), width, initial_indent="    - ", subsequent_indent="      ")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
