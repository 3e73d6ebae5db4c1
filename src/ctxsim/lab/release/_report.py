"""Differences as a person reads them: each changed leaf by its path, identical shifts grouped.

A ``Difference`` can hold a whole object on each side (a statusline payload's
``context_window``, a transcript's list of row kinds). :func:`leaves` names what moved inside it: every leaf that
differs by its path (``context_window.used_percentage``), a list's inserted or removed items by their slice
(``line kinds[3:3]: [] → ['api-request-route']``). :func:`shifts` groups the leaves of many differences: the same
path moving the same way (the same delta for numbers, the same two values otherwise) at many points is one
:class:`Shift`, with how many points and where. ``ctxsim fidelity``'s text report, its drift section and the rules
draft ``--record`` writes are made of these lines; its JSON keeps every difference and adds its leaves.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._projection import Difference

__all__ = ["Leaf", "Shift", "difference_leaves", "leaves", "listed", "shifts", "shown"]

ABSENT = "<absent>"

Leaf = tuple[str, Any, Any]
"""``(path, old, new)``: one value that differs."""


def shown(value: Any, limit: int = 60) -> str:
    """``value`` for a line of text: a string as it is, anything else by its repr, cut at ``limit`` characters."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def leaves(path: str, old: Any, new: Any) -> list[Leaf]:
    """Every leaf of ``old`` and ``new`` (at ``path``) that differs: mappings key by key (``path.key``; a key on one
    side only is ``<absent>`` on the other), lists of one length item by item (``path[2]``), lists of two lengths by
    the slices that differ (``path[3:3]``: an item inserted there); anything else is one leaf."""
    if old == new:
        return []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        keys = [*old, *(k for k in new if k not in old)]
        return [leaf for k in keys for leaf in leaves(f"{path}.{k}", old.get(k, ABSENT), new.get(k, ABSENT))]
    if isinstance(old, (list, tuple)) and isinstance(new, (list, tuple)):
        if len(old) == len(new):
            return [leaf for i, (a, b) in enumerate(zip(old, new)) for leaf in leaves(f"{path}[{i}]", a, b)]
        out: list[Leaf] = []
        matcher = difflib.SequenceMatcher(None, [repr(v) for v in old], [repr(v) for v in new], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                continue
            if tag == "replace" and i2 - i1 == j2 - j1:
                out += [leaf for k in range(i2 - i1) for leaf in leaves(f"{path}[{i1 + k}]", old[i1 + k],
                                                                        new[j1 + k])]
            else:
                out.append((f"{path}[{i1}:{i2}]", list(old[i1:i2]), list(new[j1:j2])))
        return out
    return [(path, old, new)]


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass
class Shift:
    """One path moving one way (``old → new``, or by one delta) at one or more points."""

    path: str
    delta: float | None
    """``new - old`` where both are numbers (the points may start from different values), else None."""
    pairs: list[tuple[Any, Any]] = field(default_factory=list)
    """The distinct ``(old, new)`` seen, in order."""
    points: list[tuple[str, str]] = field(default_factory=list)
    """``(session, where)`` of each point."""
    tracked: bool = True
    note: str = ""

    @property
    def sessions(self) -> list[str]:
        return list(dict.fromkeys(s for s, _ in self.points))

    def change(self) -> str:
        """``16 → 32 (+16)``; with more starting values, the first two and the common delta."""
        shown_pairs = [f"{shown(a, 40)} → {shown(b, 40)}" for a, b in self.pairs[:2]]
        text = ", ".join(shown_pairs) + (", …" if len(self.pairs) > 2 else "")
        if self.delta is not None:
            delta = f"{self.delta:+.6g}"
            text += f" ({delta}{' each' if len(self.pairs) > 1 else ''})"
        return text

    def where(self, limit: int = 4) -> str:
        """``at 1 point: several-queries step 2 …`` or ``at 24 points in 12 sessions: a, b, …``."""
        count = len(self.points)
        points = f"{count} point{'s' if count != 1 else ''}"
        sessions = self.sessions
        if len(sessions) == 1:
            places = [w for _, w in self.points]
            listed = "; ".join(places[:limit]) + ("; …" if len(places) > limit else "")
            return f"at {points} in {sessions[0]}: {listed}"
        listed = ", ".join(sessions[:limit]) + (", …" if len(sessions) > limit else "")
        return f"at {points} in {len(sessions)} sessions: {listed}"

    def line(self) -> str:
        """One line of a report: ``path: change where``."""
        return f"{self.path}: {self.change()} {self.where()}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "delta": self.delta, "pairs": [list(p) for p in self.pairs],
                "points": [{"session": s, "where": w} for s, w in self.points], "tracked": self.tracked,
                **({"note": self.note} if self.note else {})}


def difference_leaves(d: Difference, *, fake_first: bool) -> list[Leaf]:
    """The leaves of ``d`` as old → new: fake → CLI (``fake_first``: a fidelity difference, whose ``left`` is the
    CLI's) or left → right (a drift: capture → live run)."""
    return leaves(d.field, d.right, d.left) if fake_first else leaves(d.field, d.left, d.right)


def shifts(differences: Iterable[tuple[str, Difference]], *, fake_first: bool) -> list[Shift]:
    """``(session, difference)`` pairs as :class:`Shift` groups, the most points first (then by path)."""
    groups: dict[tuple[Any, ...], Shift] = {}
    for session, d in differences:
        for path, old, new in difference_leaves(d, fake_first=fake_first):
            delta = round(new - old, 9) if _number(old) and _number(new) else None  # 0.1 + 0.2: one shift
            key = (path, d.tracked, d.note, delta) if delta is not None else (path, d.tracked, d.note, repr(old),
                                                                                repr(new))
            group = groups.setdefault(key, Shift(path, delta, tracked=d.tracked, note=d.note))
            if (old, new) not in group.pairs:
                group.pairs.append((old, new))
            group.points.append((session, d.where))
    return sorted(groups.values(), key=lambda g: (-len(g.points), g.path))


def listed(groups: Sequence[Shift], indent: str, limit: int | None) -> list[str]:
    """``groups`` as indented lines, at most ``limit`` (None: all) and a line saying how many more."""
    shown_groups = groups if limit is None else groups[:limit]
    lines = [indent + g.line() for g in shown_groups]
    if len(groups) > len(shown_groups):
        lines.append(f"{indent}and {len(groups) - len(shown_groups)} more (--all or --json lists them)")
    return lines
