"""The YAML scenario loader: what a valid file builds, and the file:line:key of every kind of mistake.

Expected numbers are worked out by hand from the YAML text below and the builder's documented rules
(``cr[n+1] = cr[n] + cc[n]``, a 3-token uncached tail, growth = previous output + results + prompt).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ctxsim.scenario import ScenarioError, SessionScenario, load_scenario, parse_scenario
from ctxsim.world import (
    Call,
    Compaction,
    ConversationReset,
    SubagentCompaction,
    SubagentStart,
    Text,
    Thinking,
    ToolResult,
    ToolUse,
)

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

VALID = """\
name: unit
source: "a public report"
description: "what goes wrong"
world: {model: claude-opus-4-1, window: 150_000, baseline: 10000, max_output: 16000, seed: 5}
stream: {partial: true}
queries:
  - prompt: "Run the tests"
    prompt_tokens: 40
    steps:
      - call: {in: 3, cc: 500, cr: 20000, out: 159, blocks: [thinking, text, tool_use], results: [1500],
               id: msg_a, request_id: req_a}
      - call: {}
      - call: {prompt: 30000, out: 40, request_id: false, model: claude-haiku-4-5}
      - repeat: {times: 3, call: {in: 2, cc: 10, cr: 30000, out: 20}}
  - prompt: "Next"
    prompt_tokens: 10
    steps:
      - expire_cache: {keep_prefix: 1000}
      - call: {}
      - compact: {post: 8000, pre: 31000, trigger: manual}
      - subagent:
          description: explore
          prompt_tokens: 300
          out: 70
          calls:
            - {results: [2000]}
            - {in: 1, cc: 0, cr: 100, out: 5}
          result: 500
      - reset:
expect:
  tolerance: 250
  reference: pass
  fail: [mala-overwrite, arbiter-uuid]
  pass: [arbiter-msgid]
