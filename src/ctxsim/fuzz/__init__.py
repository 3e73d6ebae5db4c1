"""``ctxsim fuzz``: generated, faulted streams against a tracker until one breaks it, shrunk to a scenario file.

Hypothesis draws sessions and fault plans (:func:`ctxsim.strategies.message_streams`), each is checked with the
SDK's parser against the truth (:func:`ctxsim.check.run_tracker_parsed`, the fast path), and the first failure is
shrunk to a few calls. The shrunk stream is written as a scenario file that carries every option that shaped the
verdict (the tolerance in ``expect.tolerance``, the window in ``world``, the tracker spec, seed and backend in
``source`` and the header) and reproduces it through the real client, from any directory, beside any broken test or
conftest (:func:`reproduce_command`)::

    pytest -p no:cacheprovider --rootdir=DIR --confcutdir=DIR -c /dev/null --ctx-backend=inprocess \
        --ctx-scenarios=DIR/ctxsim-fuzz-mytracker.yaml --ctx-tracker=mytracker:MyTracker DIR/ctxsim-fuzz-mytracker.yaml

With an example database (``ctxsim fuzz --db redis://host:6379/0``, or a directory;
:func:`ctxsim.strategies.example_database`) a run first replays what the database holds for the same tracker and
tolerance (Hypothesis's reuse phase), then generates; the shrunk counterexample is saved there, so a run on another
machine, with another seed, replays it before generating anything. ``--workers N`` runs N such processes on this
machine, seeds ``seed`` to ``seed + N - 1``, sharing the database (:func:`fuzz_workers`).

For long campaigns, write the same property as a ``@given`` test (docs/how-to/fuzz-a-tracker.md) and run it under
HypoFuzz or ``pytest -n``; this command is the quick way to ask "can ctxsim break my tracker?".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._independent import independent_backend as independent_backend
    from ._loops import (
        LoopFuzzResult as LoopFuzzResult,
        LoopReproduction as LoopReproduction,
        LoopTaskFailed as LoopTaskFailed,
        check_loop_task as check_loop_task,
        fuzz_loop as fuzz_loop,
        fuzz_loop_workers as fuzz_loop_workers,
        loop_spec as loop_spec,
        tasks_for as tasks_for,
        write_loop_scenario as write_loop_scenario,
    )
    from ._search import (
        FuzzResult as FuzzResult,
        Reproduction as Reproduction,
        fuzz as fuzz,
        fuzz_workers as fuzz_workers,
        import_root as import_root,
        reproduce_command as reproduce_command,
        write_scenario as write_scenario,
    )

__getattr__, __dir__ = lazy_face(globals(), stable=(
    "fuzz", "FuzzResult", "write_scenario", "fuzz_loop", "LoopFuzzResult", "write_loop_scenario", "check_loop_task",
    "LoopTaskFailed", "tasks_for", "independent_backend"
))
