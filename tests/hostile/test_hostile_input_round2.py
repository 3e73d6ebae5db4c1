"""Valid input read right (round two): JSON lines split on ``\\n`` alone (U+2028, U+2029, U+0085 and the other
characters ``str.splitlines`` breaks on are text inside a JSON string), a leading byte-order mark skipped; a
command's output read as the terminal shows it (a carriage return overwrites); YAML integers with leading zeros
read as decimal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _tally import Tally

from ctxsim.recordings import read_jsonl
from ctxsim.scenario import load_scenario
from ctxsim.trackers._readout import read_output

SEPARATORS = ["\u2028", "\u2029", "\u0085", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]


@pytest.mark.parametrize("separator", SEPARATORS, ids=[f"U+{ord(c):04X}" for c in SEPARATORS])
def test_a_line_separator_inside_a_json_string_is_text(hostile: Tally, tmp_path: Path, separator: str) -> None:
    text = f"a{separator}b"
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"n": 1, "text": text}, ensure_ascii=False) + "\n" + json.dumps({"n": 2}) + "\n",
                    encoding="utf-8")
    hostile.case(f"U+{ord(separator):04X} inside a string")
    assert read_jsonl(path) == [(1, {"n": 1, "text": text}), (2, {"n": 2})]


def test_a_leading_byte_order_mark_is_skipped(hostile: Tally, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"n": 1}\r\n{"n": 2}\r\n')
    hostile.case("a leading BOM, CRLF line ends")
    assert read_jsonl(path) == [(1, {"n": 1}), (2, {"n": 2})]


@pytest.mark.parametrize("printed,shown", [
    ("999\r150003", 150003),        # the terminal shows 150003, not 999,150,003
    ("150003\r999", 999003),        # the terminal shows 999003
    ("123\r\n", 123),
    ("\x1b[2K\r42000\n", 42000),
])
def test_command_output_is_read_as_the_terminal_shows_it(hostile: Tally, printed: str, shown: int) -> None:
    hostile.case(f"{printed!r} from a command")
    assert read_output(printed, None, 200_000) == shown


@pytest.mark.parametrize("written,value", [("0100", 100), ("0109", 109), ("00", 0), ("007", 7), ("1_000", 1000)])
def test_yaml_integers_with_leading_zeros_are_decimal(hostile: Tally, tmp_path: Path, written: str,
                                                     value: int) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nqueries:\n  - prompt: hi\n    steps:\n      - call: {{in: 3, cc: {written}, "
                    f"cr: {written}, out: 10}}\n")
    call = load_scenario(path).session.calls[0]
    hostile.case(f"cc: {written}")
    assert (call.cache_creation_input_tokens, call.cache_read_input_tokens) == (value, value)
