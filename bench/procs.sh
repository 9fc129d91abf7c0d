#!/usr/bin/env bash
# What a bash call, zot's exit and a huge output cost, with more and more
# processes on the machine (issue 28): the 20-step bash tool loop
# (BenchmarkToolLoop, ms and CPU ms per call) and `zot -p`'s exit with
# five MCP servers and five extensions (BenchmarkPrintExit), each with 0,
# 200 and 1,000 extra idle processes that this script starts and kills;
# then `zot -p` through one bash call printing 1 GB (BenchmarkPrintBash1GB,
# wall and peak RSS). Each figure is the median of RUNS runs.
#
#   bench/procs.sh                 # this tree, in turn with the reference zot,
#                                  # ../shared/anchors/zot-ref, when it is there
#   REF=/path/to/zot bench/procs.sh
#   REF= bench/procs.sh            # this tree alone
#   RUNS=20 COUNTS="0 1000" bench/procs.sh
#
# With a reference the figures come in pairs (ms/call, ref-ms/call) and
# ratio-… is this tree's over the reference's. Each line starts with the
# machine's load average, which the figures depend on.
set -eu -o pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-10}
counts=${COUNTS:-0 200 1000}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-procs.XXXXXX")
idle=""
cleanup() {
	[ -n "$idle" ] && kill -- "-$idle" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

anchor=../shared/anchors/zot-ref
if [ -z "${REF+set}" ] && [ -x "$anchor" ]; then
	REF=$(cd "$(dirname "$anchor")" && pwd)/$(basename "$anchor")
fi
# Figures against the reference come from its binary, in the same run;
# a commit of ours is no reference, so REF takes only a binary.
if [ -n "${REF:-}" ]; then
	[ -x "$REF" ] || { echo "REF=$REF is not an executable zot" >&2; exit 2; }
	export ZOT_BENCH_REF=$REF
	echo "reference: $REF ($("$REF" --version))"
fi

# bench runs one benchmark and prints its figures after the load.
bench() {
	go test -run '^$' -bench "^$1\$" -benchtime "${2}x" -count 1 . |
		awk -v load="$(cut -d' ' -f1-3 /proc/loadavg)" -v extra="$3" '/^Benchmark/ { $2 = ""; $3 = ""; $4 = ""; print "load " load ", +" extra " idle:", $0 }'
}

for n in $counts; do
	if [ "$n" -gt 0 ]; then
		# In a session of their own, so that one kill stops them all.
		setsid sh -c 'i=0; while [ $i -lt "$1" ]; do sleep 3600 & i=$((i+1)); done; echo ready > "$2"; wait' sh "$n" "$tmp/ready" &
		idle=$!
		while [ ! -s "$tmp/ready" ]; do sleep 0.1; done
	fi
	bench BenchmarkToolLoop "$runs" "$n"
	# The reference zot has no --mcp-config: this figure is this tree's alone.
	ZOT_BENCH_REF= bench BenchmarkPrintExit "$runs" "$n"
	if [ -n "$idle" ]; then
		kill -- "-$idle" 2>/dev/null || true
		wait "$idle" 2>/dev/null || true
		idle=""
		rm -f "$tmp/ready"
	fi
done
bench BenchmarkPrintBash1GB "$(( (runs + 2) / 3 ))" 0
