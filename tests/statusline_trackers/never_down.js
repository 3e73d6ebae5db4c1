// A gauge that never comes down: the largest main-chain prompt seen in the transcript (compaction never lowers it).
"use strict";
const { payload, prompt, mainCallRows } = require("./_read.js");

const found = mainCallRows(payload().transcript_path);
console.log(found.length ? String(Math.max(...found.map((r) => prompt(r.message.usage)))) : "");
