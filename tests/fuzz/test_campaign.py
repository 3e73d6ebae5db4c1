"""A fuzz campaign over processes: one directory example database, and what one process finds another replays."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from ctxsim.strategies import register_profiles
from ctxsim.strategies._database import DATABASE_ENV, KeptDatabase, example_database

# The README's campaign test file, on a catalogued tracker the fuzzer finds within a few dozen streams. PHASES lets
# a process replay the database and nothing else: then only a counterexample saved by another process can fail it.
CAMPAIGN = """\
import os

import pytest
from hypothesis import Phase, given, settings

from ctxsim.check import run_tracker_parsed
from ctxsim.strategies import message_streams, register_profiles
from ctxsim.trackers.catalogue import make

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


def counterexample(path: Path) -> str:
    """A counterexample file without what names the run that wrote it (its ``# Found by`` and reproduction comments,
    its ``source:`` command, with that run's seed and example count): the stream, world and expectations alone."""
    lines = path.read_text().splitlines()
    kept = [line for line in lines if not line.startswith(("# Found by:", "# Reproduce it", "#   pytest", "source:"))]
    assert len(kept) < len(lines) and any(line.startswith("queries:") for line in kept)
    return "\n".join(kept)


def _pytest(work: Path, database: Path, part: int, *, replay_only: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, DATABASE_ENV: str(database)}
    env.pop("PYTEST_XDIST_WORKER", None)
    if replay_only:
        env["REPLAY_ONLY"] = "1"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
            f"test_campaign.py::test_campaign[{part}]"]
    return subprocess.Popen(argv, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
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
    assert isinstance(db, KeptDatabase) and isinstance(db.primary, DirectoryBasedExampleDatabase)
    assert (tmp_path / "shared").is_dir()
    given = example_database(tmp_path / "given")
    assert isinstance(given, KeptDatabase) and isinstance(given.primary, DirectoryBasedExampleDatabase)


def test_redis_without_the_client_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "redis", None)  # as where it is not installed
    with pytest.raises(ImportError, match=r"pip install 'pytest-ctxsim\[redis\]'"):
        example_database("redis://localhost:6379/0")


def test_the_fuzz_profile_takes_the_shared_database(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DATABASE_ENV, str(tmp_path / "shared"))
    register_profiles()
    try:
        database = settings.get_profile("ctx-fuzz").database
        assert isinstance(database, KeptDatabase) and isinstance(database.primary, DirectoryBasedExampleDatabase)
        assert Path(database.primary.path) == tmp_path / "shared"
    finally:
        monkeypatch.delenv(DATABASE_ENV)
        register_profiles()  # as the rest of the suite knows it


# --- ctxsim fuzz on a real Redis ---------------------------------------------------------------------------------


