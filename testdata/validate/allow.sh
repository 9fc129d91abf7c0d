#!/bin/sh
# Reads the request and allows everything.
cat >/dev/null
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"allow"}}'
