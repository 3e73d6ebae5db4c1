"""``ctxsim import`` derives the truth from the transcript it reads and holds itself to it: every session scenario
of the corpus, rendered by ctxsim's own ``render_transcript`` and imported, is a scenario the reference tracks, with
the truth the session had (a point import cannot know is declared so, with a band that holds that truth)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxsim.check import run_tracker_parsed
from ctxsim.corpus import bundled_scenarios
from ctxsim.importer import ImportFailure, import_recordings
from ctxsim.scenario import SessionScenario, load_scenario
from ctxsim.trackers.catalogue import reference_for
from ctxsim.wire import render, render_transcript
from ctxsim.world import Session, SessionBuilder


def _compaction(rounds: int) -> Session:
    """The README's compaction session, with ``rounds`` calls before ``/compact``."""
    builder = SessionBuilder(seed=1, name=f"compaction-{rounds}").query("work").call(
        input=3, cache_creation=2000, cache_read=148_000, output=200)
    for _ in range(rounds - 1):
        builder.call()
    return builder.compact(20_000).query("more").call().build()


def _session_scenarios() -> list[SessionScenario]:
    loaded = [load_scenario(p) for p in bundled_scenarios()]
    return [s for s in loaded if isinstance(s, SessionScenario) and s.recording is None]


def _written(session: Session, where: Path) -> list[Path]:
    paths = []
    for relative, file in render_transcript(session).files.items():
        path = where / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(row) + "\n" for row in file.rows), encoding="utf-8")
        paths.append(path)
    return paths


def _imported(session: Session, tmp_path: Path) -> SessionScenario:
    imported = import_recordings(_written(session, tmp_path / "transcript"), name=session.name or "imported")
    assert "reference: fail" not in imported.scenario
    out = tmp_path / "imported.yaml"
    out.write_text(imported.scenario, encoding="utf-8")
    if imported.stream is not None:
        (tmp_path / str(imported.stream_file)).write_text(imported.stream, encoding="utf-8")
    scenario = load_scenario(out)
    assert isinstance(scenario, SessionScenario)
    return scenario


def _check(session: Session, tmp_path: Path) -> None:
    original = run_tracker_parsed(reference_for(session), session, render(session), tolerance=0)
    truths = {p.observation.label: p.observation.truth for p in original.points}
    scenario = _imported(session, tmp_path)
    report = run_tracker_parsed(reference_for(scenario.session), scenario.session, scenario.scripts(), tolerance=0)
    assert report.ok, str(report)
    compared = 0
    for point in report.points:
        truth, was = point.observation.truth, truths.get(point.observation.label)
        if was is None or not was.knowable:
            continue
        compared += 1
        if truth.knowable:
            assert (truth.prompt, truth.next_request) == (was.prompt, was.next_request), point.observation.label
        else:
            assert truth.unseen is not None and truth.unseen[0] <= was.prompt <= truth.unseen[1], (
                f"{point.observation.label}: the band {truth.unseen} misses the truth {was.prompt:,}")
    assert compared, "no point of the import is a point of the session"


@pytest.mark.parametrize("rounds", [1, 2, 3])
def test_the_readme_compaction_session_imports_to_a_scenario_the_reference_tracks(rounds: int,
                                                                                  tmp_path: Path) -> None:
    _check(_compaction(rounds), tmp_path)


@pytest.mark.parametrize("scenario", _session_scenarios(), ids=lambda s: s.name)
def test_every_corpus_session_imports_with_its_truth(scenario: SessionScenario, tmp_path: Path) -> None:
    _check(scenario.session, tmp_path)


def test_an_import_whose_truth_the_reference_does_not_track_is_refused(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from ctxsim.recordings import _recording

    real = _recording._after_compaction

    def off(post: int, said: int | None, first: tuple[int, int] | None) -> object:  # a truth derived wrong
        truth = real(post, said, first)
        return type(truth)(post * 3, 0, knowable=True, first_call=first)

    monkeypatch.setattr(_recording, "_after_compaction", off)
    with pytest.raises(ImportFailure, match=r"could not derive a truth the reference tracks at q1 compaction "
                                            r"\(derived 60,000, the reference says 50,000\).*nothing written"):
        import_recordings(_written(_compaction(1), tmp_path), name="compaction-1")
