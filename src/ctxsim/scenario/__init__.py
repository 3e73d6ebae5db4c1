"""The YAML scenario format: a session whose true context is known, and what trackers must do on it.

A scenario file describes one Claude Code session compactly (one line per API call) or names a recorded stream,
and says what is expected: the reference tracker tracks it, the named trackers of :mod:`ctxsim.trackers` fail on
it, a pressure threshold fires where the truth crosses it. Or it describes a *task* that the reactive fake agent
(:mod:`ctxsim.agent`) works through under a restart loop, and says how many restarts the reference loop makes,
which checkpoint fallback it takes at each, what happens to the steps, and which catalogued buggy loops
(:data:`ctxsim.loops.CATALOGUE`) the loop checks must catch (:func:`ctxsim.runner.run_task` runs it).
It is read with PyYAML's *safe* loader only (no tags,
no anchors or aliases, no duplicate keys), validated strictly against the schema (below), and built into a
:class:`ctxsim.world.Session` with :class:`~ctxsim.world.SessionBuilder`. Every error is a :class:`ScenarioError`
whose message reads ``ctxsim: <file>:<line>: <key path>: <what is wrong>``, e.g.
``ctxsim: scenarios/x.yaml:14: queries[0].steps[2].call.cr: expected a non-negative integer, got -5``.

Example::

    name: seed000-cache-read-719
    source: "mala design 000: 719% reported when actual usage was ~3%"
    description: one or two sentences on the bug
    world: {model: claude-sonnet-4-5, window: 200000, baseline: 12000, seed: 0}
    stream: {partial: false}
    queries:
      - prompt: "Run the tests"
        steps:
          - call: {in: 3, cc: 500, cr: 20000, out: 159, blocks: [thinking, text, tool_use], results: [1500]}
          - call: {prompt: 24000, out: 40}
          - call: {}
          - repeat: {times: 240, call: {in: 3, cc: 20, cr: 5990, out: 20}}
          - expire_cache: {keep_prefix: 0}
          - compact: {post: 20000}
          - subagent: {description: explore, calls: [{results: [30000]}, {}], result: 600}
          - reset: {}
    expect:
      tolerance: 0
      reference: pass
      fail: [mala-cache-read-pressure]
      pass: [arbiter-msgid]
      threshold: {at: 0.1, fires: [q1 call 1, q1 compaction]}   # 20,000 tokens: crossed twice

A recorded session instead of ``queries``::

    name: compaction-in-the-wild
    stream: recordings/session.jsonl     # relative to this file; stream-json or a Claude Code transcript
    world: {window: 200000}
    expect:
      fail: [arbiter-msgid]

A task for a restart loop instead (every number under ``expect`` worked out by hand from the sizes: after n
one-step turns the context is 12,000 + 200n + 100(2n - 1) + 16,000n, first over 90% of 200,000 at n = 11; no step
leaves a trace in the workspace, so only a checkpoint tells a new session what was done)::

    name: twenty-steps
    world: {window: 200000, baseline: 12000}
    task:
      steps: [{times: 20, tokens: 16000, traced: false}]   # or steps: 20 with tokens_per_step: 16000
      prompt_tokens: 200
      output_tokens: 100
      policy: {threshold: 0.9}           # or {zones: {mask: 0.7, wind_down: 0.9}}, and reserve: TOKENS
      checkpoints: [truncated]           # the first checkpoint cut off, later ones well formed
    expect:
      restarts: 2
      checkpoint: [truncated, block]
      steps: {done_once: 14, redone: 6, skipped: 0, per_session: [11, 11, 4]}
      loop:
        fail: [keep-tracker, restart-on-checkpoint]
        pass: [seed003]

A loaded scenario is a :class:`Scenario` of one of two kinds: a :class:`SessionScenario` (queries or a recorded
stream; :func:`ctxsim.runner.run_scenario` runs a tracker over it) or a :class:`TaskScenario` (a ``task``;
:func:`ctxsim.runner.run_task` runs a restart loop on it). Each carries only its own fields.

:func:`load_scenario` reads a file, :func:`parse_scenario` a string, :func:`scenario_yaml` writes a session back as
scenario text (:func:`ctxsim.importer.write_import`, ``ctxsim import``, turns recordings into scenarios).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face
from . import _schema

if TYPE_CHECKING:
    from ._dump import flow as flow, scenario_yaml as scenario_yaml, task_yaml as task_yaml
    from ._load import (
        Scenario as Scenario,
        ScenarioError as ScenarioError,
        SessionScenario as SessionScenario,
        TaskScenario as TaskScenario,
        load_scenario as load_scenario,
        parse_scenario as parse_scenario,
    )
    from ._schema import reference as reference
    from ._sections import (
        ExpectedFailure as ExpectedFailure,
        FaultSpec as FaultSpec,
        LoopExpectations as LoopExpectations,
        TaskSpec as TaskSpec,
        ThresholdSpec as ThresholdSpec,
    )

__getattr__, __dir__ = lazy_face(globals(), stable=(
    "Scenario", "SessionScenario", "TaskScenario", "ScenarioError", "parse_scenario", "scenario_yaml", "reference"
))

__doc__ = (__doc__ or "") + _schema.reference()
