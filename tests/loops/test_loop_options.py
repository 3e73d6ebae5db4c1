"""The keywords of a loop run are said once: ``ctxsim.loops.LoopOptions`` is ``LoopSetup``'s fields, and
``arun_loop``, ``run_loop`` and ``check_restart_loop`` take exactly those (and ``async_backend``) and hand them on."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable

import anyio
import pytest

from ctxsim.agent import Task
from ctxsim.loops import LoopCheckError, LoopOptions, LoopRig, LoopSetup, arun_loop, check_restart_loop, run_loop


def _annotation(value: object) -> str:
    return str(getattr(value, "__forward_arg__", value))


def test_loop_options_are_loop_setups_fields_with_their_types() -> None:
    fields = {f.name: f for f in dataclasses.fields(LoopSetup)}
    assert list(fields) == list(LoopOptions.__annotations__)
    for name, field in fields.items():
        assert _annotation(field.type) == _annotation(LoopOptions.__annotations__[name]), name


@pytest.mark.parametrize("function", [arun_loop, run_loop, check_restart_loop])
def test_the_entry_points_copy_no_field(function: Callable[..., object]) -> None:
    parameters = inspect.signature(function).parameters
    assert [n for n, p in parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY] in ([], ["async_backend"])
    options = [p for p in parameters.values() if p.kind is inspect.Parameter.VAR_KEYWORD]
    assert len(options) == 1 and "LoopOptions" in _annotation(options[0].annotation)


def _ends_at_once(rig: LoopRig) -> int:
    return 0


async def _ends_at_once_async(rig: LoopRig) -> int:
    return 0


def test_a_field_reaches_the_setup_through_each_entry_point() -> None:
    task = Task.uniform(3, tokens=1_000, window=100_000, baseline=10_000)
    assert run_loop(_ends_at_once, task, name="mine", max_restarts=3).name == "mine"
    with pytest.raises(LoopCheckError, match="ctxsim: mine broke invariant 'steps-once'"):  # it did nothing
        check_restart_loop(_ends_at_once, task, name="mine")
    report = anyio.run(lambda: arun_loop(_ends_at_once_async, task, name="mine", max_restarts=4))
    assert report.name == "mine" and report.rig.max_restarts == 4
    with pytest.raises(TypeError):
        run_loop(_ends_at_once, task, faults=None)  # type: ignore[call-arg]  # not a field: refused
