#!/usr/bin/env bash
# What the peak RSS of `zot -p` answering once is made of (issue 39), the
# same for the reference zot's, and for the smallest static Go program that
# does what that answer needs: post one request with net/http and read the
# event stream back.
# Each process is held at its exit (strace delays its exit_group) and its
# /proc/PID/smaps read there, where the peak is: nothing is unmapped on the
# way. The mapped pages are split by what they are:
#
#   code             the binary's text (r-x)
#   read-only data   its rodata, pclntab (the runtime's function tables)
#                    and type links (r--)
#   data             its initialised data (rw-, from the file)
#   anonymous        heap, stacks, bss and the runtime's own memory
#
# The kernel maps a file page in the page cache around each fault (up to
# 64 KiB, fault-around), so the binary's figures count every page within
# reach of one that ran, not only those that ran.
#
#   bench/rss.sh                  # zot built from this tree, beside
#                                 # ../shared/anchors/zot-ref
#   REF=/path/to/zot RUNS=5 bench/rss.sh   # another reference, 5 runs
#
# Needs go, python3 (the provider stands in for a server) and strace.
set -eu
cd "$(dirname "$0")/.."
runs=${RUNS:-3}
for tool in go python3 strace; do
	command -v "$tool" >/dev/null || { echo "bench/rss.sh needs $tool" >&2; exit 2; }
done
ref=${REF:-../shared/anchors/zot-ref}
[ -x "$ref" ] || { echo "no reference binary at $ref (set REF)" >&2; exit 2; }
ref=$(cd "$(dirname "$ref")" && pwd)/$(basename "$ref")
work=$(mktemp -d "${TMPDIR:-/tmp}/zot-rss.XXXXXX")
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/cwd" "$work/bare"

CGO_ENABLED=0 go build -o "$work/zot" .
cat >"$work/bare/go.mod" <<'EOF'
module bare

go 1.22
EOF
cat >"$work/bare/main.go" <<'EOF'
// bare posts one request and prints the text of the event stream's data
// lines: the least a static Go program answering once from an HTTP
// provider maps.
package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"strings"
)

func main() {
	resp, err := http.Post(os.Args[1]+"/v1/messages", "application/json", strings.NewReader(`{"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if data, ok := strings.CutPrefix(lines.Text(), "data: "); ok {
			fmt.Println(data)
		}
	}
}
EOF
(cd "$work/bare" && CGO_ENABLED=0 go build -o "$work/bare/bare" .)

# One answer, as Anthropic's Messages API streams it (a recorded stream).
cat >"$work/server.py" <<'EOF'
import http.server, sys
body = open(sys.argv[1], "rb").read()
class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        self.rfile.read(int(self.headers.get("content-length", 0)))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(srv.server_address[1], flush=True)
srv.serve_forever()
EOF
mkfifo "$work/port"
python3 "$work/server.py" testdata/sse/anthropic_docs_basic.sse >"$work/port" &
server=$!
read -r port <"$work/port"
url=http://127.0.0.1:$port

# at_exit BIN ARGS... runs BIN and prints "peak code rodata data anon" in
# KiB, read while it is held at its exit_group.
at_exit() {
	local bin=$1 pid= task nr
	# exit_group is 231 on x86-64, 94 on arm64.
	local exit_nr=231
	[ "$(uname -m)" = aarch64 ] && exit_nr=94
	strace -f -o /dev/null -e trace=exit_group -e inject=exit_group:delay_enter=3000000 \
		sh -c 'w=$1; shift; echo $$ >"$w/pid"; exec env -i ZOT_HOME="$w/home" HOME="$w/home" PATH="$PATH" TMPDIR="$w" "$@"' \
		sh "$work" "$@" >/dev/null 2>&1 &
	local tracer=$!
	while kill -0 "$tracer" 2>/dev/null; do
		[ -n "$pid" ] || read -r pid 2>/dev/null <"$work/pid" || true
		for task in ${pid:+/proc/$pid/task/*}; do
			# A thread held at its exit_group: the peak is all mapped.
			read -r nr _ <"$task/syscall" 2>/dev/null || continue
			[ "$nr" = "$exit_nr" ] || continue
			awk -v bin="$bin" -v peak="$(awk '/^VmHWM/ { print $2 }' "/proc/$pid/status")" '
				/^[0-9a-f]+-[0-9a-f]+ / { perms = $2; file = ($6 == bin) }
				/^Rss:/ {
					if (file && perms ~ /x/) code += $2
					else if (file && perms ~ /w/) data += $2
					else if (file) rodata += $2
					else anon += $2
				}
				END { print peak, code, rodata, data, anon }' "/proc/$pid/smaps"
			wait "$tracer" || true
			rm -f "$work/pid"
			return
		done
		sleep 0.01
	done
	echo "bench/rss.sh: $bin ended before it could be held at its exit" >&2
	exit 1
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# The programs measured, in turn, run after run: zot, the reference (as
# bench/vs-ref.sh runs it) and net/http alone.
zot_args=(-p --no-session --provider anthropic --base-url "$url" --api-key k hi)
names=("zot -p (one answer)" "reference -p" "net/http alone")
cmds=("$work/zot ${zot_args[*]}" "$ref ${zot_args[*]}" "$work/bare/bare $url")
for _ in $(seq "$runs"); do
	for i in "${!cmds[@]}"; do
		# shellcheck disable=SC2086 # the words of one command line
		at_exit ${cmds[$i]} >>"$work/rows.$i"
	done
done

echo "MiB, median of $runs runs each, taken in turn; anonymous includes bss"
printf '%-26s%10s%10s%10s%10s%10s\n' "" peak code rodata data anon
for i in "${!cmds[@]}"; do
	printf '%-26s' "${names[$i]}"
	for col in 1 2 3 4 5; do
		printf '%10.2f' "$(cut -d' ' -f"$col" "$work/rows.$i" | median | awk '{ print $1 / 1024 }')"
	done
	echo
done
for bin in "$work/zot" "$ref" "$work/bare/bare"; do
	printf '%-26s%10s' "${bin##*/}: its file" ""
	readelf -lW "$bin" | awk '$1 == "LOAD" { print $5 }' | while read -r size; do
		printf '%10.2f' "$(awk -v b=$((size)) 'BEGIN { print b / 1048576 }')"
	done
	echo
done
