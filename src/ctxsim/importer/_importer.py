"""``ctxsim import``: recordings people cannot share, turned into scenarios they can.

:func:`import_recordings` reads Claude Code transcripts (a main ``<session>.jsonl`` with its
``<session>/subagents/*.jsonl``, in any order, with the duplicate lines that resume and subagent copies produce) or
one stream-json capture (plain, or the ``{"raw": ...}`` lines of ctxsim's captures, whose ``context_usage`` lines
are noted), and makes a scenario that reproduces them:

1. the files are merged into the stream-json frames :mod:`.recording` plays: transcript lines deduplicated by
   ``uuid``, main files in time order, each subagent file's lines placed by time and given the ``Agent``/``Task``
   tool use that launched them as parent (a subagent transcript given alone is its own main chain: its context
   checked against the window);
2. the frames are scrubbed (:class:`~.scrub.Scrubber`: ids re-keyed, numbers kept, every other string filler of
   the same length);
3. every catalogued tracker is run over the original and the scrubbed stream: the verdicts and the reference's
   numbers must agree, else the import fails (nothing is written);
4. if the recording can be written as ``queries`` steps (:func:`steps_scenario`) whose session gives every
   catalogued tracker the same verdict and the reference the same numbers, the scenario is those steps;
   otherwise it names the scrubbed stream, written beside it.

The scenario's ``expect`` lists the catalogued trackers that fail on the recording (with tolerance 0), so it is a
regression test as written. Nothing from the recording reaches the scenario file but numbers, re-keyed ids, the
model, the CLI version and the kinds of things.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..processes import FileNotWritten, refuse_non_files, write_whole
from ..recordings import Recording, RecordingError, read_jsonl, read_recording, transcript_frames
from ._scrub import Scrubber

__all__ = ["ImportFailure", "Imported", "import_recordings", "write_import"]

_CONTROL = frozenset({"control_request", "control_response", "control_cancel_request", "keep_alive"})
_AGENT_TOOLS = frozenset({"Task", "Agent"})
DEFAULT_WINDOW = 200_000


class ImportFailure(ValueError):
    """A recording that cannot be imported; the message is one ``ctxsim:`` line naming the file (and line)."""


@dataclass
class Imported:
    """What an import makes: the scenario's text and, when it plays a stream, the scrubbed stream's text."""

    name: str
    scenario: str
    stream: str | None = None
    """The scrubbed stream-json to write beside the scenario (None when the scenario has ``queries`` steps)."""
    stream_file: str | None = None
    """The stream's file name, as the scenario names it."""
    fmt: str = ""
    """``transcript`` or ``stream-json``: what was read."""
    verdicts: dict[str, bool] = field(default_factory=dict)
    """Each catalogued tracker's verdict on the recording (True: tracks it within tolerance 0)."""
    context_usage: list[int] = field(default_factory=list)
    """The CLI's ``get_context_usage()["totalTokens"]`` after each query, when the capture recorded it."""


@dataclass
class _Source:
    fmt: str = ""
    frames: list[dict[str, Any]] = field(default_factory=list)
    version: str = ""
    files: int = 0
    subagents: int = 0
    alone: bool = False
    """A subagent transcript given without its main transcript: its chain is the main chain."""
    context_usage: list[int] = field(default_factory=list)
    max_tokens: int | None = None


# --- reading ----------------------------------------------------------------------------------------------------


_STILL_WRITING = "is the session still writing it? import it once the session is idle"


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        lines = read_jsonl(path)
    except OSError as exc:
        raise ImportFailure(f"ctxsim: import: {path}: cannot read it: {exc.strerror or exc}") from None
    except RecordingError as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        cut = exc.last_line and str(exc).startswith("not a JSON line")
        raise ImportFailure(f"ctxsim: import: {where}: {exc}" + (f"; the last line is cut off ({_STILL_WRITING})"
                                                                 if cut else "")) from None
    if not lines:
        raise ImportFailure(f"ctxsim: import: {path}:1: the file is empty ({_STILL_WRITING}, or give the session's "
                            f"own .jsonl)")
    return [data for _, data in lines]


