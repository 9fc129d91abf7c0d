package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeHTTPMCP is a Streamable HTTP MCP server: it answers requests with one
// JSON body, or with an SSE stream (sse) whose tools/call answer comes after
// a progress notification and a roots/list request of its own. It forgets
// a session on the "expire" tool, and with expireCalls answers every
// tools/call with 404.
type fakeHTTPMCP struct {
	sse         bool
	expireCalls bool

	mu       sync.Mutex
	sessions map[string]bool
	inits    int
	deletes  []string
	posts    []http.Header        // headers of POSTs after initialize
	roots    chan json.RawMessage // the client's answer to our roots/list
}

type fakeHTTPMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string          `json:"name"`
		Arguments       json.RawMessage `json:"arguments"`
		ProtocolVersion string          `json:"protocolVersion"`
		Meta            struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

func startFakeHTTPMCP(t *testing.T, sse bool) (*fakeHTTPMCP, *httptest.Server) {
	f := &fakeHTTPMCP{sse: sse, sessions: map[string]bool{}, roots: make(chan json.RawMessage, 1)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeHTTPMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sid := r.Header.Get("Mcp-Session-Id")
	f.mu.Lock()
	known := f.sessions[sid]
	f.mu.Unlock()
	switch r.Method {
	case http.MethodGet:
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	case http.MethodDelete:
		f.mu.Lock()
		f.deletes = append(f.deletes, sid)
		f.mu.Unlock()
		return
	}
	accept := r.Header.Get("Accept")
	if !strings.Contains(accept, "application/json") || !strings.Contains(accept, "text/event-stream") {
		http.Error(w, "bad Accept", http.StatusNotAcceptable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var m fakeHTTPMsg
	if err := json.Unmarshal(body, &m); err != nil {
		http.Error(w, "bad JSON", http.StatusBadRequest)
		return
	}
	if m.Method == "initialize" {
		f.mu.Lock()
		f.inits++
		id := fmt.Sprintf("session-%d", f.inits)
		f.sessions[id] = true
		f.mu.Unlock()
		w.Header().Set("Mcp-Session-Id", id)
		f.reply(w, m.ID, map[string]any{"protocolVersion": m.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "fake-http", "version": "1"}}, nil)
		return
	}
	if !known || m.Method == "tools/call" && f.expireCalls {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	f.mu.Lock()
	f.posts = append(f.posts, r.Header.Clone())
	f.mu.Unlock()
	if v := r.Header.Get("MCP-Protocol-Version"); v != mcpLegacyVersions[0] {
		http.Error(w, "bad MCP-Protocol-Version "+v, http.StatusBadRequest)
		return
	}
	switch {
	case m.Method == "" && string(m.ID) == `"roots-1"`: // the client's answer
		f.roots <- m.Result
		w.WriteHeader(http.StatusAccepted)
	case m.ID == nil: // a notification
		w.WriteHeader(http.StatusAccepted)
	case m.Method == "tools/list":
		f.reply(w, m.ID, map[string]any{"tools": []any{
			map[string]any{"name": "echo", "description": "Echo.", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "expire", "description": "Forget the session.", "inputSchema": map[string]any{"type": "object"}},
		}}, nil)
	case m.Method == "tools/call" && m.Params.Name == "expire":
		f.mu.Lock()
		delete(f.sessions, sid)
		f.mu.Unlock()
		f.reply(w, m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "forgotten"}}}, nil)
	case m.Method == "tools/call":
		var before []any
		if f.sse {
			before = []any{
				map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": m.Params.Meta.ProgressToken, "progress": 1, "message": "halfway"}},
				map[string]any{"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"},
			}
		}
		f.reply(w, m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo " + string(m.Params.Arguments)}}}, before)
	default:
		http.Error(w, "unexpected "+m.Method, http.StatusBadRequest)
	}
}

// reply answers a request: as JSON, or as an SSE stream carrying before
// first. In a stream with a roots/list request, the answer waits for the
// client's reply to it, which arrives on another POST.
func (f *fakeHTTPMCP) reply(w http.ResponseWriter, id json.RawMessage, result any, before []any) {
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	if !f.sse {
		w.Header().Set("Content-Type", "application/json")
		w.Write(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, "id: prime\ndata: \n\n")
	w.(http.Flusher).Flush()
	for _, b := range before {
		ev, _ := json.Marshal(b)
		fmt.Fprintf(w, "event: message\ndata: %s\n\n", ev)
		w.(http.Flusher).Flush()
		if strings.Contains(string(ev), `"roots/list"`) {
			select {
			case <-f.roots:
			case <-time.After(10 * time.Second):
				return
			}
		}
	}
	fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg)
}

func httpEntry(url string) string {
	return fmt.Sprintf(`{"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${ZOT_TEST_HTTP_TOKEN}"}}`, url)
}

func TestMCPHTTPJSONAndSSEResponses(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	t.Setenv("ZOT_TEST_HTTP_TOKEN", "tok-123")
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			f, srv := startFakeHTTPMCP(t, sse)
			checkLeaks := noGoroutineLeak(t)
			h := newMCPHarness(t, map[string]string{"web": httpEntry(srv.URL + "/mcp")})
			var progress []string
			r := h.tool("mcp__web__echo").Run(context.Background(), json.RawMessage(`{"x":1}`), func(l string) { progress = append(progress, l) })
			if r.IsError || textOf(r) != `echo {"x":1}` {
				t.Fatalf("echo = %q", textOf(r))
			}
			if sse && strings.Join(progress, "|") != "halfway" {
				t.Errorf("progress = %q", progress)
			}
			if st := h.m.Status(); st[0].Transport != "http" || st[0].Tools != 2 || st[0].Target != srv.URL+"/mcp" {
				t.Errorf("status = %+v", st[0])
			}
			h.m.Shutdown(context.Background())
			f.mu.Lock()
			for _, hd := range f.posts {
				if hd.Get("Mcp-Session-Id") != "session-1" || hd.Get("Authorization") != "Bearer tok-123" || hd.Get("MCP-Protocol-Version") != mcpLegacyVersions[0] {
					t.Errorf("headers after initialize: %v", hd)
				}
			}
			if len(f.deletes) != 1 || f.deletes[0] != "session-1" {
				t.Errorf("DELETEs = %q", f.deletes)
			}
			f.mu.Unlock() // a handler still running may need it to end
			checkLeaks()
		})
	}
}

