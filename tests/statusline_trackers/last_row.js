// A plain last-row reader: the prompt (input + cache writes + cache reads) of the last main-chain assistant row.
"use strict";
const { payload, prompt, mainCallRows } = require("./_read.js");

const found = mainCallRows(payload().transcript_path);
console.log(found.length ? String(prompt(found[found.length - 1].message.usage)) : "");
