#!/usr/bin/env bash
# Measure what zot's own system prompt and tool definitions cost a model:
# the prompt tokens a running server reports for a one-word prompt, and
# the bytes of the system prompt and the tools array zot sends, for the
# default tools, --tools read,write,edit,bash and --tools read. These are
# the figures of docs/models.md ("What that leaves a small model"), which
# TestModelsDocPromptSizes keeps within 10% of the bytes a build sends.
#
#   bench/prompt-size.sh URL [MODEL]
#   bench/prompt-size.sh http://127.0.0.1:8080/v1 tiny     # llama-server
#
# ZOT is the binary to run (default: one built from this checkout). Needs
# python3 (a 20-line server that keeps the request zot sends).
set -eu
if [ $# -lt 1 ]; then
	sed -n '2,13p' "$0" >&2
	exit 2
fi
url=$1 model=${2:-tiny}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-prompt.XXXXXX")
cleanup() {
	[ -n "${cap_pid:-}" ] && kill "$cap_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
if [ -z "${ZOT:-}" ]; then
	ZOT=$tmp/zot
	(cd "$(dirname "$0")/.." && CGO_ENABLED=0 go build -o "$ZOT" .)
fi
export ZOT_HOME=$tmp/home
mkdir -p "$ZOT_HOME" "$tmp/cwd"
printf '{"providers": {"openai": {"models": [{"id": "%s", "maxTokens": 8}]}}}\n' "$model" >"$ZOT_HOME/models.json"

# The capture server answers every request with a short stream and writes
# the system prompt's and tools' sizes of the last one to $tmp/bytes.
cat >"$tmp/cap.py" <<'EOF'
import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        system = sum(len(m["content"]) for m in body["messages"] if m["role"] == "system")
        tools = len(json.dumps(body.get("tools", []), separators=(",", ":"), ensure_ascii=False).encode())
        open(sys.argv[2], "w").write("%d %d\n" % (system, tools))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        self.wfile.write(b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1], "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
python3 "$tmp/cap.py" "$tmp/port" "$tmp/bytes" &
cap_pid=$!
while [ ! -s "$tmp/port" ]; do sleep 0.05; done
cap="http://127.0.0.1:$(cat "$tmp/port")/v1"

printf '%-26s %8s %8s %8s %10s\n' tools tokens system tools bytes/token
for tools in default read,write,edit,bash read; do
	flag=()
	[ "$tools" = default ] || flag=(--tools "$tools")
	(cd "$tmp/cwd" && "$ZOT" --json --provider openai --base-url "$url" --model "$model" --no-session --max-steps 1 "${flag[@]}" hi >"$tmp/out.jsonl" 2>/dev/null) || true
	tokens=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["type"] == "usage":
        print(e["input"] + e["cache_read"]); break' "$tmp/out.jsonl")
	(cd "$tmp/cwd" && "$ZOT" -p --provider openai --base-url "$cap" --model "$model" --no-session "${flag[@]}" hi >/dev/null 2>&1) || true
	read -r sys tls <"$tmp/bytes"
	printf '%-26s %8s %8s %8s %10.2f\n' "$tools" "$tokens" "$sys" "$tls" "$(echo "($sys + $tls) / $tokens" | bc -l)"
done
