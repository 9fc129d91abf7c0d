#!/bin/sh
# Ignores shutdown, stdin EOF and SIGTERM (its children inherit the ignore).
trap '' TERM
echo '{"type":"hello","name":"stubborn","version":"1"}'
echo '{"type":"ready"}'
while :; do sleep 1; done
