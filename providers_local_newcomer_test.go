package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// What a newcomer to a local server hit in the first hour (issue 37),
// each replayed against the built binary.

// cutAtLimit makes a stream's finish reason "length": the output limit
// cut the reply (a tool call's arguments stop where it fell).
func cutAtLimit(events []string) []string {
	out := append([]string(nil), events...)
	for i, e := range out {
		out[i] = strings.Replace(strings.Replace(e, `"finish_reason":"tool_calls"`, `"finish_reason":"length"`, 1), `"finish_reason":"stop"`, `"finish_reason":"length"`, 1)
	}
	return out
}

// A call the output limit cut goes back to the server with {} for its
// arguments; zot counts what it sent, so the server's smaller count of the
// next prompt is no cut conversation (it was "openai read only 913 of the
// about 2311 prompt tokens zot sent", after every such turn).
func TestCutCallIsNoFalseCutAlarm(t *testing.T) {
	t.Parallel()
	args := `{"path":"a.go","content":"` + strings.Repeat("package main // more ", 600) // ~12,600 bytes, never closed
	srv := startReplay(t,
		replayStep{Events: cutAtLimit(localEvents(900, gen{ToolID: "c1", ToolName: "write", ToolArgs: args}))},
		replayStep{Events: localEvents(960, gen{Text: "I will write it in parts."})})
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(localFlags(srv), "--json", "write a.go")...)
	if code != 0 || strings.Contains(stdout, "read only") || !strings.Contains(stdout, "write it in parts") {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, truncate(stdout, 3000))
	}
	if second := string(srv.Requests()[1].Body); !strings.Contains(second, `"arguments":"{}"`) {
		t.Errorf("the cut call's arguments went back: %s", truncate(second, 2000))
	}
}

