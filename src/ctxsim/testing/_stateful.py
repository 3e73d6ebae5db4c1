"""A Hypothesis state machine that drives a tracker one event at a time and compares it with the truth.

Each rule adds one thing to a growing session (a main call, a subagent call, a cache expiry, a compaction, a
new session) or replays the stream badly (a duplicated block, a message stripped of its usage); after every rule
the tracker's estimate must lie in the truth band. Frames are rendered by :mod:`ctxsim.wire` and parsed by the
SDK's own ``parse_message``: Hypothesis rules cannot be async (HypothesisWorks/hypothesis#4107), so the machine
uses the SDK's parser directly rather than its client.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ..check import Point
from ..sdk import client_message
from ..trackers import TrackerFactory, feeding
from ..wire import Frame, Observation, Renderer
from ..world import Call, Query, Session, SessionBuilder, SubagentStart, Truth

__all__ = ["tracker_state_machine"]


def tracker_state_machine(make_tracker: TrackerFactory, *, tolerance: int = 0, window: int = 200_000,
                          baseline: int = 12_000) -> type[RuleBasedStateMachine]:
    """A ``RuleBasedStateMachine`` class checking trackers from ``make_tracker`` after every rule.

    Use it as Hypothesis documents: ``TestMyTracker = tracker_state_machine(MyTracker).TestCase``.
    """

    class TrackerMachine(RuleBasedStateMachine):
        """Emit call, duplicate, drop cache read, strip usage, compact, subagent, restart."""

        def __init__(self) -> None:
            super().__init__()
            self.sessions = 0
            self.tracker = make_tracker()
            self.frames = feeding(self.tracker).fed == "frames"
            """Whether the tracker is fed each message's stream-json line (:func:`ctxsim.trackers.feeding`)."""
            self._new_session()

        # plumbing ------------------------------------------------------------------------------------------------

        def _new_session(self) -> None:
            """A new session id, as a restart loop's next session has (``reset()`` is called where it exists)."""
            self.sessions += 1
            self.builder = SessionBuilder(seed=self.sessions, window=window, baseline=baseline,
                                          name="state machine")
            self.builder.query("start")
            stub = Session(self.builder.session_id or "", (), window=window, baseline=baseline,
                           seed=self.sessions)
            self.renderer = Renderer(stub, include_partial_messages=False, forward_subagent_text=False,
                                      cwd="/home/dev/project")
            reset = getattr(self.tracker, "reset", None)
            if self.sessions > 1 and callable(reset):
                reset()
            self.truth: Truth | None = None
            self.taken = 0
            self.query_calls = 0
            self.last_kind = "call"
            self.main_calls: list[Call] = []
            self.subagent: str | None = None
            self.last_assistant: list[dict[str, Any]] = []
            self.feed(self.renderer.init(self.builder.model))

        def feed(self, frame: Frame | dict[str, Any]) -> None:
            data = frame.data if isinstance(frame, Frame) else frame
            message = client_message(data)
            if message is None:
                return
            if self.frames:
                getattr(self.tracker, "observe_frame")(message, data)  # noqa: B009 (fed frames: it has one)
            else:
                self.tracker.observe(message)

        def play_new_steps(self) -> None:
            steps = self.builder.pending
            for step in steps[self.taken:]:
                frames = list(self.renderer.step(step, "q1", self.main_calls, {}))
                assistants = [f.data for f in frames if f.data.get("type") == "assistant"]
                if assistants:
                    self.last_assistant = assistants
                for frame in frames:
                    self.feed(frame)
                    if frame.observation is not None:
                        self.last_kind = frame.observation.kind
            self.taken = len(steps)
            self.truth = self.renderer.truth

        # rules ---------------------------------------------------------------------------------------------------

        @rule(output=st.integers(1, 4_000), results=st.lists(st.integers(0, 20_000), max_size=3),
              thinking=st.booleans())
        def emit_call(self, output: int, results: list[int], thinking: bool) -> None:
            if self.subagent is not None:
                self.builder.end_subagent(result_tokens=600)
                self.subagent = None
            blocks = ("thinking",) * thinking + ("text",) + ("tool_use",) * len(results)
            self.builder.call(output=output, blocks=blocks, results=results)
            self.play_new_steps()

        @precondition(lambda self: bool(self.last_assistant))
        @rule(new_uuid=st.booleans())
        def duplicate(self, new_uuid: bool) -> None:
            for data in self.last_assistant:
                again = copy.deepcopy(data)
                if new_uuid:
                    again["uuid"] = self.renderer.uuid()
                self.feed(again)

        @precondition(lambda self: bool(self.main_calls))
        @rule(keep_prefix=st.sampled_from([0, baseline]))
        def drop_cache_read(self, keep_prefix: int) -> None:
            self.builder.expire_cache(keep_prefix=keep_prefix)
            self.builder.call()
            self.play_new_steps()

        @precondition(lambda self: bool(self.last_assistant))
        @rule(how=st.sampled_from(["none", "absent", "zeros"]))
        def strip_usage(self, how: str) -> None:
            stripped = copy.deepcopy(self.last_assistant[-1])
            stripped["uuid"] = self.renderer.uuid()
            message = stripped["message"]
            if how == "none":
                message["usage"] = None
            elif how == "absent":
                message.pop("usage")
            else:
                message["model"] = "<synthetic>"
                message["id"] = f"synthetic-{stripped['uuid']}"
                message["usage"] = dict.fromkeys(message["usage"], 0)
            self.feed(stripped)

        @precondition(lambda self: bool(self.main_calls))
        @rule(fraction=st.floats(0.05, 0.5))
        def compact(self, fraction: float) -> None:
            assert self.truth is not None
            if self.subagent is not None:  # the main chain compacts once the foreground subagent has answered
                self.builder.end_subagent(result_tokens=600)
                self.subagent = None
            self.builder.compact(max(1_000, int(self.truth.next_request * fraction)))
            self.play_new_steps()

        @precondition(lambda self: bool(self.main_calls) and self.subagent is None)
        @rule(reads=st.integers(0, 150_000))
        def subagent_call(self, reads: int) -> None:
            self.builder.start_subagent("explore")
            start = self.builder.pending[-1]
            assert isinstance(start, SubagentStart), start
            self.subagent = start.tool_use_id
            self.builder.call(input=3, cache_creation=2_000, cache_read=reads, blocks=("tool_use",),
                              results=[500])
            self.play_new_steps()

        @rule()
        def end_query(self) -> None:
            """The query ends: its result, then the next query's ``system/init``."""
            calls = self.main_calls[self.query_calls:]
            self.feed(self.renderer.result(Query("Continue with the task.", tuple(calls)), calls, "result"))
            self.last_kind = "result"
            self.query_calls = len(self.main_calls)
            self.feed(self.renderer.init(self.builder.model))

        @rule()
        def restart(self) -> None:
            self._new_session()

        # the check -----------------------------------------------------------------------------------------------

        @invariant()
        def tracks_the_truth(self) -> None:
            judged_at = getattr(self.tracker, "judged_at", None)
            if judged_at is not None and self.last_kind not in judged_at:
                return
            estimate = self.tracker.context_tokens()
            truth = self.truth
            if truth is None:
                assert estimate is None or estimate <= baseline + tolerance, (
                    f"ctxsim: a new session has no call yet, but the tracker says {estimate:,} tokens")
                return
            point = Point(Observation(0, "state machine", self.last_kind, truth, window), estimate, tolerance)
            if estimate is None:
                assert point.ok, f"ctxsim: the tracker does not know the context; truth {truth.prompt:,}"
                return
            also = " (or, estimated, {:,}..{:,})".format(*truth.estimated) if truth.estimated else ""
            assert point.ok, (
                f"ctxsim: the tracker says {estimate:,} tokens; the truth is {truth.prompt:,}..{truth.next_request:,}"
                f"{also} (tolerance ±{tolerance:,})")

    label = getattr(make_tracker, "__name__", "tracker")
    TrackerMachine.__name__ = TrackerMachine.__qualname__ = f"TrackerMachine[{label}]"
    return TrackerMachine
