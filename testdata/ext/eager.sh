#!/bin/sh
# Sends all its registrations before reading hello_ack, then reads it.
echo '{"type":"hello","name":"eager","version":"1"}'
echo '{"type":"register_command","name":"eager","description":"registered before the ack"}'
echo '{"type":"register_tool","name":"eager_tool","schema":{"type":"object"}}'
echo '{"type":"subscribe","events":["turn_start"]}'
echo '{"type":"ready"}'
IFS= read -r ack
case "$ack" in
  *'"type":"hello_ack"'*) echo "got ack" >&2 ;;
  *) echo "first line was not hello_ack: $ack" >&2; exit 1 ;;
esac
while IFS= read -r line; do
  case "$line" in
    *'"type":"shutdown"'*) echo '{"type":"shutdown_ack"}'; exit 0 ;;
  esac
done
