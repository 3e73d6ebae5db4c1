"""One run's world as Claude Code shows it: :class:`Rendition`, every surface rendered once and shared.

A judgement reads the same session on up to three surfaces (the SDK stream a tracker is fed, the transcript files and
statusline payloads a statusline command reads) and at several places (the check, a command's harness, the likely
causes of a failure, ``ctxsim serve``'s truth, the fuzz). Each asks its :class:`Rendition`, which renders a surface
the first time it is asked for and hands every later asker the same value.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..faults import FaultPlan
    from ..wire import Observation, Script, TranscriptRender
    from ..world import Session

__all__ = ["Rendition"]

Shown = Literal["zero", "null"]
"""What a payload may be forced to say right after a compaction (:func:`ctxsim.wire.after_compaction`)."""
_PayloadKey = tuple[str | None, bool, Shown | None]

_LIVE: weakref.WeakValueDictionary[tuple[int, FaultPlan | None], Rendition] = weakref.WeakValueDictionary()
"""The renditions held by a run, by session and plan."""
_LOCK = threading.Lock()


def _key(session: Session, faults: FaultPlan | None) -> tuple[int, FaultPlan | None] | None:
    try:
        hash(faults)
    except TypeError:  # a plan with an unhashable parameter: not shared
        return None
    return id(session), faults


class Rendition:
    """``session`` under the fault plan ``faults`` as Claude Code shows it on each surface, each rendered once.

    :attr:`stream` is what the CLI writes for the SDK (``recorded()``'s scripts instead when given: a recorded
    stream), faults applied (``played()``'s scripts as they are when given: a stream made already, with ``faults``);
    :meth:`transcript` the transcript files with the plan's transcript form applied; and
    :meth:`payloads` the statusline payloads with what that transcript and the plan make Claude Code show in them
    (:func:`ctxsim.surfaces.apply_statusline`). A surface is rendered the first time it is asked for (for each
    Claude Code release and payload form asked) and the same value is returned after that: its consumers read it
    and never change it. While a rendition is held (by the run that made it), :meth:`of` hands it to anything else
    asking for the same session under the same plan (a statusline command's harness, told only the session and
    the plan), so no surface of a run is rendered twice.
    """

    def __init__(self, session: Session, faults: FaultPlan | None = None, *, partial: bool = False,
                 recorded: Callable[[], Sequence[Script]] | None = None,
                 played: Callable[[], Sequence[Script]] | None = None) -> None:
        self.session = session
        """The ground truth rendered."""
        self.faults = faults if faults is not None and faults.faults else None
        """The fault plan every surface is rendered with (None: none)."""
        self.partial = partial
        """Whether the stream carries partial messages (``include_partial_messages``)."""
        self._recorded = recorded
        self._played = played
        self._transcripts: dict[str | None, TranscriptRender] = {}
        self._payloads: dict[_PayloadKey, list[dict[str, Any]]] = {}
        key = _key(session, self.faults)
        if key is not None:
            with _LOCK:
                _LIVE[key] = self

    @classmethod
    def of(cls, session: Session, faults: FaultPlan | None = None) -> Rendition:
        """The rendition of ``session`` under ``faults`` a run holds (the same session object, an equal plan), else a
        new one."""
        key = _key(session, faults if faults is not None and faults.faults else None)
        with _LOCK:
            found = _LIVE.get(key) if key is not None else None
        return found if found is not None and found.session is session else cls(session, faults)

    @cached_property
    def unfaulted(self) -> tuple[Script, ...]:
        """The stream before the plan: the session rendered (or the recording's scripts)."""
        from ..wire import render

        return tuple(self._recorded() if self._recorded is not None else
                     render(self.session, include_partial_messages=self.partial))

    @cached_property
    def stream(self) -> tuple[Script, ...]:
        """The stream-json the SDK reads, one :class:`~ctxsim.wire.Script` per query, faults applied."""
        from ..faults import apply

        if self._played is not None:
            return tuple(self._played())
        return self.unfaulted if self.faults is None else tuple(apply(self.faults, self.unfaulted))

    @cached_property
    def observations(self) -> tuple[Observation, ...]:
        """Every observation point of :attr:`stream`, in order."""
        return tuple(f.observation for s in self.stream for f in s.frames if f.observation is not None)

    def transcript(self, cli_version: str | None = None) -> TranscriptRender:
        """The transcript files the CLI writes (as Claude Code ``cli_version`` writes them; default: the release the
        session renders as), with the plan's transcript form applied (:func:`ctxsim.faults.apply_transcript`)."""
        found = self._transcripts.get(cli_version)
        if found is None:
            from ..faults import apply_transcript
            from ..wire import render_transcript

            found = render_transcript(self.session, cli_version=cli_version)
            if self.faults is not None:
                found = apply_transcript(self.faults, found)
            self._transcripts[cli_version] = found
        return found

    def payloads(self, cli_version: str | None = None, *, with_context_window: bool = True,
                 compaction: Shown | None = None) -> list[dict[str, Any]]:
        """The statusline payload at each point of :meth:`transcript` (its arguments are
        :func:`ctxsim.wire.statusline_payloads`'), with what the plan makes Claude Code show in them."""
        key = (cli_version, with_context_window, compaction)
        found = self._payloads.get(key)
        if found is None:
            from ..wire import statusline_payloads
            from ._payload import apply_statusline

            found = statusline_payloads(self.session, cli_version=cli_version, with_context_window=with_context_window,
                                        compaction=compaction)
            if self.faults is not None:
                found = apply_statusline(self.faults, self.transcript(cli_version), found)
            self._payloads[key] = found
        return found

    def points(self, judged_at: frozenset[str] | None = None, cli_version: str | None = None
               ) -> list[Observation]:
        """The observation points of :meth:`transcript` of the kinds ``judged_at`` (None: every kind), in order:
        where a tracker reading Claude Code's surfaces rather than the stream is judged (a fault may place a point
        elsewhere there than in the stream, or make it unknowable there)."""
        return [p.observation for p in self.transcript(cli_version).points
                if judged_at is None or p.observation.kind in judged_at]
