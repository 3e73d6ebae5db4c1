"""Reading a statusline command's output as a context estimate: a bare integer, a preset for a known tool, or a regex.

A statusline prints one or more lines for a terminal. :func:`read_output` strips the terminal's escape sequences and
reads what is left:

- blank output, or a ``TBD`` (cc-statusline before any call), is "no estimate" (None), and so is what a preset
  knows its tool prints when it has none (ccusage's ``🧠 N/A``, ccline's ``- · - tokens``), and a last line
  whose value is one of the usual renderings of "unknown" (:data:`UNKNOWN`: ``ctx --``, ``-``, ``?``, ``N/A``,
  ``…``; :func:`says_unknown`, which a command's ``unknown=REGEX`` option replaces);
- by default the last non-blank line must be a bare integer: tokens;
- a :class:`Readout` (one of :data:`PRESETS` for the tools people use, or made from a user's regex) finds its
  pattern in the output and reads its named group: ``tokens`` (``140,706``, ``140.8k``, ``1.2M``), ``percent`` (the
  share of the window used) or ``remaining`` (the share left). A figure shown to a precision is a band: ``140.8k``
  is 140,750..140,850 tokens, and a percentage becomes tokens through the window (70% of 200,000, rounded to a
  whole percent, is 139,000..141,000).

Anything else (no match, a line that is not a number) is :class:`UnreadableOutput`: the command printed nonsense.
Numbers are read from ASCII digits only (Arabic-Indic or full-width digits are not numbers), at most
:data:`MAX_DIGITS` of them; what an error quotes of the output is cut to a few hundred characters.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal

from ._base import Estimate

__all__ = ["MAX_DIGITS", "PRESETS", "UNKNOWN", "Readout", "UnreadableOutput", "clean_output", "cut", "read_output",
           "says_unknown"]

MAX_DIGITS = 15
"""The most digits a number in a command's output may have (a window of a million tokens has seven)."""
_SHOWN = 200
"""The most characters of the output an error quotes."""

_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
"""CSI sequences (colours, cursor moves), OSC sequences (hyperlinks, titles) and the other two-byte escapes."""
_NO_ESTIMATE = re.compile(r"\bTBD\b")
UNKNOWN = r"(?:^|[\s:=(\[])(?:-{1,3}|—|\?{1,3}|[Nn]/?[Aa]|…|\.{3}|unknown)[)\]]?%?$"
"""The last line of a statusline that says it has no estimate: its value (after a label, a ``:`` or ``=``) is
``--``, ``-``, ``—``, ``?``, ``N/A``, ``na``, ``…``, ``...`` or ``unknown`` (``ctx --``, ``Context: N/A``, ``?``)."""
_GROUPS = ("tokens", "percent", "remaining")
_UNITS = {"": 1, "k": 1_000, "K": 1_000, "m": 1_000_000, "M": 1_000_000}
_NUMBER = re.compile(r"([0-9][0-9,]*(?:\.[0-9]+)?)\s*([kKmM]?)")
"""A figure: ASCII digits (``\\d`` would take any script's), thousands separators, a fraction, a unit."""


class UnreadableOutput(ValueError):
    """The output holds no estimate in the form expected: the message says what was expected."""


