#!/bin/sh
# A PreToolUse guard in the style of Claude Code's docs: exit 2 refuses.
input=$(cat)
case "$input" in
*'rm -rf'*)
	echo "refused by block-rm.sh: rm -rf is not allowed here" >&2
	exit 2
	;;
esac
exit 0
