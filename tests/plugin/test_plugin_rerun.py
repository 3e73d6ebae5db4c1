"""A failed scenario item's node id reruns it, as pytest prints it: given back on the command line, from the
project's root or a directory under it, and through ``--lf``, for the user's scenario files and the bundled corpus
alike."""

from __future__ import annotations

import pytest

MINE = "queries: [{prompt: go, steps: [{call: {in: 3, cc: 100, cr: 12000, out: 50}}]}]\n"
"""A scenario every tracker under test that ignores cache reads fails: the context is 12,103 tokens, input-only
says 3."""

BUNDLED_ITEM = "bundled/advisor-iterations.yaml::input-only"
"""A bundled scenario the catalogued input-only tracker fails (it reads the uncached tail alone)."""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (pytester.path / "scenarios").mkdir()
    (pytester.path / "scenarios" / "mine.yaml").write_text(MINE)
    (pytester.path / "sub").mkdir()
    return pytester


def failed_ids(result: pytest.RunResult) -> list[str]:
    """The ids the short test summary prints as failed."""
    return [line.split()[1] for line in result.stdout.lines if line.startswith("FAILED ")]


def test_a_failed_item_reruns_by_the_id_the_summary_prints(project: pytest.Pytester) -> None:
    first = project.runpytest("--ctx-tracker=input-only", "scenarios/mine.yaml", BUNDLED_ITEM, "-p", "no:randomly")
    first.assert_outcomes(passed=1, failed=2)
    ids = failed_ids(first)
    assert ids == ["scenarios/mine.yaml::input-only", BUNDLED_ITEM]
    for nodeid in ids:  # each alone, exactly that item
        again = project.runpytest("--ctx-tracker=input-only", nodeid, "-v")
        again.assert_outcomes(failed=1)
        assert failed_ids(again) == [nodeid]


def test_the_id_printed_from_a_directory_under_the_root_reruns_there(project: pytest.Pytester,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project.path / "sub")
    first = project.runpytest("--ctx-tracker=input-only", "../scenarios/mine.yaml", "../" + BUNDLED_ITEM)
    first.assert_outcomes(passed=1, failed=2)
    ids = failed_ids(first)
    assert ids == ["../scenarios/mine.yaml::input-only", "../" + BUNDLED_ITEM]  # relative to here
    for nodeid in ids:
        project.runpytest("--ctx-tracker=input-only", nodeid).assert_outcomes(failed=1)


def test_last_failed_reruns_the_failures_of_the_users_files_and_of_the_corpus(project: pytest.Pytester) -> None:
    first = project.runpytest("--ctx-tracker=input-only", "scenarios/mine.yaml", BUNDLED_ITEM)
    first.assert_outcomes(passed=1, failed=2)
    # the whole corpus and the project's scenarios collected: only the two last failures run
    again = project.runpytest("--ctx-tracker=input-only", "--ctx-scenarios=bundled", "scenarios", "--lf",
                              "-p", "no:randomly")
    again.assert_outcomes(failed=2)
    assert failed_ids(again) == ["scenarios/mine.yaml::input-only", BUNDLED_ITEM]
    assert "run-last-failure: rerun previous 2 failures" in again.stdout.str()
