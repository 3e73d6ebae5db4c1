"""Valid input read right (round two): JSON lines split on ``\\n`` alone (U+2028, U+2029, U+0085 and the other
characters ``str.splitlines`` breaks on are text inside a JSON string), a leading byte-order mark skipped; a
command's output read as the terminal shows it (a carriage return overwrites); YAML integers with leading zeros
read as decimal."""

from __future__ import annotations

import json
import re
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


@pytest.mark.parametrize("written", ["0x10", "0b101", "1:30", "0o17", "1:30:00"])
def test_yaml_integers_in_another_base_are_not_read_as_numbers(hostile: Tally, tmp_path: Path, written: str) -> None:
    """YAML 1.1 reads ``1:30`` as 90 (base 60), ``0x10`` as 16, ``0b101`` as 5: a count written so is refused
    in one line quoting what was written, never read as another number."""
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nqueries:\n  - prompt: hi\n    steps:\n      - call: {{in: 3, cc: {written}, cr: 1000, "
                    f"out: 10}}\n")
    with pytest.raises(Exception) as refused:
        load_scenario(path)
    hostile.line(f"cc: {written}", str(refused.value), f"ctxsim: *s.yaml:5: queries[0].steps[0].call.cc: expected a "
                                                       f"non-negative integer, got '{written}'")


@pytest.mark.parametrize("written", ["1:30", "0x10", "0100"])
def test_a_name_or_prompt_that_yaml_1_1_reads_as_a_number_is_the_text_written(hostile: Tally, tmp_path: Path,
                                                                             written: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: {written}\nqueries:\n  - prompt: {written}\n    steps:\n      - call: {{in: 3, cc: 1, "
                    f"cr: 1000, out: 10}}\n")
    hostile.case(f"name: {written}")
    try:
        scenario = load_scenario(path)
    except Exception as exc:  # a name must be text: a number is refused in one line, never renamed
        assert str(exc).startswith("ctxsim: ") and "\n" not in str(exc), exc
        assert written == "0100", exc  # only a decimal number is a number
        return
    assert scenario.name == written


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"], ids=["U+2028", "U+2029", "U+0085"])
def test_an_import_of_a_transcript_with_a_line_separator_in_a_string(hostile: Tally, tmp_path: Path,
                                                                      separator: str) -> None:
    from ctxsim.importer import write_import

    common = {"sessionId": "5d1e9f0a-1111-4222-8333-944455556666", "version": "2.1.39", "userType": "external",
              "cwd": "/tmp/project"}
    rows = [{"type": "user", "uuid": "u-0", "parentUuid": None, "isSidechain": False,
             "timestamp": "2026-02-11T10:00:00Z", "message": {"role": "user", "content": f"a{separator}b"}, **common},
            {"type": "assistant", "uuid": "a-0", "parentUuid": "u-0", "isSidechain": False, "requestId": "req_0",
             "timestamp": "2026-02-11T10:00:01Z", **common,
             "message": {"id": "msg_0", "model": "claude-opus-4-6", "role": "assistant",
                         "content": [{"type": "text", "text": f"c{separator}d"}],
                         "usage": {"input_tokens": 3, "cache_creation_input_tokens": 100,
                                   "cache_read_input_tokens": 1_000, "output_tokens": 10}}}]
    source = tmp_path / "session.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    written = write_import([source], tmp_path / "out" / "x.yaml")
    hostile.case(f"an import with U+{ord(separator):04X} inside a string")
    assert load_scenario(written[0]).name == "x" and len(written) == 2  # the scenario and its scrubbed stream
    assert re.search(r'"cache_read_input_tokens": ?1000\b', written[1].read_text(encoding="utf-8")), written


@pytest.mark.slow
@pytest.mark.parametrize("printed", ["999\\r1103\\n", "\\033[2K\\r1103\\n", "1103\\r\\n"])
def test_a_command_s_carriage_return_is_read_as_the_terminal_shows_it_end_to_end(hostile: Tally, tmp_path: Path,
                                                                                  printed: str) -> None:
    """Through ``ctxsim run``: the command's number is what the terminal shows (1,103, the truth), never 9,991,103."""
    import subprocess
    import sys

    (tmp_path / "s.yaml").write_text("name: s\nqueries:\n  - prompt: hi\n    steps:\n"
                                     "      - call: {in: 3, cc: 100, cr: 1000, out: 10}\n")
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "run", "s.yaml", "--tracker",
                           f"cmd:printf '{printed}'"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    hostile.case(f"a command printing {printed!r} (run)")
    assert done.returncode == 0 and "cmd:printf tracks session 's'" in done.stdout, done.stdout + done.stderr
