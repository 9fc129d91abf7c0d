#!/usr/bin/env bash
# zot against the reference zot (issue 39), in one run, alternating: each
# benchmark runs this tree's binary and the reference's in turn, A B A B,
# RUNS times, and reports both medians and their ratio (ours / the
# reference's): the machine's load then weighs on both alike.
#
#   bench/vs-ref.sh                       # against ../shared/anchors/zot-ref
#   REF=/path/to/zot RUNS=9 bench/vs-ref.sh
#
# The figures:
#   BenchmarkToolLoop             20 bash calls (`echo hi`) in -p: the whole
#                                 run (ms/run, cpu-ms/run), and less a run
#                                 of none, over 20: ms/call and cpu-ms/call
#                                 (zot's and the commands'). `echo hi` runs
#                                 without bash and takes no checkpoint (it
#                                 only reads); then the same with
#                                 `/usr/bin/echo hi` (without bash, with a
#                                 checkpoint: a path is not the system's
#                                 program by name) and `echo hi && true`
#                                 (with bash and a checkpoint). The
#                                 reference's figure for `/usr/bin/echo hi`
#                                 holds a second exec (its sh execs the
#                                 program) that its `echo hi` did not: read
#                                 that line against zot's `echo hi`, as the
#                                 price of a checkpoint, not as a ratio
#   BenchmarkPrintBash1GBOwnCPU   one bash call printing 1 GB: s (wall),
#                                 own-cpu-s (zot's own process),
#                                 command-cpu-s (the command's)
#   BenchmarkStartRSS             peak RSS of --version and of -p answering
#                                 once (GNU time)
# Each line starts with the machine's load average, which the figures
# depend on; quote it with them.
set -eu
cd "$(dirname "$0")/.."
ref=${REF:-../shared/anchors/zot-ref}
[ -x "$ref" ] || { echo "no reference binary at $ref (set REF)" >&2; exit 2; }
export ZOT_BENCH_REF=$(cd "$(dirname "$ref")" && pwd)/$(basename "$ref")
runs=${RUNS:-5}
echo "reference: $ZOT_BENCH_REF ($("$ZOT_BENCH_REF" --version)), $runs runs each"
for bench in BenchmarkToolLoop BenchmarkToolLoop/checkpointed BenchmarkToolLoop/bash BenchmarkPrintBash1GBOwnCPU BenchmarkStartRSS; do
	line=
	case $bench in
	*/checkpointed) line='/usr/bin/echo hi' ;;
	*/bash) line='echo hi && true' ;;
	esac
	ZOT_BENCH_LINE=$line go test -run '^$' -bench "^${bench%%/*}\$" -benchtime "${runs}x" -count 1 . |
		awk -v load="$(cut -d' ' -f1-3 /proc/loadavg)" -v line="${line:+ (\"$line\", ${bench#*/})}" \
			'/^Benchmark/ { $1 = $1 line; $2 = ""; $3 = ""; $4 = ""; print "load " load ":", $0 }'
done
