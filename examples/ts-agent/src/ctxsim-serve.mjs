// Helpers for a TypeScript client of `ctxsim serve` (types: ctxsim-serve.d.ts): map the SDK's messages to serve's
// observation points, and a node --test matcher for serve's verdict.
import assert from "node:assert/strict";

/** The key of a point's `after`, as PointMatcher computes it from messages. */
function afterKey(after) {
  switch (after.type) {
    case "assistant": return `${after.query} assistant ${after.message_id} ${after.n}`;
    case "result": return `${after.query} result`;
    case "compact_boundary": return `${after.query} compact_boundary ${after.n}`;
    case "stream_event": return `${after.query} message_stop ${after.n}`;
    case "system": return `${after.query} init ${after.n}`;
    default: return `unknown ${JSON.stringify(after)}`;
  }
}

/** @type {import("./ctxsim-serve.d.ts").PointMatcher} */
export class PointMatcher {
  #points;
  #query = 1;
  #counts = new Map();
  #closed = new Set();
  estimates = [];

  constructor(truth) {
    this.#points = new Map(truth.points.map((p) => [afterKey(p.after), p]));
  }

  #count(name) {
    const n = (this.#counts.get(name) ?? 0) + 1;
    this.#counts.set(name, n);
    return n;
  }

  #key(m) {
    const q = this.#query;
    if (m.type === "assistant" && m.message?.id) return `${q} assistant ${m.message.id} ${this.#count(`a ${m.message.id}`)}`;
    if (m.type === "result") return `${q} result`;
    if (m.type === "system" && m.subtype === "compact_boundary") return `${q} compact_boundary ${this.#count("c")}`;
    if (m.type === "system" && m.subtype === "init") return `${q} init ${this.#count("i")}`;
    if (m.type === "stream_event" && m.event?.type === "message_stop") return `${q} message_stop ${this.#count("s")}`;
    return null;
  }

  observe(message, estimate) {
    const key = this.#key(message);
    if (message.type === "result") {  // the next query counts from its own start
      this.#query += 1;
      this.#counts.clear();
    }
    const point = key === null ? undefined : this.#points.get(key);
    if (point === undefined) return null;
    this.#closed.add(key);
    const line = { point: point.point, estimate };
    this.estimates.push(line);
    return line;
  }

  missing() {
    return [...this.#points].filter(([key]) => !this.#closed.has(key)).map(([, p]) => p.point);
  }

  jsonLines() {
    return this.estimates.map((line) => JSON.stringify(line)).join("\n") + "\n";
  }
}

export function assertVerdict(result, expected) {
  assert.ok(result, "serve printed no result line");
  const { truth, verdict } = result;
  assert.deepEqual(truth.refused, [], "serve refused requests: the client left the script");
  assert.equal(truth.unplayed, 0, "calls of the script were never asked for");
  assert.equal(truth.unfaulted, 0, "queries did not come through serve's CLI wrapper (cli_path)");
  assert.ok(verdict, "no verdict: run serve with --judge FILE");
  assert.equal(verdict.ok, expected.ok, `${verdict.summary}; off at ${verdict.failures.map((f) => f.point).join(", ")}`);
  if (!expected.ok && expected.firstFailure !== undefined) assert.equal(verdict.failures[0]?.point, expected.firstFailure);
  if (!expected.ok && expected.cause !== undefined) {
    assert.match(verdict.failures[0]?.cause ?? "", expected.cause, JSON.stringify(verdict.failures));
  }
}