def _format(path: Path, lines: list[dict[str, Any]]) -> str:
    if any("class" in d and "data" in d for d in lines):
        raise ImportFailure(f"ctxsim: import: {path}: a dump of SDK Message objects, not a recording: give the "
                            f"Claude Code transcript or the stream-json the CLI printed")
    if any("isSidechain" in d or "parentUuid" in d for d in lines):
        return "transcript"
    return "stream-json"


def _stream_json(path: Path, lines: list[dict[str, Any]], source: _Source) -> None:
    for data in lines:
        if "raw" in data and isinstance(data["raw"], dict):  # a capture line: {"raw": <what the CLI wrote>}
            data = data["raw"]
        elif "context_usage" in data:
            usage = data["context_usage"]
            if isinstance(usage, dict) and type(usage.get("totalTokens")) is int:
                source.context_usage.append(usage["totalTokens"])
                if type(usage.get("maxTokens")) is int:
                    source.max_tokens = usage["maxTokens"]
            continue
        if data.get("type") in _CONTROL:
            continue
        if data.get("type") == "system" and data.get("subtype") == "init" and not source.version:
            source.version = str(data.get("claude_code_version") or "")
        source.frames.append(data)


def _timestamp(line: dict[str, Any]) -> str:
    value = line.get("timestamp")
    return value if isinstance(value, str) else ""


def _merged(main: list[dict[str, Any]], subs: list[tuple[dict[str, Any], str]]
            ) -> list[tuple[dict[str, Any], str | None]]:
    """The main chain's lines in their order, each subagent line (with its parent) placed after the last main line
    of a time not later than its own (a main line without a time has that of the nearest line before it that has
    one: the CLI writes a few lines without, e.g. ``last-prompt``); subagent lines placed at the same point keep
    their times' order, then their own. A subagent line without a time goes last. Linear but for one sort
    (``O(n log n)``), whatever the times."""
    times, last = [], ""
    for line in main:
        last = _timestamp(line) or last
        times.append(last)
    order = sorted(range(len(times)), key=times.__getitem__)
    by_time = [times[i] for i in order]
    latest = list(itertools.accumulate(order, max))  # [k]: the last main position among the k + 1 earliest times
    placed = []
    for number, (line, parent) in enumerate(subs):
        stamp = _timestamp(line)
        count = bisect.bisect_right(by_time, stamp) if stamp else len(main)
        after = (latest[count - 1] + 1 if count else 0) if stamp else len(main)
        placed.append((after, stamp or "\uffff", number, line, parent))
    placed.sort(key=lambda p: p[:3])
    out: list[tuple[dict[str, Any], str | None]] = []
    j = 0
    for i in range(len(main) + 1):
        while j < len(placed) and placed[j][0] == i:
            out.append((placed[j][3], placed[j][4]))
            j += 1
        if i < len(main):
            out.append((main[i], None))
    return out


def _is_subagent_file(lines: list[dict[str, Any]]) -> bool:
    messages = [d for d in lines if d.get("type") in ("user", "assistant")]
    return bool(messages) and all(d.get("isSidechain") is True and d.get("agentId") for d in messages)


def _launches(main: list[dict[str, Any]]) -> dict[str, str]:
    """agentId -> the id of the ``Agent``/``Task`` tool use whose result names it."""
    out: dict[str, str] = {}
    for line in main:
        result = line.get("toolUseResult")
        content = (line.get("message") or {}).get("content") if isinstance(line.get("message"), dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("agentId"), str) or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.setdefault(result["agentId"], str(block.get("tool_use_id")))
                break
    return out


