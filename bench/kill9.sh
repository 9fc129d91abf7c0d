#!/usr/bin/env bash
# Kills zot (-9) at random moments of an audit append, a write, an edit and
# a restore, runs zot again after each, and counts what a user would find
# (issue 34): torn audit lines, files neither old nor new, zot's temp files
# left in the project, reruns that fail. Zero of each is the bar; the
# "killed with something to repair" figure says how many kills landed
# where a repair was needed (a cut-off audit line, a temp file, a restore
# half done).
#
#   bench/kill9.sh                # 100 trials of each, a fresh seed
#   TRIALS=20 bench/kill9.sh
#   SEED=42 bench/kill9.sh        # the same kill moments again
#
# Linux only (inotify picks the moment a temp file is made). Prints one
# line per kind, then the seed and the load; exits non-zero when a trial
# left something behind.
set -u
cd "$(dirname "$0")/.."
trials=${TRIALS:-100}
seed=${SEED:-$(date +%s%N)}
out=$(mktemp "${TMPDIR:-/tmp}/zot-kill9.XXXXXX")
trap 'rm -f "$out"' EXIT
start=$SECONDS
load=$(cut -d' ' -f1 /proc/loadavg)
go test -count=1 -timeout 60m -run '^TestKill9AtRandomMoments$' -v . \
	-args -kill9.trials="$trials" -kill9.seed="$seed" >"$out" 2>&1
status=$?
if ! grep -q 'kill -9 during' "$out"; then
	cat "$out"
	echo "no figures: the test did not run" >&2
	exit 2
fi
grep -E 'kill -9 during|^\s+durability_linux_test.go:[0-9]+:   ' "$out" | sed 's/^ *durability_linux_test.go:[0-9]*: //'
echo "seed $seed, $((SECONDS - start)) s, load $load at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
exit $status
