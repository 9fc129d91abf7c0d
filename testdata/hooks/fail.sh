#!/bin/sh
# A broken hook: exit 1 is a non-blocking error.
cat >/dev/null
echo "fail.sh: something is wrong" >&2
exit 1
