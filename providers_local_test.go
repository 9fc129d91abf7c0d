package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestBaseURLWithAPathIsUsedAsGiven(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, replayStep{Events: openaiEvents(gen{Text: "ok"})})
	for _, c := range []struct {
		provider, base, want string
	}{
		{"openai", "", "/v1/chat/completions"},
		{"openai", "/", "/v1/chat/completions"},
		{"openai", "/v1", "/v1/chat/completions"},
		{"openai", "/v1/", "/v1/chat/completions"},
		{"openai", "/v1beta/openai/", "/v1beta/openai/chat/completions"},
		{"openai", "/llm/gateway", "/llm/gateway/chat/completions"},
		{"ollama", "/v1", "/v1/chat/completions"},
		{"anthropic", "", "/v1/messages"},
		{"anthropic", "/proxy", "/proxy/v1/messages"},
	} {
		p, _ := testProvider(t, c.provider, srv.URL+c.base)
		before := len(srv.Requests())
		model := "m"
		if c.provider == "anthropic" {
			model = "claude-sonnet-4-5"
		}
		if got := callProvider(t, p, Request{Model: model}); got.err != nil && c.provider != "anthropic" {
			t.Errorf("%s %q: %v", c.provider, c.base, got.err)
		}
		reqs := srv.Requests()
		if len(reqs) != before+1 || reqs[before].Path != c.want {
			t.Errorf("%s base %q: request went to %q, want %q", c.provider, c.base, reqs[len(reqs)-1].Path, c.want)
		}
	}
}

func TestBaseURLKeepsItsQueryAfterThePath(t *testing.T) {
	t.Parallel()
	got := openaiURL("https://gw.example/api/v2?tenant=a", "/chat/completions")
	if got != "https://gw.example/api/v2/chat/completions?tenant=a" {
		t.Errorf("got %s", got)
	}
	if r := serverRoot("http://h:11434/v1/"); r != "http://h:11434" {
		t.Errorf("root = %s", r)
	}
}

// A page where the API should be — a proxy's HTML, a server's plain 404 —
// is one line naming the request, its status and type, not the page.
func TestErrorPageNamesTheRequestNotThePage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, ctype, body, want string
		status                  int
	}{
		{"html", "text/html; charset=utf-8", "<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>\n<body><h1>Not Found</h1><p>The requested URL was not found on this server.</p>\n<hr><address>Apache/2.4 Server</address></body></html>\n",
			"POST %s/v1/messages → 404 (text/html): check --base-url; the server said: 404 Not Found", 404},
		{"plain", "text/plain; charset=utf-8", "404 page not found\n",
			"POST %s/v1/messages → 404 (text/plain): check --base-url; the server said: 404 page not found", 404},
		// A static file server (python3 -m http.server) where the API
		// should be: it does not take POST at all.
		{"static files", "text/html;charset=utf-8", "<!DOCTYPE HTML>\n<html lang=\"en\">\n    <head>\n        <meta charset=\"utf-8\">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: 501</p>\n        <p>Message: Unsupported method ('POST').</p>\n    </body>\n</html>\n",
			"POST %s/v1/messages → 501 (text/html): check --base-url; the server said: Error response", 501},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", c.ctype)
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			z := newZotRun(t)
			_, stderr, code := z.run("-p", "--provider", "anthropic", "--base-url", srv.URL+"?key=secret", "--api-key", "k", "hi")
			want := "zot: anthropic: " + strings.Replace(c.want, "%s", srv.URL, 1) + "\n"
			if code != 1 || stderr != want {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
			}
		})
	}
}

