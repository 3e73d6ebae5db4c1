"""Wall time of ``ctxsim fidelity``: every scripted session, live on a Claude Code CLI and in-process, the noise
measurement, and (with tmux, on the bundled CLI) the REPL sessions.

    python benchmarks/bench_fidelity.py [--cli PATH] [--rounds N] [--sequential]

Runs :func:`ctxsim.lab.check_release` as ``ctxsim fidelity`` does (two sessions at a time, each its own
CLI and fake API; then each session that drifted from its capture played live once more, the noise; then the REPL
sessions under tmux) ``--rounds`` times and prints each round's wall time split into those parts, the min and median
against the target (under 120 s on the 2-core machine, everything included), each session's live seconds, and what
the noise run found. ``--sequential`` also runs the scripted sessions one at a time, side by side in the same
process, and prints the ratio. Figures only: nothing here fails on speed (the verdict on the CLI is printed too).
"""

from __future__ import annotations

import argparse
import os
import statistics

from _bench import mark, print_table

from ctxsim.lab.release._check import CONCURRENCY, ReleaseCheck, check_release

TARGET_SECONDS = 120.0


def report(label: str, check: ReleaseCheck) -> None:
    repl = sum(s.seconds for s in check.sessions if s.name.startswith("repl "))
    noise = check.noise
    noisy = sorted({session for g in check.noise_shifts() for session in g.sessions})
    print(f"{label}: Claude Code {check.version}, {len(check.sessions)} sessions in {check.seconds:.1f} s: noise "
          f"{noise.method} ({noise.sessions} session(s) again in {noise.seconds:.1f} s), REPL {repl:.1f} s, the "
          f"rest {check.seconds - noise.seconds - repl:.1f} s; verdict {'ok' if check.ok else 'FAIL'}; "
          f"{len(check.noise_shifts())} noisy shift(s) in {', '.join(noisy) or 'no session'}; load average "
          f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cli", help="the CLI to judge (default: the bundled one)")
    parser.add_argument("--rounds", type=int, default=1, help="whole runs to time (default 1)")
    parser.add_argument("--sequential", action="store_true", help="also run one session at a time, for the ratio")
    args = parser.parse_args()

    checks = []
    for number in range(args.rounds):
        checks.append(check_release(args.cli))
        report(f"round {number + 1}, {CONCURRENCY} at a time", checks[-1])
    check = checks[-1]
    print_table([("session", "live s", "tracked", "untracked"),
                 *((s.name, f"{s.seconds:.1f}", str(len(s.tracked)), str(len(s.untracked))) for s in check.sessions)])
    walls = sorted(c.seconds for c in checks)
    median = statistics.median(walls)
    print(f"wall time over {len(walls)} round(s): min {walls[0]:.1f} s, median {median:.1f} s; noise measurement: "
          f"median {statistics.median(c.noise.seconds for c in checks):.1f} s")
    print(f"target: under {TARGET_SECONDS:.0f} s: {median:.1f} s {mark(median < TARGET_SECONDS)}")
    if args.sequential:
        one = check_release(args.cli, concurrency=1, repl=(), noise=False)
        two = check_release(args.cli, repl=(), noise=False)
        report("one at a time, scripted sessions only", one)
        report(f"{CONCURRENCY} at a time, scripted sessions only", two)
        print(f"speed-up of {CONCURRENCY} at a time: {one.seconds / two.seconds:.2f}x")


if __name__ == "__main__":
    main()
