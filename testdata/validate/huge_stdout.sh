#!/bin/sh
# Starts an answer and never ends it: 2 MB of message.
cat >/dev/null
printf '{"jsonrpc":"2.0","id":1,"result":{"status":"allow","message":"'
head -c 2000000 /dev/zero | tr '\0' a
