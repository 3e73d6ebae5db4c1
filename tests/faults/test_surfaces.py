"""Every fault says on which surface it is real (SDK stream, transcript files, statusline payload) and where that
is reported; a tracker is judged only on faults its input can carry."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ctxsim.corpus import bundled_scenarios
from ctxsim.faults import FAULT_SURFACES, REGISTRY, SURFACES, TRANSCRIPT_REGISTRY, judged_on, surfaces_of
from ctxsim.runner import run_scenario, verdict
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers.mutants import MUTANTS

SDK = frozenset({"sdk"})
COMMAND = frozenset({"transcript", "statusline"})


def test_every_fault_says_where_it_is_real_and_its_source() -> None:
    assert FAULT_SURFACES.keys() == REGISTRY.keys() | TRANSCRIPT_REGISTRY.keys()
    for name, where in FAULT_SURFACES.items():
        assert where.names and where.names <= SURFACES.keys(), name
        assert len(where.source) > 20, name
    for name in TRANSCRIPT_REGISTRY:
        assert FAULT_SURFACES[name].names == {"transcript"}, name


def test_a_replay_is_real_only_in_transcript_files() -> None:
    assert surfaces_of(["replayed_messages"]) == {"transcript"}
    why = judged_on(["replayed_messages"], SDK)
    assert why is not None and "real only on the transcript files" in why and "aiusage#32" in why
    assert judged_on(["replayed_messages"], COMMAND) is None
    assert judged_on(["cache_read_drop", "usage_iterations"], SDK) is None
    assert surfaces_of([]) == SURFACES.keys()


def test_a_correct_sdk_stream_tracker_without_a_replay_filter_passes_every_scenario_it_is_judged_on() -> None:
    # on the SDK stream no message is replayed, so a tracker that keeps no replay filter is right there
    mutant = MUTANTS["no-replay-filter"]
    judged = skipped = 0
    for path in bundled_scenarios():
        scenario = load_scenario(path)
        if not isinstance(scenario, SessionScenario) or scenario.ctx_tracker != "pass":
            continue
        run = run_scenario(scenario, mutant.edit(scenario.session.usage), name="no-replay-filter")
        if scenario.not_judged(SDK) is not None:
            skipped += 1
            continue
        judged += 1
        met, does = verdict(run, "pass")
        assert met, f"{scenario.name}: {does}"
    assert judged >= 30 and skipped >= 2


def test_the_plugin_skips_a_tracker_on_a_fault_its_input_never_carries(tmp_path: Path) -> None:
    (tmp_path / "mine.py").write_text("from ctxsim.reference import ContextTracker as Mine\n", encoding="utf-8")
    b06 = next(p for p in bundled_scenarios() if p.stem == "b06-message-in-several-files")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs", "-q", str(b06),
                           "--ctx-tracker=mine:Mine", f"--rootdir={tmp_path}", "-c", "/dev/null"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "is not judged here: fault replayed_messages is real only on the transcript files" in done.stdout


def test_the_reference_page_lists_every_fault_with_its_surfaces() -> None:
    page = (Path(__file__).resolve().parents[2] / "docs" / "reference" / "fault-surfaces.md").read_text()
    for name, where in FAULT_SURFACES.items():
        assert f"| `{name}` | {', '.join(n for n in SURFACES if n in where.names)} |" in page, name
