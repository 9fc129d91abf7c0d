#!/usr/bin/env bash
# The rule differential (issue 34 §1): generated command lines around the
# deny and ask rules of four rule sets, each in Claude Code's and runok's
# dialect, with words made at run time in every position (expansions,
# substitutions, globs, braces, variables, xargs, find -exec, sh -c '$1',
# here-strings), in wrappers and contexts. Each line runs under the real
# bash with strace -f; a bypass is a line zot allowed where bash executed
# an argv a deny or ask rule covers. Zero bypasses is the bar.
#
#   bench/rule-diff.sh               # 10,000 lines, a fresh seed
#   LINES=50000 bench/rule-diff.sh   # more
#   SEED=42 bench/rule-diff.sh       # the same lines again
#
# Needs bash and strace. Prints each bypass, then one summary line; exits
# non-zero when any line bypassed the rules.
set -u
cd "$(dirname "$0")/.."
lines=${LINES:-10000}
seed=${SEED:-$(date +%s%N)}
out=$(mktemp "${TMPDIR:-/tmp}/zot-rule-diff.XXXXXX")
trap 'rm -f "$out"' EXIT
start=$SECONDS
go test -count=1 -timeout 120m -run '^TestRuleDifferentialAgainstBash$' -v . \
	-args -rules.lines="$lines" -rules.seed="$seed" >"$out" 2>&1
status=$?
grep -E 'zot allowed it|zot decided|SKIPPED' "$out" | head -200
summary=$(grep -m1 'lines, each under both dialects' "$out" | sed 's/^ *validate_rules_diff_test.go:[0-9]*: //')
if [ -z "$summary" ]; then
	cat "$out"
	echo "no summary: the test did not run" >&2
	exit 2
fi
echo "seed $seed, $((SECONDS - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null): $summary"
exit $status
