"""The ``ctxsim`` command: ``run`` (timeline and plot), ``scenario new|check|keys``, exit codes, one-line errors."""

from __future__ import annotations

import argparse
import shutil
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from ctxsim import cli
from ctxsim.runner._scenario import run_scenario
from ctxsim.scenario import _schema as schema, load_scenario
from ctxsim.trackers.catalogue import make
from ctxsim.wire import captured_versions

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
MALFORMED = Path(__file__).resolve().parents[1] / "malformed"

MY_TRACKER = '''
from ctxsim.reference import ContextTracker


class Mine(ContextTracker):
    name = "mine"


class Stuck:
    """Never knows anything."""

    def observe(self, message):
        pass

    def context_tokens(self):
        return 0
'''


@pytest.fixture(autouse=True)
def recorded_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Claude Code in use is the newest recorded release, whatever is installed, so stderr here is the command's
    own (a newer CLI's notice is tested in test_release_notice.py)."""
    monkeypatch.delenv("CTXSIM_CLI", raising=False)
    monkeypatch.setattr("ctxsim.live._notice.installed_cli_version", lambda: captured_versions()[-1])


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with the compaction scenario and a tracker module importable from it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_cli_trackers.py").write_text(MY_TRACKER)
    shutil.copy(SCENARIOS / "compaction.yaml", tmp_path / "compaction.yaml")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_run_prints_each_trackers_timeline_and_its_verdict(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", "compaction.yaml")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "scenario compaction (compaction.yaml): window 200,000, tolerance ±2,000 tokens"
    assert "== reference: tracks it; expected to track it: OK" in lines
    assert ("== arbiter-msgid: fails first at q2 compaction, over the truth (estimate 148,004, truth 32,000); "
            "expected to fail on it (first failing point q2 compaction, over the truth): OK") in lines
    # the first call of the YAML: in 3 + cc 2,000 + cr 148,000, out 300
    assert any(line.split()[:5] == ["1", "q1", "call", "1", "150,003..150,303"] for line in lines)
    assert "first failing point: #3 q2 compaction (compaction.yaml:20)" in lines
    assert lines[-1] == "3 trackers: every expectation met"


def test_run_against_your_own_tracker(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "run", "compaction.yaml", "--tracker", "my_cli_trackers:Mine")
    assert code == 0 and "== mine: tracks it; expected to track it: OK" in out
    assert "arbiter-msgid" not in out  # --tracker replaces the scenario's list; the reference always runs
    code, out, _ = run(capsys, "run", "compaction.yaml", "-t", "my_cli_trackers:Stuck", "-t", "arbiter-msgid")
    assert code == 1
    assert "== Stuck: fails first at q1 call 1, under the truth (estimate 0, truth 150,003..150,303); expected to " \
           "track it: NOT AS EXPECTED" in out
    assert "== arbiter-msgid: fails first at q2 compaction, over the truth" in out and "): OK" in out
    assert out.splitlines()[-1] == "3 trackers: some expectations NOT met"


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "nowhere.yaml"], "ctxsim: nowhere.yaml: no such file, nor a bundled scenario of that name; "
                                  "`ctxsim scenario list` lists the bundled ones"),
    (["run", "compaction.yaml", "--tracker", "my_cli_trackers:Nope"],
     "ctxsim: --tracker=my_cli_trackers:Nope: module 'my_cli_trackers' has no 'Nope'"),
    (["run", "compaction.yaml", "--plot", "out.pdf"], "ctxsim: --plot out.pdf: use a .png or .svg file name"),
    (["scenario", "new", "../x"], "ctxsim: scenario new: '../x' is not a usable name"),
])
def test_input_errors_are_one_line_and_exit_2(here: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                              message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith(message) and err.count("\n") == 1 and "Traceback" not in err


def test_a_malformed_scenario_is_its_one_loader_error(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = here / "04.yaml"
    shutil.copy(MALFORMED / "04-negative-cache-read.yaml", bad)
    code, _, err = run(capsys, "run", "04.yaml")
    assert (code, err) == (2, "ctxsim: 04.yaml:4: queries[0].steps[0].call.cr: expected a non-negative integer, "
                              "got -5\n")


def test_plot_png_and_svg(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("matplotlib")
    code, out, _ = run(capsys, "run", "compaction.yaml", "--plot", "out.png")
    assert code == 0 and "plot written to out.png" in out
    data = (here / "out.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
    assert run(capsys, "run", "compaction.yaml", "--plot", "out.svg")[0] == 0
    assert b"<svg" in (here / "out.svg").read_bytes()[:1000]


def test_plot_without_matplotlib_says_what_to_install(here: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    code, out, err = run(capsys, "run", "compaction.yaml", "--plot", "out.png")
    assert (code, out) == (2, "")
    assert err == ("ctxsim: plotting needs matplotlib, an optional extra: pip install 'pytest-ctxsim[plot]' "
                   "(or run without --plot)\n")


def test_scenario_new_writes_a_template_that_loads_and_passes(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (here / "scenarios").mkdir()
    code, out, _ = run(capsys, "scenario", "new", "my-bug")
    path = here / "scenarios" / "my-bug.yaml"
    assert code == 0 and out.startswith(f"wrote {Path('scenarios/my-bug.yaml')}")
    text = path.read_text()
    assert text.startswith("# my-bug: a ctxsim scenario.") and text.count("\n# ") + text.count("  # ") > 10
    sc = load_scenario(path)
    assert sc.name == "my-bug" and sc.must_fail == ("arbiter-msgid",) and sc.thresholds[0].fires == ("q1 call 1",)
    assert run_scenario(sc, make("reference")).ok and not run_scenario(sc, make("arbiter-msgid")).ok
    assert run(capsys, "run", str(path))[0] == 0
    code, _, err = run(capsys, "scenario", "new", "my-bug")
    assert code == 2 and "exists (--force overwrites it)" in err
    assert run(capsys, "scenario", "new", "my-bug", "--force", "--dir", "elsewhere")[0] == 0
    assert (here / "elsewhere" / "my-bug.yaml").read_text() == text.replace("scenarios/my-bug.yaml",
                                                                              "elsewhere/my-bug.yaml")


def test_the_template_passes_under_pytest(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    monkeypatch.chdir(pytester.path)
    assert cli.main(["scenario", "new", "first", "--dir", "scenarios"]) == 0
    pytester.runpytest("--ctx-scenarios=scenarios").assert_outcomes(passed=2)
    pytester.runpytest("scenarios/first.yaml").assert_outcomes(passed=2)  # named: a scenario, flag or not


def test_scenario_check_and_keys(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copy(MALFORMED / "10-unknown-tracker.yaml", here / "bad.yaml")
    code, out, err = run(capsys, "scenario", "check", "compaction.yaml", "bad.yaml")
    assert code == 1
    assert out == "compaction.yaml: ok (compaction: 6 points)\n"
    assert err.startswith("ctxsim: bad.yaml:6: expect.fail[0]: no tracker 'mala-overwrit'")
    assert err.splitlines()[1:] == ["ctxsim scenario check: 1 of 2 files did not load"]
    assert run(capsys, "scenario", "keys") == (0, schema.reference(), "")


def test_scenario_check_of_a_directory_names_every_broken_file(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (here / "dir" / "sub").mkdir(parents=True)
    shutil.copy(MALFORMED / "10-unknown-tracker.yaml", here / "dir" / "b.yaml")
    (here / "dir" / "sub" / "a.yml").write_text("queries: 3\n")
    shutil.copy(here / "compaction.yaml", here / "dir" / "c.yaml")
    code, out, err = run(capsys, "scenario", "check", "dir")
    assert code == 1
    assert out == f"{Path('dir/c.yaml')}: ok (compaction: 6 points)\n"
    lines = err.splitlines()
    assert len(lines) == 3 and lines[0].startswith("ctxsim: dir/b.yaml:6: expect.fail[0]: no tracker 'mala-overwrit'")
    assert lines[1:] == ["ctxsim: dir/sub/a.yml:1: queries: expected a list, got 3",
                         "ctxsim scenario check: 2 of 3 files did not load"]
    (here / "empty").mkdir()
    assert run(capsys, "scenario", "check", "empty") == (
        2, "", "ctxsim: scenario check: empty: no scenario files (*.yaml, *.yml) in this directory\n")


def test_bundled_scenarios_are_listed_and_run_by_name(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ctxsim.corpus import bundled_scenarios

    code, out, err = run(capsys, "scenario", "list")
    assert code == 0 and err == ""
    assert [line.split()[0] for line in out.splitlines()] == [p.stem for p in bundled_scenarios()]
    assert "compaction " in out and "checkpoint-block " in out
    (here / "compaction.yaml").unlink()  # by name, from a directory without it
    for name in ("compaction", "compaction.yaml", "bundled/compaction.yaml"):
        code, out, _ = run(capsys, "run", name)
        assert code == 0 and out.startswith(f"scenario compaction ({SCENARIOS / 'compaction.yaml'})")
    error = run(capsys, "run", "compactio")[2]  # the closest name first, then any others near it
    assert error.startswith("ctxsim: compactio: no such file, nor a bundled scenario of that name; did you mean "
                            "compaction") and error.endswith("?\n") and error.count("\n") == 1


# --- ctxsim run on a task scenario ------------------------------------------------------------------------------


@pytest.fixture
def task_here(here: Path) -> Path:
    """The working directory with the shipped 89% threshold scenario (worked out by hand in its description)."""
    shutil.copy(SCENARIOS / "seed003-threshold-89.yaml", here / "t89.yaml")
    return here


def test_run_on_a_task_scenario_prints_each_loops_verdict_and_the_timeline(
        task_here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", "t89.yaml")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == ("scenario seed003-threshold-89 (t89.yaml): task of 16 steps (16,000 to 18,100 tokens, 1 per "
                        "turn), baseline 12,000, effective window 200,000; restart at 90% (180,000 tokens); "
                        "checkpoints: well_formed; max_restarts 10")
    assert "== reference-loop: meets the scenario's expectations: OK" in lines
    assert ("== keep-tracker: the loop checks catch it breaking 'tracker-reset' (tracker state is reset for each "
            "session): OK") in lines
    assert "== seed003: keeps every invariant: OK" in lines
    # s10 lands at 178,000 (89%): the loop continues; s11 at 194,400 crosses, and the checkpoint follows
    rows = [line.split() for line in lines]
    assert ["10", "continue", "s10", "178,000", "89.00%", "continue", "continue"] in rows
    assert ["11", "continue", "s11", "194,400", "97.20%", ">=", "90%", "checkpoint"] in rows
    assert lines[-1] == "3 loop runs: every expectation met"
    # catalogued loops show their timeline only with --all
    assert out.count("-- session 1 (connection 1,") == 1
    assert run(capsys, "run", "t89.yaml", "--all")[1].count("-- session 1 (connection 1,") == 3


def test_run_on_a_task_scenario_with_wrong_numbers_and_your_tracker(
        task_here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (task_here / "t89.yaml").read_text().replace("per_session: [11, 5]", "per_session: [10, 6]")
    (task_here / "t89.yaml").write_text(text)
    line = next(n for n, ln in enumerate(text.splitlines(), 1) if "per_session" in ln)
    code, out, _ = run(capsys, "run", "t89.yaml", "--tracker", "my_cli_trackers:Mine")
    assert code == 1
    assert "== reference-loop: does not meet the scenario's expectations (1 unmet expectation): NOT AS EXPECTED" in out
    assert f"t89.yaml:{line}: expect.steps.per_session: [10, 6], but steps per session: [11, 5]" in out
    assert "== reference-loop with tracker mine: does not meet the scenario's expectations" in out
    assert out.splitlines()[-1] == "4 loop runs: some expectations NOT met"


def test_a_task_scenario_has_nothing_to_plot_and_checks_as_a_task(
        task_here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "run", "t89.yaml", "--plot", "out.png")
    assert (code, out) == (2, "")
    assert err.startswith("ctxsim: --plot: scenario t89.yaml is a task scenario") and err.count("\n") == 1
    assert run(capsys, "scenario", "check", "t89.yaml")[:2] == (
        0, "t89.yaml: ok (seed003-threshold-89: a task of 16 steps)\n")


def test_subcommands_come_from_one_registry(capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def configure(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--examples", type=int, default=1)

    def hello(args: argparse.Namespace) -> int:
        print(f"hello {args.examples}")
        return 0

    monkeypatch.setattr(cli, "COMMANDS", (*cli.COMMANDS, cli.Command("hello", "say hello", configure, hello)))
    assert run(capsys, "hello", "--examples", "3") == (0, "hello 3\n", "")
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "say hello" in capsys.readouterr().out


def test_the_console_script_is_declared() -> None:
    (script,) = entry_points(group="console_scripts", name="ctxsim")
    assert script.value == "ctxsim.cli:main"


def test_conformance_is_a_deprecated_alias_of_fidelity_saying_so_in_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from ctxsim.cli import _recordings

    played: list[argparse.Namespace] = []
    monkeypatch.setattr(_recordings, "_fidelity", lambda args: played.append(args) or 0)
    assert cli.main(["conformance", "several-queries", "--json"]) == 0
    err = capsys.readouterr().err
    assert err == "ctxsim: 'ctxsim conformance' is deprecated: it is 'ctxsim fidelity' now (the same command)\n"
    assert played[0].names == ["several-queries"] and played[0].json
    # the new name takes the same arguments, without the line
    fidelity = next(c for c in cli.COMMANDS if c.name == "fidelity")
    assert fidelity.configure is next(c for c in cli.COMMANDS if c.name == "conformance").configure
    with pytest.raises(SystemExit):
        cli.main(["fidelity", "--help"])
    out = capsys.readouterr()
    assert "--record DIR" in out.out and "deprecated" not in out.err
