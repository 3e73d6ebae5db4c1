"""For users' test suites: numbered tracker conformance contracts (plain asserts) and the tracker state machine,
as :mod:`claude_agent_sdk.testing` does for session stores."""

from __future__ import annotations

from .conformance import (
    CONTRACTS,
    PROBES,
    ConformanceResult,
    Contract,
    MakeTracker,
    check_tracker_conformance,
    conformance_table,
    declaration_differences,
    run_tracker_conformance,
    tracker_state_machine,
)

__all__ = [
    "CONTRACTS",
    "PROBES",
    "ConformanceResult",
    "Contract",
    "MakeTracker",
    "check_tracker_conformance",
    "conformance_table",
    "declaration_differences",
    "run_tracker_conformance",
    "tracker_state_machine",
]
