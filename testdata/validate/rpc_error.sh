#!/bin/sh
# Answers with a JSON-RPC error object.
cat >/dev/null
printf '%s\n' '{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"Invalid request: missing required field '"'"'command'"'"'"}}'
