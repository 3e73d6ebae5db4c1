"""The CLI wrapper ``ctxsim serve`` hands a client for a scenario with stream faults: run (as a file or with
``python -m``) with ``URL KEY CLI ARGS...``, it runs the real CLI ``CLI ARGS...`` (its standard input and error the
wrapper's own), passes on each frame of the control protocol at once, and sends the frames of each query, once its
``result`` came, to serve at ``URL`` (with its credential ``KEY``), writing what serve answers: the frames with the
scenario's faults applied (``URL`` ``-``: no faults, the frames go out as they are). Standard library only, so it
starts fast. A serve that cannot be reached or answers otherwise than with frames: the query's frames go out as the
CLI wrote them and one ``ctxsim:`` line says why on standard error (serve then counts the query unfaulted and exits
1). The exit status is the CLI's; SIGTERM and SIGINT
are passed on to it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from typing import Any

try:
    from ._post import post
except ImportError:  # run from its file (as serve runs it, with python -S): its directory is on the path
    from _post import post  # type: ignore[import-not-found,no-redef]

CONTROL_TYPES = frozenset({"control_request", "control_response", "control_cancel_request", "keep_alive"})
"""Passed on at once (the same set as serve's)."""

TIMEOUT = 30.0
"""Seconds the wrapper waits for serve to answer a query's frames."""


def _faulted(url: str, key: str, frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    try:
        answer = post(url, key, {"frames": frames}, TIMEOUT)
    except OSError as exc:
        print(f"ctxsim: serve's CLI wrapper: {url} did not fault a query's frames ({exc}); they go out as the "
              f"CLI wrote them", file=sys.stderr, flush=True)
        return frames
    out = answer.get("frames") if isinstance(answer, dict) else None
    return out if isinstance(out, list) else frames


def main(argv: list[str]) -> int:
    """Run the CLI, faulting its queries through serve; the CLI's exit status."""
    if len(argv) < 3:
        print("ctxsim: serve's CLI wrapper: usage: URL KEY CLI [ARGS...]", file=sys.stderr)
        return 2
    url, key, cli, *args = argv
    try:
        child = subprocess.Popen([cli, *args], stdout=subprocess.PIPE)
    except OSError as exc:
        print(f"ctxsim: serve's CLI wrapper: cannot start {cli}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, _: child.send_signal(number))
    assert child.stdout is not None
    out = sys.stdout.buffer
    query: list[dict[str, Any]] = []
    for line in child.stdout:
        try:
            frame = json.loads(line)
        except ValueError:
            frame = None
        if not isinstance(frame, dict) or frame.get("type") in CONTROL_TYPES:
            out.write(line)
            out.flush()
            continue
        query.append(frame)
        if frame.get("type") == "result":
            for faulted in _faulted(url, key, query) if url != "-" else query:
                out.write(json.dumps(faulted).encode() + b"\n")
            out.flush()
            query = []
    for frame in query:  # a query the CLI never finished
        out.write(json.dumps(frame).encode() + b"\n")
    out.flush()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
