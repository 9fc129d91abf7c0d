#!/bin/sh
# Writes 1 MiB to stderr before answering.
head -c 1048576 /dev/zero | tr '\0' x >&2
cat >/dev/null
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"allow","message":"survived the flood"}}'
