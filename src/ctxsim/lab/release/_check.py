"""Judging a Claude Code release: every scripted session played on a CLI and in-process, every difference sorted.

:func:`check_release` plays the scripted sessions (``SESSIONS``) live on a CLI (the
one bundled in the installed SDK, or any executable that speaks its stream-json protocol) and, from the world each
live run reports, in-process through :class:`~ctxsim.sdk.FakeTransport`; then sorts what differs:

- **tracked** differences: a field a tracker reads (every projected field, and the tracked keys and frame kinds of
  :mod:`ctxsim.lab`) where the fake and the CLI disagree. Any of them fails the release check. Categories of
  ``get_context_usage`` that only moved tokens between each other (their sum unchanged) are not: a rewording,
  listed as such (``compare``).
- **untracked** differences: keys and frame kinds the CLI writes and the fake does not (or the reverse) that no
  tracker reads. Listed, never failed.
- **drift** from the captures of the nearest recorded version (``capture_for``): what this
  CLI does differently from the last release ctxsim recorded. Listed, never failed: the fake follows the live run,
  so a release that only rewords its own prompt (every cache count moves by a few tokens) is green. The drift is
  split into this machine's run-to-run **noise** (the fields that move between two live runs of the same CLI,
  measured by :func:`_measure_noise`) and **the release's change** (the rest).

With tmux, on the bundled CLI, it also records the REPL sessions of :data:`REPL_CHECKED` under tmux and holds the
rendering to them (``repl <name>``): every statusline payload, each boundary's ``compactMetadata`` and the
transcript's rows, kinds, order, parents and joins (:func:`~ctxsim.wire.transcript_outline`); any difference is
tracked.

``ctxsim fidelity`` prints :meth:`ReleaseCheck.table` (its verdict first, then each changed leaf by its path,
identical shifts grouped; ``--all`` lists every untracked key) or
:meth:`ReleaseCheck.to_json` (every difference whole, with its leaves), and exits 1 on a tracked difference;
``--record DIR`` writes the live runs as captures named by the CLI's version and, beside them, the draft of the
rules that changed (:data:`RULES_DRAFT`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from ..._sync import run_blocking
from ...live import LiveError, cli_version
from .._fidelity import SESSIONS, Played, play_inprocess, play_live
from .._projection import Difference, compare, compare_keys, compare_raw
from .._record import CAPTURES, capture_dir, capture_for, write_capture
from .._repl import (
    REPL_SESSIONS,
    ReplRecording,
    compare_repl_boundaries,
    compare_repl_payloads,
    compare_repl_transcripts,
    record_repl,
    tmux_skip_reason,
)
from ._drift import Drift, drift, noise_between
from ._report import Shift, difference_leaves, listed, shifts, shown

__all__ = ["REPL_CHECKED", "RULES_DRAFT", "Noise", "ReleaseCheck", "SessionCheck", "check_release"]

REPL_CHECKED = ("compact-two-calls", "compact-tool-round", "autocompact", "clear")
"""The REPL sessions ``ctxsim fidelity`` records too: between them, every row kind the REPL writes in a prompt's
turn, a tool round, ``/compact``, an autocompaction and ``/clear``."""
CONCURRENCY = 2
"""Scripted sessions played at once (each its own CLI and fake API): the 2-core machine CI runs on."""
DRIFT_LINES = 12
"""The release's shifts the text report lists (``--all``: every one)."""
RULES_DRAFT = "rules-draft.md"
"""The file ``--record`` writes beside the captures: :meth:`ReleaseCheck.rules_draft`."""


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
class Noise:
    """How ``ctxsim fidelity`` measured this machine's run-to-run noise."""

    method: str
    """``replayed``: the sessions that drifted played live a second time; ``capture``: the capture is of this very
    version, so all its drift is noise; ``none``: not measured (``--no-noise``, or no capture to drift from)."""
    sessions: int = 0
    """Sessions played a second time."""
    seconds: float = 0.0
    """The second runs' wall time."""

    def line(self, version: str) -> str:
        if self.method == "replayed":
            return (f"noise, what moves between two live runs of {version} here ({self.sessions} session(s) played "
                    f"again in {self.seconds:.1f} s)")
        if self.method == "capture":
            return f"noise, what moves between the capture of {version} and a live run of the same version"
        return "noise: not measured (--no-noise): the drift below may hold this machine's run-to-run noise"


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
    noise: Noise = field(default_factory=lambda: Noise("none"))

    @property
    def ok(self) -> bool:
        """No field a tracker reads differs between the fake and the CLI."""
        return not any(s.tracked for s in self.sessions)

    def tracked_shifts(self) -> list[Shift]:
        """Every tracked difference as a changed leaf (fake → CLI), identical shifts grouped."""
        return shifts(((s.name, d) for s in self.sessions for d in s.tracked), fake_first=True)

    def release_shifts(self) -> list[Shift]:
        """The release's change from the capture (old → new), noise left out, identical shifts grouped."""
        return shifts(((s.name, _keyed(d)) for s in self.sessions if s.drift is not None for d in s.drift.release),
                      fake_first=False)

    def noise_shifts(self) -> list[Shift]:
        """The drift in fields that move run to run, grouped."""
        return shifts(((s.name, _keyed(d)) for s in self.sessions if s.drift is not None for d in s.drift.noisy),
                      fake_first=False)

    def table(self, *, every_key: bool = False) -> str:
        """The report ``ctxsim fidelity`` prints: the verdict first, then each changed leaf of a field trackers
        read (``path: fake → CLI``, the same shift at many points one line, with how many and where), the
        categories that only moved tokens as one line, the keys no tracker reads as one summary line
        (``every_key``: a row each, as ``--all`` shows them), and the drift from the last recorded release split
        into this machine's noise and the release's change."""
        tracked = sum(len(s.tracked) for s in self.sessions)
        untracked_count = sum(not d.note for s in self.sessions for d in s.untracked)  # moved categories: below
        lines = [f"{'FAIL' if tracked else 'ok'}: Claude Code {self.version} ({self.cli}): {tracked} difference(s) in "
                 f"fields trackers read, {untracked_count} in keys no tracker reads; {len(self.sessions)} scripted "
                 f"sessions live and in-process in {self.seconds:.1f} s"]
        if tracked:
            lines.append("fields trackers read that differ (fake → CLI):")
            lines += listed(self.tracked_shifts(), "  ", None)
        moved = shifts(((s.name, d) for s in self.sessions for d in s.untracked if d.note), fake_first=True)
        if moved:
            lines.append(f"{sum(len(g.points) for g in moved)} category count(s) of get_context_usage only moved "
                         f"between categories, their sum unchanged (a rewording, not failed): "
                         + "; ".join(f"{g.path} {g.change()}" for g in moved))
        # Keys no tracker reads repeat in every session: one row each, with how many sessions showed it.
        untracked: dict[tuple[str, str, str, str], list[str]] = {}
        for s in self.sessions:
            for d in s.untracked:
                if not d.note:
                    untracked.setdefault((d.where, d.field, shown(d.right, 24), shown(d.left, 24)), []).append(s.name)
        if every_key and untracked:
            rows = [(names[0] if len(names) == 1 else f"{len(names)} sessions", *key, "no")
                    for key, names in sorted(untracked.items())]
            header = ("session", "where", "field", "fake", "CLI", "trackers read it")
            cells = [[c[:44] + "…" if len(c) > 45 and i < 2 else c for i, c in enumerate(r)] for r in [header, *rows]]
            widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
            lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in cells]
        elif untracked:
            fields = sorted({key[1] for key in untracked})
            named = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
            lines.append(f"{len(untracked)} keys no tracker reads differ ({named}): not failed; --all lists them")
        if not tracked and not untracked and not moved:
            lines.append("the fake and the CLI agree on every field and every frame key")
        lines += self._drift_lines(None if every_key else DRIFT_LINES)
        lines += [f"wrote {path}" for path in self.recorded]
        return "\n".join(lines)

    def _drift_lines(self, limit: int | None) -> list[str]:
        if not any(s.drift is not None for s in self.sessions):
            return []
        lines = [f"drift from the capture of Claude Code {self.captured} (listed, not failed; old → new):"]
        noise = self.noise_shifts()
        if self.noise.method == "none":
            lines.append("  " + self.noise.line(self.version))
        elif noise:
            fields = sorted({g.path for g in noise})
            lines.append(f"  {self.noise.line(self.version)}: {sum(len(g.points) for g in noise)} point(s) in "
                         f"{len(fields)} field(s): {', '.join(fields)}")
        else:
            lines.append(f"  {self.noise.line(self.version)}: nothing moved")
        release = self.release_shifts()
        if self.captured == self.version:
            lines.append(f"  the release's change: none (the capture is of {self.version})")
        elif release:
            lines.append("  the release's change:")
            lines += listed(release, "    ", limit)
        else:
            lines.append("  the release's change: nothing moved")
        return lines

    def rules_draft(self) -> str:
        """A Markdown draft of the version rules this release needs: every tracked field that differs (path,
        fake → CLI, where), then the release's change from the capture and the noise, for a person to turn into
        rules (``--record`` writes it beside the captures)."""
        out = [f"# Claude Code {self.version}: rules to draft", "",
               f"Drafted by `ctxsim fidelity --record` ({self.cli}); a draft: every line still needs a person.", "",
               "## Fields trackers read where the fake differs from the CLI (fake → CLI)", ""]
        out += [f"- `{g.path}`: {g.change()} {g.where(limit=12)}" for g in self.tracked_shifts()] or ["- none"]
        if self.captured is not None:
            out += ["", f"## The release's change from the capture of {self.captured} (old → new; noise left out)", ""]
            out += [f"- `{g.path}`: {g.change()} {g.where(limit=12)}" for g in self.release_shifts()] or ["- none"]
            noise = self.noise.line(self.version).removeprefix("noise, ").removeprefix("noise: ")
            out += ["", f"## Noise, not the release's: {noise}", ""]
            out += [f"- `{g.path}`: {g.where(limit=12)}" for g in self.noise_shifts()] or ["- none"]
        return "\n".join(out) + "\n"

    def to_json(self) -> dict[str, Any]:
        """The report as JSON-able data: every difference (with its changed leaves), grouped shifts, the drift
        split into noise and the release's change."""
        def rows(ds: Iterable[Difference], *, fake_first: bool) -> list[dict[str, Any]]:
            names = ("fake", "cli") if fake_first else ("old", "new")
            return [{"where": d.where, "field": d.field, "kind": d.kind, "fake": d.right, "cli": d.left,
                     "tracked": d.tracked, **({"note": d.note} if d.note else {}),
                     "leaves": [{"path": p, names[0]: a, names[1]: b}
                                for p, a, b in difference_leaves(d, fake_first=fake_first)]} for d in ds]

        def drifted(s: SessionCheck) -> dict[str, Any] | None:
            if s.drift is None:
                return None
            return {"captured": s.drift.captured, "summary": s.drift.summary(s.name),
                    "changed": rows(s.drift.changed, fake_first=False),
                    "numbers": rows(s.drift.numbers, fake_first=False), "keys": rows(s.drift.keys, fake_first=False),
                    "noise": None if s.drift.noise is None else sorted(list(k) for k in s.drift.noise),
                    "release": rows(s.drift.release, fake_first=False)}

        return {"ok": self.ok, "cli": self.cli, "version": self.version, "captured": self.captured,
                "seconds": round(self.seconds, 2), "recorded": [str(p) for p in self.recorded],
                "noise": {"method": self.noise.method, "sessions": self.noise.sessions,
                          "seconds": round(self.noise.seconds, 2)},
                "tracked": [g.to_json() for g in self.tracked_shifts()],
                "release": [g.to_json() for g in self.release_shifts()],
                "sessions": [{"name": s.name, "seconds": round(s.seconds, 2),
                              "differences": rows(s.differences, fake_first=True), "drift": drifted(s)}
                             for s in self.sessions]}


