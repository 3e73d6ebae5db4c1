"""``ctxsim conformance``'s report reads verdict first, and the keys no tracker reads as one summary line."""

from __future__ import annotations

from ctxsim.lab._projection import Difference
from ctxsim.lab.release._check import ReleaseCheck, SessionCheck


def _check(tracked: int) -> ReleaseCheck:
    untracked = [Difference(f"frames {kind}", f"key_{i}", "<absent>", "present", tracked=False)
                 for i, kind in enumerate(["assistant", "result", "system"] * 40)]
    changed = [Difference("step 1 message 2 (assistant)", "usage.cache_read_input_tokens", 1000, 0)][:tracked]
    return ReleaseCheck("bundled", "2.1.332", "2.1.332", [SessionCheck("one", changed + untracked, None, 1.0),
                                                           SessionCheck("two", untracked, None, 1.0)])


def test_the_verdict_is_the_first_line_and_untracked_keys_are_one_line() -> None:
    lines = _check(tracked=0).table().splitlines()
    assert lines[0].startswith("ok: Claude Code 2.1.332 (bundled): 0 difference(s) in fields trackers read, 240 in "
                               "keys no tracker reads")
    assert len(lines) == 2 and lines[1].startswith("120 keys no tracker reads differ (key_0, key_1,")
    assert lines[1].endswith("not failed; --all lists them")


def test_a_tracked_difference_fails_first_and_is_listed() -> None:
    lines = _check(tracked=1).table().splitlines()
    assert lines[0].startswith("FAIL: ")
    assert lines[1] == "fields trackers read that differ (fake → CLI):"
    assert lines[2] == ("  usage.cache_read_input_tokens: 0 → 1000 (+1000) at 1 point in one: "
                        "step 1 message 2 (assistant)")
    assert not any(line.endswith(" no") for line in lines)


def test_all_lists_every_untracked_key() -> None:
    lines = _check(tracked=0).table(every_key=True).splitlines()
    assert sum(line.endswith(" no") for line in lines) == 120
