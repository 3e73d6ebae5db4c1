// Shared by the client's tests: temporary directories removed after each test, and a fake ctxsim command.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A temporary directory, removed when the test `t` ends. */
export function tempDir(t, prefix = "ctxsim-client-test-") {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** An executable node script at `dir/name` whose body is `body` (ES module). */
export function script(dir, name, body) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!${process.execPath}\n${body}\n`, { mode: 0o755 });
  return file;
}

/** The layout an Agent SDK installs in `project`: the package (its package.json and entry), and either a platform
 *  package with a native `claude` for `suffix` or a `cli.js` in the package itself. */
export function fakeSdk(project, { suffix = null, cliJs = false, claudeCodeVersion = "2.1.332" } = {}) {
  const sdk = path.join(project, "node_modules", "@anthropic-ai", "claude-agent-sdk");
  fs.mkdirSync(sdk, { recursive: true });
  fs.writeFileSync(path.join(project, "package.json"), JSON.stringify({ name: "project", private: true }));
  fs.writeFileSync(path.join(sdk, "package.json"), JSON.stringify({
    name: "@anthropic-ai/claude-agent-sdk", version: "0.3.332", type: "module",
    exports: { ".": { types: "./sdk.d.ts", default: "./sdk.mjs" } }, claudeCodeVersion }));
  fs.writeFileSync(path.join(sdk, "sdk.mjs"), "export {};\n");
  if (cliJs) {
    fs.writeFileSync(path.join(sdk, "cli.js"), `console.log("${claudeCodeVersion} (Claude Code)");\n`, { mode: 0o644 });
    return path.join(sdk, "cli.js");
  }
  if (suffix === null) return null;
  const platform = path.join(project, "node_modules", "@anthropic-ai", `claude-agent-sdk-${suffix}`);
  fs.mkdirSync(platform, { recursive: true });
  fs.writeFileSync(path.join(platform, "package.json"), JSON.stringify({ name: `@anthropic-ai/claude-agent-sdk-${suffix}` }));
  fs.writeFileSync(path.join(platform, "claude"), "#!/bin/sh\necho native\n", { mode: 0o755 });
  return path.join(platform, "claude");
}
