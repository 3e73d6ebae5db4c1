"""``ctxsim fidelity``'s report names each changed leaf, groups identical shifts, lets categories that only moved
tokens pass, and splits the drift into this machine's noise and the release's change.

No CLI runs here: the runs are a shipped capture and copies of it with one thing changed by hand.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from ctxsim.lab._fidelity import Played
from ctxsim.lab._projection import MOVED, Difference, StepProjection, compare
from ctxsim.lab._record import Capture, captured_versions, load_captures
from ctxsim.lab.release._check import RULES_DRAFT, Noise, ReleaseCheck, SessionCheck
from ctxsim.lab.release._drift import drift, noise_between
from ctxsim.lab.release._report import leaves, shifts

CAPTURE = next(c for c in load_captures() if c.name == "several-queries" and c.cli_version == captured_versions()[-1])


def _played(capture: Capture, steps: list[StepProjection] | None = None, version: str | None = None) -> Played:
    return Played(capture.initial, steps if steps is not None else capture.steps, capture.session,
                  cli_version=version or capture.cli_version, frame_keys=capture.frame_keys, raw=capture.raw)


def _with_usage(capture: Capture, change: dict[str, int]) -> list[StepProjection]:
    """The capture's steps with ``change`` added to the fields of every ``get_context_usage`` after a step."""
    steps = copy.deepcopy(capture.steps)
    for step in steps:
        for key, by in change.items():
            step.context_usage[key] += by
    return steps


def test_a_mapping_names_each_changed_leaf_and_a_list_its_inserted_items() -> None:
    old = {"total_input_tokens": 100, "used_percentage": 16, "current_usage": {"input_tokens": 3}}
    new = {"total_input_tokens": 100, "used_percentage": 32, "current_usage": {"input_tokens": 4}}
    assert leaves("context_window", old, new) == [("context_window.used_percentage", 16, 32),
                                                  ("context_window.current_usage.input_tokens", 3, 4)]
    kinds = ["api-request", "api-request", "user", "assistant"]
    assert leaves("line kinds", kinds, [*kinds[:2], "api-request-route", *kinds[2:]]) == [
        ("line kinds[2:2]", [], ["api-request-route"])]


def test_the_same_shift_at_many_points_is_one_line_with_its_count() -> None:
    differences = [("a", Difference(f"step {n}", "category.skills", 1555, 1552)) for n in (1, 2, 3)]
    differences += [("b", Difference("step 1", "category.skills", 1600, 1597)),
                    ("b", Difference("step 2", "category.skills", 1600, 1500))]
    groups = shifts(differences, fake_first=True)
    assert [g.line() for g in groups] == [
        "category.skills: 1552 → 1555, 1597 → 1600 (+3 each) at 4 points in 2 sessions: a, b",
        "category.skills: 1500 → 1600 (+100) at 1 point in b: step 2"]


def test_a_cost_that_moved_by_the_same_amount_is_one_shift_whatever_its_rounding() -> None:
    """0.015588 - 0.01218 and 0.048867 - 0.045459 differ in the last bits of a float: still one shift."""
    assert 0.015588 - 0.01218 != 0.048867 - 0.045459
    groups = shifts([("a", Difference("step 1", "cost.total_cost_usd", 0.015588, 0.01218)),
                     ("b", Difference("step 3", "cost.total_cost_usd", 0.048867, 0.045459))], fake_first=True)
    assert [g.line() for g in groups] == ["cost.total_cost_usd: 0.01218 → 0.015588, 0.045459 → 0.048867 "
                                          "(+0.003408 each) at 2 points in 2 sessions: a, b"]


def test_tokens_moved_between_categories_are_untracked_saying_so() -> None:
    moved = _with_usage(CAPTURE, {"category.system_tools": -3, "category.skills": 3})
    differences = compare(moved, CAPTURE.steps)
    assert differences and all(d.field in ("category.system_tools", "category.skills") for d in differences)
    assert all(not d.tracked and d.note == MOVED for d in differences)
    check = ReleaseCheck("bundled", "9.9.9", None, [SessionCheck("several-queries", differences, None, 1.0)])
    assert check.ok
    lines = check.table().splitlines()
    assert lines[0].startswith("ok: Claude Code 9.9.9 (bundled): 0 difference(s) in fields trackers read, 0 in keys "
                               "no tracker reads;")
    assert lines[1].startswith(f"{len(differences)} category count(s) of get_context_usage only moved between "
                               "categories, their sum unchanged (a rewording, not failed): category.s")


