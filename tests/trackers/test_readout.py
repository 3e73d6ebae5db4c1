"""Reading a statusline's output: bare integers, the presets on what the tools printed when they were run
(``docs/explanation/shipped-trackers.md``, escape sequences included), regexes, percentages as bands."""

from __future__ import annotations

import pytest

from ctxsim.trackers._readout import PRESETS, Readout, UnreadableOutput, clean_output, read_output

W = 200_000


@pytest.mark.parametrize(("preset", "output", "expected"), [
    # what each tool printed on fixture (a), 140,706 tokens of 200,000
    ("ccstatusline", "\x1b[0mlen=140.706k\xa0pct=70.0%\n", 140_706),
    ("ccstatusline", "len=2.944k pct=1.47%", 2_944),
    ("ccstatusline", "len=0 pct=0.0%", 0),
    ("ccusage", "🤖 Sonnet 4.5 | 💰 $0.10 session / $0.15 today | 🧠 140,706 (70%)", (139_000, 141_000)),
    ("ccusage", "🤖 Sonnet 4.5 | 💰 $0.10 session | 🧠 140,706 (14%)", (27_000, 29_000)),  # ccusage 20, 1M window
    ("ccline", "\x1b[96m🤖\x1b[0m \x1b[96mSonnet 4.5\x1b[0m | \x1b[95m⚡️ 70.4% · 140.8k tokens\x1b[0m",
     (140_750, 140_850)),
    ("ccline", "🤖 Sonnet 4.5 | 📁 proj | ⚡️ 0% · 0 tokens", 0),
    # what ccusage and ccline printed right after /clear (b17's q2 reset): no usage in the new transcript yet
    ("ccusage", "🤖 Sonnet 4.5 | 💰 $0.00 session / $-0.00 today / No active block | 🧠 N/A", None),
    ("ccline", "\x1b[96m🤖\x1b[0m \x1b[96mSonnet 4.5\x1b[0m | \x1b[95m⚡️\x1b[0m \x1b[95m- · - tokens\x1b[0m", None),
    ("cc-statusline", "📁 scratch/proj  🤖 Sonnet 4.5\n🧠 Context Remaining: 30% [===-------]", (140_000, 142_000)),
    ("cc-statusline", "📁 scratch/proj  🤖 Sonnet 4.5\n🧠 Context Remaining: TBD", None),
    ("ccstatusline-py", "\x1b[0m 70.0% \x1b[0m\x1b[0m 140.8k \x1b[0m", (139_000, 141_000)),
    ("ccstatusline-py", "\x1b[0m 140.8k \x1b[0m", None),  # no percentage printed at 0%
    ("ccstatusline-py", "\x1b[0m   \x1b[0m\n", None),
])
def test_the_presets_read_what_the_tools_print(preset: str, output: str, expected: object) -> None:
    assert read_output(output, PRESETS[preset], W) == expected


def test_a_no_estimate_marker_is_read_only_where_the_figure_is_absent() -> None:
    assert read_output("💰 N/A session | 🧠 N/A", PRESETS["ccusage"], W) is None
    assert read_output("💰 N/A session | 🧠 12,000 (6%)", PRESETS["ccusage"], W) == (11_000, 13_000)
    with pytest.raises(UnreadableOutput, match="no match"):
        read_output("💰 N/A session | 🧠 ?", PRESETS["ccusage"], W)
    with pytest.raises(UnreadableOutput, match="no match"):
        read_output("⚡️ -- tokens", PRESETS["ccline"], W)


def test_a_bare_integer_on_the_last_line_is_tokens_and_anything_else_is_nonsense() -> None:
    assert read_output("starting\n12345\n", None, W) == 12_345
    assert read_output("  \n", None, W) is None
    assert read_output("TBD\n", None, W) is None
    for nonsense in ("12,345\n", "12345 tokens\n", "-5\n", "NaN\n"):
        with pytest.raises(UnreadableOutput, match="is not a bare integer"):
            read_output(nonsense, None, W)


def test_a_regex_reads_tokens_percent_or_remaining_and_a_precision_is_a_band() -> None:
    assert read_output("ctx 42.5%", Readout(r"ctx (?P<percent>[\d.]+)%"), W) == (84_900, 85_100)
    assert read_output("left 10%", Readout(r"left (?P<remaining>\d+)%"), W) == (179_000, 181_000)
    assert read_output("used 1.2M", Readout(r"used (?P<tokens>[\d.]+M)"), 1_000_000) == (1_150_000, 1_250_000)
    with pytest.raises(UnreadableOutput, match="no match"):
        read_output("something else", Readout(r"ctx (?P<tokens>\d+)"), W)
    with pytest.raises(ValueError, match="does not compile"):
        Readout("(?P<tokens>")


def test_escape_sequences_and_non_breaking_spaces_are_cleaned() -> None:
    assert clean_output("\x1b]8;;http://x\x07link\x1b]8;;\x07 \x1b[1;31mred\x1b[0m\xa0x  \r\n") == "link red x"
