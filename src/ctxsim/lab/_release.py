"""Judging a Claude Code release: every scripted session played on a CLI and in-process, every difference sorted.

:func:`check_release` plays the scripted sessions (``SESSIONS``) live on a CLI (the
one bundled in the installed SDK, or any executable that speaks its stream-json protocol) and, from the world each
live run reports, in-process through :class:`~ctxsim.sdk.FakeTransport`; then sorts what differs:

- **tracked** differences: a field a tracker reads (every projected field, and the tracked keys and frame kinds of
  :mod:`ctxsim.lab`) where the fake and the CLI disagree. Any of them fails the release check.
- **untracked** differences: keys and frame kinds the CLI writes and the fake does not (or the reverse) that no
  tracker reads. Listed, never failed.
- **drift** from the captures of the nearest recorded version (``capture_for``): what this
  CLI does differently from the last release ctxsim recorded. Listed, never failed: the fake follows the live run,
  so a release that only rewords its own prompt (every cache count moves by a few tokens) is green.

With tmux, on the bundled CLI, it also records the REPL sessions of :data:`REPL_CHECKED` under tmux and holds the
rendering to them (``repl <name>``): every statusline payload, each boundary's ``compactMetadata`` and the
transcript's rows, kinds, order, parents and joins (:func:`~ctxsim.wire.transcript_outline`); any difference is
tracked.

``ctxsim fidelity`` prints :meth:`ReleaseCheck.table` (its verdict first; ``--all`` lists every untracked
key) or :meth:`ReleaseCheck.to_json`, and exits 1 on a tracked difference; ``--record DIR`` writes the live runs
as captures named by the CLI's version.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from .._sync import run_blocking
from ..live import LiveError, cli_version
from ._fidelity import SESSIONS, Played, play_inprocess, play_live
from ._projection import Difference, compare, compare_keys, compare_raw
from ._record import CAPTURES, Drift, capture_for, drift, write_capture
from ._repl import REPL_SESSIONS, record_repl
from ._repl_compare import ReplRecording, compare_repl_boundaries, compare_repl_payloads, compare_repl_transcripts
from ._tmux import tmux_skip_reason

__all__ = ["ReleaseCheck", "SessionCheck", "check_release"]

REPL_CHECKED = ("compact-two-calls", "compact-tool-round", "autocompact", "clear")
"""The REPL sessions ``ctxsim fidelity`` records too: between them, every row kind the REPL writes in a prompt's
turn, a tool round, ``/compact``, an autocompaction and ``/clear``."""
CONCURRENCY = 2
"""Scripted sessions played at once (each its own CLI and fake API): the 2-core machine CI runs on."""


@dataclass
class SessionCheck:
    """One scripted session on the CLI under test."""

    name: str
    differences: list[Difference]
    """Every difference between the CLI's run (left) and the fake's (right)."""
    drift: Drift | None
    """Against the capture of the nearest recorded version; None when there is none for this session."""
    seconds: float
    """The live run's wall time."""

    @property
    def tracked(self) -> list[Difference]:
        return [d for d in self.differences if d.tracked]

    @property
    def untracked(self) -> list[Difference]:
        return [d for d in self.differences if not d.tracked]


@dataclass
class ReleaseCheck:
    """The verdict on one CLI: every session's differences and drift."""

    cli: str
    """The CLI run: its path, or ``bundled``."""
    version: str
    captured: str | None
    """The recorded version the drift is against (None: no capture at all)."""
    sessions: list[SessionCheck] = field(default_factory=list)
    seconds: float = 0.0
    recorded: list[Path] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No field a tracker reads differs between the fake and the CLI."""
        return not any(s.tracked for s in self.sessions)

    def table(self, *, every_key: bool = False) -> str:
        """The report ``ctxsim fidelity`` prints: the verdict first, then a row per difference in a field trackers
        read (field, fake, CLI), the keys no tracker reads as one summary line (``every_key``: a row each, as
        ``--all`` shows them), and the drift from the last recorded release."""
        tracked = sum(len(s.tracked) for s in self.sessions)
        untracked_count = sum(len(s.untracked) for s in self.sessions)
        lines = [f"{'FAIL' if tracked else 'ok'}: Claude Code {self.version} ({self.cli}): {tracked} difference(s) in "
                 f"fields trackers read, {untracked_count} in keys no tracker reads; {len(self.sessions)} scripted "
                 f"sessions live and in-process in {self.seconds:.1f} s"]
        rows: list[tuple[str, ...]] = []
        for s in self.sessions:
            rows += [(s.name, d.where, d.field, _shown(d.right), _shown(d.left), "yes") for d in s.tracked]
        # Keys no tracker reads repeat in every session: one row each, with how many sessions showed it.
        untracked: dict[tuple[str, str, str, str], list[str]] = {}
        for s in self.sessions:
            for d in s.untracked:
                untracked.setdefault((d.where, d.field, _shown(d.right), _shown(d.left)), []).append(s.name)
        if every_key:
            rows += [(names[0] if len(names) == 1 else f"{len(names)} sessions", *key, "no")
                     for key, names in sorted(untracked.items())]
        if rows:
            header = ("session", "where", "field", "fake", "CLI", "trackers read it")
            limits = (30, 45, 200, 24, 24, 20)  # the field is never cut
            cells = [[c if len(c) <= limit else c[:limit - 1] + "…" for c, limit in zip(r, limits)]
                     for r in [header, *sorted(rows, key=lambda r: (r[5] != "yes", r[0]))]]
            widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
        elif not untracked:
            lines.append("the fake and the CLI agree on every field and every frame key")
        if untracked and not every_key:
            fields = sorted({key[1] for key in untracked})
            shown = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
            lines.append(f"{len(untracked)} keys no tracker reads differ ({shown}): not failed; --all lists them")
        drifted = [s for s in self.sessions if s.drift is not None]
        if drifted:
            lines.append(f"drift from the capture of Claude Code {self.captured} (listed, not failed):")
            lines += [f"  {s.drift.summary(s.name)}" for s in drifted if s.drift is not None]
        for path in self.recorded:
            lines.append(f"wrote {path}")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-able data."""
        def rows(ds: Iterable[Difference]) -> list[dict[str, Any]]:
            return [{"where": d.where, "field": d.field, "kind": d.kind, "fake": d.right, "cli": d.left,
                     "tracked": d.tracked} for d in ds]

        return {"ok": self.ok, "cli": self.cli, "version": self.version, "captured": self.captured,
                "seconds": round(self.seconds, 2), "recorded": [str(p) for p in self.recorded],
                "sessions": [{"name": s.name, "seconds": round(s.seconds, 2), "differences": rows(s.differences),
                              "drift": None if s.drift is None else {
                                  "captured": s.drift.captured, "summary": s.drift.summary(s.name),
                                  "changed": rows(s.drift.changed), "numbers": rows(s.drift.numbers),
                                  "keys": rows(s.drift.keys)}} for s in self.sessions]}


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