def test_a_category_that_grew_the_total_stays_tracked() -> None:
    grown = _with_usage(CAPTURE, {"category.skills": 3, "totalTokens": 3})
    differences = compare(grown, CAPTURE.steps)
    assert {d.field for d in differences if d.tracked} == {"category.skills", "totalTokens"}
    alone = compare(_with_usage(CAPTURE, {"category.skills": 3, "category.free_space": -3}), CAPTURE.steps)
    assert alone and all(d.tracked for d in alone)  # the free space is what is left of the window: no rewording


def test_the_drift_splits_into_noise_and_the_release() -> None:
    """Two live runs differ in one field (noise); the release moved another as well: only that one is its change."""
    steps = copy.deepcopy(CAPTURE.steps)
    steps[0].messages[1]["usage.cache_read_input_tokens"] += 7  # moves between two runs of the same CLI
    first = _played(CAPTURE, version="9.9.9")
    second = _played(CAPTURE, steps, version="9.9.9")
    noise = noise_between(first, second)
    assert noise == {("assistant", "usage.cache_read_input_tokens")}
    released = copy.deepcopy(steps)
    released[0].messages[2]["total_cost_usd"] += 0.5
    moved = dataclasses.replace(drift(CAPTURE, _played(CAPTURE, released, "9.9.9")), noise=noise)
    assert [d.field for d in moved.noisy] == ["usage.cache_read_input_tokens"]
    assert [d.field for d in moved.release] == ["total_cost_usd"]
    check = ReleaseCheck("bundled", "9.9.9", CAPTURE.cli_version,
                         [SessionCheck("several-queries", [], moved, 1.0)], noise=Noise("replayed", 1, 2.0))
    lines = check.table().splitlines()
    at = lines.index(f"drift from the capture of Claude Code {CAPTURE.cli_version} (listed, not failed; old → new):")
    assert lines[at + 1] == ("  noise, what moves between two live runs of 9.9.9 here (1 session(s) played again in "
                             "2.0 s): 1 point(s) in 1 field(s): usage.cache_read_input_tokens")
    assert lines[at + 2:at + 4] == ["  the release's change:",
                                    f"    total_cost_usd: {steps[0].messages[2]['total_cost_usd']!r} → "
                                    f"{released[0].messages[2]['total_cost_usd']!r} (+0.5) at 1 point in "
                                    "several-queries: step 1 ('hello') message 3 (result)"]


def test_the_rules_draft_lists_each_tracked_field_and_the_release(tmp_path: Path) -> None:
    tracked = [Difference("step 1 message 2 (assistant)", "usage.cache_read_input_tokens", 1001, 1000,
                          kind="assistant")]
    released = dataclasses.replace(drift(CAPTURE, _played(CAPTURE, version="9.9.9")), noise=frozenset())
    check = ReleaseCheck("bundled", "9.9.9", CAPTURE.cli_version,
                         [SessionCheck("several-queries", tracked, released, 1.0)], noise=Noise("replayed", 1, 1.0))
    draft = check.rules_draft()
    assert draft.startswith("# Claude Code 9.9.9: rules to draft\n")
    assert ("- `usage.cache_read_input_tokens`: 1000 → 1001 (+1) at 1 point in several-queries: "
            "step 1 message 2 (assistant)\n") in draft
    assert f"## The release's change from the capture of {CAPTURE.cli_version}" in draft
    assert RULES_DRAFT.endswith(".md")


def test_the_json_gives_each_difference_its_leaves() -> None:
    difference = Difference("step 1 ('hello')", "context_window", {"used_percentage": 32, "total": 9},
                            {"used_percentage": 16, "total": 9})
    report = ReleaseCheck("bundled", "9.9.9", None, [SessionCheck("repl one", [difference], None, 1.0)]).to_json()
    (row,) = report["sessions"][0]["differences"]
    assert row["leaves"] == [{"path": "context_window.used_percentage", "fake": 16, "cli": 32}]
    assert report["tracked"][0]["path"] == "context_window.used_percentage"
