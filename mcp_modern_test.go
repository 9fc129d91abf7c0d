package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// A 2026-07-28 server, written from the published specification
// (basic/index, basic/versioning, basic/transports/streamable-http,
// basic/patterns/mrtr, server/discover, server/utilities/caching): no
// initialize and no session, every request carrying its revision and the
// client's capabilities in _meta, the MCP-Protocol-Version, Mcp-Method,
// Mcp-Name and Mcp-Param-* headers checked against the body (400 with
// HeaderMismatch), an unknown revision refused with
// UnsupportedProtocolVersion, questions returned as input_required
// results, tool lists carrying ttlMs.
type modernMCP struct {
	ttlMS int64
	// announce says, in server/discover, that the tool list changes; a
	// send on change then reaches the subscriptions/listen stream.
	announce bool
	change   chan struct{}

	mu        sync.Mutex
	problems  []string // what the client did against the specification
	lists     int      // tools/list requests
	calls     []string // "tool id", per tools/call
	states    map[string]string
	lastCaps  json.RawMessage
	lastRoots json.RawMessage
	lostOnce  bool // the "flaky" tool's first stream ended before its response
}

func startModernMCP(t *testing.T, ttlMS int64) (*modernMCP, *httptest.Server) {
	f := &modernMCP{ttlMS: ttlMS, states: map[string]string{}, change: make(chan struct{}, 1)}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *modernMCP) problem(format string, args ...any) {
	f.mu.Lock()
	f.problems = append(f.problems, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *modernMCP) Problems() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.problems...)
}

// fail answers with HTTP 400 and a JSON-RPC error, as the specification
// asks of a modern server that refuses a request.
func (f *modernMCP) fail(w http.ResponseWriter, id json.RawMessage, code int, msg string, data any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

func (f *modernMCP) result(w http.ResponseWriter, id json.RawMessage, result map[string]any) {
	if _, ok := result["resultType"]; !ok {
		result["resultType"] = "complete"
	}
	result["_meta"] = map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "modern", "version": "1"}}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

// headerValue decodes a header value that may be =?base64?…?=.
func headerValue(v string) string {
	if strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=") {
		b, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(strings.TrimPrefix(v, "=?base64?"), "?="))
		return string(b)
	}
	return v
}

var modernTools = []any{
	map[string]any{"name": "greet", "description": "Greet whoever the user names.", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "where", "description": "Say the region.", "inputSchema": map[string]any{"type": "object",
		"properties": map[string]any{"region": map[string]any{"type": "string", "x-mcp-header": "Region"}, "n": map[string]any{"type": "integer"}}}},
	map[string]any{"name": "roots", "description": "Ask for the roots.", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "flaky", "description": "Loses its first stream.", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "bad", "description": "x-mcp-header inside items: invalid.", "inputSchema": map[string]any{"type": "object",
		"properties": map[string]any{"l": map[string]any{"type": "array", "items": map[string]any{"type": "string", "x-mcp-header": "L"}}}}},
}

