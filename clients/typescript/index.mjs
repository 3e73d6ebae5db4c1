// ctxsim-client: a TypeScript agent on @anthropic-ai/claude-agent-sdk under `ctxsim serve` (types: index.d.ts).
//
// serve() starts `ctxsim serve SCENARIO --json --judge FILE` and hands back its settings, as the SDK's options
// (sdkOptions()); PointMatcher maps the SDK's messages to serve's observation points; judge() writes the estimates
// and stops serve, which judges them; assertVerdict() is a node:test matcher for that verdict. The CLI that serve's
// wrapper runs is the SDK's own (sdkCli(): the one the project's @anthropic-ai/claude-agent-sdk carries), named to
// serve in CTXSIM_CLI unless CTXSIM_CLI is set already. Node's standard library only.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import readline from "node:readline";
import { fileURLToPath } from "node:url";

export const SDK_PACKAGE = "@anthropic-ai/claude-agent-sdk";

/** An error of this client: its message is one line starting `ctxsim:`. */
export class CtxsimError extends Error {
  constructor(message) {
    super(message.startsWith("ctxsim:") ? message : `ctxsim: ${message}`);
    this.name = "CtxsimError";
  }
}

function isExecutable(file) {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** The ctxsim command: $CTXSIM (a path), else `ctxsim` on PATH; a CtxsimError saying how to get it otherwise. */
export function findCtxsim(env = process.env) {
  if (env.CTXSIM) {
    if (!isExecutable(env.CTXSIM)) throw new CtxsimError(`ctxsim: CTXSIM=${env.CTXSIM} is not an executable file`);
    return env.CTXSIM;
  }
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir || ".", process.platform === "win32" ? "ctxsim.exe" : "ctxsim");
    if (isExecutable(candidate)) return candidate;
  }
  throw new CtxsimError("ctxsim: the ctxsim command is not on PATH: install it (pip install pytest-ctxsim) or set " +
                        "CTXSIM to its path");
}

function resolveFrom(from, specifier) {
  try {
    return createRequire(from).resolve(specifier);
  } catch {
    return null;
  }
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return {};
  }
}

/** Whether this Linux runs on musl (as the SDK decides which of its platform packages to try first). */
function onMusl() {
  const report = typeof process.report?.getReport === "function" ? process.report.getReport() : null;
  return report?.header?.glibcVersionRuntime === undefined;
}

/**
 * The Claude Code CLI that the project's @anthropic-ai/claude-agent-sdk carries, found as the SDK finds it: a script
 * inside the package (`cli.js`, older releases), else the native binary of its platform package
 * (`@anthropic-ai/claude-agent-sdk-<platform>-<arch>[-musl]/claude`). Resolved from `projectDir` (default: the
 * current directory), else from this package's own place. null: no SDK installed, or no CLI in it.
 */
export function sdkCli({ projectDir = process.cwd(), platform = process.platform, arch = process.arch,
                         musl } = {}) {
  const entry = resolveFrom(path.join(path.resolve(projectDir), "package.json"), SDK_PACKAGE)
    ?? resolveFrom(fileURLToPath(import.meta.url), SDK_PACKAGE);
  if (entry === null) return null;
  const dir = path.dirname(entry);
  const pkg = readJson(path.join(dir, "package.json"));
  const found = (file, script) => ({ path: file, script, sdkVersion: pkg.version ?? null,
                                     version: pkg.claudeCodeVersion ?? null });
  for (const name of ["cli.js", "cli.mjs"]) {
    if (fs.existsSync(path.join(dir, name))) return found(path.join(dir, name), true);
  }
  const exe = platform === "win32" ? ".exe" : "";
  const linux = (musl ?? (platform === "linux" && onMusl())) ? [`linux-${arch}-musl`, `linux-${arch}`]
    : [`linux-${arch}`, `linux-${arch}-musl`];
  for (const suffix of platform === "linux" ? linux : [`${platform}-${arch}`]) {
    const file = resolveFrom(entry, `${SDK_PACKAGE}-${suffix}/claude${exe}`);
    if (file !== null && fs.existsSync(file)) return found(file, false);
  }
  return null;
}

