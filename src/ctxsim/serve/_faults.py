"""A scenario's stream faults applied to what the live CLI writes, a query at a time: what ``ctxsim serve`` does.

The CLI writes its own stream; serve hands the client a wrapper in its place (the
``claude`` on the ``PATH`` it prints, the SDKs' ``cli_path`` / ``pathToClaudeCodeExecutable``), which runs the real
CLI and sends each query's frames, once its ``result`` came, to serve, which answers them with the scenario's faults
applied, as in-process: :class:`LiveFaults` plays the scenario's :class:`~ctxsim.faults.FaultPlan` over the queries the
CLI wrote so far (each frame given the observation point its rendered twin closes) and the rendering of those to
come, so a fault that draws across queries draws as it does in-process, and keeps the query's faulted frames with the
points they close. Frames of the control protocol never reach it: the wrapper passes them on at once.

The plan is the stream's: a fault real only in the transcript files (:data:`ctxsim.surfaces.FAULT_SURFACES`) edits the
stream as the in-process stream has it, and the transcript the CLI writes stays the CLI's.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from ..faults import apply
from ..live import PointKey, keyed_points, point_keys as frame_keys
from ..wire import Frame, Observation, Script

if TYPE_CHECKING:
    from ..scenario import SessionScenario
    from ..surfaces import Rendition

__all__ = ["CONTROL_TYPES", "LiveFaults"]

CONTROL_TYPES = frozenset({"control_request", "control_response", "control_cancel_request", "keep_alive"})
"""The stream-json frame types of the control protocol, which the wrapper passes on at once, unfaulted."""


class LiveFaults:
    """``scenario``'s fault plan, applied to the live CLI's queries as they come (:meth:`fault`)."""

    def __init__(self, scenario: SessionScenario, rendition: Rendition | None = None) -> None:
        """``rendition``: the scenario's, whose stream before the faults is read (default: a fresh one)."""
        rendition = rendition or scenario.rendition()
        plan = rendition.faults
        if plan is None:
            raise ValueError(f"ctxsim: scenario {scenario.name!r} has no faults")
        self.plan = plan
        self.rendered = list(rendition.unfaulted)
        self._twins = [keyed_points(script) for script in self.rendered]
        self.played: list[Script] = []
        """The queries the CLI wrote, as it wrote them, each frame with the point its rendered twin closes."""
        self.points: dict[int, dict[PointKey, Observation]] = {}
        """Per query played (0-based): its points after the faults, keyed by what closes them in what was sent."""
        self.beyond = 0
        """Queries the CLI wrote beyond the scenario's (passed on unfaulted)."""
        self._lock = threading.Lock()

    def fault(self, frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The next query's frames as the client is to read them: the plan applied."""
        with self._lock:
            number = len(self.played)
            if number >= len(self.rendered):
                self.beyond += 1
                return frames
            twins = self._twins[number]
            live = Script(number, self.rendered[number].prompt,
                          [Frame(data, twins.get(key) if key is not None else None)
                           for data, key in zip(frames, frame_keys(frames), strict=True)])
            self.played.append(live)
            faulted = apply(self.plan, [*self.played, *self.rendered[number + 1:]])
            for at, script in enumerate(faulted[:number + 1]):  # a later query may move an earlier point's index
                self.points[at] = keyed_points(script)
            return faulted[number].dicts()
