#!/usr/bin/env bash
# What a step of a long session costs (issue 28 §2): the agent through one
# prompt of 1,000 tool-calling steps against an in-process server
# (BenchmarkThousandStepSession), CPU per step over steps 1–100 and
# 900–1,000 and the whole run's wall time. With REF the same benchmark runs
# in a checkout of that commit too, in turn with this tree, so both see the
# same machine.
#
#   bench/history.sh              # this tree
#   REF=47e3cb5 bench/history.sh  # and that commit, in turn
#   RUNS=5 bench/history.sh
#
# The CPU is the whole process's, the server's reading of each request
# included: the bytes sent grow with the history however it is encoded.
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
here=$(pwd)
ref=""
cleanup() { [ -n "$ref" ] && git worktree remove --force "$ref" >/dev/null 2>&1; true; }
trap cleanup EXIT
if [ -n "${REF:-}" ]; then
	ref=$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-history.XXXXXX")
	rmdir "$ref"
	git worktree add --detach -q "$ref" "$REF"
	cp bench_history_test.go "$ref/"
fi
for i in $(seq "$runs"); do
	for dir in "$here" $ref; do
		name=this
		[ "$dir" = "$here" ] || name="$REF"
		printf '%-8s load %s  ' "$name" "$(cut -d' ' -f1 /proc/loadavg)"
		(cd "$dir" && go test -run XXX -bench BenchmarkThousandStepSession -benchtime 1x -count 1 . | grep '^Benchmark' | awk '{printf "%.2f s  cpu/step %s µs (1-100) %s µs (900-1000)  late/early %s\n", $3/1e9, $7, $9, $5}')
	done
done
