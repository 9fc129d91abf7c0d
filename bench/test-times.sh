#!/usr/bin/env bash
# Where the test suite spends its time. Runs `go test -count=1 -json ./...`
# (extra arguments go to go test) and prints the wall and CPU time of the
# run, each package's time, and the slowest tests and subtests. With
# JSON=FILE set and no arguments, reads an earlier run's output instead.
#
#   bench/test-times.sh            # run the suite and report
#   bench/test-times.sh -race      # the same with the race detector
#   JSON=/tmp/before.json bench/test-times.sh   # report on a saved run
#   TOP=20 bench/test-times.sh     # more rows
#
# Needs jq. Elapsed times of parallel tests overlap, so their sum is more
# than the wall time; compare per-test times between runs, not one total.
set -eu
top=${TOP:-10}
if [ -z "${JSON:-}" ] || [ $# -gt 0 ]; then
	JSON=$(mktemp "${TMPDIR:-/tmp}/zot-test-times.XXXXXX")
	echo "json: $JSON"
	# The CPU time counts go test and everything it ran: the build, the
	# test binary and their children.
	TIMEFORMAT='wall %R s; cpu: user %U s, sys %S s'
	time go test -count=1 -json "$@" ./... >"$JSON" || echo "go test failed; the times are of a failing run" >&2
fi
echo
echo "packages (test binary run time, s):"
jq -r 'select(.Test == null and (.Action == "pass" or .Action == "fail")) | "  \(.Elapsed)\t\(.Action)\t\(.Package)"' "$JSON"
jq -r 'select(.Test != null and (.Test | contains("/") | not) and (.Action == "pass" or .Action == "fail")) | .Elapsed' "$JSON" |
	awk '{ s += $1; n++ } END { printf "top-level tests: %d, elapsed summed: %.1f s\n", n, s }'
jq -r 'select(.Test != null and .Action == "fail") | "  FAILED: \(.Test)"' "$JSON"
echo
echo "slowest $top tests (s):"
jq -r 'select(.Test != null and (.Test | contains("/") | not) and (.Action == "pass" or .Action == "fail")) | "\(.Elapsed)\t\(.Action)\t\(.Test)"' "$JSON" |
	sort -rn | head -n "$top" | sed 's/^/  /'
echo
echo "slowest $top subtests (s):"
jq -r 'select(.Test != null and (.Test | contains("/")) and (.Action == "pass" or .Action == "fail")) | "\(.Elapsed)\t\(.Action)\t\(.Test)"' "$JSON" |
	sort -rn | head -n "$top" | sed 's/^/  /'
