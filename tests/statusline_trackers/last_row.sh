#!/usr/bin/env bash
# A plain last-row reader in bash and jq: the prompt (input + cache writes + cache reads) of the last main-chain
# assistant row of the transcript the payload names.
set -euo pipefail
transcript=$(jq -r '.transcript_path')
jq -Rr 'fromjson? | select(.type == "assistant" and (.isSidechain | not) and (.isApiErrorMessage | not)
          and .message.usage != null and .message.model != "<synthetic>")
        | .message.usage | (.input_tokens // 0) + (.cache_creation_input_tokens // 0) + (.cache_read_input_tokens // 0)' \
  "$transcript" | tail -n 1