const shellQuote = (text) => `'${String(text).replaceAll("'", "'\\''")}'`;

/** An executable that runs the script `cli` with this node (a script shipped without its mode bit). */
function scriptRunner(cli, dir) {
  const file = path.join(dir, "claude-sdk-cli");
  fs.writeFileSync(file, `#!/bin/sh\nexec ${shellQuote(process.execPath)} ${shellQuote(cli)} "$@"\n`, { mode: 0o700 });
  return file;
}

function timeoutError(ms, what) {
  let timer;
  const promise = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new CtxsimError(`ctxsim: ${what} within ${ms} ms`)), ms);
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

const live = new Set();
let exitHook = false;
function removeOnExit(child) {
  live.add(child);
  if (!exitHook) {
    exitHook = true;
    process.on("exit", () => { for (const c of live) c.kill("SIGKILL"); });
  }
}

/**
 * Starts `ctxsim serve SCENARIO --json` and resolves, once serve printed its settings, to a Served. Bounded: serve
 * must print its settings within `startTimeoutMs` (default 60 s) and serves at most `serveTimeoutS` (default 600 s).
 * Unless `judge` is false, serve judges the estimates judge() writes. Unless CTXSIM_CLI is set (in `env`, else in
 * this process's environment) or `cli` is false, the CLI the project's Agent SDK carries (sdkCli()) is named to
 * serve in CTXSIM_CLI, so that its wrapper runs the SDK's own CLI and its truth is that release's.
 */
export async function serve(scenario, options = {}) {
  const { projectDir = process.cwd(), startTimeoutMs = 60_000, serveTimeoutS = 600, stopTimeoutMs = 60_000,
          judge = true, args = [] } = options;
  const env = { ...process.env, ...(options.env ?? {}) };
  const ctxsim = options.ctxsim ?? findCtxsim(env);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "ctxsim-client-"));
  let cli = env.CTXSIM_CLI || null;
  let sdk = null;
  try {
    if (!cli && options.cli !== false) {
      if (typeof options.cli === "string") {
        cli = options.cli;
      } else {
        sdk = sdkCli({ projectDir });
        if (sdk !== null) cli = sdk.script && !isExecutable(sdk.path) ? scriptRunner(sdk.path, dir) : sdk.path;
      }
    }
    if (cli) env.CTXSIM_CLI = cli;
    else delete env.CTXSIM_CLI;  // empty is unset, as for serve's wrapper
    const estimates = path.join(dir, "estimates.jsonl");
    const argv = ["serve", String(scenario), "--json", "--timeout", String(serveTimeoutS),
                  ...(judge ? ["--judge", estimates] : []), ...args];
    const child = spawn(ctxsim, argv, { cwd: projectDir, env, stdio: ["ignore", "pipe", "pipe"] });
    removeOnExit(child);
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => { stderr = (stderr + chunk).slice(-16_000); });
    const exited = new Promise((resolve) => {
      child.on("error", (error) => resolve({ error }));
      child.on("exit", (status, signal) => { live.delete(child); resolve({ status, signal }); });
    });
    const lines = readline.createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const wait = timeoutError(startTimeoutMs, `ctxsim serve ${scenario} printed no settings`);
    const died = async () => {
      const end = await exited;
      await new Promise((r) => setTimeout(r, 50));  // the rest of its stderr
      const said = stderr.trim() ? `: ${stderr.trim().split("\n").slice(-3).join(" | ")}` : "";
      throw new CtxsimError(end.error ? `ctxsim: cannot run ${ctxsim}: ${end.error.message}`
        : `ctxsim: ctxsim serve ${scenario} exited (${end.status ?? end.signal}) before printing its settings${said}`);
    };
    let first;
    try {
      first = await Promise.race([lines.next(), died(), wait.promise]);
      if (first.done) await died();
    } catch (error) {
      child.kill("SIGKILL");
      throw error;
    } finally {
      wait.cancel();
    }
    let settings;
    try {
      settings = JSON.parse(first.value);
    } catch {
      child.kill("SIGKILL");
      throw new CtxsimError(`ctxsim: ctxsim serve ${scenario} printed ${JSON.stringify(String(first.value).slice(0, 200))}` +
                            ` where its settings (one JSON line) were expected`);
    }
    return new Served({ child, lines, exited, settings, dir, estimates: judge ? estimates : null, cli, sdk,
                        stopTimeoutMs, stderr: () => stderr });
  } catch (error) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
}