def _transcripts(files: list[tuple[Path, list[dict[str, Any]]]], source: _Source) -> None:
    mains = [(p, lines) for p, lines in files if not _is_subagent_file(lines)]
    subs = [(p, lines) for p, lines in files if _is_subagent_file(lines)]
    if not mains:
        agents = {d.get("agentId") for _, lines in subs for d in lines if d.get("agentId")}
        if len(agents) > 1:
            raise ImportFailure("ctxsim: import: only subagent transcripts of several agents: give the main "
                                "transcript (<session>.jsonl) too")
        mains, subs, source.alone = subs, [], True
    seen: set[str] = set()

    def fresh(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for line in lines:
            uuid = line.get("uuid")
            if isinstance(uuid, str) and uuid:
                if uuid in seen:
                    continue  # a copy: a resumed session repeats the lines it resumes
                seen.add(uuid)
            out.append({**line, "isSidechain": False} if source.alone else line)
        return out

    mains.sort(key=lambda f: min((_timestamp(d) for d in f[1] if _timestamp(d)), default=""))
    main = [line for _, lines in mains for line in fresh(lines)]
    launches = _launches(main)
    sub_lines = [(line, launches.get(str(line.get("agentId")), f"sidechain:{line.get('agentId')}"))
                 for _, lines in subs for line in fresh(lines)]
    merged = _merged(main, sub_lines)
    source.subagents = len(subs)
    version = next((d["version"] for d, _ in merged if isinstance(d.get("version"), str)), "")
    source.version = source.version or version
    numbered = [(i + 1, line) for i, (line, _) in enumerate(merged)]
    parents = {i + 1: parent for i, (_, parent) in enumerate(merged) if parent is not None}
    try:
        frames = transcript_frames(numbered)
    except RecordingError as exc:
        raise ImportFailure(f"ctxsim: import: {exc}") from None
    for number, frame in frames:
        if number in parents:
            frame["parent_tool_use_id"] = parents[number]
        source.frames.append(frame)


def read_sources(paths: Sequence[Path]) -> _Source:
    """The recordings at ``paths`` as one stream of frames (transcripts merged), with what they tell of the run."""
    if not paths:
        raise ImportFailure("ctxsim: import: no recording given")
    files = [(p, _read(p)) for p in paths]
    formats = {p: _format(p, lines) for p, lines in files}
    source = _Source(files=len(files))
    if set(formats.values()) == {"stream-json"}:
        if len(files) > 1:
            raise ImportFailure("ctxsim: import: several stream-json files: import one at a time (a stream-json "
                                "capture holds the subagents' messages already)")
        source.fmt = "stream-json"
        _stream_json(*files[0], source)
    elif set(formats.values()) == {"transcript"}:
        source.fmt = "transcript"
        _transcripts(files, source)
    else:
        raise ImportFailure("ctxsim: import: transcripts and stream-json mixed: give the files of one session in "
                            "one format")
    return source


# --- checking and writing ---------------------------------------------------------------------------------------


def _jsonl(frames: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(f, ensure_ascii=False, separators=(",", ":")) + "\n" for f in frames)


def _window(source: _Source, model: str | None) -> int:
    if source.max_tokens:
        return source.max_tokens
    for frame in reversed(source.frames):
        usage = frame.get("modelUsage") if frame.get("type") == "result" else None
        if isinstance(usage, dict):
            entry = usage.get(model) if model in usage else next(iter(usage.values()), None)
            if isinstance(entry, dict) and type(entry.get("contextWindow")) is int and entry["contextWindow"] > 0:
                return int(entry["contextWindow"])
    return 1_000_000 if model and model.endswith("[1m]") else DEFAULT_WINDOW


def usage_convention(frames: list[dict[str, Any]]) -> str:
    """How the recorded provider reports usage, as its numbers show it: ``inclusive`` when every main-chain call
    that reads the cache reports an ``input_tokens`` at least as large as its cache reads and writes together (a
    gateway whose ``input_tokens`` is the whole prompt: Aider #5516, input 17,111 with a cache read of 17,102), and
    at least one does; else ``additive`` (the Anthropic API, whose ``input_tokens`` is the uncached tail)."""
    reading = 0
    for frame in frames:
        message = frame.get("message") if frame.get("type") == "assistant" else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if frame.get("parent_tool_use_id") is not None or not isinstance(usage, dict):
            continue
        counts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
        if not all(type(c) is int for c in counts) or not counts[2]:
            continue
        if counts[0] < counts[1] + counts[2]:
            return "additive"
        reading += 1
    return "inclusive" if reading else "additive"


Outcome = tuple[dict[str, bool], list[tuple[str, str, int, int, int | None]]]
"""Each tracker's verdict, and the reference's ``(label, kind, prompt, output, estimate)`` at every point."""


def judge(session: Any, scripts: Callable[[], list[Any]], kinds: frozenset[str] | None = None) -> Outcome:
    """Every catalogued tracker over fresh ``scripts()`` of ``session`` (tolerance 0): the verdicts, and the
    reference's numbers at the points of ``kinds`` (default: all)."""
    from ..check import run_tracker_parsed
    from ..trackers import make_tracker
    from ..trackers.catalogue import CATALOGUE, reference_for

    verdicts: dict[str, bool] = {}
    numbers: list[tuple[str, str, int, int, int | None]] = []
    for name, entry in CATALOGUE.items():
        tracker = reference_for(session) if name == "reference" else make_tracker(entry.factory, session)
        report = run_tracker_parsed(tracker, session, scripts(), tolerance=0)
        verdicts[name] = report.ok
        if name == "reference":
            numbers = [(p.observation.label, p.observation.kind, p.observation.truth.prompt,
                        p.observation.truth.output, p.estimate) for p in report.points
                       if kinds is None or p.observation.kind in kinds]
    return verdicts, numbers


@contextlib.contextmanager
def _in_memory(text: str) -> Iterator[Path]:
    """A path to a file holding ``text`` that never reaches a disk: an anonymous memory file (Linux ``memfd``),
    gone with this process however it ends (SIGKILL included), so an unscrubbed stream is never left on disk.
    Elsewhere, a private temporary directory removed on exit (not on SIGKILL)."""
    create = getattr(os, "memfd_create", None)
    if create is not None and os.path.isdir("/proc/self/fd"):
        fd = create("ctxsim-import", getattr(os, "MFD_CLOEXEC", 0))
        try:
            data = text.encode("utf-8")
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(fd, view):]
            except OSError as exc:  # a file size limit holds memory files too
                raise ImportFailure(f"ctxsim: import: could not hold the scrubbed stream ({len(data):,} bytes) in "
                                    f"memory: {exc.strerror or exc}; nothing was written") from None
            yield Path(f"/proc/self/fd/{fd}")
        finally:
            os.close(fd)
        return
    with tempfile.TemporaryDirectory(prefix="ctxsim-import-") as tmp:
        path = Path(tmp) / "stream.jsonl"
        try:
            path.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise ImportFailure(f"ctxsim: import: could not hold the scrubbed stream in {tmp}: "
                                f"{exc.strerror or exc}; nothing was written") from None
        yield path


