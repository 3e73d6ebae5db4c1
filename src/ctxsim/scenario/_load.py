"""Loading a scenario: a file (or text) to a :class:`Scenario` of its kind, every error a :class:`ScenarioError`
with file:line.

The two kinds are :class:`SessionScenario` (a session whose trackers are checked) and :class:`TaskScenario` (a task
for restart loops); the loader decides which once, from the ``task`` section, and builds each kind with only its
own fields.

The format itself is documented in :mod:`ctxsim.scenario`; each section has its own reader beside this module.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from ..check import crossings
from ..processes import printable
from ..recordings import FORMATS, MAX_SCENARIO_BYTES, Recording, RecordingError, read_bounded, read_recording
from ..wire import Observation, Script
from ..world import Query, Session, SessionBuilder
from . import _schema as schema
from ._sections import (
    Expectations,
    ExpectedFailure,
    FaultSpec,
    LoopExpectations,
    StepBuilder,
    TaskSpec,
    ThresholdSpec,
    check_task_expectations,
    read_expect,
    read_faults,
    read_task,
    refuse_world_keys,
    world_builder,
)
from ._sections._faults import not_judged, plan as fault_plan, surfaces
from ._yaml import Map, Positioned, Reader, describe, load as load_yaml

if TYPE_CHECKING:
    from ..faults import FaultPlan
    from ..surfaces import Rendition

__all__ = ["FaultSpec", "LoopExpectations", "Scenario", "ScenarioError", "SessionScenario", "TaskScenario", "TaskSpec",
           "ThresholdSpec", "load_scenario", "parse_scenario"]


class ScenarioError(ValueError):
    """A scenario file that cannot be read or is not a valid scenario; the message names file, line and key."""

    __module__ = "ctxsim.scenario"  # its public name, as tracebacks and reprs show it

    def __init__(self, message: str, *, file: str = "", line: int | None = None, key: str = "") -> None:
        super().__init__(message)
        self.file = file
        self.line = line
        self.key = key


@dataclass(frozen=True)
class Scenario(ABC):
    """A loaded scenario, of either kind: its name and provenance, its world, and what the file expects.

    The loader returns one of the two kinds, each run by its own runner: a :class:`SessionScenario` (trackers
    checked over a session, :mod:`ctxsim.runner`) or a :class:`TaskScenario` (restart loops working through
    a task, :mod:`ctxsim.runner`). Annotate with this base when either kind will do; narrow with ``isinstance``
    (or ``match``) where the kinds differ.
    """

    reference: ClassVar[str] = ""
    """How items and reports name the reference this kind of scenario is checked with (``reference``: the
    reference tracker; ``reference-loop``: the reference restart loop)."""

    name: str
    source: str
    description: str
    session: Session
    """The session trackers are checked over; for a task scenario only the world (window, baseline, model, seed):
    no queries, no observation points."""
    path: Path
    _: KW_ONLY
    expect_reference: bool = True
    """True when the reference (tracker or restart loop) must do what the file says (``expect.reference: pass``)."""
    ctx_tracker: str = "pass"
    """What the tracker under test (``--ctx-tracker``) must do: ``pass``, ``fail`` or ``skip``."""
    lines: Mapping[str, int] = field(default_factory=dict)
    """The 1-based line of each top-level section present (``name``, ``queries``, ``task``, ``expect``...), of each
    ``expect.<key>`` given, and of each expected tracker as ``tracker:<name>`` (each loop as ``loop:<name>``)."""

    def line_of(self, subject: str) -> int:
        """The line that states what ``subject`` must do: its entry, else ``expect``, else 1.

        ``subject`` is ``reference`` or ``reference-loop`` (see :attr:`reference`), a catalogued tracker of a
        session scenario or a catalogued loop of a task scenario."""
        lines = self.lines
        if subject in ("reference", "reference-loop"):
            return lines.get("expect.reference") or lines.get("expect") or lines.get("queries") or lines.get(
                "task") or 1
        return lines.get(f"tracker:{subject}") or lines.get(f"loop:{subject}") or lines.get("expect") or 1

    @abstractmethod
    def outline(self) -> str:
        """What the scenario holds, in a few words (``12 points``, ``a task of 20 steps``), for listings."""


@dataclass(frozen=True)
class SessionScenario(Scenario):
    """A session (simulated from ``queries`` or a recorded ``stream``) and what trackers must do on it: the
    reference and the listed catalogued trackers track it or fail on it, thresholds fire where the truth crosses.
    Run by :func:`ctxsim.runner.run_scenario`."""

    reference: ClassVar[str] = "reference"

    _: KW_ONLY
    partial: bool = False
    """Render with ``include_partial_messages``."""
    tolerance: int = 0
    must_fail: tuple[str, ...] = ()
    """Catalogued trackers that must fail on the session, in file order."""
    must_pass: tuple[str, ...] = ()
    """Catalogued trackers that must track the session, in file order."""
    failures: Mapping[str, ExpectedFailure] = field(default_factory=dict)
    """How each tracker of :attr:`must_fail` must fail (its first failing point, direction, range), by name."""
    points: Mapping[str, int] = field(default_factory=dict)
    """The line behind each observation point, by the point's label (``q1 call 2``, ``q2 result``): of the
    scenario file, or of the recording for a recorded stream."""
    thresholds: tuple[ThresholdSpec, ...] = ()
    faults: tuple[FaultSpec, ...] = ()
    recording: Recording | None = field(default=None, compare=False, repr=False)
    """The recorded stream played instead of a rendered session, if any."""

    def where(self, label: str) -> tuple[Path, int] | None:
        """The file and line behind the observation point ``label``, when known."""
        line = self.points.get(label)
        if line is None:
            return None
        return (self.recording.path if self.recording is not None else self.path), line

    def rendition(self) -> Rendition:
        """The scenario's world on every surface, fresh for each run (:class:`ctxsim.surfaces.Rendition`): the
        session rendered (or the recording played) with the ``faults:`` plan, each surface rendered once for every
        consumer of the run."""
        from ..surfaces import Rendition

        recording = self.recording
        recorded = (None if recording is None else
                    functools.partial(recording.scripts, self.session.window, self.session.usage))
        return Rendition(self.session, self.fault_plan(), partial=self.partial, recorded=recorded)

    def scripts(self) -> list[Script]:
        """The stream to play, fresh for each run: the session rendered (or the recording), faults applied."""
        return list(self.rendition().stream)

    def fault_plan(self) -> FaultPlan | None:
        """The ``faults:`` list as the plan :meth:`scripts` applies (None without faults): a tracker that reads the
        transcript reads it with the plan's transcript form applied."""
        return fault_plan(self.faults, self.session.seed) if self.faults else None

    @property
    def surfaces(self) -> frozenset[str]:
        """Where the stream is real (:data:`ctxsim.surfaces.SURFACES`): where all its faults are."""
        return surfaces(self.faults)

    def not_judged(self, reads: frozenset[str]) -> str | None:
        """Why a tracker reading the surfaces ``reads`` is not judged here (a fault its input never carries), or
        None when it is."""
        return not_judged(self.faults, reads)

    def observations(self) -> list[Observation]:
        """Every observation point of :meth:`scripts`, in order."""
        return list(self.rendition().observations)

    def outline(self) -> str:
        return f"{len(self.observations())} points"