// TestMCPHTTPExpiredSessionInitializesOnceAgain is not parallel: the entry's
// header expands $ZOT_TEST_HTTP_TOKEN from the environment, which it sets.
func TestMCPHTTPExpiredSessionInitializesOnceAgain(t *testing.T) {
	t.Setenv("ZOT_TEST_HTTP_TOKEN", "x")
	f, srv := startFakeHTTPMCP(t, false)
	h := newMCPHarness(t, map[string]string{"web": httpEntry(srv.URL)})
	if r := mcpRun(t, h.tool("mcp__web__expire"), `{}`); textOf(r) != "forgotten" {
		t.Fatalf("expire = %q", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__web__echo"), `{}`); r.IsError || textOf(r) != "echo {}" {
		t.Fatalf("echo after expiry = %q", textOf(r))
	}
	f.mu.Lock()
	inits := f.inits
	f.expireCalls = true // from now on the server refuses every call
	f.mu.Unlock()
	if inits != 2 {
		t.Errorf("initialize sent %d times, want 2", inits)
	}
	r := mcpRun(t, h.tool("mcp__web__echo"), `{}`)
	if !r.IsError || !strings.Contains(textOf(r), "session expired") {
		t.Errorf("echo with a server that always forgets = %q", textOf(r))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inits != 3 {
		t.Errorf("initialize sent %d times, want one more (3)", f.inits)
	}
}

// TestMCPHTTPErrorsNameTheServerNotTheSecret is not parallel: the secrets
// come from environment variables it sets.
func TestMCPHTTPErrorsNameTheServerNotTheSecret(t *testing.T) {
	t.Setenv("ZOT_TEST_HTTP_TOKEN", "x")
	t.Setenv("ZOT_TEST_URL_KEY", "very-secret")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"invalid token"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	h := newMCPHarness(t, map[string]string{"web": fmt.Sprintf(`{"url": %q}`, srv.URL+"/mcp?key=${ZOT_TEST_URL_KEY}")})
	st := h.settle()
	want := "initialize: POST " + srv.URL + "/mcp: HTTP 401: invalid token"
	if st[0].State != "failed" || st[0].Error != want {
		t.Errorf("status = %+v, want error %q", st[0], want)
	}
	if said := strings.Join(h.said(), "\n"); strings.Contains(said, "very-secret") {
		t.Errorf("the secret leaked: %s", said)
	}
}

// keptConnBreaker serves an MCP server's POSTs, but for each method in
// breaks, the first POST that comes on a connection kept from an earlier
// request gets no answer: its connection is closed. That is a server
// closing an idle connection just as the client sends on it, made certain.
type keptConnBreaker struct {
	next   http.Handler
	breaks map[string]bool

	mu       sync.Mutex
	broken   map[string]int
	received map[string]int // the broken included
}

// servedOnConn counts the requests a connection has carried.
type servedOnConn struct{}

func (b *keptConnBreaker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	kept := r.Context().Value(servedOnConn{}).(*atomic.Int32).Add(1) > 1
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m fakeHTTPMsg
		json.Unmarshal(body, &m)
		b.mu.Lock()
		b.received[m.Method]++
		breakIt := kept && b.breaks[m.Method] && b.broken[m.Method] == 0
		if breakIt {
			b.broken[m.Method]++
		}
		b.mu.Unlock()
		if breakIt {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}
	b.next.ServeHTTP(w, r)
}

// TestMCPHTTPBrokenKeptConnectionRepeatsOnlyTheSafe: a tools/list whose
// kept connection breaks goes once more, on another, and the server's
// tools arrive; a tools/call does not (it may have acted): its caller gets
// the error, and the server has seen it once. Not parallel: the entry's
// header expands $ZOT_TEST_HTTP_TOKEN, which it sets.
func TestMCPHTTPBrokenKeptConnectionRepeatsOnlyTheSafe(t *testing.T) {
	t.Setenv("ZOT_TEST_HTTP_TOKEN", "x")
	b := &keptConnBreaker{
		next:   &fakeHTTPMCP{sessions: map[string]bool{}, roots: make(chan json.RawMessage, 1)},
		breaks: map[string]bool{"tools/list": true, "tools/call": true},
		broken: map[string]int{}, received: map[string]int{},
	}
	srv := httptest.NewUnstartedServer(b)
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, servedOnConn{}, new(atomic.Int32))
	}
	srv.Start()
	t.Cleanup(srv.Close)
	h := newMCPHarness(t, map[string]string{"web": httpEntry(srv.URL)})
	echo := h.tool("mcp__web__echo")
	b.mu.Lock()
	if b.broken["tools/list"] != 1 || b.received["tools/list"] != 2 {
		t.Errorf("tools/list: %d broken, %d received; want the one broken sent once more", b.broken["tools/list"], b.received["tools/list"])
	}
	b.mu.Unlock()
	// The first call may come on a fresh connection, if the kept one idled
	// out while the tool was awaited; the one after it comes on a kept one.
	calls, broke := 0, false
	for !broke && calls < 3 {
		r := mcpRun(t, echo, `{}`)
		calls++
		b.mu.Lock()
		broke = b.broken["tools/call"] == 1
		b.mu.Unlock()
		if broke && (!r.IsError || !strings.Contains(textOf(r), "closed the connection without an answer; not sent again")) {
			t.Errorf("a tools/call whose connection broke = %q, want its error", textOf(r))
		}
		if !broke && (r.IsError || textOf(r) != "echo {}") {
			t.Errorf("tools/call = %q", textOf(r))
		}
	}
	if r := mcpRun(t, echo, `{}`); r.IsError || textOf(r) != "echo {}" {
		t.Errorf("the call after the broken one = %q", textOf(r))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !broke || b.received["tools/call"] != calls+1 {
		t.Errorf("tools/call: broken %v, %d received of %d sent; want the broken one never repeated", broke, b.received["tools/call"], calls+1)
	}
}
