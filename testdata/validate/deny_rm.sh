#!/bin/sh
# Denies rm and allows everything else (a deny-list).
req=$(cat)
case "$req" in
*'"params":{"command":"rm",'*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"deny","message":"rm is not allowed"}}' ;;
*) printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"allow"}}' ;;
esac
