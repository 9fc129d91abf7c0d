#!/bin/sh
# Where the test suite spends its time. Runs `go test -count=1 -json ./...`
# (extra arguments go to go test) and prints the wall and CPU time of the
# run, each package's time, and the slowest tests and subtests. With
# JSON=FILE set and no arguments, reads an earlier run's output instead.
#
#   sh bench/test-times.sh            # run the suite and report
#   sh bench/test-times.sh -race      # the same with the race detector
#   JSON=/tmp/before.json sh bench/test-times.sh   # report on a saved run
#   TOP=20 sh bench/test-times.sh     # more rows
#
# Needs jq. Elapsed times of parallel tests overlap, so their sum is more
# than the wall time; compare per-test times between runs, not one total.
set -eu
top=${TOP:-10}
if [ -z "${JSON:-}" ] || [ $# -gt 0 ]; then
	JSON=$(mktemp "${TMPDIR:-/tmp}/zot-test-times.XXXXXX")
	start=$(date +%s.%N)
	# `times` gives the CPU of finished children: the go command and all it ran.
	go test -count=1 -json "$@" ./... >"$JSON" || echo "go test failed; times below are of a failing run" >&2
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" -v f="$JSON" 'BEGIN { printf "wall: %.1f s  (json: %s)\n", e - s, f }'
	times | tail -1 | awk '{print "cpu of go test and its children: user " $1 ", sys " $2}'
fi
echo
echo "packages (test binary run time, s):"
jq -r 'select(.Test == null and (.Action == "pass" or .Action == "fail")) | "  \(.Elapsed)\t\(.Action)\t\(.Package)"' "$JSON"
jq -r 'select(.Test != null and (.Test | contains("/") | not) and (.Action == "pass" or .Action == "fail")) | .Elapsed' "$JSON" |
	awk '{ s += $1; n++ } END { printf "top-level tests: %d, elapsed summed: %.1f s\n", n, s }'
echo
echo "slowest $top tests (s):"
jq -r 'select(.Test != null and (.Test | contains("/") | not) and (.Action == "pass" or .Action == "fail")) | "\(.Elapsed)\t\(.Action)\t\(.Test)"' "$JSON" |
	sort -rn | head -n "$top" | sed 's/^/  /'
echo
echo "slowest $top subtests (s):"
jq -r 'select(.Test != null and (.Test | contains("/")) and (.Action == "pass" or .Action == "fail")) | "\(.Elapsed)\t\(.Action)\t\(.Test)"' "$JSON" |
	sort -rn | head -n "$top" | sed 's/^/  /'
