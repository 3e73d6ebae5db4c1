"""After ``/compact``: the truth, ``FakeTransport.get_context_usage`` and the reference against the real CLI.

The CLI's ``compact_boundary`` states ``post_tokens``, the size of the summary it kept; ``get_context_usage`` right
after the compaction says more, because the context also holds the system prompt, tools and skills
(``docs/explanation/compaction.md``). Every expected number here is read from the capture files
(``tests/captures/claude-code-2.1.332``, recorded by ``tests/captures/remake.py``). The system prefix is taken from
a *different* capture (the categories ``get_context_usage`` reported in the three-query session), so the check is
not circular: baseline + post must land within 1% of what the CLI said.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from claude_agent_sdk import ClaudeSDKClient, SystemMessage

from ctxsim.check import run_tracker
from ctxsim.reference import ContextTracker, prefix_from_context_usage
from ctxsim.sdk import FakeTransport
from ctxsim.world import SessionBuilder


def _rows(captured: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (captured / name).read_text().splitlines() if line.strip()]


def _in_the_prompt(context_usage: dict[str, Any], *, messages: bool) -> int:
    """The tokens of the categories ``get_context_usage`` counts in the prompt (deferred tools and free space are
    not sent): the messages alone, or everything else (system prompt, tools, skills)."""
    return sum(c["tokens"] for c in context_usage["categories"]
               if c["kind"] == "used" and not c.get("isDeferred") and (c["id"] == "messages") == messages)


@pytest.fixture(scope="module")
def capture(captured: Path) -> dict[str, Any]:
    """What the compaction capture says: the calls before ``/compact``, the boundary, and the CLI's counts."""
    rows = _rows(captured, "stream-json-compact.jsonl")
    raw = [r["raw"] for r in rows if "raw" in r]
    at = next(i for i, r in enumerate(raw) if r.get("subtype") == "compact_boundary")
    usages = {r["message"]["id"]: r["message"]["usage"] for r in raw[:at]
              if r.get("type") == "assistant" and r.get("parent_tool_use_id") is None}
    after = {r["after_query"]: r["context_usage"] for r in rows if "context_usage" in r}
    three = next(r["context_usage"] for r in _rows(captured, "sdk-messages-three-queries.jsonl")
                 if "context_usage" in r)
    return {"calls": list(usages.values()), "post": raw[at]["compact_metadata"]["post_tokens"],
            "pre": raw[at]["compact_metadata"]["pre_tokens"], "cli_after_compact": after["/compact"]["totalTokens"],
            "after": after["/compact"], "three": three, "prefix": prefix_from_context_usage(three)}


def _session(capture: dict[str, Any]) -> Any:
    b = SessionBuilder(seed=1, name="capture-compact", baseline=capture["prefix"]).query("run three steps")
    for u in capture["calls"][:4]:
        b.call(input=u["input_tokens"], cache_creation=u["cache_creation_input_tokens"],
               cache_read=u["cache_read_input_tokens"], output=50)
    return b.query("/compact").compact(capture["post"], pre_tokens=capture["pre"], trigger="manual").build()


def test_the_capture_shows_post_tokens_counts_the_summary_alone(capture: dict[str, Any]) -> None:
    after, post = capture["after"], capture["post"]
    # the CLI's count after /compact is its prefix (system prompt, tools, skills) plus the messages left, the summary
    # among them: more than post_tokens by at least the prefix
    assert after["totalTokens"] == _in_the_prompt(after, messages=False) + _in_the_prompt(after, messages=True)
    assert _in_the_prompt(after, messages=True) >= post
    assert capture["cli_after_compact"] - post >= _in_the_prompt(after, messages=False) > 10_000
    # the prefix as the three-query session's get_context_usage listed it: its categories in use but the messages
    assert capture["prefix"] == _in_the_prompt(capture["three"], messages=False)


def test_the_truth_after_compact_is_the_prefix_plus_the_summary_within_one_percent(capture: dict[str, Any]) -> None:
    session = _session(capture)
    truth = session.final_truth
    assert truth is not None
    assert abs(truth.prompt - capture["cli_after_compact"]) <= 0.01 * capture["cli_after_compact"]
    assert truth.prompt != capture["post"]  # the old model: low by the whole prefix


def test_get_context_usage_after_compact_agrees_with_the_cli(capture: dict[str, Any]) -> None:
    session = _session(capture)

    async def main() -> int:
        with anyio.fail_after(30):
            async with ClaudeSDKClient(transport=FakeTransport(session)) as client:
                for query in session.queries:
                    await client.query(query.prompt)
                    async for _ in client.receive_response():
                        pass
                return int((await client.get_context_usage())["totalTokens"])

    total = anyio.run(main)
    assert abs(total - capture["cli_after_compact"]) <= 0.01 * capture["cli_after_compact"]


def test_the_reference_agrees_when_told_the_prefix_and_is_within_the_knowable_band_when_not(
        capture: dict[str, Any]) -> None:
    session = _session(capture)
    told = ContextTracker(prefix_tokens=capture["prefix"])   # what prefix_from_context_usage() read off the CLI
    report = run_tracker(told, session)
    assert report.ok
    after = report.points[-1]
    assert after.observation.kind in ("compaction", "result")
    assert abs(after.estimate - capture["cli_after_compact"]) <= 0.01 * capture["cli_after_compact"]
    # Not told: the first call found nothing cached (cache read 0), so its whole prompt is the prefix's bound;
    # the estimate is off the CLI's count, but within what the stream lets a tracker know.
    untold = run_tracker(ContextTracker(), session)
    assert untold.ok
    first = capture["calls"][0]
    whole = first["input_tokens"] + first["cache_creation_input_tokens"] + first["cache_read_input_tokens"]
    assert untold.points[-1].estimate == capture["post"] + whole


def test_a_tracker_that_copies_post_tokens_fails_at_the_compaction(capture: dict[str, Any]) -> None:
    class CopiesPost(ContextTracker):
        def observe(self, message: object) -> None:
            super().observe(message)
            if isinstance(message, SystemMessage) and message.subtype == "compact_boundary":
                self._prompt = message.data["compact_metadata"]["post_tokens"]

    report = run_tracker(CopiesPost(), _session(capture))
    assert not report.ok
    assert report.failures[0].observation.kind == "compaction"


def test_the_fake_transport_reports_the_baseline_as_the_system_prefix() -> None:
    session = SessionBuilder(seed=3, baseline=11_981).query("go").call().compact(2672).build()

    async def main() -> dict[str, Any]:
        with anyio.fail_after(30):
            async with ClaudeSDKClient(transport=FakeTransport(session)) as client:
                return dict(await client.get_context_usage())

    usage = anyio.run(main)
    assert prefix_from_context_usage(usage) == 11_981