"""


def usage(call: Call) -> tuple[int, int, int, int]:
    return (call.input_tokens, call.cache_creation_input_tokens, call.cache_read_input_tokens, call.output_tokens)


def test_valid_file_builds_the_session_it_describes(tmp_path: Path) -> None:
    path = tmp_path / "unit.yaml"
    path.write_text(VALID)
    sc = load_scenario(path)
    s = sc.session
    assert (sc.name, sc.source, sc.description) == ("unit", "a public report", "what goes wrong")
    assert (s.model, s.window, s.baseline, s.max_output_tokens, s.seed, s.name) == (
        "claude-opus-4-1", 150_000, 10_000, 16_000, 5, "unit")
    assert sc.partial is True and sc.tolerance == 250 and sc.expect_reference is True
    assert sc.must_fail == ("mala-overwrite", "arbiter-uuid") and sc.must_pass == ("arbiter-msgid",)
    assert sc.path == path

    q1, q2 = s.queries
    assert q1.prompt == "Run the tests" and q2.prompt == "Next"
    c1, r1, c2, c3, c4, c5, c6 = q1.steps
    assert usage(c1) == (3, 500, 20_000, 159)
    assert [type(b) for b in c1.blocks] == [Thinking, Text, ToolUse]
    assert (c1.message_id, c1.request_id) == ("msg_a", "req_a")
    assert isinstance(r1, ToolResult) and r1.tokens == 1500 and r1.tool_use_id == c1.blocks[2].id
    # {}: 20,503 + 159 out + 1,500 result; reads what call 1 read or wrote (20,500)
    assert usage(c2) == (3, 1659, 20_500, 120) and c2.prompt == 22_162
    assert [type(b) for b in c2.blocks] == [Text] and c2.request_id is not None
    # prompt 30,000 split after the 22,159 cached by call 2
    assert usage(c3) == (3, 7838, 22_159, 40)
    assert c3.request_id is None and c3.model == "claude-haiku-4-5" and c2.model == "claude-opus-4-1"
    assert [usage(c) for c in (c4, c5, c6)] == [(2, 10, 30_000, 20)] * 3

    derived, compaction, start, sub_start, sub1, sub_r1, sub2, answer, reset = q2.steps
    # 30,012 + 20 out + 10 prompt tokens, after an expiry that keeps 1,000 readable
    assert usage(derived) == (3, 29_039, 1000, 120)
    # the boundary reports the 8,000-token summary; the context then holds the 10,000-token baseline too
    # and, after /compact, the command's own 227 tokens
    assert isinstance(compaction, Compaction) and compaction.summary is not None
    assert (compaction.pre_tokens, compaction.post_tokens, compaction.trigger, compaction.context_tokens) == (
        31_000, 8000, "manual", 10_000 + 8000 + 227)
    # the summary request: the 31,000 before and 2,154 of instructions, reading the 30,039 the last call read or
    # wrote, answering the 8,000-token summary
    assert usage(compaction.summary) == (3, 33_154 - 3 - 30_039, 30_039, 8000)
    # the call that starts the subagent: the compacted 18,227 context, reading the system prefix from cache and
    # writing the summary (a real session after compaction: (3, 12497, 21460))
    assert usage(start) == (3, 8224, 10_000, 70) and start.is_main
    assert [b.name for b in start.blocks if isinstance(b, ToolUse)] == ["Agent"]
    assert isinstance(sub_start, SubagentStart) and sub_start.description == "explore"
    assert sub_start.tool_use_id == start.blocks[-1].id
    # the subagent's own context: baseline 10,000 + its 300-token task
    assert usage(sub1) == (3, 297, 10_000, 120) and sub1.parent_tool_use_id == sub_start.tool_use_id
    assert isinstance(sub_r1, ToolResult) and sub_r1.tokens == 2000 and sub_r1.parent_tool_use_id is not None
    assert usage(sub2) == (1, 0, 100, 5) and not sub2.is_main
    assert isinstance(answer, ToolResult) and answer.tokens == 500 and answer.parent_tool_use_id is None
    assert isinstance(reset, ConversationReset)
    assert len(s.calls) == 10 and len(s.main_calls) == 8


def test_each_kind_is_its_own_type_with_only_its_own_fields() -> None:
    import ctxsim.scenario
    from ctxsim.scenario import Scenario, TaskScenario

    session = parse_scenario(VALID, file="unit.yaml")
    task = parse_scenario("task: {steps: 3, tokens_per_step: 1000}\n", file="t.yaml")
    assert type(session) is SessionScenario and type(task) is TaskScenario
    assert isinstance(session, Scenario) and isinstance(task, Scenario)
    assert session.outline() == f"{len(session.observations())} points" and task.outline() == "a task of 3 steps"
    assert (SessionScenario.reference, TaskScenario.reference) == ("reference", "reference-loop")
    for name in ("task", "loop_expect"):
        assert not hasattr(session, name), name
    for name in ("partial", "tolerance", "must_fail", "must_pass", "points", "thresholds", "faults", "recording",
                 "scripts", "observations", "where"):
        assert not hasattr(task, name), name
    with pytest.raises(TypeError, match="abstract"):
        Scenario("x", "", "", session.session, Path("x.yaml"))  # type: ignore[abstract]
    assert {"Scenario", "SessionScenario", "TaskScenario"} <= set(ctxsim.scenario.__all__)


def test_lines_point_back_into_the_file() -> None:
    sc = parse_scenario(VALID, file="unit.yaml")
    assert {k: sc.lines[k] for k in ("name", "world", "stream", "queries", "expect")} == {
        "name": 1, "world": 4, "stream": 5, "queries": 6, "expect": 30}
    assert sc.line_of("reference") == 32
    assert (sc.line_of("mala-overwrite"), sc.line_of("arbiter-msgid")) == (33, 34)
    points = sc.points
    assert (points["q1 call 1"], points["q1 call 2"], points["q1 call 3"]) == (10, 12, 13)
    assert points["q1 call 4"] == points["q1 call 6"] == 14  # the repeat
    assert points["q1 result"] == 7
    assert (points["q2 call 1"], points["q2 compaction"], points["q2 call 2"]) == (19, 20, 21)
    assert (points["q2 subagent call 1"], points["q2 subagent call 2"]) == (26, 27)
    assert points["q2 reset"] == 29


def test_the_documented_example_is_a_valid_scenario() -> None:
    import ctxsim.scenario

    doc = ctxsim.scenario.__doc__ or ""
    example = doc.split("Example::\n\n", 1)[1].split("\n\nA recorded session", 1)[0]
    sc = parse_scenario(textwrap.dedent(example), file="example.yaml")
    assert sc.name == "seed000-cache-read-719" and len(sc.session.main_calls) == 3 + 240 + 1
    assert sc.must_fail == ("mala-cache-read-pressure",) and sc.must_pass == ("arbiter-msgid",)
    # 10% is 20,000 tokens: call 1 (20,503) crosses; the 240 repeats (6,013) re-arm it; the compaction to 20,000
    assert sc.thresholds[0].fires == ("q1 call 1", "q1 compaction")


def test_name_defaults_to_the_file_stem_and_expect_to_reference_only(tmp_path: Path) -> None:
    path = tmp_path / "my-scenario.yml"
    path.write_text("queries:\n  - steps:\n      - call: {}\n")
    sc = load_scenario(path)
    assert sc.name == "my-scenario" and sc.session.name == "my-scenario"
    assert (sc.source, sc.tolerance, sc.expect_reference, sc.must_fail, sc.must_pass) == ("", 0, True, (), ())
    assert sc.partial is False
    # a bare call: baseline 12,000 + "Continue with the task." (23 chars -> 5 tokens), the baseline cached
    assert usage(sc.session.calls[0]) == (3, 2, 12_000, 120)


def test_errors_name_the_file_as_given_relative_to_the_working_directory(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "x.yaml").write_text("queries: 3\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError, match=r"^ctxsim: scenarios/x\.yaml:1: queries: expected a list, got 3$"):
        load_scenario(tmp_path / "scenarios" / "x.yaml")
    with pytest.raises(ScenarioError, match=r"^ctxsim: shown\.yaml:1: queries:"):
        load_scenario(tmp_path / "scenarios" / "x.yaml", display="shown.yaml")


Q = "queries:\n  - steps:\n"  # lines 1-2; the first step is on line 3
SUB = ("world: {subagent_compact_window: 100000}\n" + Q + "      - subagent:\n          calls:\n"
       "            - {in: 3, cc: 1000, cr: 19000, out: 50, blocks: [tool_use], results: [1]}\n"
       "            - {in: 3, cc: 1000, cr: 80000, out: 50, blocks: [tool_use], results: [1]}\n")
"""A subagent of an agent whose point is 67,000, holding 81,054 after its second call (lines 6 and 7)."""

MALFORMED = [
    (Q + "      - call: {in: 3, cc: 0, cr: -5}\n",
     "3: queries[0].steps[0].call.cr: expected a non-negative integer, got -5"),
    (Q + "      - call: {inn: 3}\n",
     "3: queries[0].steps[0].call.inn: unknown key (did you mean 'in'? expected one of: in, cc, cr,"),
    (Q + "      - call: {in: 3, cc: 5}\n",
     "3: queries[0].steps[0].call.cr: give all of in, cc and cr"),
    (Q + "      - call: {in: 3, cc: 5, cr: 1, prompt: 9}\n",
     "3: queries[0].steps[0].call.prompt: give either prompt or in/cc/cr, not both"),
    ("world: {window: 1000}\n" + Q, "1: world.window: a window of 1,000 tokens is smaller than the default baseline"),
    ("world: {window: 1000, baseline: 10}\n" + Q + "      - call: {in: 0, cc: 0, cr: 5000}\n",
     "4: queries[0].steps[0].call.cr: cache read of 5,000 tokens is larger than the window (1,000)"),
    ("world: {window: 1000, baseline: 10}\n" + Q + "      - call: {in: 600, cc: 600, cr: 0}\n",
     "4: queries[0].steps[0].call: a prompt of 1,200 tokens (in + cc + cr): an API call's prompt is 1 to 1,000"),
    (Q + "      - call: {in: 0, cc: 0, cr: 0}\n",
     "3: queries[0].steps[0].call: a prompt of 0 tokens (in + cc + cr): an API call's prompt is 1 to 200,000"),
    (Q + "      - call: {prompt: 0}\n", "3: queries[0].steps[0].call.prompt: a prompt of 0 tokens"),
    ("world: {window: 20000}\n" + Q + "      - call: {results: [9000]}\n      - call: {}\n",
     "5: queries[0].steps[1].call: this call's prompt grows to 21,"),
    (Q + "      - call:\n          blocks: [text]\n          out: lots\n",
     "5: queries[0].steps[0].call.out: expected a non-negative integer, got 'lots'"),
    (Q + "      - call: {out: true}\n",
     "3: queries[0].steps[0].call.out: expected a non-negative integer, got true"),
    (Q + "      - call: {out: 1.5}\n",
     "3: queries[0].steps[0].call.out: expected a non-negative integer, got 1.5"),
    (Q + "      - call: {blocks: [text, image]}\n",
     "3: queries[0].steps[0].call.blocks[1]: expected one of thinking, text, tool_use, got 'image'"),
    (Q + "      - call: {blocks: [tool_use], results: [1, 2]}\n",
     "3: queries[0].steps[0].call.results: 2 results for 1 tool_use blocks"),
    (Q + "      - call: {request_id: 5}\n",
     "3: queries[0].steps[0].call.request_id: expected a string or false, got 5"),
    (Q + "      - call:\n          out: 1\n          out: 2\n",
     "5: queries[0].steps[0].call.out: duplicate key"),
    (Q + "      - sleep: {seconds: 1}\n",
     "3: queries[0].steps[0].sleep: unknown key"),
    (Q + "      - {call: {}, reset: {}}\n",
     "3: queries[0].steps[0]: a step has exactly one of call, repeat, expire_cache, compact, subagent, reset; "
     "got 2 keys (call, reset)"),
    (Q + "      - repeat: {times: 0, call: {}}\n",
     "3: queries[0].steps[0].repeat.times: expected a positive integer, got 0"),
    (Q + "      - repeat: {times: 2}\n",
     "3: queries[0].steps[0].repeat: give either call or steps"),
    (Q + "      - compact: {pre: 100}\n",
     "3: queries[0].steps[0].compact: give post (what the compact_boundary reports) or context (what /context "
     "shows after)"),
    (Q + "      - compact: {post: 10, trigger: sometimes}\n",
     "3: queries[0].steps[0].compact.trigger: expected one of auto, manual, got 'sometimes'"),
    (Q + "      - compact:\n          post: 10\n          summary: {input: 3, cache_read: 5, output: 9}\n",
     "5: queries[0].steps[0].compact.summary.cache_creation: required key is missing"),
    (Q + "      - compact:\n          post: 10\n          summary: {input: 3, cache_creation: 1, cache_read: 5, "
         "output: -9}\n", "5: queries[0].steps[0].compact.summary.output: expected a non-negative integer"),
    (Q + "      - compact:\n          post: 10\n          rejected:\n            - {input: 3, cache_creation: 1, "
         "cache_read: 5}\n", "6: queries[0].steps[0].compact.rejected[0].output: required key is missing"),
    (Q + "      - compact: {post: 10, rejected: {input: 3}}\n",
     "3: queries[0].steps[0].compact.rejected: expected a list, got a mapping"),
    (Q + "      - subagent: {calls: []}\n",
     "3: queries[0].steps[0].subagent.calls: expected a non-empty list"),
    (Q + "      - subagent:\n          calls:\n            - {cr: 5}\n",
     "5: queries[0].steps[0].subagent.calls[0].in: give all of in, cc and cr"),
    ("queries:\n  - steps: {}\n", "2: queries[0].steps: expected a list, got a mapping"),
    ("queries: []\n", "1: queries: expected a non-empty list"),
    ("name: x\n", "1: queries: required key is missing"),
    ("- a\n- b\n", "1: expected a mapping, got a list"),
    ("", "1: the file is empty"),
    ("queries:\n  - steps:\n    - call: {in: 3\n", "4: not valid YAML"),
    ("queries: !!python/object/apply:os.system ['echo pwned']\n",
     "1: not valid YAML: could not determine a constructor for the tag"),
    ("a: &x {in: 1}\nqueries:\n  - steps:\n      - call: *x\n", "4: anchors and aliases are not supported"),
    ("world: {window: 0}\n" + Q, "1: world.window: expected a positive integer, got 0"),
    ("world: {baseline: 300000}\n" + Q, "1: world.baseline: a baseline of 300,000 tokens exceeds the window"),
    ("world: {modle: x}\n" + Q, "1: world.modle: unknown key (did you mean 'model'?"),
    ("stream: {partial: yes please}\n" + Q, "1: stream.partial: expected true or false, got 'yes please'"),
    (Q + "      - call: {}\nexpect: {tolerance: -1}\n", "4: expect.tolerance: expected a non-negative integer"),
    (Q + "      - call: {}\nexpect: {reference: maybe}\n",
     "4: expect.reference: expected one of pass, fail, got 'maybe'"),
    (Q + "      - call: {}\nexpect:\n  fail: [mala-overwrit]\n",
     "5: expect.fail[0]: no tracker 'mala-overwrit' in the catalogue (did you mean 'mala-overwrite'?)"),
    (Q + "      - call: {}\nexpect:\n  fail: [arbiter-uuid]\n  pass:\n    - arbiter-uuid\n",
     "7: expect.pass[0]: 'arbiter-uuid' is already listed in expect.fail"),
    (Q + "      - call: {}\nexpect:\n  fail: [reference]\n",
     "5: expect.fail[0]: use expect.reference for the reference tracker"),
    (Q + "      - call: {}\nexpect:\n  fail: mala-overwrite\n",
     "5: expect.fail: expected a list, got 'mala-overwrite'"),
    (SUB + "            - compact: {post: 2734, trigger: manual}\n",
     "8: queries[0].steps[0].subagent.calls[2].compact.trigger: unknown key (expected one of: post, context, pre, "
     "summary)"),
    (SUB + "            - compact: {}\n",
     "8: queries[0].steps[0].subagent.calls[2].compact: give post (what the subagent's compact_boundary reports)"),
    (SUB + "            - {compact: {post: 2734}, out: 5}\n",
     "8: queries[0].steps[0].subagent.calls[2].out: unknown key (expected one of: compact)"),
    (SUB.replace("80000", "50000") + "            - compact: {post: 2734}\n",
     "8: queries[0].steps[0].subagent.calls[2].compact: the subagent holds 51,054 tokens, not past its autocompact "
     "point (67,000): Claude Code would not compact it"),
    (SUB.split("            - {in: 3, cc: 1000, cr: 80000")[0] + "            - compact: {post: 2734}\n",
     "7: queries[0].steps[0].subagent.calls[1].compact: the subagent made 1 call(s): Claude Code compacts a "
     "subagent only after a call that is not its first"),
    (SUB + "            - {in: 3, cc: 100, cr: 2000}\n",
     "8: queries[0].steps[0].subagent.calls[2]: the subagent holds 81,054 tokens after its call 2, past its "
     "autocompact point (67,000"),
]


@pytest.mark.parametrize(("text", "expected"), MALFORMED, ids=[m[1].split(":")[1].strip() or m[1] for m in MALFORMED])
def test_malformed_scenarios_say_file_line_and_key(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, display="scenarios/bad.yaml")
    message = str(info.value)
    assert message.startswith(f"ctxsim: scenarios/bad.yaml:{expected}"), message
    assert "\n" not in message
    assert info.value.line == int(expected.split(":")[0])


def test_nested_repeats_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("ctxsim.scenario._sections._steps.MAX_CALLS", 5)
    text = Q + "      - repeat:\n          times: 3\n          steps:\n            - repeat: {times: 3, call: {}}\n"
    with pytest.raises(ScenarioError, match=r"^ctxsim: x\.yaml:6: queries\[0\]\.steps\[0\]\.repeat\.steps\[0\]"
                                            r"\.repeat\.call: more than 5 calls in one scenario$"):
        parse_scenario(text, file="x.yaml")


def test_a_file_that_is_not_text_names_the_line_of_the_first_bad_byte(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"queries:\n  - \xff\xfe\x00queries")
    with pytest.raises(ScenarioError, match=r"^ctxsim: bin\.yaml:2: cannot read the scenario: not UTF-8 text "
                                            r"\(invalid start byte at byte 13\)$"):
        load_scenario(path, display="bin.yaml")
    with pytest.raises(ScenarioError, match=r"^ctxsim: nope\.yaml: cannot read the scenario: No such file"):
        load_scenario(tmp_path / "nope.yaml", display="nope.yaml")


def test_shipped_scenarios_load_and_name_catalogued_trackers_or_loops() -> None:
    files = sorted(SCENARIOS.glob("*.yaml"))
    stems = {f.stem for f in files}
    assert {"compaction", "seed000-cache-read-719", "seed003-threshold-90", "multi-restart-40-steps"} <= stems
    for f in files:
        sc = load_scenario(f)
        assert sc.name == f.stem and sc.source and sc.description and sc.expect_reference
        if isinstance(sc, SessionScenario):
            assert sc.must_fail
        else:
            assert sc.loop_expect.restarts is not None and sc.loop_expect.steps is not None


def test_seed000_scenario_is_719_percent_in_the_result_and_3_percent_in_truth() -> None:
    s = load_scenario(SCENARIOS / "seed000-cache-read-719.yaml").session
    calls = s.main_calls
    assert len(calls) == 240
    spent = sum(c.input_tokens + c.output_tokens + c.cache_read_input_tokens for c in calls)
    assert spent / s.window == pytest.approx(7.19)
    assert calls[-1].prompt / s.window == pytest.approx(0.03, abs=0.001)


def test_a_compaction_s_summary_request_is_stated_or_derived() -> None:
    """``compact: {summary: ...}`` states the summary request (its usage counts in the cost); without it the
    builder derives one: the 20,000 before plus 2,154 of instructions, reading the 18,000 the last call cached."""
    text = (Q + "      - call: {in: 3, cc: 2000, cr: 16000, out: 97}\n"
            "      - compact: {post: 3000, trigger: manual,\n"
            "                  summary: {input: 5, cache_creation: 40, cache_read: 17000, output: 600}}\n"
            "      - call: {}\n      - compact: {post: 2000}\n")
    scenario = parse_scenario(text, file="summary.yaml")
    assert isinstance(scenario, SessionScenario)
    session = scenario.session
    stated, derived = [s for s in session.queries[0].steps if isinstance(s, Compaction)]
    assert stated.summary is not None and derived.summary is not None
    assert usage(stated.summary) == (5, 40, 17_000, 600)
    assert (stated.pre_tokens, stated.context_tokens) == (18_100, 12_000 + 3000 + 227)  # /compact: +227
    call = session.queries[0].steps[2]
    assert isinstance(call, Call)
    # an autocompaction: the context (the call's prompt and 120 out) and 22 more
    assert derived.pre_tokens == call.prompt + 120 + 22 and derived.context_tokens == 12_000 + 2000
    assert usage(derived.summary) == (3, derived.pre_tokens + 2154 - 3 - call.prompt + 3, call.prompt - 3, 2000)


def test_a_compaction_s_rejected_summary_requests_are_stated_and_counted() -> None:
    """``compact: {rejected: [...]}`` states the summary requests Claude Code made and refused before the one it
    kept: each is among the compaction's summary requests, before the summary it kept."""
    text = (Q + "      - call: {in: 3, cc: 2000, cr: 16000, out: 97}\n"
            "      - compact:\n          post: 3000\n"
            "          summary: {input: 5, cache_creation: 40, cache_read: 17000, output: 600}\n"
            "          rejected:\n            - {input: 5, cache_creation: 40, cache_read: 17000, output: 30}\n"
            "            - {input: 6, cache_creation: 0, cache_read: 17040, output: 20}\n")
    plain = parse_scenario(text.split("          rejected:")[0], file="plain.yaml")
    scenario = parse_scenario(text, file="rejected.yaml")
    assert isinstance(scenario, SessionScenario) and isinstance(plain, SessionScenario)
    compaction = next(s for s in scenario.session.queries[0].steps if isinstance(s, Compaction))
    assert [usage(c) for c in compaction.rejected] == [(5, 40, 17_000, 30), (6, 0, 17_040, 20)]
    assert [usage(c) for c in compaction.summary_requests] == [(5, 40, 17_000, 30), (6, 0, 17_040, 20),
                                                               (5, 40, 17_000, 600)]
    plain_compaction = next(s for s in plain.session.queries[0].steps if isinstance(s, Compaction))
    assert plain_compaction.rejected == () and plain_compaction.summary is not None and compaction.summary is not None
    assert usage(plain_compaction.summary) == usage(compaction.summary)