def _keyed(d: Difference) -> Difference:
    """A drift as a shift groups it: whether the fidelity check would track it aside (a drift is listed, never
    failed), a frame key named by its frame kind and key (``system/init written_at``)."""
    d = dataclasses.replace(d, tracked=True, note="")
    if not d.kind.startswith("frames ") or not (d.field.startswith("keys: ") or d.field == "(frame kind)"):
        return d
    kind = d.kind.removeprefix("frames ")
    return dataclasses.replace(d, field=kind if d.field == "(frame kind)" else f"{kind} {d.field[6:]}")


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


def _each(names: Sequence[str], job: Callable[[str], Awaitable[None]], concurrency: int, cli: str | None) -> None:
    """Run ``job`` for each of ``names``, ``concurrency`` at a time; the first failure is raised once the others
    stopped (and starts no more), as one :class:`~ctxsim.live.LiveError`."""
    failures: list[Exception] = []

    async def run_all() -> None:
        limiter = anyio.CapacityLimiter(concurrency)

        async def one(name: str) -> None:
            async with limiter:
                if failures:
                    return  # a session failed: start no more
                try:
                    await job(name)
                except LiveError as exc:  # raised below, as a sequential run would, once the others stopped
                    failures.append(exc)
                except Exception as exc:  # the SDK's own error (the CLI exited, wrote garbage): one ctxsim line
                    failures.append(LiveError(f"ctxsim: scripted session {name!r} on the CLI "
                                              f"{cli or 'bundled in claude-agent-sdk'} failed: "
                                              f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))

        async with anyio.create_task_group() as group:
            for name in names:
                group.start_soon(one, name)

    run_blocking(run_all)  # a signal on another thread wakes the loop (the run ends at once)
    if failures:
        raise failures[0]


