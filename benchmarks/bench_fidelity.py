"""Wall time of ``ctxsim fidelity``: every scripted session, live on a Claude Code CLI and in-process.

    python benchmarks/bench_fidelity.py [--cli PATH] [--sequential]

Runs :func:`ctxsim.lab.check_release` as ``ctxsim fidelity`` does (two sessions at a time, each its own
CLI and fake API) and prints the wall time against the target (under 60 s on the 2-core machine), each
session's live seconds, and their sum (what one session at a time would cost at best). ``--sequential`` also runs
the check one session at a time, side by side in the same process, and prints the ratio. Figures only: nothing here
fails on speed (the verdict on the CLI is printed too).
"""

from __future__ import annotations

import argparse

from _bench import mark, print_table

from ctxsim.lab._release import CONCURRENCY, ReleaseCheck, check_release

TARGET_SECONDS = 60.0


def report(label: str, check: ReleaseCheck) -> None:
    print(f"{label}: Claude Code {check.version}, {len(check.sessions)} sessions in {check.seconds:.1f} s "
          f"(sum of live runs {sum(s.seconds for s in check.sessions):.1f} s); verdict "
          f"{'ok' if check.ok else 'FAIL'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", help="the CLI to judge (default: the bundled one)")
    parser.add_argument("--sequential", action="store_true", help="also run one session at a time, for the ratio")
    args = parser.parse_args()

    check = check_release(args.cli)
    report(f"{CONCURRENCY} at a time", check)
    print_table([("session", "live s", "tracked", "untracked"),
                 *((s.name, f"{s.seconds:.1f}", str(len(s.tracked)), str(len(s.untracked))) for s in check.sessions)])
    print(f"target: under {TARGET_SECONDS:.0f} s: {check.seconds:.1f} s {mark(check.seconds < TARGET_SECONDS)}")
    if args.sequential:
        one = check_release(args.cli, concurrency=1)
        report("one at a time", one)
        print(f"speed-up of {CONCURRENCY} at a time: {one.seconds / check.seconds:.2f}x")


if __name__ == "__main__":
    main()
