"""The terminal is not writable by input: no control or bidirectional character from a scenario's name or text, or
from a command's stderr, reaches the output raw (a property test over names, texts and outputs, and the doors end
to end: ``ctxsim run``'s lines, a command tracker's error, ``serve``'s export block)."""

from __future__ import annotations

import json
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from _tally import Tally
from hypothesis import given, settings, strategies as st

from ctxsim.processes import printable, unprintable
from ctxsim.scenario import load_scenario

HOSTILE = ["\x1b[31m", "\x1b]0;title\x07", "\r", "\n", "\x00", "\x7f", "\x85", "\u202e", "\u2066", "\u200f",
           "\u2028", "\u2029", "\ufeff", "\x9b"]
"""Characters and sequences a terminal acts on."""

texts = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=8)), max_size=8).map("".join)


def _raw(output: str) -> list[str]:
    """The characters of ``output`` a terminal would act on (its own line ends aside)."""
    return sorted({repr(c) for c in output.replace("\n", "") if unprintable(c)})


@given(texts)
@settings(max_examples=300, deadline=None)
def test_printable_leaves_nothing_a_terminal_acts_on_and_keeps_the_rest(text: str) -> None:
    shown = printable(text)
    assert not any(unprintable(c) for c in shown)
    assert (shown == text) == (not any(unprintable(c) for c in text))
    assert all(c in shown for c in text if not unprintable(c) and unicodedata.category(c) != "Cs")


@given(texts)
@settings(max_examples=150, deadline=None)
def test_a_scenario_name_is_printable_or_refused_in_a_printable_line(tmp_path_factory: pytest.TempPathFactory,
                                                                     name: str) -> None:
    path = tmp_path_factory.mktemp("names") / "s.yaml"
    path.write_text(f"name: {json.dumps(name)}\nqueries:\n  - prompt: {json.dumps(name)}\n    steps:\n"
                    f"      - call: {{in: 3, cc: 100, cr: 1000, out: 10}}\n", encoding="utf-8")
    try:
        scenario = load_scenario(path)
    except Exception as exc:  # a ctxsim error: one line, nothing a terminal acts on
        message = str(exc)
        assert message.startswith("ctxsim: ") and "\n" not in message and not _raw(message), message
        return
    assert not any(unprintable(c) for c in scenario.name)


@pytest.mark.parametrize("name", ["evil\nctxsim: FAKE all good", "\x1b[2J\x1b[31mred", "gnp.\u202eexe",
                                  "a\rctxsim: FAKE"])
def test_a_hostile_scenario_name_is_refused_in_one_printable_line(hostile: Tally, tmp_path: Path, name: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(f"name: {json.dumps(name)}\nqueries:\n  - prompt: hi\n    steps:\n"
                    f"      - call: {{in: 3, cc: 100, cr: 1000, out: 10}}\n")
    for argv in (["run", str(path)], ["serve", str(path), "--timeout", "1"]):
        done = subprocess.run([sys.executable, "-m", "ctxsim.cli", *argv], capture_output=True, text=True,
                              timeout=120)
        output = done.stdout + done.stderr
        case = f"a scenario named {name!r} ({argv[0]})"
        hostile.line(case, output, "ctxsim: *s.yaml:1: name: a scenario's name is one line of printable text*")
        assert not _raw(output), _raw(output)
        assert not any(line.startswith(("ctxsim: FAKE", "export EVIL")) for line in output.splitlines()), output


def test_a_command_s_stderr_escapes_are_not_echoed_raw(hostile: Tally, tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nqueries:\n  - prompt: hi\n    steps:\n"
                    "      - call: {in: 3, cc: 100, cr: 1000, out: 10}\n")
    command = "cmd:printf '\\033[2J\\033[31mred\\033]0;title\\007 \\342\\200\\256gnp.exe\\r\\n' >&2; echo nonsense"
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", "run", str(path), "--tracker", command],
                          capture_output=True, text=True, timeout=120)
    output = done.stdout + done.stderr
    hostile.case("a command's stderr with escapes")
    assert "stderr ends:" in output and "\\x1b" in output, output
    assert not _raw(output), _raw(output)


FORGED = "\x1b[2J\x1b[31m\nctxsim: FAKE all good\u202e"
"""Escapes that clear and colour the screen, a newline forging a line of ctxsim's own, a right-to-left override."""

GOOD = "name: s\nqueries:\n  - prompt: hi\n    steps:\n      - call: {in: 3, cc: 100, cr: 1000, out: 10}\n"


