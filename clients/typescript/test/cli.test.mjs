// Finding the ctxsim command, and the CLI the project's Agent SDK carries, as the SDK itself finds it.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { findCtxsim, sdkCli } from "../index.mjs";
import { fakeSdk, script, tempDir } from "./helpers.mjs";

test("ctxsim is $CTXSIM, else the first ctxsim on PATH, else a ctxsim: error saying how to get it", (t) => {
  const dir = tempDir(t);
  const bin = path.join(dir, "bin");
  fs.mkdirSync(bin);
  const found = script(bin, "ctxsim", "");
  assert.equal(findCtxsim({ PATH: [path.join(dir, "none"), bin].join(path.delimiter) }), found);
  assert.equal(findCtxsim({ CTXSIM: found, PATH: "" }), found);
  assert.throws(() => findCtxsim({ PATH: path.join(dir, "none") }),
                { name: "CtxsimError", message: /^ctxsim: the ctxsim command is not on PATH: install it .* set CTXSIM/ });
  fs.writeFileSync(path.join(dir, "plain"), "");
  assert.throws(() => findCtxsim({ CTXSIM: path.join(dir, "plain") }), /^CtxsimError: ctxsim: CTXSIM=.*plain is not an executable file$/);
});

test("the SDK's native CLI is its platform package's, musl's first on musl, as the SDK orders them", (t) => {
  const project = tempDir(t);
  const glibc = fakeSdk(project, { suffix: "linux-x64" });
  const musl = fakeSdk(project, { suffix: "linux-x64-musl" });
  const options = { projectDir: project, platform: "linux", arch: "x64" };
  assert.deepEqual(sdkCli({ ...options, musl: false }),
                   { path: fs.realpathSync(glibc), script: false, sdkVersion: "0.3.332", version: "2.1.332" });
  assert.equal(sdkCli({ ...options, musl: true }).path, fs.realpathSync(musl));
  assert.equal(sdkCli({ ...options, platform: "darwin", arch: "arm64" }), null);  // no package for that platform
});

test("an SDK that ships its CLI as cli.js names that script", (t) => {
  const project = tempDir(t);
  const cli = fakeSdk(project, { cliJs: true, claudeCodeVersion: "2.0.1" });
  assert.deepEqual(sdkCli({ projectDir: project }), { path: fs.realpathSync(cli), script: true, sdkVersion: "0.3.332",
                                                      version: "2.0.1" });
});

test("a project without the SDK has no SDK CLI", (t) => {
  const project = tempDir(t);
  fs.writeFileSync(path.join(project, "package.json"), "{}");
  const found = sdkCli({ projectDir: project });
  // this package's own place is the fallback: it has no SDK beside it in the repository
  assert.equal(found, null);
});

test("in the example agent's install (where npm installed it), the SDK's CLI is the release it says it carries", (t) => {
  const example = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname),
                               "..", "..", "..", "examples", "ts-agent");
  const found = sdkCli({ projectDir: example });
  if (found === null) return t.skip(`the Agent SDK is not installed in ${example} (npm ci there)`);
  const run = spawnSync(found.path, ["--version"], { encoding: "utf8", timeout: 30_000,
                                                    env: { ...process.env, DISABLE_AUTOUPDATER: "1" } });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout.split(/\s/)[0], found.version);
});
