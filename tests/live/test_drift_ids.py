"""The drift from a capture does not count the order in which the same requests reached the fake API.

No CLI runs here: the "live run" is a shipped capture of the ``background-subagent`` fidelity session with the
numbers of two requests swapped, as a live run numbers them when the background subagent's first request reaches
the fake API before the main chain's next one (the CLI streams the same messages in the same order; only the ids
the fake API drew from the request numbers differ). A request more or fewer is still a change.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from ctxsim.lab._fidelity import Played
from ctxsim.lab._projection import StepProjection, compare
from ctxsim.lab._record import Capture, load_captures
from ctxsim.lab.release import drift
from ctxsim.world import Call

CAPTURES = [c for c in load_captures() if c.name == "background-subagent"]


def _renumbered(value: Any, numbers: dict[int, int]) -> Any:
    """``value`` with every fake-API id of request number ``n`` (message, tool use, request) numbered
    ``numbers[n]``."""
    text = re.sub(r"(?<=_ctxsim)\d{4}", lambda m: f"{numbers.get(int(m[0]), int(m[0])):04d}", json.dumps(value))
    return json.loads(text)


def _as_live(capture: Capture, numbers: dict[int, int]) -> Played:
    steps = [StepProjection(s.prompt, _renumbered(s.messages, numbers), s.context_usage,
                            _renumbered(s.hooks, numbers)) for s in capture.steps]
    return Played(capture.initial, steps, capture.session, cli_version=capture.cli_version,
                  frame_keys=capture.frame_keys, raw=_renumbered(capture.raw, numbers))


def _race(capture: Capture) -> dict[int, int]:
    """The numbers swapped when the subagent's first request beats the main chain's second one."""
    calls = [s for s in capture.session.queries[0].steps if isinstance(s, Call)]
    main = next(c for c in calls[1:] if c.parent_tool_use_id is None)
    subagent = next(c for c in calls if c.parent_tool_use_id is not None)
    a, b = (int(str(c.message_id).removeprefix("msg_ctxsim")) for c in (main, subagent))
    return {a: b, b: a}


def test_background_subagent_captures_ship() -> None:
    assert CAPTURES


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.cli_version)
def test_the_same_requests_numbered_in_another_order_are_no_drift(capture: Capture) -> None:
    live = _as_live(capture, _race(capture))
    assert compare(capture.steps, live.steps, initial=(capture.initial, live.initial))  # the ids do differ
    moved = drift(capture, live)
    assert (moved.changed, moved.numbers) == ([], [])


@pytest.mark.parametrize("capture", CAPTURES, ids=lambda c: c.cli_version)
def test_a_request_more_is_still_a_change(capture: Capture) -> None:
    """Every request from the main chain's second call on numbered one higher (the CLI sent one more request
    before it): the message ids are no longer the capture's, and the drift says so."""
    first = min(_race(capture))
    live = _as_live(capture, {n: n + 1 for n in range(first, 10_000)})
    moved = drift(capture, live)
    assert {"message_id", "request_id"} <= {d.field for d in moved.changed}
