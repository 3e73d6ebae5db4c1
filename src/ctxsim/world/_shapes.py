"""Session shapes from drawn bytes: what :mod:`ctxsim.strategies` reads a main call or a subagent from.

Hypothesis's cost is per draw, so a call is one draw of a few bytes rather than a tuple of drawn fields; bytes
shrink field by field towards zero, and zero reads as the simplest shape (a text-only call of one output token).
Every length of bytes reads: past the end each byte is zero.
"""

from __future__ import annotations

__all__ = ["CALL_BYTES", "SUBAGENT_BYTES", "SUBAGENT_TASKS", "Bytes", "main_call", "subagent"]

SUBAGENT_TASKS = ("explore the code", "find where the config is parsed", "run the slow tests",
                  "review the diff for bugs", "search the docs for the retry policy")


class Bytes:
    """Reads fields from drawn bytes; past the end every byte reads as zero (the simplest value)."""

    __slots__ = ("at", "data")

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, size: int) -> int:
        at = self.at
        self.at = at + size
        return int.from_bytes(self.data[at:at + size], "big") << 8 * max(0, at + size - len(self.data))


def _scaled(value: int, bits: int, low: int, high: int) -> int:
    """``value`` (``bits`` wide) mapped onto ``low..high``, 0 to ``low``."""
    return low + value * (high - low) // ((1 << bits) - 1)


def _result_tokens(value: int) -> int:
    """Two bytes as a tool result's tokens: half of the range 1..3,000, half 3,000..30,000."""
    if value < 0x8000:
        return _scaled(value, 15, 1, 3_000)
    return _scaled(value - 0x8000, 15, 3_000, 30_000)


CALL_BYTES = 9
"""A main call as one draw of bytes: flags (thinking, how many tool results), three results' tokens, the output."""


def main_call(raw: bytes) -> tuple[bool, list[int], int]:
    """A main call from its bytes: thinking block or not, the tokens of each tool result, the final output.

    One draw of a few bytes instead of a tuple of drawn fields: Hypothesis's cost is per draw, and bytes shrink
    field by field towards zero, which reads as a text-only call of one output token."""
    b = Bytes(raw)
    flags = b.take(1)
    results = [_result_tokens(b.take(2)) for _ in range(3)][:(flags >> 1) & 3]
    return bool(flags & 1), results, _scaled(b.take(2), 16, 1, 4_000)


SUBAGENT_BYTES = 5 + 3 * 7
"""A subagent as one draw of bytes: its task and how many calls, its prompt, its answer, three calls."""


def subagent(raw: bytes) -> tuple[str, int, list[tuple[bool, list[int], int]], int]:
    """A subagent from one draw of bytes: its task, its prompt tokens, its one to three calls (thinking or not, up
    to two tool results of 1..5,000 tokens, output 1..2,000), the tokens of its answer."""
    b = Bytes(raw)
    head = b.take(1)
    task = SUBAGENT_TASKS[(head & 7) % len(SUBAGENT_TASKS)]
    prompt_tokens, answer = _scaled(b.take(2), 16, 50, 2_000), _scaled(b.take(2), 16, 50, 3_000)
    calls = []
    for _ in range(1 + (head >> 3) % 3):
        flags = b.take(1)
        results = [_scaled(b.take(2), 16, 1, 5_000) for _ in range(2)][:(flags >> 1) % 3]
        calls.append((bool(flags & 1), results, _scaled(b.take(2), 16, 1, 2_000)))
    return task, prompt_tokens, calls, answer
