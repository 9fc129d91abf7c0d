#!/usr/bin/env bash
# What a step of a long session costs (issue 28 §2): the agent through one
# prompt of 1,000 tool-calling steps against a server in another process
# (BenchmarkThousandStepSession), zot's CPU per step over steps 1–100 and
# 900–1,000 (user, and user+system) and the whole run's wall time. With
# BASE the same benchmark runs in a checkout of that commit of ours too, in
# turn with this tree, so both see the same machine: what one change did.
# It is no figure against the reference zot, whose binary cannot run an
# in-process benchmark; those come from bench/vs-ref.sh, which runs
# ../shared/anchors/zot-ref in the same run.
#
#   bench/history.sh               # this tree
#   BASE=47e3cb5 bench/history.sh  # and that commit, in turn
#   RUNS=5 bench/history.sh
#
# What still grows is handing each request's bytes to the socket: the API
# takes the whole conversation every time, however it is encoded.
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
here=$(pwd)
base=""
cleanup() { [ -n "$base" ] && git worktree remove --force "$base" >/dev/null 2>&1; true; }
trap cleanup EXIT
if [ -n "${REF:-}" ]; then
	echo "REF is gone: BASE names a commit of ours to compare with; figures against the reference zot come from bench/vs-ref.sh" >&2
	exit 2
fi
if [ -n "${BASE:-}" ]; then
	base=$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-history.XXXXXX")
	rmdir "$base"
	git worktree add --detach -q "$base" "$BASE"
	cp bench_history_test.go "$base/"
fi
for i in $(seq "$runs"); do
	for dir in "$here" $base; do
		name=this
		[ "$dir" = "$here" ] || name="$BASE"
		printf '%-8s load %s  ' "$name" "$(cut -d' ' -f1 /proc/loadavg)"
		(cd "$dir" && go test -run XXX -bench BenchmarkThousandStepSession -benchtime 1x -count 1 . | grep '^Benchmark' |
			awk '{ for (i = 5; i < NF; i += 2) v[$(i+1)] = $i
				printf "%.2f s  cpu/step %s µs (1-100) %s µs (900-1000) late/early %s  user %s µs %s µs late/early %s\n",
					$3/1e9, v["µs-cpu/step-1-100"], v["µs-cpu/step-900-1000"], v["late/early"],
					v["µs-user/step-1-100"], v["µs-user/step-900-1000"], v["user-late/early"] }')
	done
done
