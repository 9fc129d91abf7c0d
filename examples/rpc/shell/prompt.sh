#!/usr/bin/env bash
# Drive `zot rpc` from bash with jq: send one prompt, print the streamed
# answer and the tool calls as they happen, then the cost.
#
#   ./prompt.sh "fix the failing test" [zot flags ...]
#
# ZOT_BIN names the zot binary (default: zot on PATH). When
# ZOTCORE_RPC_TOKEN is set, zot requires it in the first command, hello.
# See docs/rpc.md for the protocol.
set -euo pipefail

if [ $# -lt 1 ]; then
  echo "usage: prompt.sh PROMPT [zot flags ...]" >&2
  exit 2
fi
message=$1
shift

coproc ZOT { exec "${ZOT_BIN:-zot}" rpc "$@"; }
zot_pid=$ZOT_PID
to_zot=${ZOT[1]}
from_zot=${ZOT[0]}

send() { printf '%s\n' "$1" >&"$to_zot"; }

send "$(jq -cn --arg t "${ZOTCORE_RPC_TOKEN:-}" '{id: "hello", type: "hello"} + (if $t == "" then {} else {token: $t} end)')"
send "$(jq -cn --arg m "$message" '{id: "prompt", type: "prompt", message: $m}')"

status=0
# read splits on \n only; zot never writes a raw newline inside a line.
while IFS= read -r line <&"$from_zot"; do
  IFS=$'\t' read -r type id success < <(jq -r '[.type, (.id // ""), (.success // "")] | @tsv' <<<"$line")
  case $type in
    text_delta) jq -j '.delta' <<<"$line" ;;
    tool_call) jq -j '"\n[tool] \(.name) \(.args | tojson)\n"' <<<"$line" ;;
    error)
      jq -r '"error: " + .message' <<<"$line" >&2
      status=1
      ;;
    done) send '{"id":"state","type":"get_state"}' ;;
    response)
      if [ "$success" != true ]; then
        jq -r '.command + ": " + .error' <<<"$line" >&2
        status=1
        break
      fi
      if [ "$id" = state ]; then
        IFS=$'\t' read -r cost input output < <(jq -r '.data.usage | [.cost_usd, .input, .output] | @tsv' <<<"$line")
        LC_ALL=C printf '\ncost: $%.6f (%d in, %d out tokens)\n' "$cost" "$input" "$output"
        break
      fi
      ;;
  esac
done

# Closing stdin lets zot finish and exit.
exec {to_zot}>&-
wait "$zot_pid" || status=$?
exit "$status"
