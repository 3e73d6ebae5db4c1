"""One rule says how a tracker of any kind is fed, what it reads and where it is judged
(:func:`ctxsim.trackers.feeding`), whichever door names it: a Python factory, a catalogued tracker, an adapter, a
``cmd:`` statusline, a ``stream:`` tracker, and a ``module:factory`` making a tracker of any of those shapes."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from ctxsim import load_scenario
from ctxsim.corpus import find_scenario
from ctxsim.runner import judgement
from ctxsim.scenario import SessionScenario
from ctxsim.trackers import CommandTracker, RawDicts, ResultsOnly, TrackerSpecError, feeding, resolve
from ctxsim.trackers.catalogue import reference_for

TESTS = Path(__file__).resolve().parent.parent
SDK, SURFACES = frozenset({"sdk"}), frozenset({"statusline", "transcript"})


def test_each_shape_of_tracker_is_fed_one_way() -> None:
    reference = reference_for(load_scenario(find_scenario("compaction")).session)  # type: ignore[union-attr]
    assert (feeding(reference).fed, feeding(reference).reads, feeding(reference).judged_at) == ("messages", SDK, None)
    assert feeding(RawDicts(reference)).fed == "frames"
    assert feeding(ResultsOnly(reference)).judged_at == frozenset({"result"})
    command = feeding(CommandTracker("echo 1"))
    assert (command.fed, command.reads, command.points_of) == ("points", SURFACES, "transcript")


@pytest.mark.parametrize(("spec", "fed"), [
    ("reference", "messages"), ("every-row-totals", "frames"), ("ctxsim.reference:ContextTracker", "messages"),
    ("cmd:echo 1", "points"), (f"stream:{sys.executable} {TESTS}/stream_trackers/last_main.py", "frames"),
])
def test_a_spec_is_fed_as_the_tracker_it_makes(spec: str, fed: str) -> None:
    resolved = resolve(spec)
    assert resolved.feeding.fed == fed
    assert resolved.reads == (SURFACES if fed == "points" else SDK)
    assert (resolved.fed_messages is not None) == (not spec.startswith(("cmd:", "stream:")))


def make_point_tracker() -> CommandTracker:
    """A ``module:factory`` making a statusline command: a point tracker named without ``cmd:``."""
    return CommandTracker(f"{shutil.which('cat')} > /dev/null; echo 0", name="zero-statusline")


def test_a_factory_making_a_point_tracker_reads_and_is_judged_as_a_statusline_command() -> None:
    resolved = resolve(f"{__name__}:make_point_tracker")
    assert resolved.feeding.fed == "points" and resolved.reads == SURFACES
    scenario = load_scenario(find_scenario("b06-message-in-several-files"))
    assert isinstance(scenario, SessionScenario)
    by_module = judgement(scenario, resolved).run()
    by_prefix = judgement(scenario, resolve(f"cmd[name=zero-statusline]:{shutil.which('cat')} > /dev/null; echo 0"))
    assert by_module.key()[2:] == by_prefix.run().key()[2:]
    assert by_module.run is not None and by_module.run.failure.kind == "off"  # 0 tokens is under every truth here


def test_an_object_of_no_tracker_shape_is_refused_saying_what_it_lacks() -> None:
    with pytest.raises(TrackerSpecError, match=r"made a OrderedDict, which has no observe or context_tokens\(\)"):
        resolve("collections:OrderedDict")
