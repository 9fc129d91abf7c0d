#!/bin/sh
# Denies without ever reading its stdin.
printf '%s\n' '{"jsonrpc":"2.0","id":1,"result":{"status":"deny","message":"denied unread"}}'
