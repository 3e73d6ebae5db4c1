"""ctxsim.testing: the conformance contracts and the state machine, on the reference and on planted bugs."""

from __future__ import annotations

import pytest
from claude_agent_sdk import AssistantMessage
from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from ctxsim.reference import ContextTracker
from ctxsim.testing import (
    CONTRACTS,
    check_tracker_conformance,
    run_tracker_conformance,
    tracker_state_machine,
)


class SumsCalls(ContextTracker):
    """A planted bug: adds every new call's prompt to the previous ones (spend read as occupancy)."""

    def __init__(self) -> None:
        super().__init__()
        self.total = 0
        self.ids: set[str] = set()

    def observe(self, message: object) -> None:
        super().observe(message)
        if (isinstance(message, AssistantMessage) and message.parent_tool_use_id is None and message.usage
                and message.message_id not in self.ids):
            self.ids.add(message.message_id or "")
            u = message.usage
            self.total += u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]

    def context_tokens(self) -> int | None:
        return self.total or super().context_tokens()


def test_contracts_are_numbered_in_order_with_unique_names() -> None:
    assert [c.number for c in CONTRACTS] == list(range(1, len(CONTRACTS) + 1))
    assert len({c.name for c in CONTRACTS}) == len(CONTRACTS)


def test_the_reference_meets_every_contract() -> None:
    result = run_tracker_conformance(ContextTracker)
    assert result.failed == [] and set(result.reports) == {c.name for c in CONTRACTS}


def test_a_planted_sum_is_named_by_its_first_broken_contract() -> None:
    with pytest.raises(AssertionError, match=r"ctxsim: contract 4 \(latest-not-sum\) failed: the context is the "
                                             r"latest main call's prompt, not a sum over calls"):
        run_tracker_conformance(SumsCalls)
    failed = check_tracker_conformance(SumsCalls).failed
    # single-call sessions cannot tell a sum from the latest call; every multi-call contract can
    assert "single-call" not in failed and "per-block-dedupe" not in failed
    assert {"latest-not-sum", "result-is-spend", "compaction"} <= set(failed)


def test_skipping_only_optional_contracts_by_known_names() -> None:
    result = check_tracker_conformance(ContextTracker, skip={"conversation-reset"})
    assert "conversation-reset" not in result.reports and result.skipped == ("conversation-reset",)
    with pytest.raises(AssertionError, match="ctxsim: unknown contracts \\['nope'\\]"):
        check_tracker_conformance(ContextTracker, skip={"nope"})
    with pytest.raises(AssertionError, match="ctxsim: contracts \\['compaction'\\] are not optional"):
        check_tracker_conformance(ContextTracker, skip={"compaction"})


def test_async_factories_are_awaited() -> None:
    async def make() -> ContextTracker:
        return ContextTracker()

    assert check_tracker_conformance(make, only={"single-call", "compaction"}).failed == []


FAST = settings(max_examples=40, stateful_step_count=20, deadline=None, print_blob=False, report_multiple_bugs=False,
                suppress_health_check=[HealthCheck.too_slow])


def test_state_machine_passes_the_reference() -> None:
    run_state_machine_as_test(tracker_state_machine(ContextTracker), settings=FAST)


def test_state_machine_catches_a_planted_sum() -> None:
    with pytest.raises(AssertionError, match=r"ctxsim: .*the tracker says"):
        run_state_machine_as_test(tracker_state_machine(SumsCalls), settings=FAST)


TestReferenceMachine = tracker_state_machine(ContextTracker).TestCase
TestReferenceMachine.settings = FAST
