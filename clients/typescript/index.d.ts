// Types of ctxsim-client (index.mjs): what `ctxsim serve SCENARIO --json` prints and answers, and the client's API.

/** The name of the Agent SDK's npm package, whose own CLI the client names to serve. */
export declare const SDK_PACKAGE: "@anthropic-ai/claude-agent-sdk";

/** An error of this client: its message is one line starting `ctxsim:`. */
export declare class CtxsimError extends Error {
  constructor(message: string);
}

/** The first line `ctxsim serve --json` prints: what a client of the real CLI needs to play the scenario. */
export interface ServeSettings {
  scenario: string;
  /** The CLI's environment: the fake API's URL and key, traffic off, and where serve steers the CLI (its window,
   *  CLAUDE_CODE_AUTO_COMPACT_WINDOW, CLAUDE_CONFIG_DIR, PATH to the wrapper). The SDK's `env` replaces the
   *  CLI's environment: Served.cliEnv() adds PATH and HOME. */
  env: Record<string, string>;
  /** The model id that gives the CLI the scenario's window (`[1m]` for 1,000,000). */
  model: string;
  /** One per query, each sent once the previous query's result came. */
  prompts: string[];
  include_partial_messages: boolean;
  /** The scenario's tool calls are inert (`true`, a file that does not exist): serve has the CLI run them all. */
  permission_mode: "bypassPermissions";
  truth_url: string;
  /** What a tracker may know of its world (CTXSIM_WINDOW, CTXSIM_USAGE, ...), as for stream: trackers. */
  world: Record<string, string>;
  /** The CLI to run in place of `claude` (the SDK's pathToClaudeCodeExecutable): it runs the real CLI (the one
   *  named in CTXSIM_CLI, else the one bundled with ctxsim's Python SDK) and applies the scenario's stream faults,
   *  or ends turns with a hook. */
  cli_path?: string;
  /** Present when serve plays the scenario's live twin: what it changed for this scenario. */
  twin?: string;
}

/** What closes an observation point in the stream the client reads, counted from the start of query `query`. */
export type PointAfter =
  | { type: "assistant"; query: number; message_id: string; n: number }
  | { type: "result"; query: number }
  | { type: "compact_boundary"; query: number; n: number }
  | { type: "stream_event"; event: "message_stop"; query: number; n: number }
  | { type: "conversation_reset"; query: number; n: number };

/** The truth at one observation point: a tracker is right within `low`..`high` (± the scenario's tolerance). */
export interface TruthPoint {
  index: number;
  point: string;
  kind: string;
  after: PointAfter;
  low: number;
  high: number;
  knowable: boolean;
  /** After a compaction: the band of estimates the stream allows (the boundary's post_tokens plus the prefix). */
  estimated?: [number, number];
}

/** What GET truth_url answers, and the `truth` of the last line serve prints. */
export interface Truth {
  scenario: string;
  tolerance: number;
  window: number;
  requests: number;
  /** Every request serve refused (the client left the script): serve exits 1 when there is any. */
  refused: string[];
  /** Calls of the script no request asked for. */
  unplayed: number;
  /** Queries whose frames did not come through the wrapper (so without the scenario's faults). */
  unfaulted: number;
  points: TruthPoint[];
}

/** One line of the file `ctxsim serve --judge FILE` reads. */
export interface Estimate { point: string; estimate: number | null }

/** One point where the tracker is off, with its likely cause. */
export interface VerdictFailure {
  index: number; point: string; estimate: number | null; low: number; high: number; cause: string | null;
}

/** ctxsim's verdict on the estimates (`ok`: right at every point). */
export interface Verdict {
  ok: boolean; status: string; summary: string; cause: string | null;
  first: { index: number; point: string } | null;
  failures: VerdictFailure[];
}

/** The last line `ctxsim serve --json --judge FILE` prints. */
export interface ServeResult {
  truth: Truth;
  verdict?: Verdict;
}

/** What Served.stop() and Served.judge() resolve to: serve's exit status, the end of its stderr and its last line
 *  (absent when it printed none: see `stderr`). */
export interface ServeOutcome extends Partial<ServeResult> {
  status: number | null;
  stderr: string;
  scenario: string;
}

/** The CLI an Agent SDK carries. */
export interface SdkCli {
  /** The CLI: a native binary (a platform package's `claude`), or a script (`cli.js`) when `script`. */
  path: string;
  script: boolean;
  /** The SDK's version, and the Claude Code version it says it carries (`claudeCodeVersion`), where it says. */
  sdkVersion: string | null;
  version: string | null;
}

/** The ctxsim command: $CTXSIM, else `ctxsim` on PATH; throws a CtxsimError saying how to get it. */
export declare function findCtxsim(env?: Record<string, string | undefined>): string;

