// assertVerdict: a node:test matcher whose failure names the scenario, the point and the likely cause.
import assert from "node:assert/strict";
import { test } from "node:test";
import { assertVerdict } from "../index.mjs";

const truth = (extra = {}) => ({ scenario: "b01-x", tolerance: 0, window: 200_000, requests: 2, refused: [],
                                 unplayed: 0, unfaulted: 0, points: [], ...extra });
const off = { index: 1, point: "q1 call 2", estimate: 45_012, low: 15_004, high: 15_304, cause: "a running total" };
const verdict = (ok) => ({ ok, status: ok ? "passed" : "failed", summary: ok ? "right" : "off on 1 of 2 points",
                           cause: ok ? null : off.cause, first: ok ? null : { index: 1, point: off.point },
                           failures: ok ? [] : [off] });
const message = (fn) => {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof assert.AssertionError, String(error));
    return error.message;
  }
  assert.fail("assertVerdict did not fail");
};

test("a right tracker passes, and one that is off fails naming the scenario, the point and the cause", () => {
  assertVerdict({ truth: truth(), verdict: verdict(true) });
  assertVerdict({ truth: truth(), verdict: verdict(false) }, { ok: false, firstFailure: "q1 call 2", cause: /running/ });
  assert.equal(message(() => assertVerdict({ truth: truth(), verdict: verdict(false) }, { ok: true })),
               "ctxsim: b01-x: the tracker is off at q1 call 2 (estimate 45,012, truth 15,004..15,304): a running " +
               "total; off on 1 of 2 points");
});

test("an expected failure that does not come, or comes elsewhere or for another cause, fails saying which", () => {
  assert.match(message(() => assertVerdict({ truth: truth(), verdict: verdict(true) }, { ok: false })),
               /^ctxsim: b01-x: the tracker was to be off, and it is right at every point$/);
  assert.match(message(() => assertVerdict({ truth: truth(), verdict: verdict(false) },
                                           { ok: false, firstFailure: "q1 call 1" })),
               /was to be off first at q1 call 1, and is first off at q1 call 2 \(estimate 45,012/);
  assert.match(message(() => assertVerdict({ truth: truth(), verdict: verdict(false) }, { ok: false, cause: /cache/ })),
               /at q1 call 2 the likely cause was to match \/cache\/, and is: a running total$/);
});

test("a run off the script fails before its verdict is read, saying how it left it", () => {
  assert.match(message(() => assertVerdict({ truth: truth({ refused: ["request #3 refused: a side request"] }),
                                             verdict: verdict(true) })), /b01-x: serve refused requests .*#3/);
  assert.match(message(() => assertVerdict({ truth: truth({ unplayed: 2 }), verdict: verdict(true) })),
               /b01-x: 2 calls of the script were never asked for/);
  assert.match(message(() => assertVerdict({ truth: truth({ unfaulted: 1 }) })), /did not come through serve's CLI wrapper/);
  assert.match(message(() => assertVerdict({ truth: truth() })), /b01-x: no verdict/);
  assert.match(message(() => assertVerdict({ status: 2, stderr: "ctxsim: serve --judge: cannot read x\n" })),
               /^ctxsim: serve printed no truth \(exit 2\): ctxsim: serve --judge: cannot read x$/);
});
