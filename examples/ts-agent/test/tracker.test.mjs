// The agent's tracker alone, through ctxsim's stream tracker protocol, over the corpus bundled with ctxsim.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ContextTracker } from "../src/context-tracker.mjs";
import { ctxsim } from "../fixtures/ctxsim.mjs";

const rows = (markdown) => markdown.split("\n").filter((line) => line.startsWith("| `"));

test("the tracker does what every scenario of the bundled corpus expects of it", () => {
  const run = ctxsim(["judge", "stream:node src/stream-tracker.mjs"]);
  assert.equal(run.status, 0, `ctxsim judge said:\n${run.stdout}\n${run.stderr.slice(-2000)}`);
  const judged = rows(run.stdout);
  assert.ok(judged.length >= 40, `only ${judged.length} scenarios judged:\n${run.stdout}`);
  // a scenario skipped for this kind of tracker is listed with its reason, neither met nor failed
  assert.deepEqual(judged.filter((row) => !row.includes("✓") && !row.includes("| skipped: ")), []);
});

test("a tracker summing every assistant message fails the same corpus (the judge can fail a tracker)", () => {
  const run = ctxsim(["judge", "stream:node fixtures/sum-all-tracker.mjs"]);
  assert.equal(run.status, 1, `ctxsim judge said:\n${run.stdout}\n${run.stderr.slice(-2000)}`);
  const failed = rows(run.stdout).filter((row) => row.includes("✗"));
  assert.ok(failed.length >= 30, `only ${failed.length} scenarios failed:\n${run.stdout}`);
});

test("one API call's per-block messages count once, and a subagent's never", () => {
  const usage = { input_tokens: 3, cache_creation_input_tokens: 2000, cache_read_input_tokens: 40_000, output_tokens: 1 };
  const tracker = new ContextTracker();
  for (const block of ["thinking", "text", "tool_use"]) {
    tracker.observe({ type: "assistant", parent_tool_use_id: null,
                      message: { id: "msg_1", model: "claude-sonnet-4-5", content: [{ type: block }], usage } });
  }
  assert.equal(tracker.contextTokens(), 42_003);
  tracker.observe({ type: "assistant", parent_tool_use_id: "toolu_1",
                    message: { id: "msg_2", model: "claude-sonnet-4-5", content: [], usage: { ...usage, input_tokens: 90_000 } } });
  assert.equal(tracker.contextTokens(), 42_003);
});
