"""Hostile places to write and read, round two: ``ctxsim import -o /dev/full``, ``import`` and ``fuzz --out`` on a
full disk (a file size limit, ``RLIMIT_FSIZE``: EFBIG, as a full disk's ENOSPC), a FIFO, a ``/dev/zero`` symlink,
a socket and an oversized file in a shared directory database. Each is one ``ctxsim:`` line, never a hang, a
traceback nor a partial file; a counterexample that cannot be written is printed."""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from io import StringIO
from pathlib import Path

import pytest
from _tally import Tally

from ctxsim.strategies import example_database

CALLS = 40


def _transcript(path: Path) -> Path:
    common = {"sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "version": "2.1.39", "userType": "external",
              "cwd": "/tmp/project"}
    rows, parent = [], None
    for n in range(CALLS):
        stamp = f"2026-02-11T10:00:{n:02d}Z"
        rows.append({"type": "user", "uuid": f"u-{n}", "parentUuid": parent, "isSidechain": False, "timestamp": stamp,
                     "message": {"role": "user", "content": f"step {n} " + "lorem " * 50}, **common})
        rows.append({"type": "assistant", "uuid": f"a-{n}", "parentUuid": f"u-{n}", "isSidechain": False,
                     "timestamp": stamp, "requestId": f"req_{n}", **common,
                     "message": {"id": f"msg_{n}", "model": "claude-opus-4-6", "role": "assistant",
                                 "content": [{"type": "text", "text": "ok " * 50}],
                                 "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                           "cache_read_input_tokens": 1_000 + n, "output_tokens": 10}}})
        parent = f"a-{n}"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _limited(size: int) -> Callable[[], None]:
    """A child's pre-exec hook: files it writes stop at ``size`` bytes (EFBIG, as a full disk's ENOSPC)."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))
    return limit


def _ctxsim(args: list[str], cwd: Path, *, limit: int | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ctxsim.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, **(env or {})},
                          preexec_fn=None if limit is None else _limited(limit))


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="ctxsim: needs /dev/full (Linux)")
@pytest.mark.parametrize("force", [False, True], ids=["without --force", "with --force"])
def test_import_to_dev_full_is_one_line(hostile: Tally, tmp_path: Path, force: bool) -> None:
    source = _transcript(tmp_path / "session.jsonl")
    before = set(os.listdir("/dev"))
    done = _ctxsim(["import", str(source), "-o", "/dev/full", *(["--force"] if force else [])], tmp_path)
    case = f"ctxsim import -o /dev/full ({'--force' if force else 'no --force'})"
    expected = ("ctxsim: import: /dev/full is a character device, not a file it can write" if force
                else "ctxsim: import: /dev/full exists (--force overwrites it)")
    hostile.line(case, done.stderr, expected)
    assert done.returncode == 2, done.stderr
    hostile.leaked(case, sorted(set(os.listdir("/dev")) - before))  # no stream file written beside it in /dev


def test_import_under_a_file_size_limit_is_one_line(hostile: Tally, tmp_path: Path) -> None:
    """The limit holds the scrubbed stream in memory too (a memory file): it is refused there, before any file."""
    case = "ctxsim import under a file size limit"
    source = _transcript(tmp_path / "session.jsonl")
    out = tmp_path / "out"
    done = _ctxsim(["import", str(source), "-o", str(out / "x.yaml"), "--stream"], tmp_path, limit=2_000)
    hostile.line(case, done.stderr, "ctxsim: import: could not * File too large; nothing was written")
    assert done.returncode == 2, done.stderr
    hostile.leaked(case, _files(out) if out.exists() else [])


FULL_DISK = """
set -e
mount -t tmpfs -o size=64k tmpfs "$OUT"
head -c 40000 /dev/zero > "$OUT/filler"
"$PYTHON" -m ctxsim.cli import "$SOURCE" -o "$OUT/x.yaml" --stream 2> "$WORK/err" || echo "rc=$?" >> "$WORK/err"
rm "$OUT/filler"
ls -A "$OUT" > "$WORK/left"
"""


@pytest.mark.slow
def test_import_on_a_full_disk_leaves_no_partial_file(hostile: Tally, tmp_path: Path) -> None:
    """A real full disk: a 64 KiB tmpfs (in a user and mount namespace) with 40 KB already taken."""
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount -t tmpfs -o size=64k tmpfs {tmp_path}"],
                           capture_output=True, text=True, timeout=30) if sys.platform.startswith("linux") else None
    if probe is None or probe.returncode != 0:
        pytest.skip(f"ctxsim: needs unshare -rm and a tmpfs mount ({probe.stderr.strip()[:200] if probe else 'Linux'})")
    case = "ctxsim import on a full disk"
    source = _transcript(tmp_path / "session.jsonl")
    out = tmp_path / "out"
    out.mkdir()
    env = {**os.environ, "OUT": str(out), "SOURCE": str(source), "PYTHON": sys.executable, "WORK": str(tmp_path)}
    subprocess.run(["unshare", "-rm", "sh", "-c", FULL_DISK], cwd=tmp_path, env=env, check=True, timeout=300)
    err = (tmp_path / "err").read_text()
    hostile.line(case, err, f"ctxsim: import: could not write {out}/x*: No space left on device; nothing was "
                            f"written")
    assert "rc=2" in err, err
    hostile.leaked(case, (tmp_path / "left").read_text().split())
    # the control: on a disk with room the same import writes both files
    again = _ctxsim(["import", str(source), "-o", str(out / "x.yaml"), "--stream"], tmp_path)
    assert again.returncode == 0 and len(_files(out)) == 2, again.stderr


WRONG = '''
class Wrong:
    """Always wrong: one token, whatever it is shown."""

    def observe(self, message):
        pass

    def context_tokens(self):
        return 1
'''


@pytest.mark.slow
def test_fuzz_out_on_a_full_disk_prints_the_counterexample(hostile: Tally, tmp_path: Path) -> None:
    case = "ctxsim fuzz --out on a full disk"
    (tmp_path / "wrong.py").write_text(WRONG)
    out = tmp_path / "found"
    done = _ctxsim(["fuzz", "--tracker", "wrong:Wrong", "--examples", "5", "--out", str(out / "found.yaml")],
                   tmp_path, limit=300, env={"PYTHONPATH": str(tmp_path)})
    hostile.line(case, done.stderr, f"ctxsim: fuzz: could not write {out}/found.yaml: File too large; nothing was "
                                    f"written; the counterexample is printed on stdout instead")
    assert done.returncode == 1, done.stderr
    assert "queries:" in done.stdout, done.stdout[-2000:]  # printed, since it could not be kept
    hostile.leaked(case, _files(out) if out.exists() else [])


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="ctxsim: needs /dev/full (Linux)")
def test_fuzz_out_to_a_device_prints_the_counterexample(hostile: Tally, tmp_path: Path) -> None:
    case = "ctxsim fuzz --out /dev/full"
    (tmp_path / "wrong.py").write_text(WRONG)
    done = _ctxsim(["fuzz", "--tracker", "wrong:Wrong", "--examples", "5", "--out", "/dev/full"], tmp_path,
                   env={"PYTHONPATH": str(tmp_path)})
    hostile.line(case, done.stderr, "ctxsim: fuzz: /dev/full is a character device, not a file it can write; the "
                                    "counterexample is printed on stdout instead")
    assert done.returncode == 1 and "queries:" in done.stdout, done.stderr


def _poisoned(tmp_path: Path, poison: Callable[[Path], None]) -> tuple[Path, bytes]:
    """A directory database holding one example under a key, its file then replaced by ``poison``: the database's
    path and the key."""
    root = tmp_path / "db"
    database = example_database(root)
    assert database is not None
    key = b"hostile-key"
    database.save(key, b"an example")
    values = [p for p in root.rglob("*") if p.is_file() and p.read_bytes() == b"an example"]
    assert len(values) == 1, _files(root)
    values[0].unlink()
    poison(values[0])
    return root, key


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _socket(path: Path) -> None:
    short = Path(tempfile.mkdtemp(prefix="ctxsim-", dir="/tmp"))  # a socket's path is at most 107 bytes: bound
    try:                                                          # where it is short, then moved into place
        listener = socket.socket(socket.AF_UNIX)
        listener.bind(str(short / "s"))
        listener.close()
        os.replace(short / "s", path)
    finally:
        short.rmdir()


def _big(path: Path) -> None:
    with path.open("wb") as out:
        out.truncate(64 << 20)  # sparse: 64 MiB read as zeros, nothing on disk


POISONS = {"a FIFO": (_fifo, "a FIFO"), "a /dev/zero symlink": (_dev_zero, "a character device"),
           "a socket": (_socket, "a socket"), "a 64 MiB file": (_big, "larger than 1,048,576 bytes")}


@pytest.mark.parametrize("what", list(POISONS))
def test_a_directory_database_skips_what_is_not_an_example_in_one_line(hostile: Tally, tmp_path: Path,
                                                                      what: str) -> None:
    case = f"{what} in a shared directory database"
    poison, why = POISONS[what]
    root, key = _poisoned(tmp_path, poison)
    notes = StringIO()
    database = example_database(root, notes=notes)
    assert database is not None
    got: list[list[bytes]] = []
    reader = threading.Thread(target=lambda: got.append(list(database.fetch(key))), daemon=True)
    reader.start()
    reader.join(10)
    hostile.hang(case, 0.0 if got else 10.1, 10)
    assert got == [[]]
    hostile.line(case, notes.getvalue(), f"ctxsim: the example database directory '{root}' holds '{root}/*', {why}: "
                                         f"skipped (only regular files of at most 1,048,576 bytes are read)")
    # the rest of the database still works: a new example is saved and read back
    database.save(key, b"another example")
    assert list(database.fetch(key)) == [b"another example"]


@pytest.mark.slow
def test_fuzz_on_a_shared_directory_holding_a_fifo_ends_in_one_line(hostile: Tally, tmp_path: Path) -> None:
    """The whole command: a first run saves its counterexample, each example file is then replaced by a FIFO, and
    the second run still ends (it skips them, says so once, and finds the bug again)."""
    case = "ctxsim fuzz --db DIR holding FIFOs"
    (tmp_path / "wrong.py").write_text(WRONG)
    env = {"PYTHONPATH": str(tmp_path)}
    first = _ctxsim(["fuzz", "--tracker", "wrong:Wrong", "--examples", "5", "--db", "db", "--out", "a.yaml"],
                    tmp_path, env=env)
    assert first.returncode == 1, first.stderr
    examples = [p for p in (tmp_path / "db").rglob("*") if p.is_file()]
    assert examples
    for path in examples:
        path.unlink()
        os.mkfifo(path)
    second = _ctxsim(["fuzz", "--tracker", "wrong:Wrong", "--examples", "5", "--db", "db", "--out", "b.yaml"],
                     tmp_path, env=env)
    hostile.line(case, second.stderr, "ctxsim: the example database directory 'db' holds 'db/*', a FIFO: "
                                      "skipped*")
    assert second.returncode == 1 and (tmp_path / "b.yaml").is_file(), second.stderr


SAVE_ON_A_FULL_DISK = """\
import sys
from ctxsim.strategies import example_database
database = example_database("db", notes=sys.stderr)
database.save(b"hostile-key", b"a counterexample " * 10)
print(list(database.fetch(b"hostile-key")) == [b"a counterexample " * 10])
"""


def test_a_directory_database_on_a_full_disk_keeps_the_example_and_says_where(hostile: Tally,
                                                                              tmp_path: Path) -> None:
    """Hypothesis' own directory database drops a save it cannot write without a word; ctxsim's says so in one line
    and keeps the example (here in memory: with every file capped at 5 bytes, no fallback directory takes one
    either), and it is read back."""
    case = "a directory database on a full disk"
    done = subprocess.run([sys.executable, "-c", SAVE_ON_A_FULL_DISK], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"),
                                            "TMPDIR": str(tmp_path / "tmp")}, preexec_fn=_limited(5))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "True", done.stdout
    hostile.line(case, done.stderr, "ctxsim: the example database 'db' could not save a counterexample (OSError: the "
                                    "directory did not take the file (a full disk, or no longer writable)); no "
                                    "directory could keep what it cannot take (*): it is kept in memory for this "
                                    "run, and the counterexample is in the scenario file the run writes")
