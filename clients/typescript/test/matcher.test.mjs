// PointMatcher: the SDK's messages mapped to serve's points as the truth's `after` says, query by query.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { PointMatcher, writeEstimates } from "../index.mjs";
import { tempDir } from "./helpers.mjs";

const point = (name, after) => ({ index: 0, point: name, kind: "call", after, low: 0, high: 0, knowable: true });
const TRUTH = {
  scenario: "s", tolerance: 0, window: 200_000, requests: 0, refused: [], unplayed: 0, unfaulted: 0,
  points: [
    point("q1 call 1", { type: "assistant", query: 1, message_id: "msg_a", n: 2 }),
    point("q1 result", { type: "result", query: 1 }),
    point("q2 reset", { type: "conversation_reset", query: 2, n: 1 }),
    point("q2 compaction", { type: "compact_boundary", query: 2, n: 1 }),
    point("q2 call 1", { type: "stream_event", event: "message_stop", query: 2, n: 1 }),
  ],
};
const assistant = (id) => ({ type: "assistant", message: { id } });

test("a point closes at the n-th message of its call, each query counted from its own start", () => {
  const matcher = new PointMatcher(TRUTH);
  assert.equal(matcher.observe({ type: "system", subtype: "init" }, null), null);  // query 1's init: no point
  assert.equal(matcher.observe(assistant("msg_a"), 10), null);                     // the call's first block
  assert.deepEqual(matcher.observe(assistant("msg_a"), 11), { point: "q1 call 1", estimate: 11 });
  assert.deepEqual(matcher.observe({ type: "result" }, 12), { point: "q1 result", estimate: 12 });
  assert.deepEqual(matcher.missing(), ["q2 reset", "q2 compaction", "q2 call 1"]);
  assert.deepEqual(matcher.observe({ type: "conversation_reset" }, undefined), { point: "q2 reset", estimate: null });
  assert.equal(matcher.observe({ type: "system", subtype: "init" }, 4), null);    // the new session's init: no point
  matcher.observe({ type: "system", subtype: "compact_boundary" }, 5);
  matcher.observe({ type: "stream_event", event: { type: "message_start" } }, 6);
  matcher.observe({ type: "stream_event", event: { type: "message_stop" } }, 7);
  assert.deepEqual(matcher.missing(), []);
  assert.deepEqual(matcher.estimates.map((e) => e.point), TRUTH.points.map((p) => p.point));
  assert.equal(matcher.jsonLines().split("\n").filter(Boolean).length, 5);
});

test("the estimates file holds one JSON line a point, from a matcher or a list", (t) => {
  const dir = tempDir(t);
  const matcher = new PointMatcher(TRUTH);
  matcher.observe(assistant("msg_a"), 1);
  matcher.observe(assistant("msg_a"), 2);
  writeEstimates(path.join(dir, "a.jsonl"), matcher);
  assert.equal(fs.readFileSync(path.join(dir, "a.jsonl"), "utf8"), '{"point":"q1 call 1","estimate":2}\n');
  writeEstimates(path.join(dir, "b.jsonl"), [{ point: "q1 result", estimate: null }]);
  assert.equal(fs.readFileSync(path.join(dir, "b.jsonl"), "utf8"), '{"point":"q1 result","estimate":null}\n');
  assert.throws(() => writeEstimates(path.join(dir, "c.jsonl"), "q1 call 1"), /^CtxsimError: ctxsim: estimates are/);
});
