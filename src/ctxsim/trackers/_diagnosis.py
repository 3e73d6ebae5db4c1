"""What a failing tracker's report adds to help find the cause: the traceback through the tracker's own code, and
a hint when its estimates look like ratios rather than tokens."""

from __future__ import annotations

import math
import numbers
import os
import traceback
from typing import Any

import claude_agent_sdk

from ..processes import described

_HIDDEN = (os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
           os.path.dirname(os.path.abspath(claude_agent_sdk.__file__)) + os.sep)
"""ctxsim's and the SDK's source trees: their frames are left out of a tracker's traceback."""


def is_token_count(value: Any) -> bool:
    """A number of tokens: any finite real number but a bool (not NaN, infinity, a string or None)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def user_traceback(exc: BaseException) -> str | None:
    """The traceback of ``exc`` (as Python prints one) through the tracker's own code: every frame but ctxsim's
    and the SDK's; None when no frame is left."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not os.path.abspath(f.filename).startswith(_HIDDEN)]
    if not frames:
        return None
    lines = ["Traceback (most recent call last; ctxsim's and the SDK's frames left out):\n",
             *traceback.format_list(frames), described(exc)]
    return "".join(lines).rstrip("\n")


def looks_like_ratio(estimate: object) -> bool:
    """A float in [0, 1]: a share of the window, most likely, where tokens were expected."""
    return isinstance(estimate, float) and 0 <= estimate <= 1


def ratio_hint(tracker: str, estimate: object, where: str, truth: int, window: int) -> str:
    """The hint for a tracker whose ``context_tokens()`` gave ``estimate`` (a ratio) at ``where``."""
    return (f"hint: {tracker} returned {estimate!r} from context_tokens() at {where}, where the truth is {truth:,} "
            f"tokens: a ratio? context_tokens() must return tokens; run a tracker that returns a share of the window "
            f"as FromRatio(tracker, window={window}, method='context_tokens') (ctxsim.check.FromRatio; method: the "
            f"tracker's method that returns the ratio)")
