"""What every wire format is made of: the lines the CLI writes (:class:`Frame`), grouped by the query they answer
(:class:`Script`), and the points where a tracker is judged (:class:`Observation`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..world import Truth

__all__ = ["Frame", "Observation", "Script"]


@dataclass(frozen=True)
class Observation:
    """A point of the session where a tracker is compared with the truth."""

    index: int
    """1-based position among the session's observation points."""
    label: str
    """Where in the session this is, e.g. ``q1 call 2`` or ``q2 result``."""
    kind: str
    """What closed it: ``call``, ``subagent``, ``compaction``, ``reset`` or ``result``."""
    truth: Truth
    """The true context from this frame on."""
    window: int
    """The context window in force."""


@dataclass(slots=True)
class Frame:
    """One line the CLI writes: a stream-json dict, and the observation it closes, if any."""

    data: dict[str, Any]
    observation: Observation | None = None


@dataclass
class Script:
    """Everything the CLI writes in answer to one user query, ending with its ``result``."""

    query_index: int
    prompt: str
    frames: list[Frame] = field(default_factory=list)

    def dicts(self) -> list[dict[str, Any]]:
        """The raw stream-json dicts, in order."""
        return [f.data for f in self.frames]
