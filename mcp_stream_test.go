package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Streams of a 2025-11-25 Streamable HTTP server: a request's stream the
// server ends before the response is resumed with a GET carrying
// Last-Event-ID after the server's retry:, the GET stream is open before
// the first request that could need it, and nothing goes out after the
// session's DELETE.

// streamMCP is a 2025-11-25 server. Its tools: cut (the stream ends after
// two events, the response comes on the resuming GET), ask (a roots/list
// request of its own on the GET stream right after the tools/call, which
// is answered once the client's reply comes). With pollGET, its GET
// stream closes at once after a priming event, so the client reconnects
// again and again.
type streamMCP struct {
	t       *testing.T
	pollGET bool

	mu       sync.Mutex
	log      []string // "POST method", "GET", "GET Last-Event-ID=x", "DELETE", in order
	listener chan string
	cutAt    time.Time     // when the cut stream ended
	resumeAt time.Time     // when the resuming GET came
	pending  string        // the id of the cut call, answered on the resuming GET
	roots    chan []byte   // the client's answer to our roots/list
	nextID   int           // event ids
	primed   chan struct{} // closed once the GET stream is open
}

func startStreamMCP(t *testing.T, pollGET bool) (*streamMCP, *httptest.Server) {
	f := &streamMCP{t: t, pollGET: pollGET, listener: make(chan string, 4), roots: make(chan []byte, 1), primed: make(chan struct{})}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *streamMCP) note(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
}

func (f *streamMCP) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

func (f *streamMCP) event(w io.Writer, msg any) {
	f.mu.Lock()
	f.nextID++
	id := f.nextID
	f.mu.Unlock()
	data, _ := json.Marshal(msg)
	fmt.Fprintf(w, "id: e%d\ndata: %s\n\n", id, data)
	w.(http.Flusher).Flush()
}

