#!/bin/sh
# Writes junk between valid frames: none of it may stop the extension.
echo '{"type":"hello","name":"garbage","version":"1"}'
echo 'this is not json'
echo '{"type":"no_such_frame"}'
echo '{"type":"tool_result","id":"999999999","content":[]}'
echo '[1,2,3]'
echo '{"type":"register_tool","name":"badschema","schema":[1]}'
echo '{"type":"register_tool","name":"bad name!","schema":{"type":"object"}}'
echo '{"type":"register_tool","name":"after_garbage","schema":{"type":"object"}}'
echo '{"type":"ready"}'
while IFS= read -r line; do
  case "$line" in
    *'"type":"shutdown"'*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
