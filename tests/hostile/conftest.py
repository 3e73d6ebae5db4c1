"""The hostile cases' tally: every case says what it expects (one ``ctxsim:`` line, no traceback, no hang, nothing
left running or on disk, no secret kept), and the session ends with the counts of what held.

Only the cases of ``tests/hostile`` use it; the rest of the suite shares the root ``conftest.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _tally import Tally

_TALLY = Tally()


@pytest.fixture
def hostile() -> Iterator[Tally]:
    """The session's :class:`Tally`."""
    yield _TALLY


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tally = _TALLY
    if tally.cases:
        terminalreporter.write_line(
            f"ctxsim hostile cases: {tally.cases} cases, {tally.clean_lines} clean one-line errors, "
            f"{tally.tracebacks} tracebacks, {tally.hangs} hangs, {tally.leaks} leaks, {tally.secrets} secrets "
            f"surviving")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """With ``CTXSIM_HOSTILE_CASES=FILE``, every case's name is added to FILE, one a line (each xdist worker adds its
    own): the list of what the session tried."""
    listed = os.environ.get("CTXSIM_HOSTILE_CASES")
    if listed and _TALLY.names:
        with open(listed, "a", encoding="utf-8") as out:
            out.write("".join(f"{' '.join(name.split())}\n" for name in _TALLY.names))
