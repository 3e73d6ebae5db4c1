"""The sections of a scenario file, each read and checked with the file and line of what is wrong in it: the
``queries`` a session is built from (:class:`StepBuilder`), the ``world`` it runs in (:func:`world_builder`), the
``faults`` its stream is played with (:class:`FaultSpec`), what its trackers must do (``expect``:
:class:`Expectations`, :class:`ExpectedFailure`, :class:`ThresholdSpec`, :class:`LoopExpectations`) and, for a
restart loop, its ``task`` (:class:`TaskSpec`). Loading a whole file from them is the parent's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_face

if TYPE_CHECKING:
    from ._expect import (
        Expectations as Expectations,
        ExpectedFailure as ExpectedFailure,
        LoopExpectations as LoopExpectations,
        ThresholdSpec as ThresholdSpec,
        read_expect as read_expect,
    )
    from ._faults import FaultSpec as FaultSpec, read_faults as read_faults
    from ._steps import StepBuilder as StepBuilder
    from ._task import TaskSpec as TaskSpec, check_task_expectations as check_task_expectations, read_task as read_task
    from ._world import refuse_world_keys as refuse_world_keys, world_builder as world_builder

__getattr__, __dir__ = lazy_face(globals())