func (f *modernMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed) // no GET stream, no session to DELETE
		return
	}
	if r.Header.Get("Mcp-Session-Id") != "" {
		f.problem("a request carried Mcp-Session-Id")
	}
	body, _ := io.ReadAll(r.Body)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name          string         `json:"name"`
			Arguments     map[string]any `json:"arguments"`
			Notifications struct {
				ToolsListChanged bool `json:"toolsListChanged"`
			} `json:"notifications"`
			InputResponses map[string]json.RawMessage `json:"inputResponses"`
			RequestState   *string                    `json:"requestState"`
			Meta           struct {
				Version string          `json:"io.modelcontextprotocol/protocolVersion"`
				Caps    json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
				Client  *struct {
					Name string `json:"name"`
				} `json:"io.modelcontextprotocol/clientInfo"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.ID == nil {
		f.problem("not a request: %s", body)
		f.fail(w, nil, -32600, "not a request", nil)
		return
	}
	meta := m.Params.Meta
	switch {
	case meta.Version == "" || len(meta.Caps) == 0:
		f.problem("%s without the required _meta", m.Method)
		f.fail(w, m.ID, -32602, "missing _meta protocolVersion or clientCapabilities", nil)
		return
	case r.Header.Get("MCP-Protocol-Version") != meta.Version:
		f.problem("%s: MCP-Protocol-Version %q, _meta %q", m.Method, r.Header.Get("MCP-Protocol-Version"), meta.Version)
		f.fail(w, m.ID, -32020, "Header mismatch: MCP-Protocol-Version", nil)
		return
	case meta.Version != "2026-07-28":
		f.fail(w, m.ID, -32022, "Unsupported protocol version", map[string]any{"supported": []string{"2026-07-28"}, "requested": meta.Version})
		return
	case r.Header.Get("Mcp-Method") != m.Method:
		f.problem("Mcp-Method %q for %s", r.Header.Get("Mcp-Method"), m.Method)
		f.fail(w, m.ID, -32020, "Header mismatch: Mcp-Method", nil)
		return
	case m.Method == "tools/call" && headerValue(r.Header.Get("Mcp-Name")) != m.Params.Name:
		f.problem("Mcp-Name %q for %s", r.Header.Get("Mcp-Name"), m.Params.Name)
		f.fail(w, m.ID, -32020, "Header mismatch: Mcp-Name", nil)
		return
	case meta.Client == nil || meta.Client.Name != "zot":
		f.problem("%s without clientInfo", m.Method)
	}
	f.mu.Lock()
	f.lastCaps = meta.Caps
	f.mu.Unlock()
	switch m.Method {
	case "server/discover":
		f.result(w, m.ID, map[string]any{"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{"tools": map[string]any{"listChanged": f.announce}},
			"ttlMs": 60000, "cacheScope": "public"})
	case "subscriptions/listen":
		if !f.announce || !m.Params.Notifications.ToolsListChanged {
			f.problem("subscriptions/listen without toolsListChanged, or to a server that announces no changes")
		}
		sub := map[string]any{"io.modelcontextprotocol/subscriptionId": m.ID}
		w.Header().Set("Content-Type", "text/event-stream")
		ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
			"params": map[string]any{"_meta": sub, "notifications": map[string]any{"toolsListChanged": true}}})
		fmt.Fprintf(w, "data: %s\n\n", ack)
		w.(http.Flusher).Flush()
		for {
			select {
			case <-f.change:
				n, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": map[string]any{"_meta": sub}})
				fmt.Fprintf(w, "data: %s\n\n", n)
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				return
			}
		}
	case "tools/list":
		f.mu.Lock()
		f.lists++
		f.mu.Unlock()
		f.result(w, m.ID, map[string]any{"tools": modernTools, "ttlMs": f.ttlMS, "cacheScope": "private"})
	case "tools/call":
		f.call(w, m.ID, m.Params.Name, m.Params.Arguments, m.Params.InputResponses, m.Params.RequestState, r.Header)
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"Method not found"}}`, m.ID)
	}
}