async def _check_one(name: str, cli: str | None, timeout: float,
                     captured: dict[str, Any]) -> tuple[SessionCheck, Played]:
    scripted = SESSIONS[name]
    live = await play_live(scripted, timeout=timeout, cli=cli)
    assert live.session is not None
    fake = await play_inprocess(live.session, include_partial_messages=scripted.include_partial_messages,
                                hooks=scripted.hooks)
    differences = compare(live.steps, fake.steps, initial=(live.initial, fake.initial))
    differences += compare_keys(live.frame_keys, fake.frame_keys) + compare_raw(live.raw, fake.raw)
    capture = captured.get(name)
    return SessionCheck(name, differences, drift(capture, live) if capture is not None else None,
                        live.seconds), live


def _check_repl(name: str, timeout: float) -> SessionCheck:
    """Record REPL session ``name`` on the bundled CLI and hold the rendering of what happened to it."""
    started = time.monotonic()
    recording = ReplRecording.from_json(record_repl(REPL_SESSIONS[name], timeout=timeout))
    differences = (compare_repl_payloads(recording) + compare_repl_boundaries(recording)
                   + compare_repl_transcripts(recording))
    return SessionCheck(f"repl {name}", differences, None, time.monotonic() - started)


def check_release(cli: str | None = None, *, names: Sequence[str] | None = None, record: Path | None = None,
                  captures: Path = CAPTURES, timeout: float = 60.0, concurrency: int = CONCURRENCY,
                  repl: Sequence[str] | None = None) -> ReleaseCheck:
    """Play the scripted sessions ``names`` (default: all) on ``cli`` (None: the CLI bundled in the installed SDK)
    and in-process, ``concurrency`` at a time, and sort their differences; with ``record``, write each live run
    as a capture under that directory. ``repl`` names the REPL sessions recorded and compared too (default:
    :data:`REPL_CHECKED` when every scripted session runs on the bundled CLI and tmux is there; else none). A CLI
    that cannot be started is a :class:`~ctxsim.live.LiveError`."""
    started = time.monotonic()
    version = cli_version(cli)
    chosen = capture_for(version, captures)
    captured_version, captured = chosen if chosen is not None else (None, {})
    unknown = [n for n in names or () if n not in SESSIONS]
    if unknown:
        raise LiveError(f"ctxsim: no scripted session {unknown[0]!r} (known: {', '.join(SESSIONS)})")
    unknown = [n for n in repl or () if n not in REPL_SESSIONS]
    if unknown:
        raise LiveError(f"ctxsim: no REPL session {unknown[0]!r} (known: {', '.join(REPL_SESSIONS)})")
    wanted = list(names or SESSIONS)
    results: dict[str, tuple[SessionCheck, Played]] = {}
    failures: list[Exception] = []

    async def run_all() -> None:
        limiter = anyio.CapacityLimiter(concurrency)

        async def one(name: str) -> None:
            async with limiter:
                if failures:
                    return  # a session failed: start no more
                try:
                    results[name] = await _check_one(name, cli, timeout, captured)
                except LiveError as exc:  # raised below, as a sequential run would, once the others stopped
                    failures.append(exc)
                except Exception as exc:  # the SDK's own error (the CLI exited, wrote garbage): one ctxsim line
                    failures.append(LiveError(f"ctxsim: scripted session {name!r} on the CLI "
                                              f"{cli or 'bundled in claude-agent-sdk'} failed: "
                                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))

        async with anyio.create_task_group() as group:
            for name in wanted:
                group.start_soon(one, name)

    run_blocking(run_all)  # a signal on another thread wakes the loop (the run ends at once)
    if failures:
        raise failures[0]
    check = ReleaseCheck(str(cli) if cli is not None else "bundled", version, captured_version,
                         [results[n][0] for n in wanted])
    if repl is None:
        repl = REPL_CHECKED if names is None and cli is None and tmux_skip_reason() is None else ()
    check.sessions += [_check_repl(name, max(timeout, 90.0)) for name in repl]
    if record is not None:
        check.recorded = [write_capture(record, name, results[name][1],
                                        include_partial_messages=SESSIONS[name].include_partial_messages,
                                        hooks=SESSIONS[name].hooks) for name in wanted]
    check.seconds = time.monotonic() - started
    return check
