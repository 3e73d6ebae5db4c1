"""Checkpoint extraction and the continuation prompt: every fallback of the defined behaviour."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from ctxsim.reference import (
    CHECKPOINT_REQUEST_PROMPT,
    CONTINUATION_TEMPLATE,
    MINIMAL_CONTINUATION_PROMPT,
    build_continuation_prompt,
    extract_checkpoint,
    is_prompt_too_long,
)
from ctxsim.reference._checkpoint import TRUNCATED_NOTE

STATE = """## Goal
Port the parser.

## Completed Work
- src/parse.py: new tokenizer

## Remaining Tasks
1. tests for the tokenizer

## Do Not Redo
- the tokenizer

## Key Decisions
- keep the old AST"""


def test_well_formed_block() -> None:
    cp = extract_checkpoint(f"Here it is.\n<checkpoint>\n{STATE}\n</checkpoint>\nStopping now.")
    assert (cp.text, cp.fallback, cp.blocks, cp.complete, cp.usable) == (STATE, "block", 1, True, True)


@pytest.mark.parametrize("language", ["xml", "markdown", ""])
def test_block_inside_a_code_fence(language: str) -> None:
    cp = extract_checkpoint(f"```{language}\n<checkpoint>\n{STATE}\n</checkpoint>\n```")
    assert (cp.text, cp.fallback) == (STATE, "block")


def test_a_fence_wrapping_the_content_inside_the_tags_is_removed_but_inner_code_is_kept() -> None:
    assert extract_checkpoint(f"<checkpoint>\n```markdown\n{STATE}\n```\n</checkpoint>").text == STATE
    with_code = f"{STATE}\n```python\nx = 1\n```"
    assert extract_checkpoint(f"<checkpoint>\n{with_code}\n</checkpoint>").text == with_code


def test_no_tags_takes_the_whole_reply_unwrapped_from_its_fence() -> None:
    assert extract_checkpoint(f"Where things stand:\n\n{STATE}") == extract_checkpoint(
        f"  Where things stand:\n\n{STATE}\n")
    cp = extract_checkpoint(f"```markdown\n{STATE}\n```")
    assert (cp.text, cp.fallback) == (STATE, "whole_reply")


def test_several_blocks_take_the_last_non_empty_one() -> None:
    draft, final = STATE.replace("tests for", "DRAFT"), STATE
    cp = extract_checkpoint(f"<checkpoint>{draft}</checkpoint>\nCorrected:\n<checkpoint>{final}</checkpoint>")
    assert (cp.text, cp.fallback, cp.blocks) == (final, "last_block", 2)
    cp = extract_checkpoint(f"<checkpoint>{final}</checkpoint>\n<checkpoint>  </checkpoint>")
    assert (cp.text, cp.fallback) == (final, "block")


def test_an_echo_of_the_request_template_never_wins() -> None:
    template = CHECKPOINT_REQUEST_PROMPT[CHECKPOINT_REQUEST_PROMPT.index("<checkpoint>"):
                                        CHECKPOINT_REQUEST_PROMPT.index("</checkpoint>") + len("</checkpoint>")]
    for reply in (f"{template}\n<checkpoint>{STATE}</checkpoint>", f"<checkpoint>{STATE}</checkpoint>\n{template}"):
        cp = extract_checkpoint(reply)
        assert (cp.text, cp.blocks) == (STATE, 1)


def test_a_complete_block_wins_over_a_later_unclosed_one() -> None:
    cp = extract_checkpoint(f"<checkpoint>{STATE}</checkpoint>\nUpdate:\n<checkpoint>\n## Goal\nPort")
    assert (cp.text, cp.fallback) == (STATE, "block")


def test_unclosed_tag_takes_the_rest_of_the_reply() -> None:
    cp = extract_checkpoint(f"<checkpoint>\n{STATE}\n")
    assert (cp.text, cp.fallback, cp.complete) == (STATE, "unclosed", True)
    assert extract_checkpoint(f"```xml\n<checkpoint>\n{STATE}\n```").text == STATE


def test_empty_block_falls_back_to_what_is_outside_it_or_nothing() -> None:
    cp = extract_checkpoint("<checkpoint>\n   \n</checkpoint>")
    assert (cp.text, cp.fallback, cp.usable) == ("", "empty_block", False)
    assert build_continuation_prompt(cp) == MINIMAL_CONTINUATION_PROMPT
    cp = extract_checkpoint(f"<checkpoint></checkpoint>\n{STATE}")
    assert (cp.text, cp.fallback) == (STATE, "empty_block")


@pytest.mark.parametrize(("opening", "closing"), [
    ("<CHECKPOINT>", "</CHECKPOINT>"),
    ("< Checkpoint >", "</ checkpoint >"),
    ("<checkpoint\n>", "< /Checkpoint>"),
    ('<checkpoint version="2">', "</checkpoint>"),
])
def test_tag_case_whitespace_and_attributes(opening: str, closing: str) -> None:
    cp = extract_checkpoint(f"{opening}\n{STATE}\n{closing}")
    assert (cp.text, cp.fallback) == (STATE, "block")


@pytest.mark.parametrize("reply", [
    "I'm sorry, but I can't write a checkpoint summary right now.",
    "I cannot help with that request.",
    "Sorry — I won't output that.",
])
def test_a_refusal_is_no_state(reply: str) -> None:
    cp = extract_checkpoint(reply)
    assert (cp.text, cp.fallback, cp.usable) == ("", "refusal", False)
    assert build_continuation_prompt(cp) == MINIMAL_CONTINUATION_PROMPT


def test_refusal_by_stop_reason_and_a_long_reply_that_only_opens_like_one() -> None:
    assert extract_checkpoint("Here you go", stop_reason="refusal").fallback == "refusal"
    explains = f"I can't list file contents, but here is the state.\n\n{STATE}"
    assert extract_checkpoint(explains).fallback == "whole_reply"


def test_a_reply_cut_off_by_max_tokens_is_marked_incomplete() -> None:
    cut = STATE[:STATE.index("## Remaining")]
    cp = extract_checkpoint(f"<checkpoint>\n{cut}", stop_reason="max_tokens")
    assert (cp.text, cp.fallback, cp.complete) == (cut.strip(), "truncated", False)
    prompt = build_continuation_prompt(cp)
    assert cut.strip() in prompt and TRUNCATED_NOTE in prompt
    whole = extract_checkpoint(cut, stop_reason="max_tokens")
    assert (whole.fallback, whole.complete) == ("truncated", False)
    closed = extract_checkpoint(f"<checkpoint>{STATE}</checkpoint>\nAnd", stop_reason="max_tokens")
    assert (closed.fallback, closed.complete) == ("block", True)  # the block closed before the cut


def test_checkpoint_request_rejected_as_prompt_too_long() -> None:
    cp = extract_checkpoint("Prompt is too long", is_error=True)
    assert (cp.text, cp.fallback, cp.usable) == ("", "prompt_too_long", False)
    assert build_continuation_prompt(cp) == MINIMAL_CONTINUATION_PROMPT
    assert extract_checkpoint("API Error: 529 overloaded", is_error=True).fallback == "error"


def test_empty_and_missing_replies() -> None:
    assert extract_checkpoint("").fallback == "empty_reply"
    assert extract_checkpoint(None).fallback == "empty_reply"
    assert extract_checkpoint("```\n```").fallback == "empty_reply"


def test_continuation_prompt_is_seed003_template_around_the_text() -> None:
    assert build_continuation_prompt(extract_checkpoint(f"<checkpoint>{STATE}</checkpoint>")) == \
        CONTINUATION_TEMPLATE.format(checkpoint=STATE)
    assert build_continuation_prompt(f"  {STATE}\n") == CONTINUATION_TEMPLATE.format(checkpoint=STATE)
    assert build_continuation_prompt("   ") == MINIMAL_CONTINUATION_PROMPT


def test_prompt_too_long_texts() -> None:
    assert is_prompt_too_long("Prompt is too long")
    assert is_prompt_too_long('{"message":"prompt is too long: 216327 tokens > 200000 maximum"}')
    assert is_prompt_too_long("API Error: 400 Input is too long for requested model.")
    assert not is_prompt_too_long("the prompt was long")
    assert not is_prompt_too_long(None)


# No "[...]": a body of placeholders only is an echo of the request template, skipped by design.
_BODY = st.text(st.characters(blacklist_characters="<>`~[", blacklist_categories=("Cs",)), min_size=1)


@given(_BODY.filter(lambda b: b.strip() != ""), st.sampled_from(["", "```xml\n", "Sure.\n"]))
def test_any_tagged_body_comes_back_stripped(body: str, before: str) -> None:
    after = "\n```" if before.startswith("```") else ""
    cp = extract_checkpoint(f"{before}<checkpoint>{body}</checkpoint>{after}")
    assert cp.fallback == "block"
    assert cp.text == body.strip()


@given(st.text())
def test_never_raises(reply: str) -> None:
    cp = extract_checkpoint(reply)
    assert cp.usable == bool(cp.text)
    assert isinstance(build_continuation_prompt(cp), str)
