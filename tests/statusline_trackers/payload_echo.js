// Echoes Claude Code's own figure: the payload's context_window.total_input_tokens (blank before any call).
"use strict";
const { payload } = require("./_read.js");

const window = payload().context_window;
console.log(window && window.current_usage ? String(window.total_input_tokens) : "");
