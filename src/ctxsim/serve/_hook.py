"""The hook command ``ctxsim serve`` gives the CLI (through the wrapper's ``--settings``) for a scenario whose
queries end their turns where the CLI would not: run (as a file or with ``python -m``) with ``URL KEY``, it reads the
hook's input on standard input and prints what serve at ``URL`` answers for its event (a ``PostToolUse`` that ends
the turn, or nothing). Standard library only. A serve that cannot be reached: nothing printed, one ``ctxsim:`` line
on standard error, exit 0 (the CLI goes its own way, and serve counts the calls never asked for).
"""

from __future__ import annotations

import json
import sys

try:
    from ._post import post
except ImportError:  # run from its file (as serve runs it, with python -S): its directory is on the path
    from _post import post  # type: ignore[import-not-found,no-redef]

TIMEOUT = 20.0
"""Seconds the hook waits for serve."""


def main(argv: list[str]) -> int:
    """Ask serve what this hook event answers; print it."""
    url, key = argv[:2]
    try:
        event = json.loads(sys.stdin.read() or "{}").get("hook_event_name", "")
        answer = post(url, key, {"event": event}, TIMEOUT)
    except (OSError, ValueError, AttributeError) as exc:
        print(f"ctxsim: serve's hook: {url} did not answer ({exc})", file=sys.stderr)
        return 0
    if answer:
        print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
