// The whole agent, played by the SDK's own CLI against `ctxsim serve`: its tracker judged at every observation point.
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { runAgent } from "../src/agent.mjs";
import { PointMatcher, serve } from "ctxsim-client";
import { ROOT } from "../fixtures/ctxsim.mjs";

// The CLI the SDK carries (a platform package of the same release): the one the agent must have started.
const SDK_CLI = JSON.parse(fs.readFileSync(
  path.join(ROOT, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json"), "utf8")).claudeCodeVersion;

for (const scenario of ["b01-no-dedupe-without-request-id", "b14-resume-invalidates-cache",
                        "seed003-cache-read-already-in-input"]) {
  test(`the agent plays ${scenario} through ctxsim serve and its tracker is right at every point`, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ctxsim-ts-agent-"));
    const server = await serve(scenario, { projectDir: ROOT });
    try {
      const { settings } = server;
      for (const sub of ["home", "project"]) fs.mkdirSync(path.join(dir, sub));
      const run = await runAgent({
        prompts: settings.prompts, model: settings.model, cwd: path.join(dir, "project"),
        includePartialMessages: settings.include_partial_messages, permissionMode: settings.permission_mode,
        window: Number(settings.world.CTXSIM_WINDOW), inclusive: settings.world.CTXSIM_USAGE === "inclusive",
        env: server.cliEnv({ HOME: path.join(dir, "home") }),
      });
      assert.equal(run.turns.length, settings.prompts.length);
      const init = run.messages.find((m) => m.type === "system" && m.subtype === "init");
      assert.equal(init.claude_code_version, SDK_CLI, "the SDK's own CLI played it");
      assert.ok(run.turns.every((turn) => !turn.isError), JSON.stringify(run.turns));
      const truth = await server.truth();
      const matcher = new PointMatcher(truth);
      run.messages.forEach((message, i) => matcher.observe(message, run.estimates[i]));
      assert.deepEqual(matcher.estimates.map((l) => l.point), truth.points.map((p) => p.point),
                       "every point was reached");
      const { status, truth: served, verdict, stderr } = await server.judge(matcher);
      assert.deepEqual(served.refused, [], "the CLI made no request the script does not have");
      assert.equal(verdict.ok, true, `${verdict.summary}\n${stderr}`);
      assert.equal(status, 0);
    } finally {
      server.kill();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
