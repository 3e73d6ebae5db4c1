"""A command line under a tracker spec: whether it can start where it runs (a missing program or script is one
ctxsim: error before any run, at every door), and the spec that runs it the same from any directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxsim.cli import main
from ctxsim.trackers import StreamTracker, TrackerSpecError, anchored_spec, make_tracker, resolve


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "gauge.py").write_text("print(1)\n")
    (tmp_path / "bin" / "plain.sh").write_text("echo 1\n")  # not executable
    run = tmp_path / "bin" / "run.sh"
    run.write_text("#!/bin/sh\necho 1\n")
    run.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("spec", "why"), [
    ("stream:python3 bin/missing.py", "bin/missing.py: no such file"),
    ("cmd:node --import tsx lib/gauge.ts", "lib/gauge.ts: no such file"),
    ("cmd:./bin/missing.sh", "./bin/missing.sh: no such file"),
    ("cmd:./bin/plain.sh", "./bin/plain.sh: not executable; chmod +x it or name its interpreter"),
    ("stream:no-such-program-anywhere --stream", "no-such-program-anywhere: not found on PATH"),
    ("cmd:LANG=C python3 ../elsewhere/gauge.py", "../elsewhere/gauge.py: no such file"),
])
def test_a_command_that_cannot_start_is_one_error_before_any_run(here: Path, spec: str, why: str) -> None:
    with pytest.raises(TrackerSpecError) as raised:
        resolve(spec)
    assert str(raised.value) == f"the command cannot start: {why} (it runs in {here})"


@pytest.mark.parametrize("spec", [
    "stream:python3 bin/gauge.py",
    "cmd:./bin/run.sh --flag",
    "cmd:python3 -m json.tool",  # a module, not a file
    "cmd:npx @scope/tool statusline",  # a package, not a file
    "cmd:exec python3 bin/gauge.py",  # a shell builtin
    "cmd:cat | python3 bin/missing.py",  # a pipeline: not looked into, it runs and says what it says
    "cmd[cwd=home]:./bin/missing.sh",  # runs in the point's private HOME, which ctxsim fills
])
def test_a_command_that_may_start_resolves(here: Path, spec: str) -> None:
    assert resolve(spec).spec == spec


def test_the_doors_stop_on_a_command_that_cannot_start(capsys: pytest.CaptureFixture[str],
                                                      pytester: pytest.Pytester) -> None:
    spec = "stream:python3 bin/missing.py"
    assert main(["judge", spec]) == 2
    assert capsys.readouterr().err.strip() == (f"ctxsim: --tracker={spec}: the command cannot start: "
                                               f"bin/missing.py: no such file (it runs in {pytester.path})")
    result = pytester.runpytest(f"--ctx-tracker={spec}", "--ctx-scenarios")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*ctxsim: --ctx-tracker={spec}: the command cannot start: bin/missing.py: no "
                                 f"such file (it runs in {pytester.path})"])


@pytest.mark.parametrize(("spec", "anchored"), [
    ("stream:node bin/gauge.mjs", "stream[cwd=/proj]:node bin/gauge.mjs"),
    ("stream[timeout=5]:node bin/gauge.mjs", "stream[timeout=5.0 cwd=/proj]:node bin/gauge.mjs"),
    ("cmd[preset=ccusage no_context_window]:./gauge", "cmd[preset=ccusage no_context_window cwd=/proj]:./gauge"),
    ("cmd[cwd=sub]:./gauge", "cmd[cwd=/proj/sub]:./gauge"),
    ("cmd[cwd=/opt/tool]:./gauge", "cmd[cwd=/opt/tool]:./gauge"),
    ("cmd[cwd=home]:./gauge", "cmd[cwd=home]:./gauge"),
    ("cmd[regex='ctx (?P<percent>[0-9]+)%]']:./gauge", "cmd['regex=ctx (?P<percent>[0-9]+)%]' cwd=/proj]:./gauge"),
    ("my.module:Tracker", "my.module:Tracker"),
    ("arbiter-msgid", "arbiter-msgid"),
])
def test_a_command_spec_records_the_directory_it_runs_in(spec: str, anchored: str) -> None:
    assert anchored_spec(spec, "/proj") == anchored


def test_an_anchored_spec_runs_the_command_there(here: Path, tmp_path_factory: pytest.TempPathFactory,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    spec = anchored_spec("stream:python3 bin/gauge.py", here)
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    made = make_tracker(resolve(spec).factory)
    assert isinstance(made, StreamTracker) and made.cwd == str(here)
