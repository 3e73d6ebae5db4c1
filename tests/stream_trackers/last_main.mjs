// The last main-chain assistant message's prompt: input + cache creation + cache read.
import readline from "node:readline";
let estimate = null;
for await (const line of readline.createInterface({ input: process.stdin })) {
  const m = JSON.parse(line);
  const u = m.type === "assistant" && m.parent_tool_use_id === null ? m.message?.usage : null;
  if (u) estimate = (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
  console.log(JSON.stringify(estimate));
}
