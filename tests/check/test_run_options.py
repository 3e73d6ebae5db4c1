"""The keywords of a tracker run are said once (``ctxsim.check.RunOptions``): ``arun_tracker`` takes them, and
``run_tracker``, ``assert_tracks`` and ``assert_tracks_async`` pass them on, so none can lack one the others take."""

from __future__ import annotations

import inspect
from collections.abc import Callable

import anyio
import pytest

from ctxsim.check import (
    RunOptions,
    TrackingError,
    arun_tracker,
    assert_tracks,
    assert_tracks_async,
    run_tracker,
)
from ctxsim.world import Session, SessionBuilder


def _annotation(value: object) -> str:
    return str(getattr(value, "__forward_arg__", value))


def test_run_options_are_arun_trackers_keywords_with_their_types() -> None:
    keywords = {name: p for name, p in inspect.signature(arun_tracker).parameters.items()
                if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert set(keywords) == set(RunOptions.__annotations__)
    for name, parameter in keywords.items():
        assert _annotation(parameter.annotation) == _annotation(RunOptions.__annotations__[name]), name
        assert parameter.default is not inspect.Parameter.empty, f"{name} has no default"


@pytest.mark.parametrize("function", [run_tracker, assert_tracks, assert_tracks_async])
def test_the_other_entry_points_copy_no_keyword_and_pass_run_options_on(function: Callable[..., object]) -> None:
    parameters = inspect.signature(function).parameters
    own = [name for name, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert own in ([], ["async_backend"]), own
    options = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert len(options) == 1 and "RunOptions" in _annotation(options[0].annotation)


def _session() -> Session:
    b = SessionBuilder(seed=3, name="options")
    b.query("work").call(input=3, cache_creation=2000, cache_read=40_000, output=200)
    return b.build()


class _Off:
    """Reports 500 tokens over the truth's upper end: passes with tolerance 1000, fails with 0."""

    def __init__(self) -> None:
        self.last: int | None = None

    def observe(self, message: object) -> None:
        usage = getattr(message, "usage", None)
        if usage:
            self.last = sum(usage.get(k, 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                      "cache_read_input_tokens", "output_tokens")) + 500

    def context_tokens(self) -> int | None:
        return self.last


def test_a_keyword_reaches_the_run_through_each_entry_point() -> None:
    session = _session()
    with pytest.raises(TrackingError):
        assert_tracks(_Off(), session)
    assert assert_tracks(_Off(), session, tolerance=1000, faults=None).ok
    assert run_tracker(_Off(), session, tolerance=1000).ok
    assert not run_tracker(_Off(), session).ok
    assert anyio.run(lambda: assert_tracks_async(_Off(), session, tolerance=1000)).ok
    assert anyio.run(lambda: arun_tracker(_Off(), session, tolerance=1000)).ok