// An answer that never came — ollama's Go template swallowed the tool
// calls of a looping model until its output limit, so the reply is empty
// with done_reason "length" — is a failure in -p and --json: one stderr
// line and exit 1, not silence and exit 0. An answer the limit cut is
// printed, and fails the same way.
func TestEmptyOrCutFinalAnswerFailsTheRun(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{
		"GET /api/version": {"ollama/api_version.json"},
		"POST /api/show":   {"ollama/api_show_tiny.json"},
		"POST /api/chat":   {"ollama/api_chat_tools_stream.ndjson"},
	})
	flags := []string{"--provider", "ollama", "--base-url", rs.URL, "--model", "tiny"}
	z := newZotRun(t)
	stdout, stderr, code := z.run(append(flags, "-p", "add a test")...)
	if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "zot: the model's answer is empty: the output limit came before any text (stop: length, 200 output tokens)") {
		t.Errorf("-p: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	stdout, stderr, code = z.run(append(flags, "--json", "add a test")...)
	if code != 1 || !strings.Contains(stdout, `{"type":"error","message":"the model's answer is empty`) || !strings.Contains(stderr, "answer is empty") {
		t.Errorf("--json: exit %d, stderr %q\n%s", code, stderr, stdout)
	}

	srv := startReplay(t, replayStep{Events: cutAtLimit(localEvents(100, gen{Text: "The first half of the answer"}))})
	stdout, stderr, code = newZotRun(t).run(append(localFlags(srv), "-p", "explain")...)
	if code != 1 || stdout != "The first half of the answer\n" || !strings.Contains(stderr, "the model's answer is incomplete: the output limit cut it (stop: length, 30 output tokens)") {
		t.Errorf("cut answer: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// OLLAMA_HOST is read as ollama's own client reads it.
func TestOllamaHostForms(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:11535":           "http://127.0.0.1:11535/v1",
		"gpu-box":                   "http://gpu-box:11434/v1",
		":11500":                    "http://127.0.0.1:11500/v1",
		"0.0.0.0":                   "http://0.0.0.0:11434/v1",
		" \"http://gpu-box:8080\" ": "http://gpu-box:8080/v1",
		"https://ollama.example/":   "https://ollama.example:443/v1",
		"http://ollama.example":     "http://ollama.example:80/v1",
		"http://proxy:80/ollama/":   "http://proxy:80/ollama/v1",
		"[::1]:11434":               "http://[::1]:11434/v1",
		"ftp://x":                   "error",
		"gpu-box:port":              "error",
		"user@gpu-box:11434":        "error",
		"http://gpu-box:99999":      "error",
	} {
		got, err := ollamaHostURL(in)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("OLLAMA_HOST=%q: %s (%v), want %s", in, got, err, want)
		}
	}
}

// A newcomer's ollama example: OLLAMA_HOST says where ollama listens; with
// nothing listening there, one line says so and what to do, at once
// rather than after three retries.
func TestOllamaHostAndRefusedConnection(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{
		"GET /api/version": {"ollama/api_version.json"},
		"POST /api/show":   {"ollama/api_show_tiny.json"},
		"POST /api/chat":   {"ollama/api_chat_stream.ndjson"},
	})
	z := newZotRun(t)
	z.env = []string{"OLLAMA_HOST=" + strings.TrimPrefix(rs.URL, "http://")}
	stdout, stderr, code := z.run("-p", "--provider", "ollama", "--model", "tiny", "--no-tools", "hi")
	if code != 0 || stdout == "" || len(rs.posts("/api/chat")) != 1 {
		t.Errorf("OLLAMA_HOST: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	closed := closedPort(t)
	z.env = []string{"OLLAMA_HOST=" + closed}
	stdout, stderr, code = z.run("-p", "--provider", "ollama", "--model", "tiny", "hi")
	want := "nothing listens at http://" + closed + ": start ollama (ollama serve), or give its address with --base-url or OLLAMA_HOST"
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) || strings.Contains(stderr, "retr") {
		t.Errorf("refused: exit %d, stderr %q", code, stderr)
	}
	z.env = nil
	_, stderr, code = z.run("-p", "--base-url", "http://"+closed+"/v1", "--model", "local", "hi")
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "nothing listens at http://"+closed+": start the server, or give its address with --base-url") {
		t.Errorf("refused, --base-url: exit %d, stderr %q", code, stderr)
	}
}

// closedPort is a loopback host:port where nothing listens.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// ollama's "tools param requires --jinja flag" 500 is the same refusal
// every time: it is not retried, and the next run remembers it and sends
// the tools as text from its first request.
func TestToolRefusalIsNotRetriedAndIsRemembered(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{"POST /v1/chat/completions": {"ollama/jinja_tools_stream.sse", "ollama/chat_stream.sse"}})
	z := newZotRun(t)
	args := []string{"-p", "--provider", "ollama", "--base-url", rs.URL + "/v1", "--model", "tiny-jinja", "hi"}
	_, stderr, code := z.run(args...)
	if reqs := rs.posts("/v1/chat/completions"); code != 0 || len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `"tools":[`) || strings.Contains(string(reqs[1].Body), `"tools":[`) ||
		strings.Contains(stderr, "retrying") || !strings.Contains(stderr, "refused the tools (ollama: HTTP 500: server_error: tools param requires --jinja flag)") {
		t.Fatalf("exit %d, %d requests, stderr %q", code, len(reqs), stderr)
	}
	cache, _ := os.ReadFile(filepath.Join(z.home, "models-cache.json"))
	if !strings.Contains(string(cache), `"tools_refused": {`) {
		t.Errorf("models-cache.json:\n%s", cache)
	}
	_, stderr, code = z.run(args...)
	if reqs := rs.posts("/v1/chat/completions"); code != 0 || len(reqs) != 3 || strings.Contains(string(reqs[2].Body), `"tools":[`) || !strings.Contains(stderr, "refused the tools in an earlier run") {
		t.Errorf("second run: exit %d, %d requests, stderr %q", code, len(reqs), stderr)
	}
}

// llama-server's router (one server, several models, recorded from the
// live build): --list-models shows each model's load state and context;
// only a loaded model is asked /props?model= (asking of one not loaded
// would make an autoloading router load it); a model not loaded that the
// router will not load, one that failed to load and one it does not have
// are each one clear line, sent once.
func TestLlamaRouter(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{
		"GET /v1/models": {"llama-router/models_failed.json"},
		"GET /props":     {"llama-router/props_router.json", "llama-router/props_model_loaded.json"},
	})
	z := newZotRun(t)
	stdout, stderr, code := z.run("--list-models", "--provider", "openai", "--base-url", rs.URL+"/v1", "--model", "tiny")
	for _, want := range []string{
		"openai     tiny                       ctx    2048  out  16384  $0/$0 per Mtok in/out  source: server, loaded\n",
		"openai     tiny-notools               ctx    2048  out  16384  $0/$0 per Mtok in/out  source: server, not loaded\n",
		"openai     broken                     ctx    2048  out  16384  $0/$0 per Mtok in/out  source: server, failed to load\n",
	} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, stderr %q; want %q in\n%s", code, stderr, want, stdout)
		}
	}
	if n := len(rs.gets("/props")); n != 2 {
		t.Errorf("/props asked %d times; want the router's, then the loaded model's", n)
	}
	rs = startRecorded(t, map[string][]string{
		"GET /v1/models": {"llama-router/models_unloaded.json"},
		"GET /props":     {"llama-router/props_router.json"},
	})
	if stdout, _, _ := newZotRun(t).run("--list-models", "--provider", "openai", "--base-url", rs.URL+"/v1", "--model", "tiny"); !strings.Contains(stdout, "tiny                       ctx    2048") || len(rs.gets("/props")) != 1 {
		t.Errorf("not loaded: /props asked %d times\n%s", len(rs.gets("/props")), stdout)
	}

	for _, c := range []struct{ model, stem, want string }{
		{"tiny", "llama-router/chat_unloaded_stream.sse", `model is not loaded (llama-server's router has not loaded tiny, and loads no model on request (--no-models-autoload): load it with curl -X POST ` + "ROOT" + `/models/load -d '{"model": "tiny"}', or start the router without --no-models-autoload)`},
		{"broken", "llama-router/chat_broken_autoload_stream.sse", "model name=broken failed to load (the server could not load broken: its log says why; zot --list-models shows each model's state)"},
		{"nope", "llama-router/props_model_unknown.json", "model 'nope' not found (the server has no model nope: zot --list-models lists the ones it has)"},
	} {
		rs := startRecorded(t, map[string][]string{"POST /v1/chat/completions": {c.stem}})
		_, stderr, code := newZotRun(t).run("-p", "--provider", "openai", "--base-url", rs.URL+"/v1", "--model", c.model, "hi")
		want := strings.Replace(c.want, "ROOT", rs.URL, 1)
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, want) || len(rs.posts("/v1/chat/completions")) != 1 {
			t.Errorf("%s: exit %d, %d requests, stderr %q, want %q", c.model, code, len(rs.posts("/v1/chat/completions")), stderr, want)
		}
	}
}

