#!/bin/sh
# Runs every client scenario of the MCP conformance suite
# (@modelcontextprotocol/conformance) against zot and prints one line per
# scenario: PASS or FAIL, the suite's check counts, and the seconds it
# took; then the totals and the wall time. The suite drives zot through
# testdata/mcp/conformanceclient, which only translates the suite's
# arguments into `zot mcp` invocations.
#
#   bench/mcp-conformance.sh [SCENARIO…]
#
# The suite and its Node 22 come from testdata/mcp/install-conformance.sh
# (in $ZOT_MCP_CONFORMANCE, default the user cache's zot-mcp-conformance).
# ZOT is the binary (default: built from this checkout), JOBS how many
# scenarios run at once (default 4), KEEP=1 keeps each scenario's output
# (the suite's checks as JSON, and stderr) and prints where.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "$(uname)" = Darwin ]; then cache=$HOME/Library/Caches; else cache=${XDG_CACHE_HOME:-$HOME/.cache}; fi
suite=${ZOT_MCP_CONFORMANCE:-$cache/zot-mcp-conformance}
if [ ! -x "$suite/node_modules/.bin/conformance" ] || [ ! -x "$suite/node_modules/.bin/node" ]; then
	echo "mcp-conformance.sh: the suite is not in $suite; run: sh testdata/mcp/install-conformance.sh" >&2
	exit 1
fi
PATH=$suite/node_modules/.bin:$PATH
export PATH
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zot-conformance.XXXXXX")
if [ "${KEEP:-}" = 1 ]; then echo "output kept in $tmp"; else trap 'rm -rf "$tmp"' EXIT; fi
if [ -z "${ZOT:-}" ]; then
	ZOT=$tmp/zot
	(cd "$root" && CGO_ENABLED=0 go build -o "$ZOT" .)
fi
export ZOT_BIN=$ZOT ZOT_CONFORMANCE_BROWSER=$tmp/browser
(cd "$root/testdata/mcp/conformanceclient" && GOWORK=off go build -o "$tmp/conformanceclient" .)
(cd "$root/testdata/mcp/browser" && GOWORK=off go build -o "$tmp/browser" .)
if [ $# -gt 0 ]; then
	printf '%s\n' "$@" >"$tmp/scenarios"
else
	conformance list --client | sed -n 's/^  - \([^ ]*\).*/\1/p' >"$tmp/scenarios"
fi
echo "suite $(conformance --version), node $(node --version), $(wc -l <"$tmp/scenarios") client scenarios, load $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || uptime)"
start=$(date +%s)
# One scenario: its checks (JSON, --verbose) on stdout, the summary on
# stderr, and how it ended.
export tmp root
xargs -P "${JOBS:-4}" -I{} sh -c '
	f=$tmp/$(echo "$1" | tr / _)
	t0=$(date +%s.%N)
	conformance client --command "exec $tmp/conformanceclient" --scenario "$1" --verbose >"$f.json" 2>"$f.err"
	echo $? >"$f.rc"
	echo "$t0 $(date +%s.%N)" | awk "{printf \"%.1f\", \$2-\$1}" >"$f.time"
' sh {} <"$tmp/scenarios"
pass=0 total=0
while read -r s; do
	f=$tmp/$(echo "$s" | tr / _)
	total=$((total + 1))
	counts=$(sed -n 's/^Passed: \([0-9]*\/[0-9]*\), \([0-9]*\) failed, \([0-9]*\) warnings/\1 checks, \2 failed, \3 warnings/p' "$f.err" | tail -1)
	if [ "$(cat "$f.rc")" = 0 ]; then
		result=PASS pass=$((pass + 1))
	else
		result=FAIL
	fi
	printf '%-4s %-45s %-40s %5ss\n' "$result" "$s" "${counts:-no result}" "$(cat "$f.time")"
done <"$tmp/scenarios"
echo "$pass of $total client scenarios pass ($(($(date +%s) - start)) s wall)"
