#!/bin/sh
# Registers a tool and exits in the middle of its first call.
echo '{"type":"hello","name":"crash","version":"1"}'
echo '{"type":"register_tool","name":"boom","description":"exits mid-call","schema":{"type":"object"}}'
echo '{"type":"register_command","name":"boom","description":"exits mid-call"}'
echo '{"type":"ready"}'
while IFS= read -r line; do
  case "$line" in
    *'"type":"tool_call"'*|*'"type":"command_invoked"'*) echo "crashing on purpose" >&2; exit 3 ;;
    *'"type":"shutdown"'*) exit 0 ;;
  esac
done
