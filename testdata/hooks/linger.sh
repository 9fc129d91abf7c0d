#!/bin/sh
# Writes its process group to $1, leaves a child behind, then sleeps for $2
# seconds (0: exits at once).
cat >/dev/null
echo $$ >"$1"
sleep 30 &
[ "$2" = 0 ] || sleep "$2"