def _recorded(text: str, name: str, window: int, paths: Sequence[Path],
              usage: str = "additive") -> tuple[Recording, Any]:
    from ..world import Query, Session

    with _in_memory(text) as path:
        try:
            recording = read_recording(path, "stream-json")
        except RecordingError as exc:
            raise ImportFailure(f"ctxsim: import: {', '.join(map(str, paths))}: the recording cannot be played: "
                                f"{exc}") from None
    session = Session(session_id=recording.session_id or name, queries=tuple(Query(p, ()) for p in recording.prompts),
                      model=recording.model or "claude-sonnet-4-5", window=window, name=name,
                      usage="inclusive" if usage == "inclusive" else "additive")
    return recording, session


def import_recordings(paths: Sequence[Path], *, name: str, stream_file: str | None = None,
                      steps: bool = True) -> Imported:
    """Import the recordings at ``paths`` as scenario ``name`` (see the module's docstring); ``stream_file`` is
    the scrubbed stream's file name if one is needed (default ``NAME.jsonl``); ``steps=False`` always writes the
    stream. Raises :class:`ImportFailure`."""
    from ..scenario import flow
    from ._import_steps import steps_scenario

    source = read_sources(paths)
    original = _jsonl(source.frames)
    scrubbed = _jsonl(Scrubber().frames(source.frames))
    rec0, session0 = _recorded(original, name, DEFAULT_WINDOW, paths)
    window = _window(source, rec0.model)
    usage = usage_convention(source.frames)
    rec0, session0 = _recorded(original, name, window, paths, usage)
    rec1, session1 = _recorded(scrubbed, name, window, paths, usage)
    for rec in (rec0, rec1):  # the CLI's own figures: the truth after a /compact where the capture carries them
        rec.context_usage = dict(enumerate(source.context_usage))
    before = judge(session0, lambda: rec0.scripts(window, usage))
    after = judge(session1, lambda: rec1.scripts(window, usage))
    if before != after:
        changed = [t for t in before[0] if before[0][t] != after[0].get(t)] or ["reference (its numbers)"]
        raise ImportFailure(f"ctxsim: import: scrubbing changed what {', '.join(changed)} makes of the recording; "
                            f"nothing written (please report this)")
    verdicts = before[0]
    if not verdicts["reference"]:
        raise ImportFailure(_underived(session0, rec0.scripts(window, usage), paths))
    failing = [t for t, ok in verdicts.items() if not ok and t != "reference"]
    what = ("a subagent's own transcript (its context checked as the main one)" if source.alone else
            f"a Claude Code transcript ({source.files} file{'s' if source.files != 1 else ''}, "
            f"{source.subagents} subagent file{'s' if source.subagents != 1 else ''})"
            if source.fmt == "transcript" else "a stream-json capture")
    kept = Scrubber().string("version", source.version)  # only a version's shape is kept, as in the stream
    version = f", Claude Code {kept}" if kept and kept == source.version else ""
    model = rec1.model  # as scrubbed: a model name shaped like a secret is not kept
    head = [f"Imported by `ctxsim import` from {what}{version}, model {model}, window {window:,}.",
            "Scrubbed: every text replaced by filler of the same length, ids re-keyed, every usage number kept."]
    if source.context_usage:
        head.append("The CLI's get_context_usage() totalTokens after each query: "
                    + ", ".join(f"{v:,}" for v in source.context_usage) + ".")
    if usage == "inclusive":
        head.append("Usage is inclusive: every call that reads the cache reports an input_tokens holding it (a "
                    "gateway's convention), so the prompt is input_tokens alone.")
    head.append("Catalogued trackers that fail on it (tolerance 0) are listed under expect.fail.")
    world = {"model": model or "claude-sonnet-4-5", "window": window,
             **({"usage": usage} if usage == "inclusive" else {})}
    expect = ["expect:", "  tolerance: 0", "  reference: " + ("pass" if verdicts["reference"] else "fail")]
    if failing:
        expect.append(f"  fail: {flow(failing)}")
    source_line = f"ctxsim import: {what}{version}"
    result = Imported(name, "", fmt=source.fmt, verdicts=verdicts, context_usage=source.context_usage)
    if steps:
        text = steps_scenario(rec1, name=name, source=source_line, world=world, comment="\n".join(head),
                              context_after=source.context_usage)
        if text is not None and _same(text + "\n".join(expect) + "\n", name, after):
            result.scenario = text + "\n".join(expect) + "\n"
            return result
    result.stream_file = stream_file or f"{name}.jsonl"
    result.stream, result.scenario = scrubbed, "\n".join(
        [*(f"# {line}" for line in head), f"name: {json.dumps(name)}", f"source: {json.dumps(source_line)}",
         f"world: {flow({'window': window, **({'usage': usage} if usage == 'inclusive' else {})})}",
         f"stream: {json.dumps(result.stream_file)}", *expect]) + "\n"
    return result