def test_a_call_s_prompt_is_held_to_the_window_of_the_model_in_force() -> None:
    """After ``/model`` to a ``[1m]`` model a call may reach past 200,000 (found by the stream fuzz: a drawn
    stream's 200,001-token call after such a switch did not load); back on a 200,000 model it may not."""
    text = ("world: {model: claude-sonnet-4-5, window: 200000}\nqueries:\n  - prompt: a\n    steps:\n"
            "      - call: {}\n  - prompt: b\n    model: \"claude-sonnet-4-5[1m]\"\n    steps:\n"
            "      - call: {in: 3, cc: 1000, cr: 199000}\n")
    scenario = parse_scenario(text, file="switch.yaml")
    assert isinstance(scenario, SessionScenario)
    assert scenario.session.main_calls[-1].prompt == 200_003
    back = text + ("  - prompt: c\n    model: claude-sonnet-4-5\n    steps:\n"
                   "      - call: {in: 3, cc: 1000, cr: 199000}\n")
    with pytest.raises(ScenarioError, match=r"switch.yaml:13: queries\[2\].steps\[0\].call: a prompt of 200,003 "):
        parse_scenario(back, file="switch.yaml")


def test_a_compact_item_in_a_subagent_s_calls_compacts_the_subagent_only() -> None:
    """``compact: {post: ...}`` among a subagent's calls: a subagent compaction whose ``preTokens`` is what the
    subagent held and 22 more (81,003 + 50 + 1 + 22, as the CLI counted 81,073 for 81,000), after which its next
    call starts from the baseline plus the summary, re-created in the cache; the main chain's calls are as
    without it."""
    scenario = parse_scenario(SUB + "            - compact: {post: 2734}\n            - {out: 50, blocks: [text]}\n",
                              file="sub.yaml")
    assert isinstance(scenario, SessionScenario)
    steps = scenario.session.queries[0].steps
    (compaction,) = [s for s in steps if isinstance(s, SubagentCompaction)]
    assert (compaction.pre_tokens, compaction.post_tokens, compaction.context_tokens) == (81_076, 2_734, 14_734)
    after = steps[steps.index(compaction) + 1]
    assert isinstance(after, Call) and not after.is_main
    assert usage(after) == (3, 14_731, 0, 50)
    assert not [s for s in steps if isinstance(s, Compaction)]