func (f *streamMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		f.note("DELETE")
		if f.pollGET {
			// Long enough for the polling client to reconnect twice, were
			// its GET stream still running.
			time.Sleep(300 * time.Millisecond)
		}
		return
	case http.MethodGet:
		last := r.Header.Get("Last-Event-ID")
		if last == "" {
			f.note("GET")
		} else {
			f.note("GET Last-Event-ID=" + last)
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		f.mu.Lock()
		pending := f.pending
		if last != "" && pending != "" {
			f.resumeAt, f.pending = time.Now(), ""
		}
		f.mu.Unlock()
		switch {
		case last != "" && pending != "":
			f.event(w, map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(pending), "result": map[string]any{
				"content": []any{map[string]any{"type": "text", "text": "resumed after " + last}}}})
		case f.pollGET:
			io.WriteString(w, "retry: 1\n")
			f.event(w, map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "poll"}})
		default:
			select {
			case <-f.primed:
			default:
				close(f.primed)
			}
			for {
				select {
				case req := <-f.listener:
					io.WriteString(w, req)
					w.(http.Flusher).Flush()
				case <-r.Context().Done():
					return
				}
			}
		}
		return
	}
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(body, &m)
	switch {
	case m.Method == "initialize":
		f.note("POST initialize")
		w.Header().Set("Mcp-Session-Id", "s1")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"streams","version":"1"}}}`, m.ID)
	case r.Header.Get("Mcp-Session-Id") != "s1":
		f.note("POST " + m.Method + " without the session")
		http.Error(w, "no session", http.StatusBadRequest)
	case m.Method == "" && string(m.ID) == `"r1"`:
		f.note("POST the answer to roots/list")
		f.roots <- m.Result
		w.WriteHeader(http.StatusAccepted)
	case m.ID == nil:
		f.note("POST " + m.Method)
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "tools/list":
		f.note("POST tools/list")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"cut","inputSchema":{"type":"object"}},{"name":"ask","inputSchema":{"type":"object"}}]}}`, m.ID)
	case m.Method == "tools/call" && m.Params.Name == "cut":
		f.note("POST tools/call cut")
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "retry: 300\n")
		f.event(w, map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "working"}})
		f.event(w, map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "still working"}})
		f.mu.Lock()
		f.pending, f.cutAt = string(m.ID), time.Now()
		f.mu.Unlock()
	case m.Method == "tools/call" && m.Params.Name == "ask":
		f.note("POST tools/call ask")
		select {
		case <-f.primed:
		default:
			// A server such as the SDK's drops a request when no GET
			// stream is open: the race this server catches.
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"lost: no GET stream"}],"isError":true}}`, m.ID)
			return
		}
		f.listener <- `id: r` + "\n" + `data: {"jsonrpc":"2.0","id":"r1","method":"roots/list"}` + "\n\n"
		var roots []byte
		select {
		case roots = <-f.roots:
		case <-time.After(20 * time.Second):
		}
		w.Header().Set("Content-Type", "application/json")
		text, _ := json.Marshal("roots: " + string(roots))
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, m.ID, text)
	default:
		http.Error(w, "unexpected "+m.Method, http.StatusBadRequest)
	}
}

func TestMCPHTTPStreamCutBeforeItsResponseResumes(t *testing.T) {
	t.Parallel()
	f, srv := startStreamMCP(t, false)
	h := newMCPHarness(t, map[string]string{"web": fmt.Sprintf(`{"url": %q}`, srv.URL)})
	r := mcpRun(t, h.tool("mcp__web__cut"), `{}`)
	if r.IsError || textOf(r) != "resumed after e2" {
		t.Fatalf("cut = %q", textOf(r))
	}
	f.mu.Lock()
	waited := f.resumeAt.Sub(f.cutAt)
	f.mu.Unlock()
	// Load can only make the wait longer: the lower bound cannot flake.
	if waited < 300*time.Millisecond {
		t.Errorf("the GET resuming the stream came %s after it ended; the server asked for retry: 300", waited)
	}
	if got := f.requests(); !containsAll(got, "POST tools/call cut", "GET Last-Event-ID=e2") {
		t.Errorf("requests: %q", got)
	}
}

// TestMCPHTTPServerRequestRightAfterToolsCallArrives: the GET stream is
// open before any request after initialized, so a request the server
// sends on it right after a tools/call is not lost.
func TestMCPHTTPServerRequestRightAfterToolsCallArrives(t *testing.T) {
	t.Parallel()
	f, srv := startStreamMCP(t, false)
	h := newMCPHarness(t, map[string]string{"web": fmt.Sprintf(`{"url": %q}`, srv.URL)})
	r := mcpRun(t, h.tool("mcp__web__ask"), `{}`)
	if r.IsError || !strings.Contains(textOf(r), `roots: {"roots":[{"name":"`+filepath.Base(h.cwd)+`","uri":"file://`) {
		t.Fatalf("ask = %q", textOf(r))
	}
	got := f.requests()
	if i, j := index(got, "GET"), index(got, "POST tools/list"); i < 0 || j < 0 || i > j || index(got, "POST notifications/initialized") > i {
		t.Errorf("the GET stream did not open between initialized and the first request: %q", got)
	}
}

// TestMCPHTTPNothingAfterTheDelete: `zot mcp tools` against a server whose
// GET stream closes at once and asks to be polled every millisecond: the
// DELETE is the last request it sees.
func TestMCPHTTPNothingAfterTheDelete(t *testing.T) {
	t.Parallel()
	f, srv := startStreamMCP(t, true)
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "web.json"), fmt.Sprintf(`{"mcpServers": {"web": {"url": %q}}}`, srv.URL), 0o644)
	stdout, stderr, code := z.run("mcp", "--no-mcp", "--mcp-config", "web.json", "tools", "web")
	if code != 0 || !strings.Contains(stdout, "mcp__web__cut") {
		t.Fatalf("exit %d: %s %s", code, stdout, stderr)
	}
	got := f.requests()
	if len(got) == 0 || got[len(got)-1] != "DELETE" || index(got, "DELETE") != len(got)-1 || index(got, "GET") < 0 {
		t.Errorf("requests: %q", got)
	}
}

func index(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		if index(list, w) < 0 {
			return false
		}
	}
	return true
}

// The answer to a server's request ends with the call whose stream
// carried it, when the call is aborted first.
func TestMCPServerRequestEndsWithItsCall(t *testing.T) {
	t.Parallel()
	c := newMCPConn("s", nil)
	sent := make(chan mcpOut, 4)
	c.t = funcTransport(func(out mcpOut) { sent <- out })
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan error, 1)
	c.onRequest = func(ctx context.Context, _ string, _ json.RawMessage) (any, *jsonrpcError) {
		<-ctx.Done()
		answered <- ctx.Err()
		return map[string]any{"action": "cancel"}, nil
	}
	done := make(chan struct{})
	// Owned by the test; ends when the call is cancelled.
	go func() {
		defer close(done)
		c.request(ctx, "tools/call", map[string]any{"name": "x"}, nil, nil)
	}()
	call := <-sent
	c.deliverData([]byte(`{"jsonrpc":"2.0","id":"q","method":"elicitation/create","params":{}}`), "test", call.id)
	cancel()
	<-done
	if err := <-answered; err == nil {
		t.Error("the question outlived its call")
	}
	c.stopAnswers()
}
