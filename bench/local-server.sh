#!/usr/bin/env bash
# Drive zot against a running local server and say what happened and how
# long each step took: a plain answer, a tool call run and answered, and a
# prompt longer than the server's context. Nothing in the suite depends on
# it; it is for checking a change by hand against the real servers.
#
#   bench/local-server.sh URL MODEL [PROVIDER]
#   bench/local-server.sh http://127.0.0.1:8080/v1 tiny            # llama-server
#   bench/local-server.sh http://127.0.0.1:11434/v1 qwen3 ollama   # ollama
#
# PROVIDER is openai (default) or ollama. ZOT is the binary to run (default:
# one built from this checkout into a temporary directory); WORDS the size
# of the long prompt (default 3000 words, about 6,000-8,000 tokens).
# Runs in a temporary ZOT_HOME and working directory, with --tools read so
# that a model making random calls cannot change anything.
set -eu
if [ $# -lt 2 ]; then
	sed -n '2,15p' "$0" >&2
	exit 2
fi
url=$1 model=$2 provider=${3:-openai}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-local.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
if [ -z "${ZOT:-}" ]; then
	ZOT=$tmp/zot
	(cd "$(dirname "$0")/.." && CGO_ENABLED=0 go build -o "$ZOT" .)
fi
export ZOT_HOME=$tmp/home
mkdir -p "$ZOT_HOME" "$tmp/cwd"
echo hello >"$tmp/cwd/notes.txt"
# A small output limit keeps a test model that rambles from running for
# minutes.
printf '{"providers": {"%s": {"models": [{"id": "%s", "maxTokens": %s}]}}}\n' "$provider" "$model" "${MAXTOKENS:-64}" >"$ZOT_HOME/models.json"
flags=(--provider "$provider" --base-url "$url" --model "$model" --no-session --cwd "$tmp/cwd")

step() { # name, then zot's arguments; prompt on stdin
	local name=$1 start end code
	shift
	start=$(date +%s.%N)
	set +e
	"$ZOT" --json "${flags[@]}" "$@" >"$tmp/out.jsonl" 2>"$tmp/err"
	code=$?
	set -e
	end=$(date +%s.%N)
	printf '%-12s exit %d  %6.2f s  ' "$name" "$code" "$(echo "$end - $start" | bc)"
	printf 'turns %d, tool calls %d, compactions %d, usage %s\n' \
		"$(grep -c '"type":"turn_start"' "$tmp/out.jsonl" || true)" \
		"$(grep -c '^{"type":"tool_call"' "$tmp/out.jsonl" || true)" \
		"$(grep -c '"type":"compact_done"' "$tmp/out.jsonl" || true)" \
		"$(grep -o '"type":"usage","input":[0-9]*,"output":[0-9]*,"cache_read":[0-9]*' "$tmp/out.jsonl" | tail -1 | cut -d, -f2-4)"
	grep -h '"type":"error"' "$tmp/out.jsonl" | cut -c1-300 | sed 's/^/             /' || true
	sed 's/^/             stderr: /' "$tmp/err" | cut -c1-300
}

echo "zot against $provider $url, model $model"
echo "hello" | step answer --no-tools
echo "read notes.txt and tell me what it says" | step tool-call --tools read
echo "what the server said of the model (models-cache.json):"
sed -n '/"probes"/,$p' "$ZOT_HOME/models-cache.json" 2>/dev/null | sed 's/^/  /' || echo "  nothing"
python3 -c "print('Summarize: ' + ' '.join('word%d' % i for i in range(${WORDS:-3000})))" | step over-context --no-tools
