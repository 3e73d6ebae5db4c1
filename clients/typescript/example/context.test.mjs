// test/context.test.mjs: one ctxsim scenario played by the Agent SDK's own CLI, the tracker judged at every point.
import { test } from "node:test";
import { query } from "@anthropic-ai/claude-agent-sdk";
import { PointMatcher, assertVerdict, serve } from "ctxsim-client";

test("the tracker is right at every point of missing-usage-some-blocks", async () => {
  const server = await serve("missing-usage-some-blocks");  // ctxsim serve, the SDK's CLI behind its wrapper
  try {
    const matcher = new PointMatcher(await server.truth());
    let tokens = null;  // the tracker under test: the last main-chain call's usage
    for await (const m of query({ prompt: server.settings.prompts[0], options: server.sdkOptions() })) {
      const u = m.type === "assistant" && !m.parent_tool_use_id ? m.message.usage : null;
      if (u) tokens = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
      matcher.observe(m, tokens);
    }
    assertVerdict(await server.judge(matcher), { ok: true });
  } finally {
    server.kill();
  }
});
