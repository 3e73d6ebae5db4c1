"""For users' test suites: numbered tracker conformance contracts (plain asserts) and the tracker state machine,
as :mod:`claude_agent_sdk.testing` does for session stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_face

if TYPE_CHECKING:
    from ._contracts import (
        CONTRACTS as CONTRACTS,
        PROBES as PROBES,
        ConformanceResult as ConformanceResult,
        Contract as Contract,
        MakeTracker as MakeTracker,
        check_tracker_conformance as check_tracker_conformance,
        conformance_table as conformance_table,
        declaration_differences as declaration_differences,
        run_tracker_conformance as run_tracker_conformance,
    )
    from ._stateful import tracker_state_machine as tracker_state_machine

__getattr__, __dir__ = lazy_face(globals(), stable=(
    "CONTRACTS", "PROBES", "Contract", "ConformanceResult", "run_tracker_conformance", "check_tracker_conformance",
    "tracker_state_machine"
))