def _underived(session: Any, scripts: list[Any], paths: Sequence[Path]) -> str:
    """Why the truth import derived is not one the reference tracks: the first point off, and what the truth there
    was derived from. An import never writes a scenario whose reference fails (``reference: fail``)."""
    from ..check import run_tracker_parsed
    from ..trackers.catalogue import reference_for

    report = run_tracker_parsed(reference_for(session), session, scripts, tolerance=0)
    point = next(iter(report.failures), None)
    where = ", ".join(map(str, paths))
    if point is None:
        return (f"ctxsim: import: {where}: the reference cannot track the recording ({report.summary()}); nothing "
                f"written")
    truth = point.observation.truth
    band = f"{point.low:,}" if point.low == point.high else f"{point.low:,}..{point.high:,}"
    if not truth.knowable and truth.unseen:
        band = f"{truth.unseen[0]:,}..{truth.unseen[1]:,} (not knowable)"
    estimate = "no estimate" if point.estimate is None else f"{point.estimate:,}"
    why = f": {truth.why}" if truth.why else ""
    return (f"ctxsim: import: {where}: could not derive a truth the reference tracks at {point.observation.label} "
            f"(derived {band}, the reference says {estimate}){why}; nothing written (please report this)")


def _same(text: str, name: str, outcome: Outcome) -> bool:
    """Whether the steps scenario ``text`` gives every tracker the verdict and the reference the numbers of
    ``outcome`` (at calls, subagent calls and compactions: the rendered session adds result points)."""
    from ..scenario import SessionScenario, parse_scenario

    try:
        scenario = parse_scenario(text, file=f"{name}.yaml")
    except ValueError:
        return False
    if not isinstance(scenario, SessionScenario):
        return False
    kinds = frozenset({"call", "subagent", "compaction"})
    verdicts, numbers = judge(scenario.session, scenario.scripts, kinds)
    return verdicts == outcome[0] and _told(numbers) == _told([n for n in outcome[1] if n[1] in kinds])