def _measure_noise(check: ReleaseCheck, played: dict[str, Played], cli: str | None, timeout: float,
                   concurrency: int) -> None:
    """Mark in each session's drift the fields that move run to run on this machine (:attr:`Drift.noise`).

    The noise is measured, not assumed: a field is noise when it moves between two live runs of the same session on
    the same CLI. Where the capture is of this very version, the capture is the first run and every number that
    moved from it is noise (no run more); a key or a field's kind or text that moved is the change. Otherwise each
    session that drifted at all is played live once more (live only: the in-process side is the fake, which follows
    the live run) and compared with the first run; the release's change is the rest of the drift. Only sessions that
    drifted are played again, so a release that changed nothing costs nothing; on a release that moved the CLI's
    prompt that is every scripted session, about as long again as the first live runs (the REPL sessions under tmux
    are not played again: their drift is not reported). One second run is a sample, not a proof: a field that moves
    rarely can still show as the release's change; run ``ctxsim fidelity`` again to tell.

    Why this way: the noise is a session's own (two chains racing to the fake API, timings in one session's
    turns), so a cheap subset of sessions cannot speak for the others, and a fixed list of noisy fields would hide
    a release that really moves one of them; the noise is kept per session and per field (``(kind, field)``), so a
    field noisy in one session still counts as the release's change in every other."""
    sessions = {s.name: s for s in check.sessions if s.drift is not None and s.drift.every}
    if check.captured == check.version:
        for s in sessions.values():  # numbers the CLI measures of its own run; a key or a kind that moved is not
            assert s.drift is not None  # noise but a change (a wrapper, a patched build of the same version)
            s.drift = dataclasses.replace(s.drift, noise=frozenset((d.kind, d.field) for d in s.drift.numbers))
        check.noise = Noise("capture")
        return
    started = time.monotonic()
    again: dict[str, Played] = {}

    async def replay(name: str) -> None:
        again[name] = await play_live(SESSIONS[name], timeout=timeout, cli=cli)

    _each(list(sessions), replay, concurrency, cli)
    for name, s in sessions.items():
        assert s.drift is not None
        s.drift = dataclasses.replace(s.drift, noise=noise_between(played[name], again[name]))
    check.noise = Noise("replayed", len(sessions), time.monotonic() - started)