def _fuzz(work: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``ctxsim fuzz ARGV`` as a user runs it: a fresh process in ``work``."""
    env = {k: v for k, v in os.environ.items() if k not in (DATABASE_ENV, "PYTEST_XDIST_WORKER")}
    return subprocess.run([sys.executable, "-c", "import sys; from ctxsim.cli import main; "
                           "sys.exit(main(['fuzz', *sys.argv[1:]]))", *argv],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_a_second_fuzz_run_replays_the_first_ones_counterexample_from_redis(tmp_path: Path, redis_url: str) -> None:
    tracker = ["--tracker", "claude-code-statusline"]
    first = _fuzz(tmp_path, *tracker, "--db", redis_url, "--seed", "1", "--out", "first.yaml")
    assert first.returncode == 1, first.stdout + first.stderr
    # another seed, one example: only the database can hand it the counterexample
    second = _fuzz(tmp_path, *tracker, "--db", redis_url, "--seed", "2", "--examples", "1", "--out", "second.yaml")
    assert second.returncode == 1, second.stdout + second.stderr
    assert counterexample(tmp_path / "second.yaml") == counterexample(tmp_path / "first.yaml")
    # the control: the same run on an empty database (another Redis db number) finds nothing
    empty = redis_url.rsplit("/", 1)[0] + "/1"
    control = _fuzz(tmp_path, *tracker, "--db", empty, "--seed", "2", "--examples", "1", "--out", "third.yaml")
    assert control.returncode == 0, control.stdout + control.stderr
    assert "tracked all 1 generated streams" in control.stdout and not (tmp_path / "third.yaml").exists()
    # the database is keyed by tracker: another tracker's run does not replay (nor delete) this one's
    other = _fuzz(tmp_path, "--tracker", "reference", "--db", redis_url, "--seed", "2", "--examples", "1")
    assert other.returncode == 0, other.stdout + other.stderr
    again = _fuzz(tmp_path, *tracker, "--db", redis_url, "--seed", "3", "--examples", "1", "--out", "again.yaml")
    assert again.returncode == 1 and counterexample(tmp_path / "again.yaml") == counterexample(tmp_path / "first.yaml")


@pytest.mark.slow
def test_fuzz_workers_share_the_database(tmp_path: Path, redis_url: str) -> None:
    tracker = ["--tracker", "ccstatusline"]
    found = _fuzz(tmp_path, *tracker, "--db", redis_url, "--workers", "2", "--examples", "100", "--out", "w.yaml")
    assert found.returncode == 1, found.stdout + found.stderr
    assert "fails after" in found.stdout
    # Each worker saved its own shrunk counterexample; a replay reports the one Hypothesis ranks first, which need
    # not be worker 0's (the one w.yaml holds). What the workers share: one example, another seed, and the run fails.
    replay = _fuzz(tmp_path, *tracker, "--db", redis_url, "--seed", "7", "--examples", "1", "--out", "r.yaml")
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert "queries:" in (tmp_path / "r.yaml").read_text()
    # the control: the same run on an empty database (another Redis db number) finds nothing
    empty = redis_url.rsplit("/", 1)[0] + "/2"
    control = _fuzz(tmp_path, *tracker, "--db", empty, "--seed", "7", "--examples", "1", "--out", "c.yaml")
    assert control.returncode == 0, control.stdout + control.stderr
    assert not (tmp_path / "c.yaml").exists()


def test_an_unreachable_database_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("redis")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _fuzz(tmp_path, "--tracker", "reference", "--db", f"redis://127.0.0.1:{port}/0")
    assert result.returncode == 2
    assert result.stderr.startswith(f"ctxsim: the example database 'redis://127.0.0.1:{port}/0' did not answer")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


# The README's HypoFuzz test, on the reference (HypoFuzz runs plain @given tests; a failing one would stop it
# shrinking under this Hypothesis: see the README).
FUZZ_SUITE = """\
from hypothesis import given, settings

from ctxsim.check import run_tracker_parsed
from ctxsim.reference import ContextTracker
from ctxsim.strategies import message_streams, register_profiles

register_profiles()
settings.load_profile("ctx-fuzz")


@given(message_streams())
def test_my_tracker(stream):
    report = run_tracker_parsed(ContextTracker(), stream.session, stream.scripts, tolerance=1000)
    assert report.ok, f"{report}\\n{stream!r}"
"""


@pytest.mark.slow
def test_a_bounded_hypofuzz_run_writes_to_the_same_redis_database(tmp_path: Path, redis_url: str) -> None:
    pytest.importorskip("hypofuzz", reason="ctxsim: hypofuzz is not installed (pip install 'pytest-ctxsim[hypofuzz]')")
    import redis

    hypothesis_cli = Path(sys.executable).with_name("hypothesis")
    (tmp_path / "test_ctx_fuzz.py").write_text(FUZZ_SUITE)
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    assert _fuzz(tmp_path, "--tracker", "ccstatusline", "--db", redis_url, "--examples", "100").returncode == 1
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=5, socket_timeout=30)
    before = set(client.keys("*"))
    env = {**os.environ, DATABASE_ENV: redis_url}
    env.pop("PYTEST_XDIST_WORKER", None)
    # With CI set, Hypothesis loads its "ci" profile (derandomized), and HypoFuzz collects no derandomized test.
    env.pop("CI", None)
    fuzzer = subprocess.Popen([str(hypothesis_cli), "fuzz", "--no-dashboard", "-n", "1", "--", "test_ctx_fuzz.py",
                               "-p", "no:cacheprovider"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + 180
    try:
        while not [k for k in client.keys("*") if k.endswith(b".hypofuzz.reports")]:
            assert fuzzer.poll() is None, f"ctxsim: hypofuzz ended early:\n{fuzzer.communicate()[0]}"
            assert time.monotonic() < deadline, "ctxsim: hypofuzz wrote no report to the database within 180 s"
            time.sleep(0.5)
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have ended already: its output says why
            os.killpg(fuzzer.pid, signal.SIGINT)  # bounded: stop the fuzzer and its worker process
        try:
            out = fuzzer.communicate(timeout=30)[0]
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(fuzzer.pid, signal.SIGKILL)
            out = fuzzer.communicate()[0]
    assert "using 1 process to fuzz 1 test" in out, out
    after = set(client.keys("*"))
    assert before <= after, "ctxsim: the fuzz command's counterexample is gone"
    hypofuzz = after - before
    assert b"hypothesis-example:hypofuzz.test_keys" in hypofuzz
    assert any(k.endswith(b".hypofuzz.reports") and client.scard(k) for k in hypofuzz)
    client.close()
