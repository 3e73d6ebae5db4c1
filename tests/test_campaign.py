"""A fuzz campaign over processes: one directory example database, and what one process finds another replays."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from ctxsim.campaign import DATABASE_ENV, example_database
from ctxsim.strategies import register_profiles

# The README's campaign test file, on a catalogued tracker the fuzzer finds within a few dozen streams. PHASES lets
# a process replay the database and nothing else: then only a counterexample saved by another process can fail it.
CAMPAIGN = """\
import os

import pytest
from hypothesis import Phase, given, settings

from ctxsim.check import run_tracker_parsed
from ctxsim.strategies import message_streams, register_profiles
from ctxsim.trackers import make

register_profiles()
settings.load_profile("ctx-fuzz")
PHASES = (Phase.reuse,) if os.environ.get("REPLAY_ONLY") else (Phase.reuse, Phase.generate, Phase.shrink)


@pytest.mark.parametrize("part", range(4))
def test_campaign(part):  # parts give every worker work; no @seed, which turns the database off
    @settings(max_examples=300, phases=PHASES)
    @given(message_streams())
    def check(stream):
        report = run_tracker_parsed(make("claude-code-statusline"), stream.session, stream.scripts)
        assert report.ok, f"{report}\\n{stream!r}"

    check()
"""


def _pytest(work: Path, database: Path, part: int, *, replay_only: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, DATABASE_ENV: str(database)}
    env.pop("PYTEST_XDIST_WORKER", None)
    if replay_only:
        env["REPLAY_ONLY"] = "1"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            f"test_campaign.py::test_campaign[{part}]"]
    return subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_counterexample_found_by_one_process_replays_in_another(tmp_path: Path) -> None:
    (tmp_path / "test_campaign.py").write_text(CAMPAIGN)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    database, empty = tmp_path / "db", tmp_path / "empty"

    # two processes fuzz at once (random seeds) and both save what they find in the one directory
    finders = [_pytest(tmp_path, database, part) for part in (0, 2)]
    outputs = [p.communicate(timeout=300)[0] for p in finders]
    assert [p.returncode for p in finders] == [1, 1], outputs
    assert any(database.rglob("*")), "ctxsim: nothing was saved in the shared database"

    # a third process, another part, replays the database only: it fails on the saved example
    replay = _pytest(tmp_path, database, 1, replay_only=True)
    out = replay.communicate(timeout=300)[0]
    assert replay.returncode == 1, out
    assert "claude-code-statusline is off on" in out, out

    # the control: replaying an empty database finds nothing
    control = _pytest(tmp_path, empty, 1, replay_only=True)
    out = control.communicate(timeout=300)[0]
    assert control.returncode == 0, out


def test_example_database_reads_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DATABASE_ENV, raising=False)
    assert example_database() is None
    monkeypatch.setenv(DATABASE_ENV, str(tmp_path / "shared"))
    db = example_database()
    assert isinstance(db, DirectoryBasedExampleDatabase) and (tmp_path / "shared").is_dir()
    assert isinstance(example_database(tmp_path / "given"), DirectoryBasedExampleDatabase)


def test_redis_without_the_client_says_what_to_install() -> None:
    try:
        import redis  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install redis"):
            example_database("redis://localhost:6379/0")
    else:
        pytest.skip("redis is installed")


def test_the_fuzz_profile_takes_the_shared_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATABASE_ENV, str(tmp_path / "shared"))
    register_profiles()
    try:
        database = settings.get_profile("ctx-fuzz").database
        assert isinstance(database, DirectoryBasedExampleDatabase)
        assert Path(database.path) == tmp_path / "shared"
    finally:
        monkeypatch.delenv(DATABASE_ENV)
        register_profiles()  # as the rest of the suite knows it
