"""A stand-in CLI for ``ctxsim fidelity``: a wrapper around the bundled Claude Code CLI that edits what it writes on
stdout, and ``ctxsim fidelity`` run in-process on it (the live tests of the release check)."""

from __future__ import annotations

from pathlib import Path

WRAPPER = """#!{python}
# A wrapper around the real Claude Code CLI that edits what it writes on stdout (ctxsim's fidelity tests).
import json, signal, subprocess, sys
child = subprocess.Popen([{cli!r}, *sys.argv[1:]], stdout=subprocess.PIPE, text=True)
signal.signal(signal.SIGTERM, lambda *_: (child.terminate(), sys.exit(143)))
for line in child.stdout:
    try:
        frame = json.loads(line)
    except ValueError:
        sys.stdout.write(line)
    else:
{edit}
        sys.stdout.write(json.dumps(frame) + "\\n")
    sys.stdout.flush()
sys.exit(child.wait())
"""


def wrapper(tmp_path: Path, edit: str) -> Path:
    import sys

    from ctxsim.live._claude import bundled_cli_path

    path = tmp_path / "claude-wrapper"
    body = "\n".join(" " * 8 + line for line in edit.strip().splitlines())
    path.write_text(WRAPPER.format(python=sys.executable, cli=str(bundled_cli_path()), edit=body))
    path.chmod(0o755)
    return path


def fidelity(*args: str) -> tuple[int, str, str]:
    import contextlib
    import io

    from ctxsim.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(["fidelity", *args])
    return status, out.getvalue(), err.getvalue()
