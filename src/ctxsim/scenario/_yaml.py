"""Reading YAML for ctxsim: PyYAML's safe loader, keeping the line of every mapping, key, value and item.

Scenario errors must name ``file:line`` and the key path, which plain ``yaml.safe_load`` cannot: its dicts and
lists forget where they came from. :class:`LineLoader` builds :class:`Map`/:class:`Seq` that remember, and
:class:`Reader` validates shapes and types against them, raising one ``ctxsim: file:line: key: ...`` error.

Hostile documents are bounded while they are read, before anything is built from them: at most
:data:`MAX_VALUES` values (scalars, mappings and sequences: the parser's events are counted first, in C where
PyYAML has libyaml), an integer of more than :data:`MAX_DIGITS` digits is kept as a :class:`HugeNumber` (never
converted: Python refuses 4,300 digits and more), and a token count above :data:`MAX_TOKENS` is refused by
:meth:`Reader.count` with its line and key.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Collection
from typing import Any

import yaml

from ..processes import printable, unprintable

__all__ = ["MAX_DIGITS", "MAX_TOKENS", "MAX_VALUES", "HugeNumber", "LineLoader", "Map", "Positioned", "Reader", "Seq",
           "describe", "join_path", "load"]

MAX_VALUES = 500_000
"""The most values (scalars, mappings, sequences) a document may hold: a scenario of 20,000 calls has about 200,000."""
MAX_DIGITS = 30
"""The most characters an integer of a document may be written with; a longer one is a :class:`HugeNumber`."""
MAX_TOKENS = 10_000_000
"""The largest token count a scenario may state (ten times the largest context window, 1,000,000 tokens)."""


# --- a safe loader that remembers lines -------------------------------------------------------------------------


class Map(dict[Any, Any]):
    """A YAML mapping with the line of itself, of each key and of each value."""

    line: int
    key_lines: dict[Any, int]
    value_lines: dict[Any, int]
    duplicate: tuple[Any, int] | None


class Seq(list[Any]):
    """A YAML sequence with the line of itself and of each item."""

    line: int
    item_lines: list[int]


class Positioned(Exception):
    """An error found while constructing, before the key path is known."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


class HugeNumber:
    """An integer written with more than :data:`MAX_DIGITS` characters, not converted (no value of a scenario is
    that large): every check refuses it, saying how many digits it has."""

    def __init__(self, digits: int) -> None:
        self.digits = digits

    def __repr__(self) -> str:
        return f"a number of {self.digits:,} digits"


class LineLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that records lines, and refuses aliases (so every value has one place in the file)."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()  # type: ignore[no-untyped-call]
            raise Positioned(event.start_mark.line + 1, "anchors and aliases are not supported in scenarios")
        return super().compose_node(parent, index)


def _construct_map(loader: LineLoader, node: yaml.MappingNode) -> Any:
    data = Map()
    data.line = node.start_mark.line + 1
    data.key_lines, data.value_lines, data.duplicate = {}, {}, None
    yield data
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        try:
            hash(key)
        except TypeError:
            raise Positioned(line, "a mapping key must be a plain value") from None
        if key in data:
            if data.duplicate is None:
                data.duplicate = (key, line)
            continue
        data[key] = loader.construct_object(value_node, deep=True)
        data.key_lines[key] = line
        data.value_lines[key] = value_node.start_mark.line + 1


def _construct_seq(loader: LineLoader, node: yaml.SequenceNode) -> Any:
    data = Seq()
    data.line = node.start_mark.line + 1
    data.item_lines = [item.start_mark.line + 1 for item in node.value]
    yield data
    data.extend(loader.construct_object(item, deep=True) for item in node.value)


_DECIMAL = re.compile(r"[-+]?[0-9][0-9_]*")
"""An integer as a scenario writes one: decimal digits (underscores between them allowed). Leading zeros are
decimal too (``0100`` is 100; YAML 1.1 reads octal, 64)."""


def _construct_int(loader: Any, node: yaml.ScalarNode) -> Any:
    """An integer, unless written too long to convert (:class:`HugeNumber`): decimal digits only, leading zeros
    included. What YAML 1.1 reads as an integer in another base (``0x10``, ``0b101``, base 60's ``1:30``, which it
    reads as 90) stays the text written, as YAML 1.2 reads it: a count refuses it, a name or a prompt keeps it."""
    text = str(node.value)
    if len(text) > MAX_DIGITS:
        return HugeNumber(sum(c.isdigit() for c in text))
    if _DECIMAL.fullmatch(text):
        return int(text.replace("_", ""), 10)
    return text


LineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
LineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
LineLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
LineLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?0[0-9_]+$"), list("-+0"))

def _libyaml_loader() -> Any:
    """libyaml's parser with the same constructors (several times faster on valid files), or None without it."""
    if not getattr(yaml, "__with_libyaml__", False):
        return None

    class CLineLoader(yaml.CSafeLoader):
        pass

    CLineLoader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    CLineLoader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
    CLineLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
    CLineLoader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^[-+]?0[0-9_]+$"), list("-+0"))
    return CLineLoader


_CLineLoader = _libyaml_loader()


def _shares_nodes(root: yaml.Node) -> bool:
    """True when a node appears twice in the tree: an alias, which libyaml resolves silently."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            return True
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return False


def _count_values(text: str) -> None:
    """Raise :class:`Positioned` at the value that makes ``text`` hold more than :data:`MAX_VALUES` (counted on the
    parser's events, without building anything). A syntax error is left to the loader, which reports it."""
    loader = (_CLineLoader or LineLoader)(text)
    count = 0
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                count += 1
                if count > MAX_VALUES:
                    line = event.start_mark.line + 1 if event.start_mark is not None else 1
                    raise Positioned(line, f"more than {MAX_VALUES:,} values: a scenario is "
                                                                f"at most that big")
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def load(text: str) -> Any:
    """The document in ``text``, its mappings and sequences as :class:`Map`/:class:`Seq`.

    Valid documents are read with libyaml when PyYAML has it. Anything else (a syntax error, a tag, an alias)
    is read again by :class:`LineLoader`, whose errors and positions are the ones reported, so a file gives the
    same error with or without libyaml. Raises what :class:`LineLoader` raises.
    """
    _count_values(text)
    if _CLineLoader is not None:
        loader = _CLineLoader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            if not _shares_nodes(node):
                return loader.construct_document(node)
        except Exception:
            pass
        finally:
            loader.dispose()
    return yaml.load(text, Loader=LineLoader)  # a SafeLoader subclass


# --- validation -------------------------------------------------------------------------------------------------


def describe(value: Any) -> str:
    if isinstance(value, HugeNumber):
        return repr(value)
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return quoted(value)
    return repr(value) if isinstance(value, (int, float)) else type(value).__name__


QUOTE_LIMIT = 40
"""Characters of a string an error quotes, at most."""
_MAY_HOLD_A_SECRET = re.compile(r"[=@]|://|(?i:sk-|hf_|gh[oprsu]_|github_pat_|xox[abprs]-|AKIA|AIza|eyJ|glpat-|npm_|"
                                r"pypi-|password|passwd|secret|token|login)|[A-Za-z]*\d[A-Za-z\d]{6,}|[A-Za-z]{3,}\d")
"""What an error does not quote: a ``KEY=VALUE`` line (``.env``), a URL or e-mail (``.git-credentials``), a
``.netrc`` line, anything shaped like a key (a run mixing letters and digits)."""


def quoted(text: str) -> str:
    """``text`` as an error quotes it: at most :data:`QUOTE_LIMIT` characters, control and bidirectional characters
    escaped (``repr``), and nothing at all when it may hold a secret (a file linked in by mistake)."""
    shown = text[:QUOTE_LIMIT]
    if _MAY_HOLD_A_SECRET.search(shown):
        return f"a string of {len(text):,} characters (not shown: it may hold a secret)"
    return repr(text) if len(text) <= QUOTE_LIMIT else f"{shown!r}... ({len(text):,} characters)"


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")


def shown_key(key: object, *, near: bool = False) -> str:
    """A mapping key as an error's key path shows it: as written when it is a plain name (letters, digits, ``_``
    and ``-``, at most 40) that is close to a known key (``near``) or not shaped like a secret; else as
    :func:`quoted` shows a string (a ``.env`` line read as a key is not shown)."""
    text = str(key)
    if _PLAIN_KEY.fullmatch(text) and (near or not _MAY_HOLD_A_SECRET.search(text)):
        return text
    return f"<{quoted(text)}>"


class Reader:
    """Validates one document; knows the file name for messages."""

    def __init__(self, file: str, error: Callable[..., Exception]) -> None:
        self.file = file
        self.make_error = error
        """Makes the exception: ``error(message, file=, line=, key=)``."""

    def printable_name(self, name: str, line: int) -> None:
        """Refuse a scenario's ``name`` holding a control or bidirectional character (it is printed everywhere)."""
        if any(unprintable(c) for c in name):
            raise self.error(line, "name", f"a scenario's name is one line of printable text (no control or "
                                           f"bidirectional characters), got {printable(name)[:80]!r}")

    def error(self, line: int, path: str, message: str) -> Exception:
        where = f"{self.file}:{line}: " + (f"{path}: " if path else "")
        return self.make_error(f"ctxsim: {where}{message}", file=self.file, line=line, key=path)

    # shapes ------------------------------------------------------------------------------------------------------

    def mapping(self, value: Any, line: int, path: str, allowed: Collection[str], *,
                required: Collection[str] = (), empty_ok: bool = False) -> Map:
        """``value`` as a mapping with only ``allowed`` keys and every ``required`` one."""
        if value is None and empty_ok:
            value = Map()
            value.line, value.key_lines, value.value_lines, value.duplicate = line, {}, {}, None
        if not isinstance(value, Map):
            raise self.error(line, path, f"expected a mapping, got {describe(value)}")
        if value.duplicate is not None:
            key, key_line = value.duplicate
            raise self.error(key_line, join_path(path, shown_key(key, near=key in allowed)), "duplicate key")
        for key in value:
            if key not in allowed:
                hint = difflib.get_close_matches(str(key), list(allowed), n=1)
                suggestion = f"did you mean {hint[0]!r}? " if hint else ""
                raise self.error(value.key_lines[key], join_path(path, shown_key(key, near=bool(hint))),
                                 f"unknown key ({suggestion}expected one of: {', '.join(allowed)})")
        for key in required:
            if key not in value:
                raise self.error(value.line, join_path(path, key), "required key is missing")
        return value

    def sequence(self, value: Any, line: int, path: str, *, non_empty: bool = False) -> Seq:
        if not isinstance(value, Seq):
            raise self.error(line, path, f"expected a list, got {describe(value)}")
        if non_empty and not value:
            raise self.error(line, path, "expected a non-empty list")
        return value

    # fields -------------------------------------------------------------------------------------------------------

    def get(self, m: Map, key: str, path: str, check: Callable[[Any, int, str], Any], default: Any = None) -> Any:
        """``m[key]`` through ``check(value, line, path)``, or ``default`` when absent."""
        if key not in m:
            return default
        return check(m[key], m.value_lines[key], join_path(path, key))

    def string(self, value: Any, line: int, path: str) -> str:
        if not isinstance(value, str):
            raise self.error(line, path, f"expected a string, got {describe(value)}")
        return value

    def boolean(self, value: Any, line: int, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.error(line, path, f"expected true or false, got {describe(value)}")
        return value

    def integer(self, value: Any, line: int, path: str, *, minimum: int | None = 0,
                maximum: int | None = None) -> int:
        if isinstance(value, HugeNumber):
            limit = f"at most {maximum:,}" if maximum is not None else f"at most {MAX_DIGITS} digits"
            raise self.error(line, path, f"expected {limit}, got {describe(value)}")
        if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
            kind = {None: "an integer", 0: "a non-negative integer", 1: "a positive integer"}.get(
                minimum, f"an integer >= {minimum}")
            raise self.error(line, path, f"expected {kind}, got {describe(value)}")
        if maximum is not None and value > maximum:
            raise self.error(line, path, f"expected at most {maximum:,}, got {value:,}")
        return value

    def count(self, value: Any, line: int, path: str) -> int:
        """A number of tokens: 0 to :data:`MAX_TOKENS`."""
        return self.integer(value, line, path, maximum=MAX_TOKENS)

    def positive(self, value: Any, line: int, path: str) -> int:
        """A positive number of tokens (or of anything): 1 to :data:`MAX_TOKENS`."""
        return self.integer(value, line, path, minimum=1, maximum=MAX_TOKENS)

    def choice(self, options: tuple[str, ...]) -> Callable[[Any, int, str], str]:
        def check(value: Any, line: int, path: str) -> str:
            if not isinstance(value, str) or value not in options:
                raise self.error(line, path, f"expected one of {', '.join(options)}, got {describe(value)}")
            return value
        return check


def join_path(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)