/** A running `ctxsim serve`: its settings, its truth, the SDK's options to play it, and its stop. */
export class Served {
  #child; #lines; #exited; #dir; #stopTimeoutMs; #stderr; #stopped = null;

  constructor({ child, lines, exited, settings, dir, estimates, cli, sdk, stopTimeoutMs, stderr }) {
    this.#child = child;
    this.#lines = lines;
    this.#exited = exited;
    this.#dir = dir;
    this.#stopTimeoutMs = stopTimeoutMs;
    this.#stderr = stderr;
    this.settings = settings;
    this.estimatesPath = estimates;
    this.cli = cli;
    this.sdk = sdk;
  }

  /** The truth at every point (GET truth_url), bounded by `timeoutMs`. */
  async truth({ timeoutMs = 10_000 } = {}) {
    let response;
    try {
      response = await fetch(this.settings.truth_url, { headers: { "x-api-key": this.settings.env.ANTHROPIC_API_KEY },
                                                        signal: AbortSignal.timeout(timeoutMs) });
    } catch (error) {
      throw new CtxsimError(`ctxsim: ${this.settings.truth_url} did not answer within ${timeoutMs} ms: ${error.message}`);
    }
    if (!response.ok) throw new CtxsimError(`ctxsim: ${this.settings.truth_url} answered ${response.status}`);
    return response.json();
  }

  /** The CLI's whole environment for the SDK's `env` (which replaces it): PATH and HOME, serve's variables, the
   *  CLI for serve's wrapper (CTXSIM_CLI), and `extra`. */
  cliEnv(extra = {}) {
    return { PATH: process.env.PATH ?? "", ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
             ...(this.cli ? { CTXSIM_CLI: this.cli } : {}), ...this.settings.env, ...extra };
  }

  /** The Agent SDK's options that play the scenario: model, environment, permission mode, partial messages, no
   *  settings files, and serve's CLI wrapper where it hands one out; `extra` last. */
  sdkOptions(extra = {}) {
    const s = this.settings;
    return {
      model: s.model, env: this.cliEnv(), permissionMode: s.permission_mode,
      allowDangerouslySkipPermissions: s.permission_mode === "bypassPermissions",
      includePartialMessages: s.include_partial_messages, settingSources: [],
      ...(s.cli_path ? { pathToClaudeCodeExecutable: s.cli_path } : {}),
      ...extra,
    };
  }

  /** Writes the estimates file serve judges: a PointMatcher's estimates, or estimates as a list. */
  writeEstimates(estimates) {
    if (this.estimatesPath === null) throw new CtxsimError("ctxsim: serve was started with judge: false");
    writeEstimates(this.estimatesPath, estimates);
  }

  /** Writes `estimates` (a PointMatcher, or a list of {point, estimate}), stops serve and resolves to what it
   *  printed last: the truth and the verdict. */
  async judge(estimates) {
    this.writeEstimates(estimates);
    return this.stop();
  }

