// The whole agent through `ctxsim serve` on the shapes the live CLI makes itself: a /compact, a subagent (in the
// scenario's live twin), a stream fault applied by serve's CLI wrapper; and a planted summing bug judged wrong, with
// its likely cause. The agent maps the SDK's messages to serve's points with ctxsim-client, which also points serve's
// CLI wrapper at the SDK's own CLI without being told.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { runAgent } from "../src/agent.mjs";
import { PointMatcher, assertVerdict, serve } from "ctxsim-client";
import { ROOT } from "../fixtures/ctxsim.mjs";

// The release of the CLI the SDK carries, read from its package: the one that must play behind serve's wrapper.
const SDK_CLI_VERSION = JSON.parse(fs.readFileSync(
  path.join(ROOT, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json"), "utf8")).claudeCodeVersion;

/** A tracker with the bug most gauges had first: the usage of every assistant message summed. */
class SumsEveryMessage {
  total = 0;
  observe(m) {
    const u = m.type === "assistant" ? m.message?.usage : null;
    if (u) this.total += u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens;
  }
  contextTokens() { return this.total || null; }
}

async function played(scenario, tracker) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ctxsim-ts-served-"));
  const server = await serve(scenario, { projectDir: ROOT, env: { CTXSIM_CLI: "" } });  // nobody names the CLI
  try {
    const { settings } = server;
    for (const sub of ["home", "project"]) fs.mkdirSync(path.join(dir, sub));
    const truth = await server.truth();
    const run = await runAgent({
      prompts: settings.prompts, model: settings.model, cwd: path.join(dir, "project"), tracker,
      includePartialMessages: settings.include_partial_messages, permissionMode: settings.permission_mode,
      pathToClaudeCodeExecutable: settings.cli_path,
      env: server.cliEnv({ HOME: path.join(dir, "home") }),
    });
    const init = run.messages.find((m) => m.type === "system" && m.subtype === "init");
    const matcher = new PointMatcher(truth);
    run.messages.forEach((message, i) => matcher.observe(message, run.estimates[i]));
    const result = await server.judge(matcher);
    return { result, missing: matcher.missing(), settings, stderr: result.stderr, version: init?.claude_code_version };
  } finally {
    server.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

for (const [scenario, shape] of [["statusline-stuck-after-compact", "a /compact"],
                                 ["compaction", "an automatic compaction, asked for in its live twin"],
                                 ["b19-subagent-line-as-latest", "a subagent, in its live twin"],
                                 ["b25-error-result-zeroed-usage", "a stream fault, through serve's wrapper"]]) {
  test(`the agent's tracker is right on ${scenario} (${shape}) through ctxsim serve`, async () => {
    const { result, missing, stderr, settings, version } = await played(scenario);
    if (missing.length) throw new Error(`points never reached: ${missing.join(", ")}\n${stderr}`);
    assertVerdict(result, { ok: true });
    if (settings.cli_path) assert.equal(version, SDK_CLI_VERSION, "the SDK's own CLI played behind serve's wrapper");
    assert.doesNotMatch(stderr, /CTXSIM_CLI/, "serve did not fall back to the CLI bundled with the Python SDK");
  });
}

test("a tracker that sums every message is judged wrong through ctxsim serve, with its likely cause", async () => {
  const { result, settings } = await played("b19-subagent-line-as-latest", new SumsEveryMessage());
  if (!settings.twin) throw new Error("b19 is played as its live twin");
  assertVerdict(result, { ok: false, firstFailure: "q2 call 1", cause: /running total/ });
});