def _ctxsim(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run([sys.executable, "-m", "ctxsim.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=None if env is None else {**__import__("os").environ, **env})
    return done.stdout + done.stderr


def _unforged(case: str, output: str) -> None:
    assert not _raw(output), f"{case}: {_raw(output)}"
    assert not any(line.startswith("ctxsim: FAKE") for line in output.splitlines()), output


def test_a_hostile_scenario_file_name_is_printed_escaped(hostile: Tally, tmp_path: Path) -> None:
    name = f"s{FORGED}.yaml".replace("/", "")
    (tmp_path / name).write_text(GOOD)
    output = _ctxsim("run", name, cwd=tmp_path)
    hostile.case("a scenario file named with escapes (run)")
    _unforged("a scenario file named with escapes", output)
    assert "scenario s (s\\x1b[2J\\x1b[31m\\nctxsim: FAKE all good\\u202e.yaml)" in output, output


@pytest.mark.parametrize("argv", [
    ["run", f"missing{FORGED}.yaml"],
    ["run", "{good}", "--tracker", f"mod{FORGED}:Factory"],
    ["judge", f"x{FORGED}:Factory", "{good}"],
    ["import", f"missing{FORGED}.jsonl", "-o", "out.yaml"],
    ["fuzz", "--tracker", f"mod{FORGED}:Factory", "--examples", "1"],
], ids=["run a missing file", "run --tracker", "judge SPEC", "import a missing file", "fuzz --tracker"])
def test_a_hostile_path_or_spec_in_an_error_is_one_printable_line(hostile: Tally, tmp_path: Path,
                                                                  argv: list[str]) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    argv = [a.replace("{good}", "good.yaml") for a in argv]
    output = _ctxsim(*argv, cwd=tmp_path)
    case = f"ctxsim {argv[0]} quoting {argv[1][:12]!r}..."
    hostile.line(case, output, "ctxsim: *\\x1b[2J\\x1b[31m\\nctxsim: FAKE all good\\u202e*")
    _unforged(case, output)


CRASHING = f'''
class Crashing:
    """A tracker whose error message would clear the screen and forge a line."""

    def observe(self, message):
        raise ValueError({FORGED!r})

    def context_tokens(self):
        return 1
'''


@pytest.mark.slow
@pytest.mark.parametrize("door", ["run", "judge"])
def test_a_tracker_s_error_message_is_quoted_escaped(hostile: Tally, tmp_path: Path, door: str) -> None:
    (tmp_path / "crashing.py").write_text(CRASHING)
    (tmp_path / "good.yaml").write_text(GOOD)
    argv = ["run", "good.yaml", "--tracker", "crashing:Crashing"] if door == "run" else [
        "judge", "crashing:Crashing", "good.yaml"]
    output = _ctxsim(*argv, cwd=tmp_path, env={"PYTHONPATH": str(tmp_path)})
    hostile.case(f"a tracker raising escapes ({door})")
    _unforged(f"a tracker raising escapes ({door})", output)
    assert "raised ValueError: \\x1b[2J\\x1b[31m\\nctxsim: FAKE all good\\u202e" in output, output


def test_a_hostile_mapping_key_is_shown_escaped(hostile: Tally, tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(f"name: s\n{json.dumps('key' + FORGED)}: 1\n")
    output = _ctxsim("run", "s.yaml", cwd=tmp_path)
    hostile.line("a mapping key with escapes", output, "ctxsim: s.yaml:2: <*>: unknown key*")
    _unforged("a mapping key with escapes", output)


@pytest.mark.slow
def test_a_hostile_scenario_file_name_under_pytest_is_escaped_in_ctxsim_s_lines(hostile: Tally,
                                                                               tmp_path: Path) -> None:
    """The load item's header and ctxsim's error escape the name; pytest's own node ids (its summary) are
    pytest's."""
    (tmp_path / "bad\x1b[31m.yaml").write_text("name: s\nqueries: 5\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
                           "--ctx-scenarios=.", "-c", __import__("os").devnull, "--rootdir=."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    ours = "\n".join(line for line in done.stdout.splitlines()
                     if not line.startswith(("FAILED ", "ERROR ")) and ("ctxsim:" in line or "malformed" in line))
    hostile.case("a scenario file named with escapes (pytest)")
    assert "ctxsim: bad\\x1b[31m.yaml:2: queries: expected a list, got 5" in ours, done.stdout[-3000:]
    assert "malformed scenario bad\\x1b[31m.yaml" in ours, done.stdout[-3000:]
    assert not _raw(ours), _raw(ours)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["cmd", "stream"])
def test_a_command_s_stdout_escapes_are_quoted_escaped(hostile: Tally, tmp_path: Path, kind: str) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    command = f"{kind}:printf '\\033[2J\\342\\200\\256nonsense\\nctxsim: FAKE all good\\033[31m\\n'"
    output = _ctxsim("run", "good.yaml", "--tracker", command, cwd=tmp_path)
    case = f"a {kind}: command's stdout with escapes"
    hostile.case(case)
    _unforged(case, output)
    assert "nonsense" in output and "\\x1b[2J" in output, output
