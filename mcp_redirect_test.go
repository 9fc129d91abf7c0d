package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// An MCP server over HTTP that answers 307 to another host does not get
// the configured headers sent there: zot mcp says where the redirect led
// and the other host sees nothing. A redirect within the server is
// followed, headers and all.
func TestMCPHeadersNeverFollowARedirectToAnotherHost(t *testing.T) {
	t.Parallel()
	evil := startHostLog(t)
	to := elsewhere(t, evil.URL)
	gw, _ := redirector(t, to)

	f := &fakeHTTPMCP{sessions: map[string]bool{}, roots: make(chan json.RawMessage, 1)}
	mux := http.NewServeMux()
	mux.Handle("/mcp", f)
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	moved := httptest.NewServer(mux)
	t.Cleanup(moved.Close)

	z := newZotRun(t)
	entry := func(u string) string {
		return fmt.Sprintf(`{"type": "http", "url": %q, "headers": {"X-Api-Key": "mcp-secret"}}`, u)
	}
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"web": %s, "moved": %s}}`,
		entry(gw.URL+"/mcp"), entry(moved.URL+"/old")), 0o644)

	_, stderr, code := z.run("mcp", "tools", "web", "--mcp-config", "servers.json")
	if code != 1 || !strings.Contains(stderr, "redirected "+gw.URL+"/mcp to "+to+"/mcp") || !strings.Contains(stderr, "configure it instead") || strings.Contains(stderr, "mcp-secret") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	for _, h := range evil.requests() {
		t.Errorf("the other host was sent a request: %v", h)
	}

	stdout, stderr, code := z.run("mcp", "tools", "moved", "--mcp-config", "servers.json")
	if code != 0 || !strings.Contains(stdout, "mcp__moved__echo") {
		t.Fatalf("a redirect on the same server: exit %d: %s%s", code, stdout, stderr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, h := range f.posts {
		if h.Get("X-Api-Key") != "mcp-secret" {
			t.Errorf("after a same-host redirect the header is gone: %v", h)
		}
	}
}
