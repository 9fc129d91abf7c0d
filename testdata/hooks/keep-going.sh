#!/bin/sh
# A Stop hook that never lets the agent stop; it records each input in $1.
cat >>"$1"
echo >>"$1"
echo "keep going: the tests are not green yet" >&2
exit 2
