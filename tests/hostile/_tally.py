"""The hostile cases' tally (:class:`Tally`): what each case expects, and the counts of what held."""

from __future__ import annotations

import fnmatch
import os
import signal
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from ctxsim.live import release_notice


@cache
def _release_notice() -> str | None:
    return release_notice()


@dataclass
class Tally:
    """What the hostile cases found, summed over the session."""

    cases: int = 0
    clean_lines: int = 0
    """Cases that ended with exactly the one ``ctxsim:`` line expected."""
    tracebacks: int = 0
    hangs: int = 0
    leaks: int = 0
    """Processes, directories or threads a case left behind."""
    secrets: int = 0
    """Planted secrets that survived a scrub."""
    names: list[str] = field(default_factory=list)

    def line(self, case: str, output: str, expected: str) -> str:
        """Count ``case``, whose output must hold exactly one ``ctxsim:`` line, matching ``expected`` (``*`` matches
        anything, every other character itself), and no traceback; returns that line. The release notice a run
        that reached its verdict ends with (:func:`ctxsim.live.release_notice`) is not the case's line."""
        self.cases += 1
        self.names.append(case)
        notice = _release_notice()  # the environment's, where its CLI is newer than every recorded release
        lines = [line for line in output.splitlines() if "ctxsim:" in line and line != notice]
        if "Traceback (most recent call last)" in output:
            self.tracebacks += 1
        assert "Traceback (most recent call last)" not in output, f"{case}: a traceback:\n{output[-3000:]}"
        assert len(lines) == 1, f"{case}: {len(lines)} ctxsim: lines, not 1:\n{output[-3000:]}"
        pattern = expected.replace("[", "[[]")  # brackets are literal (key paths); * is the only wildcard
        assert fnmatch.fnmatchcase(lines[0], pattern), f"{case}: the line\n  {lines[0]}\nis not\n  {expected}"
        self.clean_lines += 1
        return lines[0]

    def case(self, case: str) -> None:
        """Count ``case``, judged by its own assertions and by :meth:`hang`, :meth:`leaked` or :meth:`survived`."""
        self.cases += 1
        self.names.append(case)

    def hang(self, case: str, seconds: float, limit: float) -> None:
        """``case`` took ``seconds``; more than ``limit`` is a hang."""
        if seconds > limit:
            self.hangs += 1
        assert seconds <= limit, f"{case}: took {seconds:.1f} s (at most {limit:g} s)"

    def leaked(self, case: str, left: list[str]) -> None:
        """``case`` left ``left`` behind (processes, directories): none may be."""
        self.leaks += len(left)
        assert not left, f"{case}: left behind: {left}"

    def survived(self, case: str, secrets: list[str]) -> None:
        """``secrets`` survived ``case``'s scrub: none may."""
        self.secrets += len(secrets)
        assert not secrets, f"{case}: secrets kept: {secrets}"


    @staticmethod
    def stopped(process: subprocess.Popen[str]) -> None:
        """End ``process`` (started in a session of its own) and its group if it still runs: a case's cleanup."""
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    @staticmethod
    def running(marker: str) -> list[str]:
        """The live processes whose command line holds ``marker``, and the zombies of the same program (``marker``'s
        first word: a zombie keeps its name, not its command line) this process has not reaped, as ``pid state
        command``. A zombie of another program (a run under test that just exited, not yet waited for) is not one."""
        program = marker.split()[0].rpartition("/")[2][:15] if marker.split() else ""  # the kernel keeps 15 bytes
        out = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                command = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                name, _, rest = Path(f"/proc/{entry}/stat").read_text().partition(" (")[2].rpartition(")")
                fields = rest.split()
            except (OSError, IndexError):
                continue
            zombie_of_mine = fields[0] == "Z" and fields[1] == str(os.getpid()) and name == program
            if (marker in command and fields[0] != "Z") or zombie_of_mine:
                out.append(f"{entry} {fields[0]} {command.strip() or name}")
        return out


def default_signals() -> None:
    """A child's pre-exec hook: SIGINT's, SIGTERM's and SIGHUP's default actions, whatever this process inherited: a
    shell ignores SIGINT in what it starts in the background, ``nohup`` ignores SIGHUP, and a run that inherits a
    signal ignored rightly keeps ignoring it. A case that sends one gives its run the default first."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