def check_release(cli: str | None = None, *, names: Sequence[str] | None = None, record: Path | None = None,
                  captures: Path = CAPTURES, timeout: float = 60.0, concurrency: int = CONCURRENCY,
                  repl: Sequence[str] | None = None, noise: bool = True) -> ReleaseCheck:
    """Play the scripted sessions ``names`` (default: all) on ``cli`` (None: the CLI bundled in the installed SDK)
    and in-process, ``concurrency`` at a time, and sort their differences; with ``noise``, measure which drifted
    fields move run to run here (:func:`_measure_noise`); with ``record``, write each live run as a capture under
    that directory, and the draft of the rules that changed beside them (:data:`RULES_DRAFT`). ``repl`` names the
    REPL sessions recorded and compared too (default: :data:`REPL_CHECKED` when every scripted session runs on the
    bundled CLI and tmux is there; else none). A CLI that cannot be started is a :class:`~ctxsim.live.LiveError`."""
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

    async def check_one(name: str) -> None:
        results[name] = await _check_one(name, cli, timeout, captured)

    _each(wanted, check_one, concurrency, cli)
    check = ReleaseCheck(str(cli) if cli is not None else "bundled", version, captured_version,
                         [results[n][0] for n in wanted])
    if noise:
        _measure_noise(check, {n: results[n][1] for n in wanted}, cli, timeout, concurrency)
    if repl is None:
        repl = REPL_CHECKED if names is None and cli is None and tmux_skip_reason() is None else ()
    check.sessions += [_check_repl(name, max(timeout, 90.0)) for name in repl]
    check.seconds = time.monotonic() - started
    if record is not None:
        check.recorded = [write_capture(record, name, results[name][1],
                                        include_partial_messages=SESSIONS[name].include_partial_messages,
                                        hooks=SESSIONS[name].hooks) for name in wanted]
        draft = capture_dir(record, version) / RULES_DRAFT
        draft.write_text(check.rules_draft())
        check.recorded.append(draft)
    return check
