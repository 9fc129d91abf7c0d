#!/bin/sh
# Allows only echo, ls, cat and true (an allow-list, as docs/security.md
# recommends) and denies every other command.
req=$(cat)
cmd=${req#*\"params\":\{\"command\":\"}
cmd=${cmd%%\"*}
case "$cmd" in
echo|ls|cat|true) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"allow"}}' ;;
*) printf '{"jsonrpc":"2.0","id":1,"result":{"status":"deny","message":"only echo, ls, cat and true are allowed, not %s"}}\n' "$cmd" ;;
esac
