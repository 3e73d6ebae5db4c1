// The agent's own context tracker: how many tokens the main conversation holds, read from the messages
// @anthropic-ai/claude-agent-sdk yields (the CLI's stream-json objects), the way Claude Code's /context counts them.
//
//   - a snapshot, not a sum: the latest main-chain call's input + cache creation + cache read;
//   - one call counts once (its per-block messages share message.id; a replay of an earlier call changes nothing);
//   - subagents (parent_tool_use_id set) and synthetic error messages (model "<synthetic>") never move it;
//   - the final output, when a message_delta stream event says it, is added (assigned, never summed);
//   - after a compact_boundary: post_tokens plus the system prefix (the first call's cache read, at most 30,000);
//   - a usage that is there but unreadable makes the context unknown (null) until a readable call;
//   - a new conversation (/clear, a new session id) makes it unknown until the next call.
//
// The provider's usage convention comes from the environment: CTXSIM_USAGE=inclusive for a gateway whose
// input_tokens already holds the cache counts (ctxsim sets it; an agent sets it from its own configuration).

const MAX_PROMPT_FIELD = 100_000_000;
const MAX_OUTPUT_TOKENS = 1_000_000;
const MAX_SYSTEM_PREFIX = 30_000;
const SYNTHETIC_MODEL = "<synthetic>";
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;
const FIELDS = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"];

/** A token count, or null when the value is none (absent, negative, not finite, not a number). */
function tokenCount(value) {
  if (typeof value === "boolean" || value === null || value === undefined) return null;
  const n = typeof value === "string" ? (DECIMAL.test(value) ? Number(value) : NaN) : value;
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? Math.trunc(n) : null;
}

/** The part of a usage that occupies the context: the last "message" iteration when there are several. */
function occupying(usage) {
  const its = Array.isArray(usage.iterations)
    ? usage.iterations.filter((it) => it && typeof it === "object" && (it.type ?? "message") === "message") : [];
  return its.length ? its[its.length - 1] : usage;
}

/** The prompt a usage reports (null: it says nothing usable). */
export function promptTokens(usage, inclusive = false) {
  if (!usage || typeof usage !== "object" || Array.isArray(usage)) return null;
  let u = "iterations" in usage ? occupying(usage) : usage;
  if (inclusive && "input_tokens" in u) u = { input_tokens: u.input_tokens };
  const raw = FIELDS.map((k) => u[k]);
  const counts = raw.map(tokenCount);
  if (raw.some((v, i) => (v !== undefined && v !== null && counts[i] === null) || counts[i] > MAX_PROMPT_FIELD)) {
    return null; // a field is there but is not a count: a partial sum would be a wrong number
  }
  if (raw[0] === null && "input_tokens" in u) return null;
  let [uncached, created, read] = counts;
  if (!created && u.cache_creation && typeof u.cache_creation === "object") {
    const parts = Object.values(u.cache_creation).map(tokenCount).filter((p) => p !== null);
    if (parts.length) created = parts.reduce((a, b) => a + b, 0) || created;
  }
  const known = [uncached, created, read].filter((v) => v !== null);
  const sum = known.reduce((a, b) => a + b, 0);
  return known.length && sum ? sum : null;
}

function allZero(usage) {
  return !!usage && typeof usage === "object" && FIELDS.every((k) => usage[k] === 0);
}

export class ContextTracker {
  constructor({ inclusive = false } = {}) {
    this.inclusive = inclusive;
    this.seen = new Set(); // "id\0prompt" of every call seen
    this.ids = new Set();
    this.latest = null;
    this.prompt = null;
    this.output = null;
    this.first = null; // [cache read, prompt] of the first main-chain call
    this.sessionId = null;
  }

  /** Tokens in the main context now, or null while unknown. */
  contextTokens() {
    if (this.prompt === null) return null;
    return this.output !== null ? this.prompt + this.output : this.prompt;
  }

  /** Take one message the SDK yielded into account. */
  observe(m) {
    if (!m || typeof m !== "object") return;
    if (m.type === "assistant") {
      const message = m.message ?? {};
      if (m.parent_tool_use_id == null && message.model !== SYNTHETIC_MODEL) {
        this.call(message.id, message.usage);
      }
    } else if (m.type === "stream_event") {
      if (m.parent_tool_use_id == null && m.event && typeof m.event === "object") this.streamEvent(m.event);
    } else if (m.type === "system") {
      if (m.subtype === "compact_boundary") this.compacted(m.compact_metadata ?? m.compactMetadata ?? {});
      else if (m.subtype === "init" && typeof m.session_id === "string" && m.session_id) {
        if (this.sessionId !== null && m.session_id !== this.sessionId) this.forget();
        this.sessionId = m.session_id;
      }
    } else if (m.type === "conversation_reset") {
      this.forget();
    }
  }

  forget() {
    this.latest = null;
    this.prompt = null;
    this.output = null;
  }

  systemPrefix() {
    if (this.first === null) return null;
    const [cached, prompt] = this.first;
    return Math.min(cached || prompt, MAX_SYSTEM_PREFIX);
  }

  call(id, usage) {
    const prompt = promptTokens(usage, this.inclusive);
    const key = typeof id === "string" && id ? id : null;
    if (prompt === null) {
      if (key !== null && key !== this.latest && !this.ids.has(key) && !allZero(usage)) {
        this.ids.add(key); // a new call whose size cannot be read: unknown until the next one
        this.latest = key;
        this.prompt = null;
        this.output = null;
      }
      return;
    }
    if (key !== null) {
      this.ids.add(key);
      const seen = `${key}\0${prompt}`;
      if (this.seen.has(seen)) {
        if (key !== this.latest || prompt !== this.prompt) return; // a replay of an earlier call
      } else {
        this.seen.add(seen);
      }
    }
    if (key !== this.latest || prompt !== this.prompt) this.output = null;
    this.latest = key;
    this.prompt = prompt;
    if (this.first === null) this.first = [tokenCount(occupying(usage).cache_read_input_tokens) ?? 0, prompt];
  }

  streamEvent(event) {
    if (event.type === "message_start" && event.message && typeof event.message === "object") {
      this.call(event.message.id, event.message.usage);
    } else if (event.type === "message_delta" && event.usage && typeof event.usage === "object") {
      const output = tokenCount(event.usage.output_tokens);
      if (output !== null && output <= MAX_OUTPUT_TOKENS && this.prompt !== null) this.output = output;
      if (FIELDS.some((k) => event.usage[k] !== undefined && event.usage[k] !== null)) {
        const prompt = promptTokens(event.usage, this.inclusive);
        if (prompt !== null && this.prompt !== null) this.prompt = prompt;
      }
    }
  }

  compacted(meta) {
    const post = meta && typeof meta === "object" ? tokenCount(meta.post_tokens ?? meta.postTokens) : null;
    this.latest = null;
    this.output = null;
    const prefix = this.systemPrefix();
    this.prompt = post === null || prefix === null ? null : post + prefix;
  }
}
