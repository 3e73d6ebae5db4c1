#!/usr/bin/env node
// The tracker speaking ctxsim's stream tracker protocol: one JSON message a line in, one estimate (or null) a line out.
//   ctxsim judge "stream:node src/stream-tracker.mjs"
import readline from "node:readline";
import { ContextTracker } from "./context-tracker.mjs";

const tracker = new ContextTracker({ inclusive: process.env.CTXSIM_USAGE === "inclusive" });
for await (const line of readline.createInterface({ input: process.stdin })) {
  tracker.observe(JSON.parse(line));
  process.stdout.write(`${JSON.stringify(tracker.contextTokens())}\n`);
}
