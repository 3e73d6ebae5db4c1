// Types of what `ctxsim serve SCENARIO --json` prints and answers, and of the helpers in ctxsim-serve.mjs.

/** The first line `ctxsim serve --json` prints: what a client of the real CLI needs to play the scenario. */
export interface ServeSettings {
  scenario: string;
  /** The CLI's environment: the fake API's URL and key, traffic off, and where serve steers the CLI (its window,
   *  CLAUDE_CODE_AUTO_COMPACT_WINDOW, CLAUDE_CONFIG_DIR, PATH to the wrapper). The TS SDK's `env` replaces the
   *  CLI's environment: pass these with your own PATH and HOME. */
  env: Record<string, string>;
  /** The model id that gives the CLI the scenario's window (`[1m]` for 1,000,000). */
  model: string;
  /** One per query, each sent once the previous query's result came. */
  prompts: string[];
  include_partial_messages: boolean;
  permission_mode: string;
  truth_url: string;
  /** What a tracker may know of its world (CTXSIM_WINDOW, CTXSIM_USAGE, ...), as for stream: trackers. */
  world: Record<string, string>;
  /** The CLI to run in place of `claude` (the TS SDK's pathToClaudeCodeExecutable): it runs the real CLI (the one in
   *  the CTXSIM_CLI variable, else ctxsim's) and applies the scenario's stream faults, or ends turns with a hook. */
  cli_path?: string;
  /** Present when serve plays the scenario's live twin (queries split where the CLI ends a turn): what changed. */
  twin?: string;
}

/** What closes an observation point in the stream the client reads, counted from the start of query `query`. */
export type PointAfter =
  | { type: "assistant"; query: number; message_id: string; n: number }
  | { type: "result"; query: number }
  | { type: "compact_boundary"; query: number; n: number }
  | { type: "stream_event"; event: "message_stop"; query: number; n: number }
  | { type: "system"; subtype: "init"; query: number; n: number };

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

/** The last line `ctxsim serve --json --judge FILE` prints. */
export interface ServeResult {
  truth: Truth;
  verdict?: {
    ok: boolean; status: string; summary: string; cause: string | null;
    first: { index: number; point: string } | null;
    failures: { index: number; point: string; estimate: number | null; low: number; high: number; cause: string | null }[];
  };
}

/** An SDK message, as far as the matcher reads it. */
export interface SdkMessageLike {
  type: string;
  subtype?: string;
  message?: { id?: string };
  event?: { type?: string };
}

/** Maps the SDK's messages to serve's points: feed it every message with the tracker's estimate after it. */
export declare class PointMatcher {
  constructor(truth: Truth);
  /** The point `message` closes, with `estimate` (null: none). */
  observe(message: SdkMessageLike, estimate: number | null): Estimate | null;
  /** Every point closed so far, in order. */
  readonly estimates: Estimate[];
  /** The points of the truth no message closed. */
  missing(): string[];
  /** The estimates as the JSON lines `--judge FILE` reads. */
  jsonLines(): string;
}

/** For node --test: the run followed the script (nothing refused, unplayed or unfaulted) and the verdict is
 *  `expected` (`{ok: true}`, or `{ok: false, firstFailure, cause}` for a tracker that must fail). */
export declare function assertVerdict(
  result: ServeResult, expected: { ok: true } | { ok: false; firstFailure?: string; cause?: RegExp }): void;