@dataclass(frozen=True)
class TaskScenario(Scenario):
    """A task the reactive fake agent works through under a restart loop, and what the loops must do: the
    reference loop's restarts, checkpoints and steps, the catalogued loops the loop checks must catch or clear.
    Run by :func:`ctxsim.runner.run_task`."""

    reference: ClassVar[str] = "reference-loop"

    _: KW_ONLY
    task: TaskSpec
    """The task, the pressure policy and the checkpoint plan."""
    loop_expect: LoopExpectations = field(default_factory=LoopExpectations)
    """What the scenario expects of restart loops."""

    def outline(self) -> str:
        return f"a task of {len(self.task.task.steps)} steps"


# --- loading ----------------------------------------------------------------------------------------------------


def _known_trackers() -> Collection[str]:
    from ..trackers.catalogue import CATALOGUE

    return CATALOGUE


def _known_loops() -> dict[str, str]:
    from ..loops import CATALOGUE

    return {name: entry.invariant for name, entry in CATALOGUE.items()}


def _read_yaml(reader: Reader, text: str) -> Any:
    try:
        return load_yaml(text)
    except Positioned as exc:
        raise reader.error(exc.line, "", str(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        problem = " ".join(p for p in (exc.context, exc.problem) if p)
        raise reader.error(line, "", f"not valid YAML: {problem}") from None
    except yaml.YAMLError as exc:
        raise reader.error(1, "", f"not valid YAML: {exc}") from None
    except RecursionError:
        raise reader.error(1, "", "nested too deeply") from None


def _stream(r: Reader, top: Map) -> Map:
    """``stream`` as a mapping (``stream: FILE`` is ``{file: FILE}``)."""
    value, line = top.get("stream"), top.value_lines.get("stream", 1)
    if isinstance(value, str):
        m = Map({"file": value})
        m.line, m.key_lines, m.value_lines, m.duplicate = line, {"file": line}, {"file": line}, None
        return m
    if value is not None and not isinstance(value, Map):
        raise r.error(line, "stream", f"expected a file name (a recorded stream) or a mapping, got {describe(value)}")
    stream = r.mapping(value, line, "stream", schema.keys("stream"), empty_ok=True)
    if "file" in stream and "partial" in stream:
        raise r.error(stream.key_lines["partial"], "stream.partial", "partial applies to a rendered session, not "
                                                                     "to a recorded stream (stream.file)")
    return stream


def _recorded(r: Reader, stream: Map, top: Map, base: Path | None, display_base: str) -> Recording:
    if "queries" in top:
        raise r.error(top.key_lines["queries"], "queries", "give either queries or a recorded stream "
                                                           "(stream.file), not both")
    rel = r.get(stream, "file", "stream", r.string)
    fmt = r.get(stream, "format", "stream", r.choice(FORMATS), "auto")
    line = stream.value_lines["file"]
    if base is None:
        raise r.error(line, "stream.file", "a recorded stream needs a scenario file to be relative to")
    path = base / rel
    shown = os.path.join(display_base, rel) if display_base else rel
    if not path.is_file():
        raise r.error(line, "stream.file", f"no such file: {shown} (relative to the scenario's directory)")
    try:
        return read_recording(path, fmt)
    except RecordingError as exc:
        at = f"{shown}:{exc.line}: " if exc.line else f"{shown}: "
        raise r.error(line, "stream.file", f"{at}{exc}") from None
    except OSError as exc:
        raise r.error(line, "stream.file", f"{shown}: cannot read it: {exc.strerror or exc}") from None


def _check_fires(r: Reader, scenario: SessionScenario) -> None:
    """Each ``fires`` list must be where the truth does cross: the file says what it means."""
    observations = scenario.observations()
    labels = [o.label for o in observations]
    values = [o.truth.prompt if o.truth.knowable else None for o in observations]
    for spec in scenario.thresholds:
        if spec.fires is None:
            continue
        limit = spec.at * scenario.session.window
        actual = tuple(labels[i] for i in crossings(values, limit))
        path = "expect.threshold.fires"
        for label in spec.fires:
            if label not in labels:
                shown = f"{labels[0]} .. {labels[-1]}" if labels else "none"
                raise r.error(spec.fires_line, path, f"no observation point {label!r} in this session (points: "
                                                     f"{shown})")
        if tuple(spec.fires) != actual:
            said = ", ".join(spec.fires) or "nowhere"
            truth = ", ".join(actual) or "nowhere"
            raise r.error(spec.fires_line, path, f"the truth crosses {spec.at:.0%} of the window "
                                                 f"({limit:,.0f} tokens) at {truth}, not at {said}")


def parse_scenario(text: str, *, file: str = "<scenario>", path: Path | None = None,
                   trackers: Collection[str] | None = None, world: Mapping[str, Any] | None = None,
                   display_dir: str | None = None, name: str | None = None) -> SessionScenario | TaskScenario:
    """Read a scenario from YAML ``text``; ``file`` names it in errors, ``name`` when the text gives none
    (default: ``path``'s stem). A ``task`` section makes a :class:`TaskScenario`, else it is a
    :class:`SessionScenario`.

    ``trackers`` are the names ``expect.fail``/``expect.pass`` may use (default:
    :data:`ctxsim.trackers.catalogue.CATALOGUE`).
    ``world`` gives defaults for the ``world`` keys the text leaves out. A recorded stream is looked up relative
    to ``path``'s directory and named in errors relative to ``display_dir`` (default: ``file``'s directory).
    """
    r = Reader(file, ScenarioError)
    doc = _read_yaml(r, text)
    if doc is None:
        raise r.error(1, "", "the file is empty (a scenario is a mapping with queries, a recorded stream or a task)")
    top = r.mapping(doc, getattr(doc, "line", 1), "", schema.keys(""))

    default = name or (path.stem if path is not None else "scenario")
    name = r.get(top, "name", "", r.string, default)
    r.printable_name(name, top.value_lines.get("name", 1))
    head = _Head(
        r, top, name=name, source=r.get(top, "source", "", r.string, ""),
        description=r.get(top, "description", "", r.string, ""), path=path if path is not None else Path(file),
        lines={key: top.key_lines[key] for key in top})
    world_map = r.mapping(top.get("world"), top.value_lines.get("world", 1), "world", schema.keys("world"),
                          empty_ok=True)
    for key, value in (world or {}).items():
        if key not in world_map:
            world_map[key] = value
            world_map.value_lines[key] = world_map.line
    builder = world_builder(r, world_map, name)
    stream = _stream(r, top)
    partial = r.get(stream, "partial", "stream", r.boolean, False)
    known = _known_trackers() if trackers is None else trackers
    if "task" in top:
        return _task_scenario(head, builder, stream, partial, known)
    base = path.parent if path is not None else None
    shown_dir = display_dir if display_dir is not None else os.path.dirname(file)
    if "file" in stream:
        refuse_world_keys(r, world_map)
    return _session_scenario(head, builder, stream, partial, known, base, shown_dir)


@dataclass
class _Head:
    """What every scenario starts with, read before its kind is known: the reader, the top mapping, the fields
    both kinds share."""

    r: Reader
    top: Map
    name: str
    source: str
    description: str
    path: Path
    lines: dict[str, int]

    def expect(self, known: Collection[str], *, task: bool) -> Expectations:
        """The ``expect`` section, read for a task scenario or a session scenario; its lines join :attr:`lines`."""
        top = self.top
        expect = read_expect(self.r, top.get("expect"), top.value_lines.get("expect", 1), known, task=task,
                             loops=_known_loops() if task else None)
        self.lines.update(expect.lines)
        self.lines.update(expect.loop.lines)
        return expect

    def fields(self, session: Session, expect: Expectations) -> dict[str, Any]:
        """The keywords of :class:`Scenario` both kinds pass."""
        return {"name": self.name, "source": self.source, "description": self.description, "session": session,
                "path": self.path, "expect_reference": expect.reference, "ctx_tracker": expect.ctx_tracker,
                "lines": self.lines}


def _task_scenario(head: _Head, builder: SessionBuilder, stream: Map, partial: bool,
                   known: Collection[str]) -> TaskScenario:
    r, top = head.r, head.top
    for other in ("queries", "faults"):
        if other in top:
            raise r.error(top.key_lines[other], other, "give either queries or a task, not both"
                          if other == "queries" else "faults apply to a simulated or recorded session, "
                                                     "not to a task")
    if "file" in stream:
        raise r.error(stream.key_lines["file"], "stream.file", "give either a recorded stream or a task, "
                                                               "not both")
    world_settings = {"window": builder.window, "baseline": builder.baseline, "model": builder.model,
                      "seed": builder.seed, "max_output": builder.max_output_tokens}
    task = read_task(r, top["task"], top.value_lines["task"], world_settings, name=head.name, partial=partial)
    session = builder.build()  # the world only: the task's sessions are played by the fake agent
    expect = head.expect(known, task=True)
    check_task_expectations(r, task, expect.loop)
    return TaskScenario(**head.fields(session, expect), task=task, loop_expect=expect.loop)


def _session_scenario(head: _Head, builder: SessionBuilder, stream: Map, partial: bool, known: Collection[str],
                      base: Path | None, display_dir: str) -> SessionScenario:
    r, top, name = head.r, head.top, head.name
    recording = None
    if "file" in stream:
        recording = _recorded(r, stream, top, base, display_dir)
        session = Session(session_id=recording.session_id or name, queries=tuple(
            Query(p, ()) for p in recording.prompts), model=recording.model or builder.model,
            window=builder.window, baseline=builder.baseline, max_output_tokens=builder.max_output_tokens,
            seed=builder.seed, name=name, usage=builder.usage)
        recording.scripts(builder.window, builder.usage)  # labels the points
        points = recording.points
    else:
        if "queries" not in top:
            raise r.error(top.line, "queries", "required key is missing (or give a recorded stream: stream.file); "
                                               "a task scenario gives a task instead")
        queries = r.sequence(top["queries"], top.value_lines["queries"], "queries", non_empty=True)
        build = StepBuilder(r, builder, builder.window)
        for i, item in enumerate(queries):
            build.query(item, queries.item_lines[i], f"queries[{i}]")
        session = builder.build()
        build.check_windows(session)
        points = dict(build.labels.points)

    faults = read_faults(r, top["faults"], top.value_lines["faults"]) if "faults" in top else ()
    expect = head.expect(known, task=False)
    scenario = SessionScenario(
        **head.fields(session, expect), partial=partial, tolerance=expect.tolerance, must_fail=expect.must_fail,
        must_pass=expect.must_pass, failures=expect.failures, points=points, thresholds=expect.thresholds,
        faults=faults, recording=recording)
    if any(t.fires is not None for t in scenario.thresholds):
        _check_fires(r, scenario)
    if any(f.first is not None for f in scenario.failures.values()):
        _check_first(r, scenario)
    return scenario


def _check_first(r: Reader, scenario: SessionScenario) -> None:
    """Each expected failure's ``first`` must be a point of the session: one the reader placed, else (faults may add
    points) one of the rendered stream."""
    labels: list[str] | None = None
    for failure in scenario.failures.values():
        if failure.first is None or failure.first in scenario.points:
            continue
        if labels is None:
            labels = [o.label for o in scenario.observations()]
        if failure.first not in labels:
            shown = f"{labels[0]} .. {labels[-1]}" if labels else "none"
            raise r.error(failure.line, f"expect.fail.{failure.tracker}.first",
                          f"no observation point {failure.first!r} in this session (points: {shown})")


def _display(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return str(path)
    return str(path) if rel.startswith(os.pardir) else rel


def load_scenario(path: str | os.PathLike[str], *, display: str | None = None, trackers: Collection[str] | None = None,
                  world: Mapping[str, Any] | None = None) -> SessionScenario | TaskScenario:
    """Load and validate the scenario file at ``path`` (a :class:`SessionScenario` or a :class:`TaskScenario`, see
    :func:`parse_scenario`); errors name it as ``display`` (default: a short path), control and bidirectional
    characters escaped (a file's name cannot forge a line nor act on the terminal)."""
    p = Path(path)
    file = printable(display if display is not None else _display(p))
    try:
        data = read_bounded(p, MAX_SCENARIO_BYTES)
    except OSError as exc:
        raise ScenarioError(f"ctxsim: {file}: cannot read the scenario: {exc.strerror or exc}", file=file) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ScenarioError(f"ctxsim: {file}:{line}: cannot read the scenario: not UTF-8 text ({exc.reason} at "
                            f"byte {exc.start})", file=file, line=line) from None
    return parse_scenario(text, file=file, path=p, trackers=trackers, world=world)
