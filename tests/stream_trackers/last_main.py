"""The last main-chain assistant message's prompt (input + cache creation + cache read), in Python: one stream-json
line in, one answer line out."""

import json
import sys

estimate = None
for line in sys.stdin:
    message = json.loads(line)
    usage = (message.get("message") or {}).get("usage") if message.get("type") == "assistant" else None
    if usage and message.get("parent_tool_use_id") is None:
        estimate = sum(usage.get(k) or 0 for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"))
    print(json.dumps(estimate), flush=True)
