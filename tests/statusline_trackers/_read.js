// What the example statusline trackers share: the payload from stdin, and the transcript's JSON rows.
"use strict";
const fs = require("fs");

function payload() {
  return JSON.parse(fs.readFileSync(0, "utf8"));
}

function rows(path) {
  const out = [];
  for (const line of fs.readFileSync(path, "utf8").split("\n")) {
    try {
      out.push(JSON.parse(line));
    } catch (e) {
      // a blank line, or a row still being written
    }
  }
  return out;
}

function prompt(usage) {
  return (usage.input_tokens || 0) + (usage.cache_creation_input_tokens || 0) + (usage.cache_read_input_tokens || 0);
}

function mainCallRows(path) {
  return rows(path).filter((r) => r.type === "assistant" && r.message && r.message.usage && !r.isSidechain
    && !r.isApiErrorMessage && r.message.model !== "<synthetic>");
}

module.exports = { payload, rows, prompt, mainCallRows };
