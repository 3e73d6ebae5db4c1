"""Naming a tracker on a command line: a catalogue name (``arbiter-msgid``), ``module:factory``, or a statusline
command, ``cmd:COMMAND`` / ``cmd[OPTIONS]:COMMAND`` (:mod:`ctxsim.trackers`).

Shared by ``pytest --ctx-tracker`` and ``ctxsim run --tracker``. A ``module:factory`` is imported, the factory
(a tracker class, or any callable without arguments, or with a ``world`` parameter: told the scenario's
:class:`~ctxsim.trackers.TrackerWorld`) is called once to check that it makes a tracker (``observe`` and
``context_tokens``), and every use calls it again for a fresh one (:func:`~ctxsim.trackers.make_tracker`).
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from ..processes import described, join_spec, split_spec, unstartable
from ._base import AnyTrackerFactory, TrackerWorld, make_tracker, takes_world, tracker_name
from ._command import SPEC_OPTIONS as COMMAND_OPTIONS, CommandTracker, parse_command_spec
from ._feeding import Feeding, NotATracker, feeding
from ._stream import SPEC_OPTIONS as STREAM_OPTIONS, StreamTracker, parse_stream_spec
from .catalogue import CATALOGUE

__all__ = ["SpecError", "TrackerSpec", "TrackerSpecError", "anchored_spec", "load_named", "load_spec",
           "not_catalogued", "resolve"]

C = TypeVar("C")


class SpecError(ValueError):
    """A ``module:attribute`` spec that names nothing usable; the message says why, in one line."""


class TrackerSpecError(SpecError):
    """A tracker spec that names nothing usable; the message says why, in one line."""


@dataclass(frozen=True)
class TrackerSpec:
    """A resolved tracker: how it was given, what reports call it, and how to make a fresh one."""

    spec: str
    name: str
    factory: AnyTrackerFactory
    catalogued: bool = False
    """True for an entry of :data:`ctxsim.trackers.catalogue.CATALOGUE`."""
    feeding: Feeding = field(default=cast("Feeding", None), compare=False)
    """How the trackers it makes are fed, what they read and where they are judged (:func:`ctxsim.trackers.feeding`
    of one made: decided once, whichever door names the tracker); worked out from :attr:`factory` when not given."""

    def __post_init__(self) -> None:
        if self.feeding is None:
            object.__setattr__(self, "feeding", feeding(make_tracker(self.factory)))

    @property
    def fed_messages(self) -> AnyTrackerFactory | None:
        """:attr:`factory` when it makes a tracker a restart loop can feed the SDK's message objects, else None: not
        one fed points, nor a stream tracker's process (it reads stream-json lines; :class:`~ctxsim.trackers.RawDicts`
        rebuilds the line from the message)."""
        return None if self.feeding.fed == "points" or self.stream else self.factory

    @property
    def stream(self) -> bool:
        """True for a stream tracker (``stream:``), fed the raw stream-json line of each message, one process per
        session."""
        return _is_stream(self.spec)

    @property
    def reads(self) -> frozenset[str]:
        """The surfaces its input carries (:data:`ctxsim.surfaces.SURFACES`; :attr:`Feeding.reads
        <ctxsim.trackers.Feeding.reads>`): a tracker fed points (a statusline command) reads the payload and the
        transcript files, any other the SDK stream."""
        return self.feeding.reads

    @property
    def command(self) -> bool:
        """True for a statusline command (``cmd:``), judged at observation points rather than fed messages."""
        return _is_command(self.spec)


def _is_command(spec: str) -> bool:
    return spec.startswith(("cmd:", "cmd["))


def _is_stream(spec: str) -> bool:
    return spec.startswith(("stream:", "stream["))


def _import(module: str, search: Sequence[str]) -> Any:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = exc.name or module
        if not (module == missing or module.startswith(missing + ".")) or not search:
            raise
    added = [p for p in search if p not in sys.path]
    sys.path[:0] = added  # the project's own modules, as `python -m pytest` from its root would find them
    importlib.invalidate_caches()
    return importlib.import_module(module)


def load_spec(spec: str, *, search: Sequence[str] = (), what: str = "name",
              example: str = "mypackage.module:name") -> Any:
    """The object ``module:attribute`` names (``attribute`` may be dotted). ``module`` is imported as is, else from
    the ``search`` directories (the project's root). Raises :class:`SpecError` saying what is wrong, in one line."""
    module_name, _, attr = spec.strip().partition(":")
    if not module_name or not attr or not all(p.isidentifier() for p in module_name.split(".") + attr.split(".")):
        raise SpecError(f"{spec!r} is not module:{what} (e.g. {example})")
    try:
        module = _import(module_name, search)
    except Exception as exc:
        raise SpecError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}") from None
    found: Any = module
    for part in attr.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise SpecError(f"module {module_name!r} has no {attr!r}") from None
    return found


def not_catalogued(name: str, catalogued: Iterable[str], *, noun: str, form: str) -> str:
    """The one-line error for ``name``, which is not among ``catalogued`` (``noun``: what it is not), with the
    closest catalogued name as a hint and ``form`` (``module:factory``) as the other way to name one."""
    known = sorted(catalogued)
    hint = difflib.get_close_matches(name, known, n=1)
    suggestion = f" (did you mean {hint[0]!r}?)" if hint else ""
    return f"{name!r} is not {noun}{suggestion}; give a catalogued name ({', '.join(known)}) or {form}"


