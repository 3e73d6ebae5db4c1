// serve(): starting `ctxsim serve` (a stand-in for it here, and the real one where it is installed), bounded, its
// CLI wrapper pointed at the SDK's own CLI, the estimates written for --judge, and nothing left behind.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { assertVerdict, findCtxsim, serve } from "../index.mjs";
import { fakeSdk, script, tempDir } from "./helpers.mjs";

// A stand-in for ctxsim serve (its stop handled before it prints, as serve's is): prints settings that echo its arguments and CTXSIM_CLI, then on SIGTERM a result
// that echoes the estimates file it was told to judge.
const STAND_IN = `
import fs from "node:fs";
const args = process.argv.slice(2);
const judge = args.includes("--judge") ? args[args.indexOf("--judge") + 1] : null;
process.on("SIGTERM", () => {
  const estimates = judge && fs.existsSync(judge) ? fs.readFileSync(judge, "utf8") : null;
  console.log(JSON.stringify({ truth: { scenario: args[1], refused: [], unplayed: 0, unfaulted: 0, points: [] },
                               verdict: { ok: true, summary: "ok", failures: [], estimates } }));
  process.exit(0);
});
console.log(JSON.stringify({ scenario: args[1], args, cli: process.env.CTXSIM_CLI ?? null, model: "m", prompts: ["Go"],
  env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: "http://127.0.0.1:9" }, include_partial_messages: false,
  permission_mode: "bypassPermissions", truth_url: "http://127.0.0.1:9/ctxsim/truth", world: {}, cli_path: "/w/claude" }));
setInterval(() => {}, 1000);
`;

test("serve names the SDK's own CLI in CTXSIM_CLI, hands it on in the SDK's options, and judges what judge() wrote",
     async (t) => {
  const project = tempDir(t);
  const native = fakeSdk(project, { suffix: `${process.platform}-${process.arch}` });
  fakeSdk(project, { suffix: `${process.platform}-${process.arch}-musl` });
  const ctxsim = script(project, "ctxsim", STAND_IN);
  const server = await serve("b01", { ctxsim, projectDir: project, env: { CTXSIM_CLI: "" } });
  const { settings } = server;
  assert.ok(settings.cli === fs.realpathSync(native) || settings.cli.endsWith("-musl/claude"), settings.cli);
  assert.equal(server.cli, settings.cli);
  assert.deepEqual(settings.args.slice(0, 5), ["serve", "b01", "--json", "--timeout", "600"]);
  const options = server.sdkOptions({ cwd: project });
  assert.equal(options.pathToClaudeCodeExecutable, "/w/claude");
  assert.equal(options.env.CTXSIM_CLI, settings.cli);
  assert.equal(options.env.ANTHROPIC_BASE_URL, "http://127.0.0.1:9");
  assert.equal(options.env.PATH, process.env.PATH);
  assert.equal(options.cwd, project);
  const estimates = server.estimatesPath;
  const outcome = await server.judge([{ point: "q1 call 1", estimate: 7 }]);
  assert.equal(outcome.status, 0);
  assert.equal(outcome.verdict.estimates, '{"point":"q1 call 1","estimate":7}\n');
  assertVerdict(outcome, { ok: true });
  assert.equal(fs.existsSync(path.dirname(estimates)), false, "the client's directory is removed");
  assert.equal(await server.stop(), outcome, "stopped once");
});

test("a CTXSIM_CLI already set is left as it is, and cli: false names none", async (t) => {
  const project = tempDir(t);
  fakeSdk(project, { suffix: `${process.platform}-${process.arch}` });
  const ctxsim = script(project, "ctxsim", STAND_IN);
  const mine = await serve("b01", { ctxsim, projectDir: project, env: { CTXSIM_CLI: "/my/claude" } });
  assert.equal(mine.settings.cli, "/my/claude");
  mine.kill();
  const none = await serve("b01", { ctxsim, projectDir: project, cli: false, env: { CTXSIM_CLI: "" } });
  assert.equal(none.settings.cli, null);
  assert.equal("CTXSIM_CLI" in none.sdkOptions().env, false);
  await none.stop();
});

test("an SDK whose CLI is a script without its mode bit is run by node through a runner removed at the end",
     async (t) => {
  const project = tempDir(t);
  fakeSdk(project, { cliJs: true, claudeCodeVersion: "2.0.9" });
  const ctxsim = script(project, "ctxsim", STAND_IN);
  const server = await serve("b01", { ctxsim, projectDir: project, env: { CTXSIM_CLI: "" } });
  const { execFileSync } = await import("node:child_process");
  assert.equal(execFileSync(server.cli, ["--version"], { encoding: "utf8" }), "2.0.9 (Claude Code)\n");
  await server.stop();
  assert.equal(fs.existsSync(server.cli), false);
});

test("a serve that exits before its settings, or prints none in time, is one ctxsim: error and is gone", async (t) => {
  const project = tempDir(t);
  const dies = script(project, "dies", 'console.error("ctxsim: serve: no scenario \'nope\'"); process.exit(2);');
  await assert.rejects(serve("nope", { ctxsim: dies, projectDir: project, cli: false }),
                       { name: "CtxsimError", message: /^ctxsim: ctxsim serve nope exited \(2\) before printing its settings: ctxsim: serve: no scenario 'nope'$/ });
  const pidFile = path.join(project, "pid");
  const silent = script(project, "silent", `import fs from "node:fs"; fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); setInterval(() => {}, 1000);`);
  const started = Date.now();
  await assert.rejects(serve("b01", { ctxsim: silent, projectDir: project, cli: false, startTimeoutMs: 1500 }),
                       { name: "CtxsimError", message: "ctxsim: ctxsim serve b01 printed no settings within 1500 ms" });
  assert.ok(Date.now() - started < 10_000);
  const pid = Number(fs.readFileSync(pidFile, "utf8"));
  await new Promise((r) => setTimeout(r, 200));
  assert.throws(() => process.kill(pid, 0), { code: "ESRCH" }, "the silent serve was killed");
  await assert.rejects(serve("b01", { ctxsim: path.join(project, "absent"), projectDir: project, cli: false }),
                       { name: "CtxsimError", message: /^ctxsim: cannot run .*absent: spawn .*ENOENT/ });
});

test("the real ctxsim serve: its truth, and a run that played nothing judged off the script", async (t) => {
  let ctxsim;
  try {
    ctxsim = findCtxsim();
  } catch (error) {
    return t.skip(error.message);
  }
  const server = await serve("b01-no-dedupe-without-request-id", { ctxsim, cli: false });
  try {
    const truth = await server.truth();
    assert.equal(truth.scenario, "b01-no-dedupe-without-request-id");
    assert.ok(truth.points.length > 0);
    const outcome = await server.judge(truth.points.map((p) => ({ point: p.point, estimate: p.low })));
    assert.equal(outcome.status, 1);  // nothing played: the script's calls were never asked for
    assert.equal(outcome.verdict.ok, true);
    assert.throws(() => assertVerdict(outcome), /^AssertionError.*b01-no-dedupe-without-request-id: 2 calls of the script were never asked for/);
  } finally {
    server.kill();
  }
});
