"""What the strategies share: count knobs (a value or a strategy) and the defaults they draw from."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument
from hypothesis.strategies import SearchStrategy

__all__ = ["IntKnob"]

IntKnob = int | SearchStrategy[int]
"""A count: a value, or a strategy that draws one."""

_UP_TO_1, _UP_TO_2, _UP_TO_3 = st.integers(0, 1), st.integers(0, 2), st.integers(0, 3)
_QUERIES = st.integers(1, 3)
_SEEDS = st.integers(0, 2**16 - 1)
_BOOLEANS = st.booleans()


def _knob(where: str, name: str, value: Any, *, minimum: int = 0) -> SearchStrategy[Any]:
    """``value`` as a strategy: a strategy as given, a valid plain value as ``st.just``."""
    if isinstance(value, SearchStrategy):
        return value
    if type(value) is not int or value < minimum:
        raise InvalidArgument(f"ctxsim: {where}({name}={value!r}): expected an integer >= {minimum} or a strategy")
    return st.just(value)


def _checked(where: str, name: str, value: Any, minimum: int) -> int:
    if type(value) is not int or value < minimum:
        raise InvalidArgument(f"ctxsim: {where}({name}=...) drew {value!r}; expected an integer >= {minimum}")
    return value
