"""A tracker's estimates at a served scenario's observation points, as a client of ``ctxsim serve`` writes them
(``--judge FILE``): :func:`read_estimates`."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..world import QUANTITY_NAMES, Quantity

if TYPE_CHECKING:
    from ..wire import Observation

__all__ = ["Estimates", "EstimatesError", "read_estimates"]

ESTIMATES_LIMIT = 64 * 1024 * 1024
"""Bytes an estimates file may hold."""
QUANTITIES = tuple(QUANTITY_NAMES)
"""What estimates may declare they are."""


class EstimatesError(ValueError):
    """An estimates file that cannot be read: one ``ctxsim:`` line with the file, the line and what is wrong."""


class Estimates(dict[int, "int | float | None"]):
    """A tracker's estimates by point number, and the quantity they declare they are (None: tokens)."""

    quantity: Quantity | None = None


def read_estimates(path: Path, observations: list[Observation]) -> Estimates:
    """A tracker's estimates from ``path``: JSON lines ``{"point": LABEL or NUMBER, "estimate": TOKENS or null}``
    (a point given twice: the last line wins), by point number; a line ``{"quantity": QUANTITY}`` declares what the
    estimates are (``percent_of_window``, ``percent_until_autocompact``, ``tokens_left``; tokens when none is
    declared), and a gauge's estimate is then the number it shows. Raises :class:`EstimatesError` with the file and
    line of what cannot be read."""
    by_label = {o.label: o.index for o in observations}
    numbers = set(by_label.values())
    out = Estimates()
    shown: list[tuple[int, object]] = []  # (line, estimate) of each estimate that is not a token count
    try:
        if not path.is_file():  # a FIFO would block, a device never end
            raise EstimatesError(f"ctxsim: serve --judge: {path} is not a regular file")
        if path.stat().st_size > ESTIMATES_LIMIT:
            raise EstimatesError(f"ctxsim: serve --judge: {path} is over {ESTIMATES_LIMIT} bytes: not estimates")
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise EstimatesError(f"ctxsim: serve --judge: cannot read {path}: {exc.strerror or exc}") from None
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"ctxsim: serve --judge: {path}:{number}"
        try:
            row = json.loads(line)
        except ValueError:
            raise EstimatesError(f"{where}: not a JSON line ({line[:80]!r})") from None
        if isinstance(row, dict) and set(row) == {"quantity"}:
            if row["quantity"] not in QUANTITIES:
                raise EstimatesError(f"{where}: key 'quantity': {row['quantity']!r} is none of "
                                     f"{', '.join(QUANTITIES)}")
            out.quantity = row["quantity"]
            continue
        if not isinstance(row, dict) or "point" not in row or "estimate" not in row:
            raise EstimatesError(f"{where}: expected {{\"point\": LABEL or NUMBER, \"estimate\": TOKENS or null}}")
        point, estimate = row["point"], row["estimate"]
        index = by_label.get(point) if isinstance(point, str) else point if point in numbers else None
        if index is None or isinstance(point, bool):
            raise EstimatesError(f"{where}: key 'point': {point!r} is no observation point of the scenario "
                                 f"(known: {', '.join(by_label)})")
        if estimate is not None and (type(estimate) is not int or estimate < 0):
            if type(estimate) not in (int, float) or not math.isfinite(estimate):
                raise EstimatesError(f"{where}: key 'estimate': {estimate!r} is not a number or null")
            shown.append((number, estimate))
        out[index] = estimate
    if out.quantity in (None, "tokens") and shown:
        number, estimate = shown[0]
        raise EstimatesError(f"ctxsim: serve --judge: {path}:{number}: key 'estimate': {estimate!r} is not a token "
                             f"count or null (a gauge's number needs a line {{\"quantity\": QUANTITY}})")
    return out