func (f *modernMCP) call(w http.ResponseWriter, id json.RawMessage, name string, args map[string]any, answers map[string]json.RawMessage, state *string, h http.Header) {
	f.mu.Lock()
	f.calls = append(f.calls, name+" "+string(id))
	f.mu.Unlock()
	text := func(s string) map[string]any {
		return map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}
	}
	switch name {
	case "greet":
		if answers == nil {
			if state != nil {
				f.problem("a first call carried requestState")
			}
			st := fmt.Sprintf(`{"nonce":%q,"id":%s}`, "n-"+string(id), id)
			f.mu.Lock()
			f.states[string(id)] = st
			f.mu.Unlock()
			f.result(w, id, map[string]any{"resultType": "input_required", "requestState": st, "inputRequests": map[string]any{
				"who": map[string]any{"method": "elicitation/create", "params": map[string]any{"mode": "form", "message": "Who is this for?",
					"requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}}}})
			return
		}
		f.mu.Lock()
		echoed := false
		for first, st := range f.states {
			if state != nil && *state == st {
				echoed = true
				if first == string(id) {
					f.problems = append(f.problems, "the retry reused the request id")
				}
			}
		}
		f.mu.Unlock()
		if !echoed {
			f.problem("the retry did not echo requestState exactly: %v", state)
		}
		var a struct {
			Action  string `json:"action"`
			Content struct {
				Name string `json:"name"`
			} `json:"content"`
		}
		json.Unmarshal(answers["who"], &a)
		if a.Action != "accept" {
			f.result(w, id, text("nobody to greet ("+a.Action+")"))
			return
		}
		f.result(w, id, text("hello "+a.Content.Name))
	case "where":
		if got, want := headerValue(h.Get("Mcp-Param-Region")), fmt.Sprint(args["region"]); args["region"] != nil && got != want {
			f.problem("Mcp-Param-Region %q for region %q", got, want)
		}
		if h.Get("Mcp-Param-N") != "" {
			f.problem("a parameter without x-mcp-header became a header")
		}
		f.result(w, id, text(fmt.Sprintf("region %v (header %s)", args["region"], h.Get("Mcp-Param-Region"))))
	case "roots":
		if answers == nil {
			f.result(w, id, map[string]any{"resultType": "input_required", "inputRequests": map[string]any{"r": map[string]any{"method": "roots/list"}}})
			return
		}
		f.mu.Lock()
		f.lastRoots = answers["r"]
		f.mu.Unlock()
		f.result(w, id, text("roots: "+string(answers["r"])))
	case "flaky":
		f.mu.Lock()
		lost := f.lostOnce
		f.lostOnce = true
		f.mu.Unlock()
		if !lost {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":0,\"progress\":1}}\n\n")
			return // the stream ends before the response
		}
		f.result(w, id, text("steady"))
	case "bad":
		f.problem("the tool with an invalid x-mcp-header was called")
		f.result(w, id, text("bad"))
	default:
		f.fail(w, id, -32602, "unknown tool", nil)
	}
}

func TestMCPModernServer(t *testing.T) {
	t.Parallel()
	f, srv := startModernMCP(t, 3_600_000)
	h := newMCPHarness(t, map[string]string{"new": fmt.Sprintf(`{"url": %q}`, srv.URL)}, func(c *MCPConfig) {
		c.Elicit = Elicitor{Form: true, Ask: func(_ context.Context, q Elicitation) ElicitAnswer {
			if q.Server != "new" || q.Message != "Who is this for?" || len(q.Fields) != 1 || !q.Fields[0].Required {
				t.Errorf("question %+v", q)
			}
			return ElicitAnswer{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}
		}}
	})
	if r := mcpRun(t, h.tool("mcp__new__greet"), `{}`); r.IsError || textOf(r) != "hello Ada" {
		t.Errorf("greet = %q", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__new__where"), `{"region":"Zürich ","n":3}`); r.IsError || textOf(r) != "region Zürich  (header =?base64?WsO8cmljaCA=?=)" {
		t.Errorf("where = %q", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__new__roots"), `{}`); r.IsError || !strings.Contains(textOf(r), `{"roots":[{"name":"`+filepath.Base(h.cwd)) {
		t.Errorf("roots = %q", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__new__flaky"), `{}`); r.IsError || textOf(r) != "steady" {
		t.Errorf("flaky = %q", textOf(r))
	}
	if _, ok := h.reg.Lookup("mcp__new__bad"); ok {
		t.Error("a tool with an invalid x-mcp-header was offered")
	}
	st := h.m.Status()
	if st[0].Protocol != "2026-07-28" || st[0].Tools != 4 {
		t.Errorf("status = %+v", st[0])
	}
	f.mu.Lock()
	caps, calls := string(f.lastCaps), strings.Join(f.calls, ",")
	f.mu.Unlock()
	if caps != `{"elicitation":{"form":{}},"roots":{}}` {
		t.Errorf("capabilities offered: %s", caps)
	}
	if !strings.HasPrefix(calls, "greet ") || strings.Count(calls, "flaky") != 2 {
		t.Errorf("calls: %s", calls)
	}
	// A fresh list is not asked for again.
	h.m.Refresh()
	h.m.Shutdown(context.Background())
	f.mu.Lock()
	if f.lists != 1 {
		t.Errorf("tools/list sent %d times within its ttlMs", f.lists)
	}
	f.mu.Unlock()
	if p := f.Problems(); len(p) > 0 {
		t.Errorf("against the specification: %q", p)
	}
}

// A stale list (its ttlMs has passed) is listed again when the tools are
// about to be offered.
func TestMCPModernToolListRefreshesAfterItsTTL(t *testing.T) {
	t.Parallel()
	f, srv := startModernMCP(t, 1)
	h := newMCPHarness(t, map[string]string{"new": fmt.Sprintf(`{"url": %q}`, srv.URL)})
	h.tool("mcp__new__greet")
	waitFor(t, "the list to go stale", func() bool {
		h.m.Refresh()
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.lists >= 2
	})
}

// A server that announces tool list changes is listened to
// (subscriptions/listen), and its list_changed makes zot list again.
func TestMCPModernListChangedThroughSubscriptionsListen(t *testing.T) {
	t.Parallel()
	f, srv := startModernMCP(t, 3_600_000)
	f.announce = true
	h := newMCPHarness(t, map[string]string{"new": fmt.Sprintf(`{"url": %q}`, srv.URL)})
	h.tool("mcp__new__greet")
	f.change <- struct{}{}
	waitFor(t, "a second tools/list", func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.lists >= 2
	})
	h.m.Shutdown(context.Background())
	if p := f.Problems(); len(p) > 0 {
		t.Errorf("against the specification: %q", p)
	}
}

// Without anyone to answer, a modern server's question is declined, and
// the server goes on without it.
func TestMCPModernQuestionDeclinedWhenNobodyAnswers(t *testing.T) {
	t.Parallel()
	f, srv := startModernMCP(t, 0)
	h := newMCPHarness(t, map[string]string{"new": fmt.Sprintf(`{"url": %q}`, srv.URL)})
	if r := mcpRun(t, h.tool("mcp__new__greet"), `{}`); textOf(r) != "nobody to greet (decline)" {
		t.Errorf("greet = %q", textOf(r))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if string(f.lastCaps) != `{"roots":{}}` {
		t.Errorf("capabilities offered: %s", f.lastCaps)
	}
}

// A server that refuses the probe's revision with another one zot speaks
// is asked again in that; one that lists only initialize-based revisions
// is initialized.
func TestMCPNegotiation(t *testing.T) {
	t.Parallel()
	legacyOnly := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		switch m.Method {
		case "server/discover":
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2025-06-18"]}}}`, m.ID)
		case "initialize":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"old","version":"1"}}}`, m.ID)
		case "tools/list":
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, m.ID)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(legacyOnly.Close)
	future := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2031-01-01"]}}}`)
	}))
	t.Cleanup(future.Close)
	h := newMCPHarness(t, map[string]string{"old": fmt.Sprintf(`{"url": %q}`, legacyOnly.URL), "future": fmt.Sprintf(`{"url": %q}`, future.URL)})
	got := map[string]MCPServerStatus{}
	for _, s := range h.settle() {
		got[s.Name] = s
	}
	if s := got["old"]; s.State != MCPReady || s.Protocol != "2025-06-18" {
		t.Errorf("old: %+v", s)
	}
	if s := got["future"]; s.State != MCPFailed || !strings.Contains(s.Error, `the server speaks MCP "2031-01-01"; zot speaks 2026-07-28, 2025-11-25`) {
		t.Errorf("future: %+v", s)
	}
}