  /** Stops serve (SIGTERM; SIGKILL past `stopTimeoutMs`), removes what the client made, and resolves to
   *  {status, stderr, truth, verdict}: serve's exit status, the end of its stderr and its last line. Once. */
  stop() {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async #stop() {
    try {
      this.#child.kill("SIGTERM");
      const rest = [];
      const collect = (async () => { for await (const line of { [Symbol.asyncIterator]: () => this.#lines }) rest.push(line); })();
      const wait = timeoutError(this.#stopTimeoutMs, `ctxsim serve ${this.settings.scenario} did not exit`);
      try {
        await Promise.race([Promise.all([collect, this.#exited]), wait.promise]);
      } catch (error) {
        this.#child.kill("SIGKILL");
        throw error;
      } finally {
        wait.cancel();
      }
      const end = await this.#exited;
      const last = rest.filter((line) => line.trim()).at(-1);
      let printed = {};
      try {
        printed = last === undefined ? {} : JSON.parse(last);
      } catch {
        printed = {};
      }
      return { status: end.status ?? null, stderr: this.#stderr(), scenario: this.settings.scenario, ...printed };
    } finally {
      fs.rmSync(this.#dir, { recursive: true, force: true });
    }
  }

  /** Ends serve at once (SIGKILL) and removes what the client made; for a `finally`. */
  kill() {
    this.#child.kill("SIGKILL");
    fs.rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** The key of a point's `after`, as PointMatcher computes it from messages. */
function afterKey(after) {
  switch (after.type) {
    case "assistant": return `${after.query} assistant ${after.message_id} ${after.n}`;
    case "result": return `${after.query} result`;
    case "compact_boundary": return `${after.query} compact_boundary ${after.n}`;
    case "stream_event": return `${after.query} message_stop ${after.n}`;
    case "conversation_reset": return `${after.query} conversation_reset ${after.n}`;
    default: return `unknown ${JSON.stringify(after)}`;
  }
}

/** Maps the SDK's messages to serve's observation points (the truth's `after`): feed it every message, in order,
 *  with the tracker's estimate after it. */
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
    if (m.type === "conversation_reset") return `${q} conversation_reset ${this.#count("r")}`;
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
    const line = { point: point.point, estimate: estimate ?? null };
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

/** Writes `estimates` (a PointMatcher, or a list of {point, estimate}) as the JSON lines `--judge FILE` reads. */
export function writeEstimates(file, estimates) {
  const lines = estimates instanceof PointMatcher ? estimates.estimates : estimates;
  if (!Array.isArray(lines)) throw new CtxsimError("ctxsim: estimates are a PointMatcher or a list of {point, estimate}");
  fs.writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n");
}

const count = (n) => (typeof n === "number" ? n.toLocaleString("en-US") : String(n));

function fail(message) {
  throw new assert.AssertionError({ message, operator: "assertVerdict" });
}

/** For node:test: the run followed the script (nothing refused, unplayed or unfaulted) and the verdict is
 *  `expected`. A failure's message names the scenario, the point and the likely cause. */
export function assertVerdict(result, expected = { ok: true }) {
  if (!result || !result.truth) {
    fail(`ctxsim: serve printed no truth (exit ${result?.status}): ${(result?.stderr ?? "").trim().split("\n").slice(-3).join(" | ")}`);
  }
  const { truth, verdict } = result;
  const scenario = truth.scenario;
  if (truth.refused.length) fail(`ctxsim: ${scenario}: serve refused requests (the client left the script): ${truth.refused.join(" | ")}`);
  if (truth.unplayed) fail(`ctxsim: ${scenario}: ${truth.unplayed} calls of the script were never asked for (the client stopped early)`);
  if (truth.unfaulted) fail(`ctxsim: ${scenario}: ${truth.unfaulted} queries did not come through serve's CLI wrapper (pass cli_path as pathToClaudeCodeExecutable)`);
  if (!verdict) fail(`ctxsim: ${scenario}: no verdict: serve judges the estimates of judge() (serve({judge: true}))`);
  const first = verdict.failures[0];
  const at = (f) => `${f.point} (estimate ${f.estimate === null ? "none" : count(f.estimate)}, truth ${count(f.low)}..${count(f.high)})` +
    `: ${f.cause ?? "no likely cause named"}`;
  if (expected.ok && !verdict.ok) {
    fail(`ctxsim: ${scenario}: the tracker is off at ${first ? at(first) : "no point"}; ${verdict.summary}`);
  }
  if (!expected.ok && verdict.ok) fail(`ctxsim: ${scenario}: the tracker was to be off, and it is right at every point`);
  if (!expected.ok && expected.firstFailure !== undefined && first?.point !== expected.firstFailure) {
    fail(`ctxsim: ${scenario}: the tracker was to be off first at ${expected.firstFailure}, and is first off at ${at(first)}`);
  }
  if (!expected.ok && expected.cause !== undefined && !expected.cause.test(first?.cause ?? "")) {
    fail(`ctxsim: ${scenario}: at ${first.point} the likely cause was to match ${expected.cause}, and is: ${first.cause ?? "none named"}`);
  }
}
