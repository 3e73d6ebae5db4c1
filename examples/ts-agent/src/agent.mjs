// A small agent on @anthropic-ai/claude-agent-sdk that watches its own context.
//
// runAgent() sends its prompts one after another in one session (streaming input: one CLI process for all of
// them), feeds every message the SDK yields to its ContextTracker, and after each turn says how full the context is
// and whether it would wind down (past `windDownAt` of the window: a real agent would checkpoint and restart there).
import { query } from "@anthropic-ai/claude-agent-sdk";
import { ContextTracker } from "./context-tracker.mjs";

/**
 * @param {object} o
 * @param {string[]} o.prompts        one per turn, each sent once the previous turn's result came
 * @param {Record<string,string>} o.env   the CLI's whole environment (the SDK's `env` replaces it: include PATH)
 * @param {string} o.model
 * @param {string} o.cwd
 * @param {number} [o.window]         the context window in tokens (default 200,000)
 * @param {boolean} [o.inclusive]     the provider's input_tokens already holds the cache counts (a gateway)
 * @param {number} [o.windDownAt]     the share of the window past which the agent winds down (default 0.8)
 * @param {boolean} [o.includePartialMessages]
 * @param {string} [o.permissionMode]
 * @param {number} [o.timeoutMs]      the whole run's bound (default 120 s): past it the run is aborted
 * @param {string} [o.pathToClaudeCodeExecutable]  the CLI to start (ctxsim serve's cli_path; default: the SDK's own)
 * @param {{observe(m: object): void, contextTokens(): number|null}} [o.tracker]  default: a ContextTracker
 * @returns {Promise<{messages: object[], estimates: (number|null)[], turns: object[]}>}
 *   every message the SDK yielded, the tracker's estimate after each, and one summary per turn
 */
export async function runAgent(o) {
  const tracker = o.tracker ?? new ContextTracker({ inclusive: o.inclusive ?? false });
  const window = o.window ?? 200_000;
  const windDownAt = o.windDownAt ?? 0.8;
  const abortController = new AbortController();
  const stderr = [];
  const timer = setTimeout(() => abortController.abort(), o.timeoutMs ?? 120_000);
  let turnEnded = () => {};
  async function* prompts() {
    for (const text of o.prompts) {
      const ended = new Promise((resolve) => { turnEnded = resolve; });
      yield { type: "user", message: { role: "user", content: text }, parent_tool_use_id: null, session_id: "" };
      await ended;
    }
  }
  const messages = [];
  const estimates = [];
  const turns = [];
  try {
    const run = query({
      prompt: prompts(),
      options: {
        model: o.model, cwd: o.cwd, env: o.env, settingSources: [], abortController,
        permissionMode: o.permissionMode ?? "bypassPermissions",
        allowDangerouslySkipPermissions: (o.permissionMode ?? "bypassPermissions") === "bypassPermissions",
        includePartialMessages: o.includePartialMessages ?? false,
        ...(o.pathToClaudeCodeExecutable ? { pathToClaudeCodeExecutable: o.pathToClaudeCodeExecutable } : {}),
        stderr: (line) => { stderr.push(line); if (stderr.length > 50) stderr.shift(); },
      },
    });
    for await (const message of run) {
      tracker.observe(message);
      const estimate = tracker.contextTokens();
      messages.push(message);
      estimates.push(estimate);
      if (message.type === "result") {
        const share = estimate === null ? null : estimate / window;
        turns.push({ turn: turns.length + 1, context: estimate, share, windDown: share !== null && share >= windDownAt,
                     isError: message.is_error });
        if (turns.length === o.prompts.length) break;
        turnEnded();
      }
    }
  } catch (error) {
    const tail = stderr.slice(-5).join(" | ");
    throw new Error(`the agent's run failed: ${error.message}${tail ? ` (CLI stderr: ${tail})` : ""}`);
  } finally {
    clearTimeout(timer);
    turnEnded();
  }
  if (turns.length !== o.prompts.length) {
    throw new Error(`the agent's run ended after ${turns.length} of ${o.prompts.length} turns`);
  }
  return { messages, estimates, turns };
}
