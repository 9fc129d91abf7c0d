#!/usr/bin/env bash
# Runs generated command lines around ${…} under the real bash and counts
# the lines that bypassed the splitter: where bash ran a program the
# splitter did not report and the splitter did not ask (issue 22). The
# lines are the systematic families (every ${…} form and operator × the
# pieces bash's parser delimits specially × every context) and random
# nested ones, in turn; zero bypasses is the bar.
#
#   bench/splitter-diff.sh               # 10,000 lines, a fresh seed
#   LINES=50000 bench/splitter-diff.sh   # more
#   SEED=42 bench/splitter-diff.sh       # the same lines again
#
# Needs bash. Prints each bypass (the line and what bash ran), then one
# summary line; exits non-zero when any line bypassed.
set -u
cd "$(dirname "$0")/.."
lines=${LINES:-10000}
seed=${SEED:-$(date +%s%N)}
out=$(mktemp "${TMPDIR:-/tmp}/zot-splitter-diff.XXXXXX")
trap 'rm -f "$out"' EXIT
start=$SECONDS
go test -count=1 -timeout 60m -run '^TestSplitterMatchesBashOnExpansionLines$' -v . \
	-args -splitter.lines="$lines" -splitter.seed="$seed" >"$out" 2>&1
status=$?
grep -E 'bypassed the splitter|missed what bash did|^\s+bash ran' "$out" | grep -v 'lines checked' | head -200
summary=$(grep -m1 'lines checked' "$out" | sed 's/^ *validate_shell_gen_test.go:[0-9]*: //')
if [ -z "$summary" ]; then
	cat "$out"
	echo "no summary: the test did not run" >&2
	exit 2
fi
echo "seed $seed, $((SECONDS - start)) s: $summary"
exit $status