def load_named(spec: str, catalogue: Mapping[str, C], *, error: type[SpecError], noun: str, what: str,
               example: str, kind: str, search: Sequence[str] = ()) -> tuple[C | None, Any]:
    """What ``spec`` names, for every option that takes a catalogue name or ``module:what`` (trackers, loops):
    ``(entry, None)`` for a name of ``catalogue``, ``(None, object)`` for a ``module:what`` (imported by
    :func:`load_spec`, checked callable: ``kind`` says what it should be). Raises ``error`` (a :class:`SpecError`)
    saying what is wrong, in one line: a name not catalogued (``noun``: what it is not), a spec naming nothing, or
    something not callable."""
    spec = spec.strip()
    if ":" not in spec:
        if spec in catalogue:
            return catalogue[spec], None
        raise error(not_catalogued(spec, catalogue, noun=noun, form=f"module:{what}"))
    try:
        found = load_spec(spec, search=search, what=what, example=example)
    except SpecError as exc:
        raise error(str(exc)) from None
    if not callable(found):
        raise error(f"{spec} is a {type(found).__name__}, not a {kind}")
    return None, found


def _fresh(tracker: CommandTracker) -> CommandTracker:
    return dataclasses.replace(tracker)


def _startable(command: str, cwd: str | os.PathLike[str]) -> None:
    """Raise :class:`TrackerSpecError` when ``command`` surely cannot start from ``cwd`` (a missing program or
    script): one error before any run, rather than a failure at every scenario."""
    why = unstartable(command, cwd)
    if why is not None:
        raise TrackerSpecError(f"the command cannot start: {why} (it runs in {cwd})")


def resolve(spec: str, *, search: Sequence[str] = (), env: Mapping[str, str] | None = None) -> TrackerSpec:
    """The tracker ``spec`` names. ``search`` are directories to import ``module`` from when it is not importable
    as is (the project's root). ``env``: variables passed to a ``cmd:`` or ``stream:`` command on top of its own
    environment (:func:`passed_environment`; a Python tracker runs in this process and sees all of it). Raises
    :class:`TrackerSpecError` saying what is wrong, a command whose program or script is missing included. A
    catalogue entry's own factory named by module (``ctxsim.reference:ContextTracker``) is that entry, named and
    judged as its catalogued name is."""
    spec = spec.strip()
    passed = dict(env or {})
    if _is_stream(spec):
        try:
            stream = parse_stream_spec(spec)
        except ValueError as exc:
            raise TrackerSpecError(str(exc).removeprefix("ctxsim: ")) from None
        _startable(stream.command, stream.cwd)

        def fresh(world: TrackerWorld) -> StreamTracker:
            made = parse_stream_spec(spec, world)
            made.env = {**made.env, **passed}
            return made

        return TrackerSpec(spec, stream.name, cast(AnyTrackerFactory, fresh), feeding=feeding(stream))
    if _is_command(spec):
        try:
            tracker = parse_command_spec(spec)
        except ValueError as exc:
            raise TrackerSpecError(str(exc).removeprefix("ctxsim: ")) from None
        if tracker.cwd != "home":
            _startable(tracker.command, str(tracker.cwd))
        tracker.env = {**tracker.env, **passed}
        return TrackerSpec(spec, tracker.name, lambda: _fresh(tracker), feeding=feeding(tracker))
    entry, factory = load_named(spec, CATALOGUE, error=TrackerSpecError, noun="in the catalogue",
                                what="factory", example="mypackage.tracking:MyTracker",
                                kind="class or function that makes a tracker", search=search)
    if entry is not None:
        return TrackerSpec(spec, spec, entry.factory, catalogued=True)
    same = next((e for e in CATALOGUE.values() if e.factory is factory), None)
    if same is not None:  # a catalogued tracker named by module (ctxsim.reference:ContextTracker): judged as by name
        return TrackerSpec(spec, same.name, same.factory, catalogued=True)
    try:
        tracker = make_tracker(factory)
    except Exception as exc:
        how = "with world=TrackerWorld()" if takes_world(factory) else "without arguments"
        raise TrackerSpecError(f"{spec}() raised {described(exc)} (the factory is called {how})") from None
    try:
        fed = feeding(tracker)
    except NotATracker as exc:
        raise TrackerSpecError(f"{spec}() made {exc}") from None
    return TrackerSpec(spec, tracker_name(tracker), factory, feeding=fed)


def anchored_spec(spec: str, cwd: str | os.PathLike[str]) -> str:
    """``spec`` as it runs the same from any directory: a ``cmd:`` or ``stream:`` command gets the directory it runs
    in recorded as its ``cwd`` option (``cwd``, made absolute, unless the spec names its own: a relative one is
    made absolute from ``cwd``; ``home`` stays); any other spec is returned as is."""
    spec = spec.strip()
    prefix = "stream" if _is_stream(spec) else "cmd" if _is_command(spec) else ""
    if not prefix:
        return spec
    kinds = STREAM_OPTIONS if prefix == "stream" else COMMAND_OPTIONS
    command, found = split_spec(spec, prefix, kinds, example=f"{prefix}:COMMAND")
    where = found.get("cwd")
    if where != "home":
        found["cwd"] = os.path.abspath(os.path.join(os.fspath(cwd), os.path.expanduser(where or ".")))
    return join_spec(prefix, command, found)
