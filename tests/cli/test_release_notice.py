"""Said at run time: a Claude Code newer than the newest release ctxsim recorded is named, once, in the pytest header
and at the end of each ``ctxsim`` command that plays sessions; a recorded (or older) one is not; a ``CTXSIM_CLI``
that hangs or prints no version costs a bounded wait and one line, never a traceback.

The CLI in use is a wrapper script named in ``CTXSIM_CLI``; the versions it reports are made from the capture
directories (read here without :mod:`ctxsim.wire`), so a release recorded tomorrow changes nothing in this file.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

import ctxsim
from ctxsim import cli
from ctxsim.live import _notice, release_notice

CAPTURES = Path(ctxsim.__file__).resolve().parent / "wire" / "captures"
RECORDED = sorted((p.name.removeprefix("claude-code-") for p in CAPTURES.glob("claude-code-*") if p.is_dir()),
                  key=lambda v: tuple(map(int, v.split("."))))
NEWEST = RECORDED[-1]
NEWER = ".".join([*NEWEST.split(".")[:-1], str(int(NEWEST.split(".")[-1]) + 1)])
"""The newest recorded release with its patch number bumped: a release ctxsim has not recorded."""
SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "compaction.yaml"


def notice_of(version: str, newest: str = NEWEST) -> str:
    """The line expected for ``version``, the CLI in CTXSIM_CLI, written out here."""
    return (f"ctxsim: Claude Code {version} is newer than the newest release ctxsim recorded ({newest}): its truth "
            f"may be a release behind; `ctxsim fidelity --cli \"$CTXSIM_CLI\"` compares them field by field")


def said(text: str) -> list[str]:
    """The lines of ``text`` that compare the CLI with the recorded releases (a notice, or the note on a CLI
    that gave no version)."""
    return [line for line in text.splitlines() if "the newest release ctxsim recorded" in line]


CliMaker = Callable[[str], Path]


@pytest.fixture
def ctxsim_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliMaker:
    """Put in CTXSIM_CLI a CLI wrapper whose ``--version`` runs the given shell lines; returns its path."""
    def make(body: str) -> Path:
        path = tmp_path / f"claude-{uuid.uuid4().hex[:8]}"
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
        monkeypatch.setenv("CTXSIM_CLI", str(path))
        return path
    return make


def version(number: str) -> str:
    """The shell line of a CLI whose ``--version`` is ``number``, as Claude Code prints it."""
    return f'echo "{number} (Claude Code)"'


def test_a_newer_cli_is_named_once_in_the_pytest_header(pytester: pytest.Pytester,
                                                         ctxsim_cli: CliMaker) -> None:
    ctxsim_cli(version(NEWER))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile("def test_nothing():\n    assert True\n")
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert said(result.stdout.str()) == [notice_of(NEWER)]
    header = result.stdout.lines[:result.stdout.lines.index("collected 1 item")]
    assert notice_of(NEWER) in header


def test_under_q_the_notice_closes_the_run_instead(pytester: pytest.Pytester, ctxsim_cli: CliMaker) -> None:
    ctxsim_cli(version(NEWER))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile("def test_nothing():\n    assert True\n")
    result = pytester.runpytest("-q", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert said(result.stdout.str()) == [notice_of(NEWER)]


@pytest.mark.parametrize("which", ["newest", "oldest"])
def test_a_recorded_cli_gets_no_notice(pytester: pytest.Pytester, ctxsim_cli: CliMaker, which: str) -> None:
    ctxsim_cli(version(NEWEST if which == "newest" else RECORDED[0]))
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile("def test_nothing():\n    assert True\n")
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert "ctxsim: Claude Code" in result.stdout.str()  # the header was shown
    assert said(result.stdout.str()) == []


@pytest.mark.parametrize("named", [None, ""], ids=["unset", "empty"])
def test_without_ctxsim_cli_the_bundled_cli_is_judged(monkeypatch: pytest.MonkeyPatch, named: str | None) -> None:
    environ = {k: v for k, v in os.environ.items() if k != "CTXSIM_CLI"}
    if named is not None:
        environ["CTXSIM_CLI"] = named  # empty is unset, as for the serve wrapper's ${CTXSIM_CLI:-...}
    monkeypatch.setattr(_notice, "installed_cli_version", lambda: NEWER)
    assert release_notice(environ) == (
        f"ctxsim: Claude Code {NEWER} is newer than the newest release ctxsim recorded ({NEWEST}): its truth may be "
        f"a release behind; `ctxsim fidelity` compares them field by field")
    monkeypatch.setattr(_notice, "installed_cli_version", lambda: NEWEST)
    assert release_notice(environ) is None
    monkeypatch.setattr(_notice, "installed_cli_version", lambda: None)  # no CLI bundled: nothing to say
    assert release_notice(environ) is None


def test_versions_compare_as_numbers(ctxsim_cli: CliMaker) -> None:
    ctxsim_cli(version("2.1.1000"))
    environ = dict(os.environ)
    # as text, "2.1.99" sorts last and "2.1.1000" first: numerically 2.1.337 is the newest recorded
    assert release_notice(environ, recorded=["2.1.99", "2.1.337", "2.1.4"]) == notice_of("2.1.1000", "2.1.337")
    ctxsim_cli(version("2.1.98"))
    assert release_notice(dict(os.environ), recorded=["2.1.99", "2.1.337"]) is None


def test_ctxsim_run_ends_with_the_notice_on_stderr_and_stdout_stays_its_own(
        ctxsim_cli: CliMaker, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    ctxsim_cli(version(NEWEST))
    assert cli.main(["run", str(SCENARIO), "--json", "-"]) == 0
    recorded_out, recorded_err = capsys.readouterr()
    assert recorded_err == ""
    ctxsim_cli(version(NEWER))
    assert cli.main(["run", str(SCENARIO), "--json", "-"]) == 0
    out, err = capsys.readouterr()
    assert err == notice_of(NEWER) + "\n"
    assert out == recorded_out  # stdout, JSON lines included, is what a recorded CLI gets
    assert json.loads(out.splitlines()[-1])


def test_an_input_error_or_an_interrupt_stays_one_line(ctxsim_cli: CliMaker, capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ctxsim_cli(version(NEWER))
    assert cli.main(["run", str(tmp_path / "missing.yaml")]) == 2
    _, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and said(err) == [], err

    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    run = next(c for c in cli.COMMANDS if c.name == "run")
    monkeypatch.setattr(cli, "COMMANDS", tuple(dataclasses.replace(run, run=interrupted) if c is run else c
                                               for c in cli.COMMANDS))
    assert cli.main(["run", str(SCENARIO)]) == 130
    _, err = capsys.readouterr()
    assert err.startswith("ctxsim: run: interrupted") and len(err.splitlines()) == 1 and said(err) == [], err


def _running(marker: str) -> list[int]:
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if marker in (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                pids.append(int(proc.name))
        except OSError:
            continue
    return pids


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists() or shutil.which("sleep") is None,
                    reason="ctxsim: /proc and sleep are needed to see the hung CLI's processes")
def test_a_hanging_cli_costs_a_bounded_wait_and_one_line(pytester: pytest.Pytester, ctxsim_cli: CliMaker,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    seconds = 3000 + uuid.uuid4().int % 997  # a child of its own, and the CLI's own wait
    ctxsim_cli(f"sleep {seconds} &\nsleep {seconds}")
    monkeypatch.setattr(_notice, "NOTICE_TIMEOUT", 1.0)
    note = (f"ctxsim: the CLI {os.environ['CTXSIM_CLI']} did not answer --version within 1 s; so whether CTXSIM_CLI "
            f"is newer than the newest release ctxsim recorded ({NEWEST}) is not known")
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile("def test_nothing():\n    assert True\n")
    started = time.monotonic()
    result = pytester.runpytest("-p", "no:randomly")
    assert time.monotonic() - started < 30
    result.assert_outcomes(passed=1)
    assert said(result.stdout.str()) == [note] and "Traceback" not in result.stdout.str()
    assert cli.main(["run", str(SCENARIO)]) == 0
    _, err = capsys.readouterr()
    assert err == note + "\n"
    deadline = time.monotonic() + 5  # SIGKILL is sent; the kernel ends them a moment later
    while _running(f"sleep {seconds}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running(f"sleep {seconds}") == []  # the hung CLI and what it started are gone


@pytest.mark.parametrize("body", ["echo 'not a version'", "exit 3", "printf '\\033[2J'"],
                         ids=["garbage", "failing", "escape"])
def test_a_cli_that_gives_no_version_gets_one_line_and_no_traceback(
        ctxsim_cli: CliMaker, capsys: pytest.CaptureFixture[str], body: str) -> None:
    path = ctxsim_cli(body)
    assert cli.main(["run", str(SCENARIO)]) == 0
    _, err = capsys.readouterr()
    assert said(err) == err.splitlines() and len(said(err)) == 1, err
    assert err.startswith(f"ctxsim: the CLI {path} gave no version (--version exited ")
    assert "\033" not in err