// The server's context is the TUI's from the start: a resumed session's
// status is measured against the router's 2,048 tokens before any request,
// and the /model picker lists the router's models with theirs and their
// load state (they all assumed 128k until the first request).
func TestTUIUsesTheServersContextFromTheStart(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{
		"GET /v1/models": {"llama-router/models_unloaded.json"},
		"GET /props":     {"llama-router/props_router.json"},
	})
	z := newZotRun(t)
	s := NewSession(z.home, z.cwd, "openai", "tiny")
	for _, m := range sampleTranscript() {
		s.Append(m)
	}
	s.AppendUsage(Usage{Input: 1024})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tm := startTUI(t, z, "-c", "--provider", "openai", "--base-url", rs.URL+"/v1", "--model", "tiny")
	tm.waitFor("ctx 50%")
	// The listing runs in the background, and a picker shows what was
	// listed when it opened: wait for the list, as a person would see it
	// in the picker's next opening.
	waitFor(t, "the router's models listed", func() bool {
		b, _ := os.ReadFile(modelsCachePath(z.home))
		return strings.Contains(string(b), "tiny-notools")
	})
	tm.typeText("/model")
	tm.keys("Enter")
	tm.waitScreen("the router's models with their context and state", func(s string) bool {
		return regexp.MustCompile(`openai/tiny-notools +2,048 context · server, not loaded`).MatchString(s) && !strings.Contains(s, "(current)")
	})
	tm.keys("Escape")
	// Keys sent before the picker closed would arrive with the ESC as one
	// alt+key chord, and the picker would stay open.
	tm.waitScreen("the picker closed", func(s string) bool { return !strings.Contains(s, "choose a model") })
	tm.exitAndCheck()
	if len(rs.posts("/v1/chat/completions")) != 0 {
		t.Errorf("a model request was sent")
	}
}

// /model keeps the server a local model came from: a plain `zot -p`
// afterwards talks to that server (it failed with "no API key for
// openai"), while a catalogue model chosen later goes to its own.
func TestModelRemembersTheServerItCameFrom(t *testing.T) {
	t.Parallel()
	rs := startRecorded(t, map[string][]string{
		"GET /v1/models":            {"llama-router/models_unloaded.json"},
		"GET /props":                {"llama-router/props_router.json"},
		"POST /v1/chat/completions": {"llama-server/tools_followup_stream.sse"},
	})
	z := newZotRun(t)
	tm := startTUI(t, z, "--provider", "openai", "--base-url", rs.URL+"/v1", "--model", "tiny")
	tm.waitFor("/help for keys")
	tm.typeText("/model tiny-notools")
	tm.keys("Enter")
	tm.waitFor("saved openai/tiny-notools as the default with the server it came from")
	tm.exitAndCheck()
	stdout, stderr, code := z.run("-p", "--no-tools", "hi")
	if code != 0 || stdout == "" || len(rs.posts("/v1/chat/completions")) != 1 {
		t.Fatalf("plain -p: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if _, stderr, code := z.run("-p", "--model", "gpt-5", "hi"); code != 1 || !strings.Contains(stderr, "no API key for openai") {
		t.Errorf("a catalogue model went elsewhere: exit %d, stderr %q", code, stderr)
	}
}
