#!/bin/sh
# Records its pid and a child's in $1, answers, then keeps running with
# stdout open.
cat >/dev/null
echo $$ > "$1.tmp"
sleep 300 &
echo $! >> "$1.tmp"
mv "$1.tmp" "$1"
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"allow"}}'
wait
