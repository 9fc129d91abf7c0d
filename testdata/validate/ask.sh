#!/bin/sh
# Asks about everything.
cat >/dev/null
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"ask","message":"this touches production","fix_suggestion":"run it against staging first"}}'