def cut(text: str, limit: int = _SHOWN) -> str:
    """``text`` as an error quotes it: its first ``limit`` characters, and how many more there were."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text) - limit:,} more characters)"


def _figure(text: str, what: str) -> re.Match[str]:
    """``text`` as a figure (:data:`_NUMBER`) of at most :data:`MAX_DIGITS` digits, else :class:`UnreadableOutput`."""
    match = _NUMBER.fullmatch(text.strip())
    if match is None:
        raise UnreadableOutput(f"{cut(text)!r} is not {what}")
    digits = sum(c.isdigit() for c in match.group(1))
    if digits > MAX_DIGITS:
        raise UnreadableOutput(f"a number of {digits:,} digits is not {what} (at most {MAX_DIGITS} digits)")
    return match


def _as_shown(line: str) -> str:
    """One line as a terminal shows it: each carriage return moves back to its start, and what follows overwrites
    (``999\\r150003`` shows ``150003``, ``150003\\r999`` shows ``999003``)."""
    shown = ""
    for part in line.split("\r"):
        shown = part + shown[len(part):]
    return shown


def clean_output(text: str) -> str:
    """``text`` as a reader sees it on a terminal: escape sequences removed, carriage returns overwriting,
    non-breaking spaces made spaces, trailing blanks of each line dropped."""
    text = _ESCAPES.sub("", text).replace("\xa0", " ")
    return "\n".join(_as_shown(line).rstrip() for line in text.split("\n")).strip("\n")


@dataclass(frozen=True)
class Readout:
    """How to find the estimate in a tool's output: a regex with a named group ``tokens``, ``percent`` or
    ``remaining``."""

    pattern: str
    """Searched in the cleaned output (:func:`clean_output`); the last match counts."""
    group: Literal["tokens", "percent", "remaining", ""] = ""
    """Which group to read when the pattern has several (default: the one it has, ``tokens`` first)."""
    percent_spread: tuple[float, float] | None = None
    """The true share, in percentage points around the shown one: ``(-0.5, 0.5)`` for a percentage rounded to a whole
    one (``Math.round``), ``(0, 1)`` for one floored; default: half a unit of the last digit shown. For ``remaining``,
    the spread of the share *used* the tool derived it from."""
    blank: str = ""
    """When the tool prints nothing (or no match) where it means "no estimate", why: output without a match is then
    None, not nonsense."""
    unknown: str = ""
    """A pattern whose match in the cleaned output is the tool saying it has no estimate (ccusage's ``🧠 N/A``):
    None, not nonsense. Empty: none."""
    home_files: dict[str, str] = field(default_factory=dict)
    """Files the tool needs in its ``HOME`` to show the figure (settings), by path relative to ``HOME``."""
    name: str = ""
    """The preset's name (empty for a user's regex)."""

    def __post_init__(self) -> None:
        try:
            compiled = re.compile(self.pattern)
        except re.error as exc:
            raise ValueError(f"ctxsim: the output regex {self.pattern!r} does not compile: {exc}") from None
        if not any(g in compiled.groupindex for g in _GROUPS):
            raise ValueError(f"ctxsim: the output regex {self.pattern!r} has no named group tokens, percent or "
                             f"remaining: write one, e.g. (?P<tokens>[0-9,]+) tokens or (?P<percent>[0-9.]+)%")
        if self.group and self.group not in compiled.groupindex:
            raise ValueError(f"ctxsim: the output regex {self.pattern!r} has no group {self.group!r}")
        try:
            re.compile(self.unknown)
        except re.error as exc:
            raise ValueError(f"ctxsim: the no-estimate regex {self.unknown!r} does not compile: {exc}") from None

    @property
    def reads(self) -> str:
        """The group read: :attr:`group`, else the first of ``tokens``, ``percent``, ``remaining`` it has."""
        names = re.compile(self.pattern).groupindex
        return self.group or next(g for g in _GROUPS if g in names)


def _token_band(text: str) -> Estimate:
    """``140,706`` -> 140706; ``140.8k`` -> (140750, 140850); ``2.944k`` -> 2944."""
    digits, unit = _figure(text, "a number of tokens").groups()
    number = Decimal(digits.replace(",", ""))
    scale = _UNITS[unit]
    value = number * scale
    exponent = number.as_tuple().exponent
    half = Decimal(10) ** (exponent if isinstance(exponent, int) else 0) * scale / 2
    if half <= Decimal("0.5"):
        return int(value.to_integral_value())
    return max(0, math.ceil(value - half)), math.floor(value + half)


def _percent_band(text: str, spread: tuple[float, float] | None, window: int, remaining: bool) -> Estimate:
    match = _figure(text, "a percentage")
    if match.group(2):
        raise UnreadableOutput(f"{cut(text)!r} is not a percentage")
    shown = Decimal(match.group(1).replace(",", ""))
    if spread is None:
        exponent = shown.as_tuple().exponent
        half = float(Decimal(10) ** (exponent if isinstance(exponent, int) else 0) / 2)
        spread = (-half, half)
    used = 100 - float(shown) if remaining else float(shown)
    low = max(0.0, used + spread[0]) * window / 100
    high = max(0.0, used + spread[1]) * window / 100
    return math.ceil(low - 1e-9), math.floor(high + 1e-9)


def says_unknown(text: str, unknown: str | None = None) -> bool:
    """Whether the cleaned output ``text`` says it has no estimate: its last non-blank line matches ``unknown`` (a
    regex; default :data:`UNKNOWN`; empty: nothing does)."""
    pattern = UNKNOWN if unknown is None else unknown
    lines = text.strip().splitlines()
    return bool(pattern and lines) and re.search(pattern, lines[-1].strip()) is not None


def read_output(stdout: str, readout: Readout | None, window: int, unknown: str | None = None) -> Estimate:
    """The estimate in ``stdout`` as ``readout`` reads it (None: the last line as a bare integer); ``window`` turns a
    percentage into tokens; ``unknown`` is what output saying "no estimate" looks like (:func:`says_unknown`).
    Raises :class:`UnreadableOutput` when the output holds no estimate in that form."""
    text = clean_output(stdout)
    if not text.strip() or ("TBD" in text and _NO_ESTIMATE.search(text)):
        return None
    if readout is None:
        last = text.strip().splitlines()[-1].strip()
        if not re.fullmatch(r"[0-9]+", last) and says_unknown(text, unknown):
            return None
        if not re.fullmatch(r"[0-9]+", last):
            raise UnreadableOutput(f"the last line {cut(last)!r} is not a bare integer (a number of tokens)")
        if len(last) > MAX_DIGITS:
            raise UnreadableOutput(f"the last line is a number of {len(last):,} digits, not a number of tokens (at "
                                   f"most {MAX_DIGITS} digits)")
        return int(last)
    matches = list(re.finditer(readout.pattern, text))
    if not matches and readout.unknown and re.search(readout.unknown, text):
        return None
    if not matches:
        if readout.blank or (not readout.name and says_unknown(text, unknown)):  # a preset knows its tool's
            return None
        raise UnreadableOutput(f"no match for {cut(readout.pattern)!r}")
    group = readout.reads
    value = matches[-1].group(group)
    if value is None:
        raise UnreadableOutput(f"{readout.pattern!r} matched without its group {group!r}")
    if group == "tokens":
        return _token_band(value)
    return _percent_band(value, readout.percent_spread, window, remaining=group == "remaining")


_CCSTATUSLINE_SETTINGS = (
    '{"version":4,"colorLevel":0,"defaultPadding":"","lines":[['
    '{"id":"1","type":"custom-text","customText":"len="},'
    '{"id":"2","type":"context-length","rawValue":true,"numberFormat":{"decimals":3}},'
    '{"id":"3","type":"custom-text","customText":" pct="},'
    '{"id":"4","type":"context-percentage","rawValue":true}]]}\n')
_CCSTATUSLINE_PY_SETTINGS = ('color_level = "none"\nminimalist_mode = false\n'
                             'lines = [\n    { widgets = [{ type = "context_pct" }, { type = "tokens_used" }] },\n]\n')

# Each pattern that starts with a run of digits may start only where the run does (a lookbehind): a search never
# retries from inside a long run, so it is linear in the output, not quadratic (65,000 digits: a millisecond).
PRESETS: dict[str, Readout] = {r.name: r for r in (
    # ccstatusline 2.x: its context-length widget, raw, to three decimals of k (exact), after a custom "len=".
    Readout(r"len=(?P<tokens>[\d.,]+[kM]?)", name="ccstatusline",
            home_files={".config/ccstatusline/settings.json": _CCSTATUSLINE_SETTINGS}),
    # ccusage statusline (17.x, 20.x): "🧠 140,706 (70%)". The gauge is the percentage: where ccusage 20 divides by
    # 1,000,000 the tokens are right and the percentage is not, so the percentage (Math.round) is read.
    # "🧠 N/A" where it has no figure: no context_window and no assistant line with usage in the transcript
    # (17.2.1 dist/index.js:6189-6202; 20.0.24 prints the same).
    Readout(r"(?<![\d,])(?P<tokens>[\d,]+) \((?P<percent>\d+)%\)", group="percent", percent_spread=(-0.5, 0.5),
            unknown=r"🧠 N/A", name="ccusage"),
    # ccline 1.x: "⚡️ 70.4% · 140.8k tokens" (its tokens include the output); "- · - tokens" where the transcript
    # has no assistant line with usage (1.1.2 right after /clear; upstream context_window.rs: None => ("-", "-")).
    Readout(r"(?<![\d.,])(?P<tokens>[\d.,]+[kM]?) tokens", unknown=r"(?:^|\s)- · - tokens", name="ccline"),
    # cc-statusline's generated script: "Context Remaining: 30%" = 100 - floor(tokens * 100 / window); TBD before.
    Readout(r"Context Remaining: (?P<remaining>\d+)%", percent_spread=(0.0, 1.0), name="cc-statusline"),
    # ccstatusline-py: "70.0%" = Claude Code's used_percentage (a whole percent), printed only when non-zero.
    Readout(r"(?<![\d.])(?P<percent>\d+(?:\.\d+)?)%", percent_spread=(-0.5, 0.5), name="ccstatusline-py",
            blank="it prints nothing when Claude Code's used_percentage is 0 or absent",
            home_files={".config/ccstatusline-py/settings.toml": _CCSTATUSLINE_PY_SETTINGS}),
)}
"""Readouts of the statusline tools ctxsim runs (:data:`ctxsim.tools.TOOLS`), by name: ``cmd[preset=NAME]:...``."""
