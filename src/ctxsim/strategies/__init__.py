"""Hypothesis strategies: generated sessions, rendered and faulted message streams, and fault plans.

A property test over a tracker::

    from hypothesis import given
    from ctxsim.check import run_tracker_parsed
    from ctxsim.strategies import message_streams

    @given(message_streams())
    def test_my_tracker_never_raises(stream):
        report = run_tracker_parsed(MyTracker(), stream.session, stream.scripts)
        assert report.crash is None, report.crash

Every knob is keyword-only and takes a value or a strategy. Sessions are built with
:class:`ctxsim.world.SessionBuilder` (realistic cache splits, Claude Code's autocompaction when the context nears
its threshold) and dressed in faker text of the true size: test logs for ``Bash`` results, code for ``Read``,
grep hits for ``Grep``, prose for answers and user prompts, so char-based estimators see realistic text.

Drawn values shrink towards one query of one text-only call, no subagent, compaction, expiry, reset or fault, and
print as a scenario file (``repr``, and Hypothesis' falsifying-example output): paste it into ``scenarios/`` and
:mod:`ctxsim.scenario` rebuilds the same session (every call with its exact ``in``/``cc``/``cr``), renders it the
same way and applies the same faults (seeded by ``world.seed``). Only the text differs: the scenario builder's
filler has the same length as the faker text. :func:`scenario_text` gives the same text as a string.

Settings profiles ``ctx-fast``, ``ctx-ci`` and ``ctx-fuzz`` are registered by :func:`register_profiles`, never
on import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._database import (
        COMMAND_TIMEOUT as COMMAND_TIMEOUT,
        CONNECT_TIMEOUT as CONNECT_TIMEOUT,
        DATABASE_ENV as DATABASE_ENV,
        DatabaseUnreachable as DatabaseUnreachable,
        example_database as example_database,
    )
    from ._faults import fault_plans as fault_plans
    from ._profiles import register_profiles as register_profiles
    from ._sessions import sessions as sessions
    from ._streams import (
        MessageStream as MessageStream,
        message_streams as message_streams,
        scenario_text as scenario_text,
    )
    from ._tasks import WINDOWS as WINDOWS, GeneratedTask as GeneratedTask, task_scenarios as task_scenarios

__getattr__, __dir__ = lazy_face(globals(), stable=(
    "sessions", "message_streams", "MessageStream", "fault_plans", "task_scenarios", "register_profiles",
    "example_database", "DatabaseUnreachable"
))
