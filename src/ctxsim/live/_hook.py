"""The hook command ``ctxsim serve`` gives the CLI (through the wrapper's ``--settings``) for a scenario whose queries
end their turns where the CLI would not: run as ``python -m`` this module with ``URL KEY``, it reads the hook's input
on standard input and prints what serve at ``URL`` answers for its event (a ``PostToolUse`` that ends the turn, or
nothing). Standard library only. A serve that cannot be reached: nothing printed, one ``ctxsim:`` line
on standard error, exit 0 (the CLI goes its own way, and serve counts the calls never asked for).
"""

from __future__ import annotations

import json
import sys
import urllib.request

TIMEOUT = 20.0
"""Seconds the hook waits for serve."""


def main(argv: list[str]) -> int:
    """Ask serve what this hook event answers; print it."""
    url, key = argv[:2]
    try:
        event = json.loads(sys.stdin.read() or "{}").get("hook_event_name", "")
        request = urllib.request.Request(url, json.dumps({"event": event}).encode(), method="POST",
                                         headers={"content-type": "application/json", "x-api-key": key})
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            answer = json.loads(response.read())
    except (OSError, ValueError, AttributeError) as exc:
        print(f"ctxsim: serve's hook: {url} did not answer ({exc})", file=sys.stderr)
        return 0
    if answer:
        print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
