#!/bin/sh
# Registers a tool; at its first call closes its stdout but keeps running,
# reading stdin, until its stdin is closed.
echo '{"type":"hello","name":"hangup","version":"1"}'
echo '{"type":"register_tool","name":"hangup","description":"closes stdout mid-call","schema":{"type":"object"}}'
echo '{"type":"ready"}'
while IFS= read -r line; do
  case "$line" in
    *'"type":"tool_call"'*) echo "closing stdout, still running" >&2; exec >&- ;;
    *'"type":"shutdown"'*) exit 0 ;;
  esac
done