func TestBadBaseURLIsAUsageError(t *testing.T) {
	t.Parallel()
	srv := startReplay(t)
	for _, bad := range []string{"localhost:8080", "ftp://host/v1", "http://", "127.0.0.1"} {
		z := newZotRun(t)
		_, stderr, code := z.run("-p", "--provider", "openai", "--model", "m", "--base-url", bad, "hi")
		if code != 2 || !strings.Contains(stderr, "--base-url") || !strings.Contains(stderr, "http://") {
			t.Errorf("--base-url %s: exit %d, stderr %q; want 2 and a line saying what a URL looks like", bad, code, stderr)
		}
	}
	// The same mistake in config.json names the file.
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.home, "config.json"), `{"provider": "openai", "model": "m", "base_url": "localhost:8080"}`, 0o600)
	_, stderr, code := z.run("-p", "hi")
	if code != 1 || !strings.Contains(stderr, "config.json: base_url") {
		t.Errorf("config.json: exit %d, stderr %q", code, stderr)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests went out", n)
	}
}

// recordedServer answers each request with a recording of testdata/local:
// routes maps "METHOD /path" to the stems it answers in turn (the last one
// again once they run out); anything else is a 404. It keeps what the
// client sent.
type recordedServer struct {
	*httptest.Server
	t        testing.TB
	mu       sync.Mutex
	routes   map[string][]string
	served   map[string]int
	requests []capturedRequest
}

func startRecorded(t testing.TB, routes map[string][]string) *recordedServer {
	t.Helper()
	rs := &recordedServer{t: t, routes: routes, served: map[string]int{}}
	rs.Server = httptest.NewServer(http.HandlerFunc(rs.serve))
	t.Cleanup(rs.Close)
	return rs
}

func (rs *recordedServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + r.URL.Path
	rs.mu.Lock()
	rs.requests = append(rs.requests, capturedRequest{Path: route, Header: r.Header.Clone(), Body: body})
	stems := rs.routes[route]
	n := rs.served[route]
	rs.served[route]++
	rs.mu.Unlock()
	if len(stems) == 0 {
		http.NotFound(w, r)
		return
	}
	status, ctype, data := recordedResponse(rs.t, stems[min(n, len(stems)-1)])
	w.Header().Set("Content-Type", ctype)
	w.WriteHeader(status)
	w.Write(data)
}

// recordedResponse reads a recording: the status and Content-Type of its
// .headers, its body.
func recordedResponse(t testing.TB, stem string) (status int, ctype string, body []byte) {
	t.Helper()
	path := filepath.Join("testdata", "local", stem)
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, err := os.ReadFile(strings.TrimSuffix(path, filepath.Ext(path)) + ".headers")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.ReplaceAll(string(head), "\r", ""), "\n")
	if f := strings.Fields(lines[0]); len(f) >= 2 {
		status, _ = strconv.Atoi(f[1])
	}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.EqualFold(k, "Content-Type") {
			ctype = strings.TrimSpace(v)
		}
	}
	return status, ctype, body
}

// posts are the POST requests the server got to path.
func (rs *recordedServer) posts(path string) []capturedRequest { return rs.got("POST " + path) }

// gets are the GET requests the server got to path.
func (rs *recordedServer) gets(path string) []capturedRequest { return rs.got("GET " + path) }

func (rs *recordedServer) got(route string) []capturedRequest {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var out []capturedRequest
	for _, r := range rs.requests {
		if r.Path == route {
			out = append(out, r)
		}
	}
	return out
}

// localProvider is a provider for a recorded server, with its retries'
// sleeps skipped and nothing cached between runs.
func localProvider(t testing.TB, name, base string, opts LocalOptions) Provider {
	t.Helper()
	p, err := NewProvider(ProviderConfig{Name: name, BaseURL: base, Local: opts})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordedSleeps{}
	switch p := p.(type) {
	case *openaiProvider:
		p.http.sleep = rec.sleep
	case *ollamaProvider:
		p.openai.http.sleep = rec.sleep
	}
	return p
}

var (
	listDirTool = ToolSpec{Name: "list_dir", Description: "List a directory", Schema: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)}
	hello       = []Message{{Role: RoleUser, Content: []Block{TextBlock("hello")}}}
)

