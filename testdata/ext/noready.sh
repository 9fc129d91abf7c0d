#!/bin/sh
# Registers a command and never sends ready: the idle watchdog decides.
echo '{"type":"hello","name":"noready","version":"1"}'
echo '{"type":"register_command","name":"late","description":"never sent ready"}'
while IFS= read -r line; do
  case "$line" in
    *'"type":"shutdown"'*) exit 0 ;;
  esac
done
