"""The session's flow as the transcript rows carry it: the transcript form of the faults that change the model in force.

A model switch (``set_model``, ``/model``, an auto-update) changes the model Claude Code names in the rows it writes
from then on, and the window every point from then on is judged against (:func:`ctxsim.faults.transcript_faults`
picks this form; :func:`ctxsim.faults.apply_transcript` plays it; :func:`ctxsim.surfaces.apply_statusline` shows the
switch in the payload from the same moment, :func:`switch_moment`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

from ...wire import TranscriptRender
from .._flow import ModelSwitch, _other_window
from ._faults import TranscriptFault, _file_runs

__all__ = ["ModelSwitchRows", "switch_moment"]


def switch_moment(transcript: TranscriptRender, at: float) -> float | None:
    """When a model switch at ``at`` (a share of the main calls, as :class:`~ctxsim.faults.ModelSwitch` says it)
    takes effect in ``transcript``: the write moment of the first row of the main call it starts from, over every
    main file in write order; None without a main call."""
    starts = sorted(file.order[run[0]] for file, run in _file_runs(transcript, main_only=True))
    return starts[int(at * len(starts))] if starts else None


@dataclass(frozen=True)
class ModelSwitchRows(TranscriptFault):
    """The transcript form of ``model_switch``: from the main call at ``at`` (a share of the main calls) on, every
    main-chain ``assistant`` row names ``to_model`` (``message.model``, the API's name: without a ``[1m]`` suffix),
    and so does each main request's ``api-request`` line (``params.model``), and every point from then on carries
    ``to_window`` (default: 1M for a smaller window, else 200k). Subagent rows keep their model, as on the stream.
    Changes the truth on purpose: the window in force, not the token counts.

    Inferred, not recorded: ctxsim's recordings hold a switch by ``/model`` between prompts (the world's own, with its
    command rows), not one by ``set_model`` or an auto-update; the rows written after such a switch are taken to be
    those of the same calls on the new model, as Claude Code writes each reply's model as the API returned it."""

    name = "model_switch"
    source = ModelSwitch.source
    to_model: str = "claude-opus-4-6"
    """The model from the switch on."""
    to_window: int | None = None
    """Its window; None for the other of 200k and 1M."""
    at: float = 0.5
    """Where the switch happens, as a share of the main calls (0: from the first)."""

    @property
    def keeps_truth(self) -> bool:
        return False

    def edit(self, transcript: TranscriptRender, rng: random.Random) -> None:
        moment = switch_moment(transcript, self.at)
        if moment is None:
            return
        model = self.to_model.removesuffix("[1m]")  # the API's model: the CLI strips the suffix
        for file in transcript.files.values():
            reply = float("-inf")  # when the next main-chain reply is written (a request's line comes before it)
            for written, row in zip(reversed(file.order), reversed(file.rows)):
                message = row.get("message")
                if row.get("type") == "assistant" and not row.get("isSidechain") and isinstance(message, dict):
                    reply = written
                    if written >= moment and message.get("model") != "<synthetic>":
                        row["message"] = {**message, "model": model}
                elif row.get("type") == "api-request" and reply >= moment and isinstance(row.get("params"), dict):
                    row["params"] = {**row["params"], "model": self.to_model}
        window = self.to_window or _other_window(transcript.points[0].observation.window if transcript.points
                                                 else 200_000)
        transcript.points = [replace(p, observation=replace(p.observation, window=window)) if p.written >= moment
                             else p for p in transcript.points]