// Each quirk of llama-server's recordings, replayed: what zot makes of it.
func TestLlamaServerRecordings(t *testing.T) {
	t.Parallel()
	const chat = "POST /v1/chat/completions"
	props := map[string][]string{"GET /props": {"llama-server/props.json"}}
	for _, c := range []struct {
		name   string
		routes map[string][]string
		tools  bool
		check  func(t *testing.T, got streamed, rs *recordedServer)
	}{
		{"content null first, no usage: zot counts", map[string][]string{chat: {"llama-server/chat_stream.sse"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			u := got.reply.Usage
			if got.err != nil || !strings.HasPrefix(replyText(got.reply), "ARGETAKStand") || !u.Estimated || u.Input == 0 || u.Output == 0 || got.reply.Stop != StopLength {
				t.Errorf("err %v, text %q, usage %+v, stop %s", got.err, replyText(got.reply), u, got.reply.Stop)
			}
		}},
		{"usage with cached tokens", map[string][]string{chat: {"llama-server/chat_stream_usage.sse"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			if u := got.reply.Usage; got.err != nil || u.Estimated || u.ContextTokens() != 26 || u.CacheRead != 25 || u.Output != 16 {
				t.Errorf("err %v, usage %+v", got.err, u)
			}
		}},
		{"arguments in raw fragments", map[string][]string{chat: {"llama-server/tools_required_stream.sse"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			calls := Message{Content: got.reply.Content}.ToolCalls()
			if got.err != nil || len(calls) != 1 || calls[0].Name != "list_dir" || string(calls[0].Args) != `{"dir":"." }` || calls[0].FromText || got.reply.Stop != StopToolUse {
				t.Errorf("err %v, calls %+v", got.err, calls)
			}
		}},
		{"a call cut by max_tokens keeps its half arguments", map[string][]string{chat: {"llama-server/tools_auto_truncated_stream.sse"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			calls := Message{Content: got.reply.Content}.ToolCalls()
			if got.err != nil || len(calls) != 1 || string(calls[0].Args) != "{" || got.reply.Stop != StopLength {
				t.Errorf("err %v, calls %+v, stop %s", got.err, calls, got.reply.Stop)
			}
		}},
		{"400 JSON to a stream: overflow with the context and how to raise it", map[string][]string{chat: {"llama-server/overflow_stream.sse"}, "GET /props": {"llama-server/props.json"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			if !errors.Is(got.err, ErrContextTooLong) || !strings.Contains(got.err.Error(), "the server's context is 512 tokens") || !strings.Contains(got.err.Error(), "--ctx-size") {
				t.Errorf("err = %v", got.err)
			}
			if len(rs.posts("/v1/chat/completions")) != 1 {
				t.Errorf("an overflow was retried")
			}
		}},
		{"an error event and no [DONE]", map[string][]string{chat: {"llama-server/invalid_utf8_stream.sse"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			var perr *ProviderError
			if !errors.As(got.err, &perr) || perr.Type != "server_error" || !strings.Contains(perr.Message, "peg-native format") {
				t.Errorf("err = %v", got.err)
			}
		}},
		{"the server's context from /props", mergeRoutes(props, map[string][]string{chat: {"llama-server/chat_stream_usage.sse"}}), false, func(t *testing.T, got streamed, rs *recordedServer) {
			if w := lookupModel("openai", t.Name()).ContextWindow; got.err != nil || w != 512 {
				t.Errorf("err %v, window %d, want 512 from /props", got.err, w)
			}
		}},
		{"the server's context from the model list", map[string][]string{chat: {"llama-server/chat_stream_usage.sse"}, "GET /v1/models": {"llama-server/v1_models.json"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			if w := lookupModel("openai", t.Name()).ContextWindow; got.err != nil || w != 512 {
				t.Errorf("err %v, window %d, want 512 from meta.n_ctx", got.err, w)
			}
		}},
		{"a template without tools: the tools go as text", map[string][]string{chat: {"llama-server/notools_model_tools_auto_stream.sse"}, "GET /props": {"llama-server/notools_props.json"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			var body struct {
				Tools    []any `json:"tools"`
				Messages []struct {
					Role    string `json:"role"`
					Content string `json:"content"`
				} `json:"messages"`
			}
			json.Unmarshal(rs.posts("/v1/chat/completions")[0].Body, &body)
			if got.err != nil || body.Tools != nil || body.Messages[0].Role != "system" || !strings.Contains(body.Messages[0].Content, "<tool_call>") || !strings.Contains(body.Messages[0].Content, "## list_dir") {
				t.Errorf("err %v, request %s", got.err, rs.posts("/v1/chat/completions")[0].Body)
			}
			if !strings.Contains(got.reply.Notice, "takes no tools") {
				t.Errorf("notice = %q", got.reply.Notice)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rs := startRecorded(t, c.routes)
			p := localProvider(t, "openai", rs.URL+"/v1", LocalOptions{})
			req := Request{Model: t.Name(), System: "You are a test.", Messages: hello}
			if c.tools {
				req.Tools = []ToolSpec{listDirTool}
			}
			c.check(t, callProvider(t, p, req), rs)
		})
	}
}

func mergeRoutes(a, b map[string][]string) map[string][]string {
	out := map[string][]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Each quirk of ollama's recordings, replayed: its own /api/chat when it
// answers /api/version, its OpenAI path otherwise.
func TestOllamaRecordings(t *testing.T) {
	t.Parallel()
	const v1, native = "POST /v1/chat/completions", "POST /api/chat"
	ollama := map[string][]string{"GET /api/version": {"ollama/api_version.json"}, "POST /api/show": {"ollama/api_show_tiny.json"}}
	for _, c := range []struct {
		name   string
		routes map[string][]string
		tools  bool
		check  func(t *testing.T, got streamed, rs *recordedServer)
	}{
		{"native: num_ctx is the model's own length", mergeRoutes(ollama, map[string][]string{native: {"ollama/api_chat_stream.ndjson"}}), false, func(t *testing.T, got streamed, rs *recordedServer) {
			var body ollamaRequest
			json.Unmarshal(rs.posts("/api/chat")[0].Body, &body)
			if got.err != nil || body.Options == nil || body.Options.NumCtx != 2048 || body.Messages[0].Role != "system" {
				t.Errorf("err %v, request %s", got.err, rs.posts("/api/chat")[0].Body)
			}
			if u := got.reply.Usage; u.Input != 15 || u.Output != 24 || u.Estimated || !strings.HasPrefix(replyText(got.reply), " feder") {
				t.Errorf("usage %+v, text %q", u, replyText(got.reply))
			}
			if w := lookupModel("ollama", t.Name()).ContextWindow; w != 2048 {
				t.Errorf("window %d", w)
			}
		}},
		{"native: two whole calls in the last object", mergeRoutes(ollama, map[string][]string{native: {"ollama/api_chat_jinja_tools_stream.ndjson"}}), true, func(t *testing.T, got streamed, rs *recordedServer) {
			calls := Message{Content: got.reply.Content}.ToolCalls()
			if got.err != nil || len(calls) != 2 || calls[0].ID != "FXcC77I8NI69cbyDFoZo8rE5j7YnHzzD" || string(calls[1].Args) != `{"dir":"."}` || got.reply.Stop != StopToolUse {
				t.Errorf("err %v, calls %+v", got.err, calls)
			}
			if got.text("tool_args") != `{"dir":"."}{"dir":"."}` {
				t.Errorf("streamed %q", got.text("tool_args"))
			}
		}},
		{"native: tool calls swallowed by a Go template", mergeRoutes(ollama, map[string][]string{native: {"ollama/api_chat_tools_stream.ndjson"}}), true, func(t *testing.T, got streamed, rs *recordedServer) {
			if got.err != nil || len(got.reply.Content) != 0 || got.reply.Stop != StopLength {
				t.Errorf("err %v, reply %+v", got.err, got.reply)
			}
		}},
		{"native: a prompt cut without a word is reported", mergeRoutes(ollama, map[string][]string{native: {"ollama/api_chat_overflow_numctx2048_stream.ndjson"}}), false, func(t *testing.T, got streamed, rs *recordedServer) {
			tr := got.reply.Truncated
			if got.err != nil || !strings.Contains(tr, "read only 1026 of the about") || !strings.Contains(tr, "is 2048 tokens") || !strings.Contains(tr, "that is all the model takes") {
				t.Errorf("err %v, truncated %q", got.err, tr)
			}
		}},
		{"native: a model without tools gets them as text", mergeRoutes(ollama, map[string][]string{"POST /api/show": {"ollama/api_show_tiny_notools.json"}, native: {"ollama/api_chat_stream.ndjson"}}), true, func(t *testing.T, got streamed, rs *recordedServer) {
			var body ollamaRequest
			json.Unmarshal(rs.posts("/api/chat")[0].Body, &body)
			if got.err != nil || body.Tools != nil || !strings.Contains(body.Messages[0].Content, "## list_dir") || !strings.Contains(got.reply.Notice, "takes no tools") {
				t.Errorf("err %v, notice %q, request %s", got.err, got.reply.Notice, rs.posts("/api/chat")[0].Body)
			}
		}},
		{"native, a model on ollama's llama-server path: its runner's 400 inside a string; num_ctx is already the trained length, so no setting is offered", mergeRoutes(ollama, map[string][]string{native: {"ollama/api_chat_jinja_overflow_stream.ndjson"}}), false, func(t *testing.T, got streamed, rs *recordedServer) {
			var perr *ProviderError
			if !errors.Is(got.err, ErrContextTooLong) || !errors.As(got.err, &perr) || perr.Type != "exceed_context_size_error" ||
				!strings.HasPrefix(perr.Message, "request (8136 tokens) exceeds") || !strings.Contains(got.err.Error(), "that is all the model takes") || strings.Contains(got.err.Error(), "contextWindow") {
				t.Errorf("err = %v", got.err)
			}
		}},
		{"no /api/version: the OpenAI path; role and text in the first chunk", map[string][]string{v1: {"ollama/chat_stream.sse"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			if got.err != nil || len(rs.posts("/v1/chat/completions")) != 1 || !strings.HasPrefix(replyText(got.reply), " grams netted") {
				t.Errorf("err %v, text %q", got.err, replyText(got.reply))
			}
		}},
		{"the whole call in one chunk", map[string][]string{v1: {"ollama/jinja_tools_stream_fresh.sse"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			calls := Message{Content: got.reply.Content}.ToolCalls()
			if got.err != nil || len(calls) != 1 || string(calls[0].Args) != `{"dir":"."}` || got.reply.Usage.Estimated {
				t.Errorf("err %v, calls %+v", got.err, calls)
			}
		}},
		{"400 does not support tools: once more with the tools as text", map[string][]string{v1: {"ollama/notools_tools_stream.sse", "ollama/chat_stream.sse"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			reqs := rs.posts("/v1/chat/completions")
			if got.err != nil || len(reqs) != 2 || !strings.Contains(string(reqs[0].Body), `"tools":[`) || strings.Contains(string(reqs[1].Body), `"tools":[`) || !strings.Contains(string(reqs[1].Body), "## list_dir") {
				t.Fatalf("err %v, %d requests", got.err, len(reqs))
			}
			if !strings.Contains(got.reply.Notice, "refused the tools") || !strings.Contains(got.reply.Notice, "does not support tools") {
				t.Errorf("notice %q", got.reply.Notice)
			}
		}},
		{"500 tools param requires --jinja: not retried, the tools as text", map[string][]string{v1: {"ollama/jinja_tools_stream.sse", "ollama/chat_stream.sse"}}, true, func(t *testing.T, got streamed, rs *recordedServer) {
			if got.err != nil || !strings.Contains(got.reply.Notice, "tools param requires --jinja") || len(rs.posts("/v1/chat/completions")) != 2 {
				t.Errorf("err %v, notice %q, %d requests", got.err, got.reply.Notice, len(rs.posts("/v1/chat/completions")))
			}
		}},
		{"silently truncated on the OpenAI path", map[string][]string{v1: {"ollama/overflow_v1_stream.sse"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			if got.err != nil || !strings.Contains(got.reply.Truncated, "read only 1026") {
				t.Errorf("err %v, truncated %q", got.err, got.reply.Truncated)
			}
		}},
		{"an unknown model is not a wrong base URL", map[string][]string{v1: {"ollama/unknown_model.json"}}, false, func(t *testing.T, got streamed, rs *recordedServer) {
			if got.err == nil || !strings.Contains(got.err.Error(), "model 'does-not-exist' not found") || strings.Contains(got.err.Error(), "base-url") {
				t.Errorf("err = %v", got.err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rs := startRecorded(t, c.routes)
			p := localProvider(t, "ollama", rs.URL+"/v1", LocalOptions{})
			msgs := hello
			if strings.Contains(c.name, "cut") || strings.Contains(c.name, "truncated") {
				// As long as the prompt the server cut: ~3700 tokens.
				msgs = []Message{{Role: RoleUser, Content: []Block{TextBlock("Summarize: " + strings.Repeat("word1234 ", 1500))}}}
			}
			req := Request{Model: t.Name(), System: "You are a test.", Messages: msgs}
			if c.tools {
				req.Tools = []ToolSpec{listDirTool}
			}
			c.check(t, callProvider(t, p, req), rs)
		})
	}
}

func TestOllamaMessagesCarryTheToolName(t *testing.T) {
	t.Parallel()
	msgs := []Message{
		{Role: RoleUser, Content: []Block{TextBlock("List the current directory.")}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockToolCall, ID: "FXc", Name: "list_dir", Args: json.RawMessage(`{"dir":"."}`)}}},
		{Role: RoleUser, Content: []Block{{Type: BlockToolResult, CallID: "FXc", Content: []Block{TextBlock("a.txt\nb.txt")}}}},
	}
	got, _ := json.Marshal(ollamaMessages(msgs))
	want := `[{"role":"user","content":"List the current directory."},{"role":"assistant","content":"","tool_calls":[{"id":"FXc","function":{"name":"list_dir","arguments":{"dir":"."}}}]},{"role":"tool","content":"a.txt\nb.txt","tool_name":"list_dir","tool_call_id":"FXc"}]`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// Every server's words for a prompt longer than its context are an
// overflow (compact and retry once), with the context it names; other
// refusals are not.
func TestOverflowWordingsOfEachServer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		server      string
		status      int
		body        string
		overflow    bool
		window      int
		hintContext string
	}{
		{"llama.cpp", 400, `{"error":{"code":400,"message":"request (3705 tokens) exceeds the available context size (512 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3705,"n_ctx":512}}`, true, 512, "--ctx-size"},
		{"ollama (older)", 400, `{"error":"prompt too long; exceeded max context length by 4021 tokens"}`, true, 0, ""},
		{"ollama", 400, `{"error":"the prompt is longer than the context length currently available to the model; shorten the prompt, adjust the context length in settings, or use a model with a longer context length"}`, true, 0, ""},
		{"vLLM", 400, `{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`, true, 4096, ""},
		{"vLLM (newer)", 400, `{"error":{"message":"The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that max_model_len is no smaller than the number of text tokens.","type":"BadRequestError","param":null,"code":400}}`, true, 4096, ""},
		{"LM Studio", 400, `{"error":"The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input."}`, true, 4096, ""},
		{"LM Studio (server log wording)", 400, `{"error":"Trying to keep the first 10136 tokens when context the overflows. However, the model is loaded with context length of only 7866 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input."}`, true, 7866, ""},
		{"LM Studio (mid-generation)", 400, `{"error":"Reached context length of 4096 tokens with model (arch: qwen3vlmoe) that does not currently support mid-generation context overflow. Try reloading with a larger context length or shortening the prompt/chat."}`, true, 0, ""},
		{"LM Studio (MLX)", 400, `{"error":"Context size has been exceeded."}`, true, 0, ""},
		{"TGI", 422, "{\"error\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4031 `inputs` tokens and 200 `max_new_tokens`\",\"error_type\":\"validation\"}", true, 4096, ""},
		{"TGI (input only)", 422, "{\"error\":\"Input validation error: `inputs` must have less than 2048 tokens. Given: 3000\",\"error_type\":\"validation\"}", true, 2048, ""},
		{"OpenAI", 400, `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, true, 128000, ""},
		{"TGI, the output limit alone", 422, "{\"error\":\"Input validation error: `max_new_tokens` must be <= 4096. Given: 8000\",\"error_type\":\"validation\"}", false, 0, ""},
		{"a rate limit", 429, `{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}`, false, 0, ""},
		{"a field too long", 400, `{"error":{"message":"Invalid 'messages[5].content': string too long. Expected a string with maximum length 10485760","type":"invalid_request_error"}}`, false, 0, ""},
	} {
		t.Run(c.server, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				if r.Method != http.MethodPost {
					http.NotFound(w, r)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				io.WriteString(w, c.body)
			}))
			defer srv.Close()
			p := localProvider(t, "openai", srv.URL+"/v1", LocalOptions{})
			got := callProvider(t, p, Request{Model: t.Name(), Messages: hello})
			if got.err == nil || errors.Is(got.err, ErrContextTooLong) != c.overflow {
				t.Fatalf("err = %v; overflow want %v", got.err, c.overflow)
			}
			if !c.overflow {
				return
			}
			if c.window > 0 && !strings.Contains(got.err.Error(), fmt.Sprintf("the server's context is %d tokens", c.window)) {
				t.Errorf("err = %v; want it to name the context %d", got.err, c.window)
			}
			if !strings.Contains(got.err.Error(), cmp.Or(c.hintContext, "contextWindow")) {
				t.Errorf("err = %v; want it to say how to raise the context", got.err)
			}
		})
	}
}

// A server that answers every question about itself with a stream that is
// not JSON and never ends (an SSE endpoint mounted everywhere, a hostile
// proxy) is refused at the answer's first byte: zot hangs up at once
// rather than reading 16 MiB of each answer, or waiting for an end.
func TestProbeRefusesANonJSONAnswerAtItsFirstByte(t *testing.T) {
	t.Parallel()
	hungUp := make(chan string, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, " \n data: {\"never\": \"ends\"}\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done() // zot closed the connection
		hungUp <- r.URL.Path
	}))
	defer srv.Close()
	p := localProvider(t, "openai", srv.URL+"/v1", LocalOptions{}).(*openaiProvider)
	for _, path := range []string{"/props", "/v1/models"} {
		// The probe's own bound: an answer read to its end never comes, so
		// a regression ends here with the deadline, not the refusal.
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		err := p.local.getJSON(ctx, "GET", srv.URL+path, nil, &struct{}{})
		cancel()
		if err == nil || err.Error() != path+": not a JSON object" {
			t.Errorf("%s: err = %v", path, err)
		}
		if got := <-hungUp; got != path {
			t.Errorf("hung up on %s, asked %s", got, path)
		}
	}
}

// ollamaMessages converts a whole transcript as a request does, one
// message at a time (ollamaProvider.requestBody): arguments as objects,
// a tool result with the name of the tool that made it, images as base64
// beside the text (a tool's images in a user message after the results).
func ollamaMessages(msgs []Message) []ollamaMessage {
	var out []ollamaMessage
	for i, m := range msgs {
		out = append(out, ollamaMessagesOf(m, func(id string) string { return callName(msgs[:i], id) })...)
	}
	return out
}