def _told(numbers: list[tuple[str, str, int, int, int | None]]) -> list[tuple[Any, ...]]:
    """The reference's numbers as the recording tells them: after a compaction a recording only estimates what the
    context holds (the system prefix), where the steps may state what the CLI's /context said; the reference's
    estimate there must still be the same."""
    return [(label, kind, None, None, estimate) if kind == "compaction" else (label, kind, prompt, output, estimate)
            for label, kind, prompt, output, estimate in numbers]


def write_import(paths: Sequence[Path], out: Path, *, force: bool = False, steps: bool = True) -> list[Path]:
    """Import ``paths`` into the scenario file ``out`` (and its stream beside it); returns the files written. The
    files are written whole or not at all (a full disk is one ``ctxsim:`` line, no partial file)."""
    name = out.name.removesuffix(".yaml").removesuffix(".yml")
    if out.exists() and not force:  # refused before the work of importing
        raise ImportFailure(f"ctxsim: import: {out} exists (--force overwrites it)")
    try:
        refuse_non_files([out], who="ctxsim: import")
    except FileNotWritten as exc:
        raise ImportFailure(str(exc)) from None
    imported = import_recordings(paths, name=name, steps=steps)
    targets = [out] + ([out.parent / imported.stream_file] if imported.stream_file else [])
    for target in targets:
        if target.exists() and not force:
            raise ImportFailure(f"ctxsim: import: {target} exists (--force overwrites it)")
        if target.resolve() in {p.resolve() for p in paths}:
            raise ImportFailure(f"ctxsim: import: {target} is one of the recordings read")
    texts = {out: imported.scenario, **({targets[1]: imported.stream} if imported.stream is not None else {})}
    try:
        write_whole(texts, who="ctxsim: import")  # both whole, or neither: no partial file on a full disk
    except FileNotWritten as exc:
        raise ImportFailure(str(exc)) from None
    return targets
