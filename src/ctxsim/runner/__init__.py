"""A tracker's run over a scenario, as people read it: the timeline, where thresholds fire, and the verdict.

:func:`run_scenario` plays a :class:`~ctxsim.scenario.SessionScenario` (rendered or recorded, faults applied) through
the real ``ClaudeSDKClient`` with :func:`ctxsim.check.run_tracker`, and compares the tracker's threshold firings
with the truth's (``expect.threshold``). A :class:`ScenarioRun` prints as the timeline table with a threshold
column; :func:`explain` is the text a failing scenario shows (``pytest --ctx-scenarios``, ``ctxsim run``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._gc import freeze_imports as freeze_imports, thaw_imports as thaw_imports
    from ._plan import (
        Judgement as Judgement,
        TrackerKind as TrackerKind,
        Verdict as Verdict,
        judgement as judgement,
        judgements as judgements,
        named_apart as named_apart,
        served as served,
        tracker_kind as tracker_kind,
    )
    from ._scenario import (
        MANY_POINTS as MANY_POINTS,
        Failure as Failure,
        ScenarioRun as ScenarioRun,
        ThresholdResult as ThresholdResult,
        corpus_verdicts as corpus_verdicts,
        explain as explain,
        likely_bugs as likely_bugs,
        percent as percent,
        run_scenario as run_scenario,
        threshold_results as threshold_results,
        verdict as verdict,
    )
    from ._task import (
        REFERENCE_LOOP as REFERENCE_LOOP,
        Problem as Problem,
        TaskRun as TaskRun,
        agent_timeline as agent_timeline,
        corpus_loop_verdicts as corpus_loop_verdicts,
        describe_task as describe_task,
        explain_task as explain_task,
        reference_loop as reference_loop,
        run_task as run_task,
    )
    from ._verdicts import (
        Tally as Tally,
        verdicts_json as verdicts_json,
        verdicts_junit as verdicts_junit,
        verdicts_markdown as verdicts_markdown,
    )

__getattr__, __dir__ = lazy_face(globals())