// TestMCPModernAndLegacyServersInOneRun: one --json run whose model calls
// a tool of a 2026-07-28 server (which asks a question, answered on stdin)
// and a tool of a 2025-11-25 server; zot mcp list says which speaks what.
func TestMCPModernAndLegacyServersInOneRun(t *testing.T) {
	t.Parallel()
	f, modern := startModernMCP(t, 1) // its tool list is stale after a millisecond
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"new": {"url": %q}, "old": %s}}`,
		modern.URL, fakeServer(t, "normal", t.TempDir(), "")), 0o644)
	logs := filepath.Join(z.home, "logs")
	lists := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.lists
	}
	ready := func() bool {
		a, _ := os.ReadFile(filepath.Join(logs, "mcp-new.log"))
		b, _ := os.ReadFile(filepath.Join(logs, "mcp-old.log"))
		return strings.Contains(string(a), "ready,") && strings.Contains(string(b), "ready,")
	}
	// The second turn begins with the stale list fetched again: its model
	// request waits for that, and the test fails below if it never comes.
	refetched := func(r *http.Request, answered int) {
		if r.Method == http.MethodPost && answered == 1 {
			for deadline := time.Now().Add(20 * time.Second); lists() < 2 && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	srv := replayAfterHook(t, ready, refetched, toolStep("t1", "mcp__new__greet", obj{}), toolStep("t2", "mcp__old__echo", obj{"text": "from the old one"}), textStep("both done"))
	p := startRPCProc(t, z, append(anthropicFlags(srv), "--no-mcp", "--mcp-config", "servers.json", "--json", "--elicitation-stdin", "use", "both")...)
	got := p.until(isType("elicitation_request"))
	var q struct {
		ID     string `json:"elicitation_id"`
		Server string `json:"server"`
	}
	json.Unmarshal([]byte(got[len(got)-1].Raw), &q)
	if q.Server != "new" {
		t.Errorf("question from %q", q.Server)
	}
	p.send(`{"type":"elicit","elicitation_id":"` + q.ID + `","action":"accept","content":{"name":"Grace"}}`)
	p.until(isType("done"))
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d: %s", code, p.stderr)
	}
	sent := toolResultTexts(srv)
	if !strings.Contains(sent, "hello Grace") || !strings.Contains(sent, "from the old one") {
		t.Errorf("tool results sent to the model:\n%s", sent)
	}
	if p := f.Problems(); len(p) > 0 {
		t.Errorf("against the specification: %q", p)
	}
	if n := lists(); n < 2 {
		t.Errorf("tools/list sent %d times: the stale list was not fetched again", n)
	}
	stdout, _, _ := z.run("mcp", "--no-mcp", "--mcp-config", "servers.json", "list")
	for _, want := range []string{"new                  http   ready     2026-07-28     4", "old                  stdio  ready     2025-11-25    12"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("zot mcp list does not say %q:\n%s", want, stdout)
		}
	}
}
