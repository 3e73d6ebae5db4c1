// Buggy on purpose: sums the usage of every assistant message it sees.
import readline from "node:readline";
let total = 0;
for await (const line of readline.createInterface({ input: process.stdin })) {
  const m = JSON.parse(line);
  const u = m.type === "assistant" ? m.message?.usage : null;
  if (u) total += (u.input_tokens ?? 0) + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
  console.log(total || "null");
}
