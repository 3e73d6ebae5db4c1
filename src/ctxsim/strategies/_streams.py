"""Message streams: a generated session rendered as the CLI writes it and put through a fault plan, what a tracker
under test sees, and the scenario file that replays one (:func:`scenario_text`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

from ..faults import FaultPlan, apply
from ..wire import Script, render
from ..world import Session
from ._faults import fault_plans
from ._knobs import _BOOLEANS
from ._sessions import _GeneratedSession, sessions

__all__ = ["MessageStream", "message_streams", "scenario_text"]


@dataclass(frozen=True, eq=False)
class MessageStream:
    """A session rendered as the CLI writes it and put through a fault plan: what a tracker under test sees.

    Play it with ``ctxsim.check.run_tracker(tracker, stream.session, scripts=stream.scripts)`` (the real client)
    or ``run_tracker_parsed(tracker, stream.session, stream.scripts)``. Prints as its scenario file.
    """

    session: Session
    plan: FaultPlan
    """The faults applied; its seed is the session's, as a scenario's ``world.seed`` seeds its faults."""
    partial: bool
    """Rendered with ``include_partial_messages`` (``stream_event`` frames)."""
    scripts: tuple[Script, ...]

    def __repr__(self) -> str:
        if isinstance(self.session, _GeneratedSession) and self.session.described:
            return scenario_text(self)
        name = self.session.name or self.session.session_id
        return f"MessageStream(session={name!r}, partial={self.partial}, faults={self.plan.spec()!r})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


def _stream(session: Session, plan: FaultPlan, partial: bool) -> MessageStream:
    plan = FaultPlan(plan.faults, session.seed)
    scripts = apply(plan, render(session, include_partial_messages=partial))
    return MessageStream(session, plan, partial, tuple(scripts))


def message_streams(
    *,
    session: Session | SearchStrategy[Session] | None = None,
    faults: FaultPlan | SearchStrategy[FaultPlan] | None = None,
    partial: bool | SearchStrategy[bool] = _BOOLEANS,
) -> SearchStrategy[MessageStream]:
    """Sessions (default :func:`sessions`) rendered with or without ``partial`` messages and faulted.

    ``faults`` is a plan or a strategy of plans (default :func:`fault_plans`); the plan's seed is replaced by the
    session's seed, so the printed scenario (whose ``world.seed`` seeds its ``faults``) replays the same stream.
    """
    sessions_ = sessions() if session is None else session if isinstance(session, SearchStrategy) else st.just(
        session)
    plans = fault_plans() if faults is None else faults if isinstance(faults, SearchStrategy) else st.just(faults)
    partials = partial if isinstance(partial, SearchStrategy) else st.just(partial)
    return st.builds(_stream, sessions_, plans, partials)


def scenario_text(value: Session | MessageStream, *, source: str = "ctxsim.strategies", comment: str = "") -> str:
    """The scenario file that rebuilds ``value``, a session or stream drawn from these strategies (``source`` and
    ``comment``: the file's ``source`` and a header comment above the generated one)."""
    stream = value if isinstance(value, MessageStream) else None
    session = stream.session if stream is not None else value
    if not isinstance(session, _GeneratedSession) or not session.described:
        raise InvalidArgument(f"ctxsim: scenario_text() takes a session or stream drawn from ctxsim.strategies "
                              f"(unchanged), got {type(value).__name__}")
    if stream is None:
        return session.text(source=source, comment=comment)
    return session.text(source=source, comment=comment, partial=stream.partial, faults=stream.plan.spec())