/** The CLI the project's @anthropic-ai/claude-agent-sdk carries (resolved from `projectDir`, default the current
 *  directory, as the SDK resolves it), or null. */
export declare function sdkCli(options?: {
  projectDir?: string; platform?: string; arch?: string; musl?: boolean;
}): SdkCli | null;

export interface ServeOptions {
  /** The ctxsim command (default: findCtxsim()). */
  ctxsim?: string;
  /** Where serve runs and the SDK is resolved from (default: the current directory). */
  projectDir?: string;
  /** Variables added to serve's environment (this process's, else). */
  env?: Record<string, string>;
  /** The CLI for serve's wrapper, named in CTXSIM_CLI: default the SDK's own (sdkCli()); false: none (serve's
   *  wrapper then runs the CLI bundled with ctxsim's Python SDK, and says so). A CTXSIM_CLI already set wins. */
  cli?: string | false;
  /** Serve judges the estimates judge() writes (default true). */
  judge?: boolean;
  /** Milliseconds serve may take to print its settings (default 60,000). */
  startTimeoutMs?: number;
  /** Seconds serve serves at most (its --timeout; default 600). */
  serveTimeoutS?: number;
  /** Milliseconds serve may take to exit once stopped (default 60,000). */
  stopTimeoutMs?: number;
  /** More arguments for `ctxsim serve`. */
  args?: string[];
}

/** A running `ctxsim serve`. */
export declare class Served {
  readonly settings: ServeSettings;
  /** The file serve judges (null: started with judge false). */
  readonly estimatesPath: string | null;
  /** The CLI named to serve in CTXSIM_CLI (null: none). */
  readonly cli: string | null;
  /** The SDK's CLI, where the client found it. */
  readonly sdk: SdkCli | null;
  /** The truth at every point (GET truth_url), bounded. */
  truth(options?: { timeoutMs?: number }): Promise<Truth>;
  /** The CLI's whole environment for the SDK's `env`: PATH, HOME, CTXSIM_CLI, serve's variables, `extra`. */
  cliEnv(extra?: Record<string, string>): Record<string, string>;
  /** The Agent SDK's options that play the scenario (model, env, permission mode, partial messages, no settings
   *  files, pathToClaudeCodeExecutable where serve hands out its wrapper), `extra` last. */
  sdkOptions<T extends object = {}>(extra?: T): {
    model: string; env: Record<string, string>; permissionMode: "bypassPermissions";
    allowDangerouslySkipPermissions: boolean; includePartialMessages: boolean; settingSources: []; pathToClaudeCodeExecutable?: string;
  } & T;
  /** Writes the estimates file serve judges. */
  writeEstimates(estimates: PointMatcher | Estimate[]): void;
  /** Writes the estimates, stops serve, resolves to its truth and verdict. */
  judge(estimates: PointMatcher | Estimate[]): Promise<ServeOutcome>;
  /** Stops serve (bounded) and removes what the client made; once. */
  stop(): Promise<ServeOutcome>;
  /** Ends serve at once and removes what the client made. */
  kill(): void;
}

/** Starts `ctxsim serve SCENARIO --json` (a bundled scenario's name, or a scenario file) and resolves once it
 *  printed its settings; a CtxsimError when it cannot start or prints none in time. */
export declare function serve(scenario: string, options?: ServeOptions): Promise<Served>;

/** An SDK message (any of what query() yields): the matcher reads its `type`, `subtype`, `message.id` and
 *  `event.type`. */
export interface SdkMessageLike {
  type: string;
  subtype?: string;
  message?: unknown;
  event?: unknown;
}

/** Maps the SDK's messages to serve's points: feed it every message with the tracker's estimate after it. */
export declare class PointMatcher {
  constructor(truth: Truth);
  /** The point `message` closes, with `estimate` (null or undefined: none). */
  observe(message: SdkMessageLike, estimate: number | null | undefined): Estimate | null;
  /** Every point closed so far, in order. */
  readonly estimates: Estimate[];
  /** The points of the truth no message closed. */
  missing(): string[];
  /** The estimates as the JSON lines `--judge FILE` reads. */
  jsonLines(): string;
}

/** Writes estimates as the JSON lines `--judge FILE` reads. */
export declare function writeEstimates(file: string, estimates: PointMatcher | Estimate[]): void;

/** For node:test: the run followed the script (nothing refused, unplayed or unfaulted) and the verdict is
 *  `expected` (default `{ok: true}`; `{ok: false, firstFailure, cause}` for a tracker that must fail). A failure
 *  is an AssertionError whose message names the scenario, the point and the likely cause. */
export declare function assertVerdict(
  result: ServeOutcome | ServeResult,
  expected?: { ok: true } | { ok: false; firstFailure?: string; cause?: RegExp }): void;
