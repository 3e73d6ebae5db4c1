// Sums every transcript row of the last call: a call written as one row per content block counts once per block.
"use strict";
const { payload, prompt, mainCallRows } = require("./_read.js");

const found = mainCallRows(payload().transcript_path);
if (!found.length) {
  console.log("");
} else {
  const last = found[found.length - 1].message.id;
  console.log(String(found.filter((r) => r.message.id === last).reduce((n, r) => n + prompt(r.message.usage), 0)));
}
