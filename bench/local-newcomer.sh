#!/usr/bin/env bash
# A newcomer's first hour with a local server (issue 37), against the real
# servers: each wall they hit, driven through the built binary, with what
# happened and how long it took. Nothing in the suite depends on it.
#
#   bench/local-newcomer.sh LLAMA_URL OLLAMA_URL [ROUTER_URL]
#   LLAMA_CTX=2048 local-llm/start.sh 18180 11535
#   bench/local-newcomer.sh http://127.0.0.1:18180/v1 http://127.0.0.1:11535 http://127.0.0.1:18181/v1
#
# LLAMA_URL is a llama-server started with --ctx-size 2048 and the test
# model; OLLAMA_URL an ollama with the models tiny, tiny-jinja and
# tiny-notools; ROUTER_URL, when given, a llama-server router
# (--models-dir). ZOT is the binary to run (default: one built from this
# checkout); TURNS the turns of the TUI session (default 10); ONLY the
# parts to run (ONLY='2 7'; 1 and 5 are the TUI's, in tmux). Needs tmux
# and python3.
set -eu
if [ $# -lt 2 ]; then
	sed -n '2,16p' "$0" >&2
	exit 2
fi
llama=$1 ollama=$2 router=${3:-}
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/zot-bench-newcomer.XXXXXX")
sock=zot-bench-$$
trap 'tmux -L "$sock" kill-server 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [ -z "${ZOT:-}" ]; then
	ZOT=$tmp/zot
	(cd "$here" && CGO_ENABLED=0 go build -o "$ZOT" .)
fi
now() { date +%s.%N; }
since() { printf '%.1f' "$(echo "$(now) - $1" | bc)"; }
fresh() { # a new ZOT_HOME and project directory, $1 the models.json
	export ZOT_HOME=$tmp/home-$RANDOM
	mkdir -p "$ZOT_HOME" "$tmp/cwd"
	[ -z "${1:-}" ] || printf '%s\n' "$1" >"$ZOT_HOME/models.json"
}
run() { # zot's arguments; sets code, secs; stdout in $tmp/out, stderr in $tmp/err
	local start
	start=$(now)
	set +e
	(cd "$tmp/cwd" && "$ZOT" "$@" >"$tmp/out" 2>"$tmp/err")
	code=$?
	set -e
	secs=$(since "$start")
}
first() { head -c "${2:-240}" "$1" | tr '\n' ' '; }
pane() { tmux -L "$sock" capture-pane -p -t t -S -5000; }
idle() { # the status row shows no spinner: no turn is running
	pane | grep ' · ctx ' | tail -1 | grep -qvE '[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]'
}
wait_for() { # text, seconds
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		pane | grep -qF -- "$1" && return 0
		sleep 0.1
	done
	return 1
}
tui() { # zot's arguments: start the TUI in a 120x40 tmux pane
	tmux -L "$sock" kill-server 2>/dev/null || true
	tmux -L "$sock" -f /dev/null new-session -d -s t -x 120 -y 40 \
		"cd '$tmp/cwd' && ZOT_HOME='$ZOT_HOME' '$ZOT' $*; echo '[zot exited]'; sleep 600"
	wait_for "/help for keys" 30
}
send() { tmux -L "$sock" send-keys -t t -l "$1"; tmux -L "$sock" send-keys -t t Enter; }
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

echo "zot against llama-server $llama, ollama $ollama${router:+, router $router}"

if want 1; then
	echo
	echo "1. turns after a tool call cut at the output limit: no false cut alarm"
	fresh '{"providers": {"openai": {"models": [{"id": "tiny", "maxTokens": 600}]}}}'
	start=$(now)
	tui --provider openai --base-url "$llama" --model tiny
	for ((turn = 1; turn <= ${TURNS:-10}; turn++)); do
		send "write notes-$turn.txt with a long summary of the project"
		sleep 1
		until idle; do sleep 1; done
	done
	session=$(ls "$ZOT_HOME"/sessions/*/*.jsonl | head -1)
	printf '   %d turns in %s s: %d tool calls cut at the limit, %d compactions, %d "read only … cut the conversation" alarms\n' \
		"${TURNS:-10}" "$(since "$start")" "$(grep -c 'cut off at the output limit' "$session" || true)" \
		"$(pane | grep -c 'Compacted\|compacted' || true)" "$(pane | grep -c 'read only' || true)"
fi

if want 5; then
	echo
	echo "5. /model remembers the server a local model came from"
	fresh ""
	tui --provider openai --base-url "$llama" --model first-choice
	send "/model tiny"
	wait_for "saved openai/tiny" 10 && pane | grep -o 'saved openai/tiny[^(]*' | sed 's/^/   \/model: /'
	send "/exit"
	wait_for "[zot exited]" 10
	run -p --no-tools hi
	printf '   then plain zot -p hi: exit %d in %s s: %s%s\n' "$code" "$secs" "$(first "$tmp/out" 60)" "$(first "$tmp/err" 160)"
fi

if want 2; then
	echo
	echo "2. an empty final answer (ollama's tiny swallows its looping tool calls until its output limit, here 200)"
	fresh '{"providers": {"ollama": {"models": [{"id": "tiny", "maxTokens": 200}]}}}'
	run -p --provider ollama --base-url "$ollama" --model tiny "add a test"
	printf '   -p: exit %d in %s s, stdout %d bytes, stderr: %s\n' "$code" "$secs" "$(wc -c <"$tmp/out")" "$(first "$tmp/err")"
fi

if want 3; then
	echo
	echo "3. a trusted project's 14-tool MCP server at a 2,048-token context"
	fresh '{"providers": {"openai": {"models": [{"id": "tiny", "maxTokens": 600}]}}}'
	mkdir -p "$tmp/state"
	: >"$tmp/state/calls"
	printf '{"mcpServers": {"tracker": {"command": "python3", "args": ["-S", "%s", "%s"]}}}\n' "$here/testdata/mcp/tracker_server.py" "$tmp/state" >"$tmp/cwd/.mcp.json"
	echo '{"tool_search_threshold": 1}' >"$ZOT_HOME/config.json"
	run -p --trust-project --mcp-wait 60s --provider openai --base-url "$llama" --model tiny "list the open issues of CORE"
	printf '   tool search off: exit %d in %s s: %s\n' "$code" "$secs" "$(first "$tmp/err" 900)"
	rm "$ZOT_HOME/config.json"
	searches=0 loaded=0 mcp=0 runs=${MCP_RUNS:-3}
	for ((i = 1; i <= runs; i++)); do
		run --json --trust-project --mcp-wait 60s --provider openai --base-url "$llama" --model tiny --max-steps 6 --tools 'mcp__tracker__*' "list the open issues of CORE"
		read -r prompts s l errors < <(python3 -c 'import json,sys
ev = [json.loads(l) for l in open(sys.argv[1])]
searches = sum(1 for e in ev if e["type"] == "tool_call" and e["name"] == "tool_search")
loaded = sum(1 for e in ev if e["type"] == "tool_result" and e["name"] == "tool_search" and not e.get("is_error"))
errors = [e.get("message", "")[:200] for e in ev if e["type"] == "error"]
print(",".join(str(e["input"] + e["cache_read"]) for e in ev if e["type"] == "usage") or "-", searches, loaded, "; ".join(errors) or "none")' "$tmp/out")
		searches=$((searches + s)) loaded=$((loaded + l))
		printf '   tool search on, run %d: exit %d in %s s, prompt tokens per request: %s; errors: %s\n' "$i" "$code" "$secs" "$prompts" "$errors"
	done
	mcp=$(wc -l <"$tmp/state/calls")
	printf '   %d runs: %d tool_search calls, %d that loaded tools, %d calls that reached the MCP server\n' "$runs" "$searches" "$loaded" "$mcp"
	rm "$tmp/cwd/.mcp.json"
fi

if want 4; then
	echo
	echo "4. --list-models shows the server's context"
	fresh ""
	for server in "openai $llama" "ollama $ollama" ${router:+"openai $router"}; do
		set -- $server
		run --list-models --provider "$1" --base-url "$2" --model tiny
		grep 'source: server' "$tmp/out" | sed 's/  out .*source:/ … source:/; s/^/   /' || echo "   (none listed: $(first "$tmp/err"))"
	done
fi

if want 6; then
	echo
	echo "6. OLLAMA_HOST, and nothing listening"
	fresh ""
	host=${ollama#*://}
	host=${host%%/*}
	OLLAMA_HOST=$host run -p --provider ollama --model tiny-notools --no-tools hi
	printf '   OLLAMA_HOST=%s: exit %d in %s s, %d bytes of answer\n' "$host" "$code" "$secs" "$(wc -c <"$tmp/out")"
	OLLAMA_HOST=127.0.0.1:9 run -p --provider ollama --model tiny hi
	printf '   OLLAMA_HOST=127.0.0.1:9 (nothing there): exit %d in %s s, %d lines: %s\n' "$code" "$secs" "$(wc -l <"$tmp/err")" "$(first "$tmp/err" 300)"
fi

if want 7; then
	echo
	echo "7. ollama's 'tools param requires --jinja flag' (tiny-jinja asked while tiny's runner is loaded)"
	# tiny's runner, loaded through the OpenAI path, is then reused for
	# tiny-jinja (the same blob), which refuses tools; the fallback's text
	# tools loop to the output limit, here 200 (ollama's runner goes on past
	# its context, and on after zot hangs up, until that limit).
	fresh '{"providers": {"ollama": {"models": [{"id": "tiny-jinja", "maxTokens": 200}]}}}'
	run -p --provider openai --base-url "$ollama/v1" --model tiny --no-tools hi
	for n in first second; do
		run -p --provider ollama --base-url "$ollama" --model tiny-jinja hi
		printf '   %s run: exit %d in %s s, %d retries: %s\n' "$n" "$code" "$secs" "$(grep -c 'retrying' "$tmp/err" || true)" "$(first "$tmp/err" 200)"
	done
	python3 -c 'import json,sys
for k, p in json.load(open(sys.argv[1]))["probes"].items():
    if "tools_refused" in p:
        print("   models-cache.json:", k, "tools_refused", json.dumps(p["tools_refused"]))' "$ZOT_HOME/models-cache.json"
fi
