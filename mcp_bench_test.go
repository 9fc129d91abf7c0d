package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkMCPStartup measures `zot -p` from process start to the first
// request reaching the provider, with no MCP servers, three fake Python
// servers, and three idle processes (`sleep`, which never answer: zot's own
// cost without the interpreters' CPU). The servers start in the background,
// so the numbers should match.
func BenchmarkMCPStartup(b *testing.B) {
	cases := []struct {
		name  string
		n     int
		entry string
	}{
		{"servers=0", 0, ""},
		{"servers=3-python", 3, fakeServer(b, "normal", "", "")},
		{"servers=3-idle", 3, `{"command": "sleep", "args": ["30"]}`},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			arrived := make(chan time.Time, 1)
			reply := strings.Join(anthropicEvents(gen{Text: "ok"}), "")
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				arrived <- time.Now()
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, reply)
			}))
			defer srv.Close()
			home, cwd := b.TempDir(), b.TempDir()
			var entries []string
			for i := 0; i < c.n; i++ {
				entries = append(entries, fmt.Sprintf("%q: %s", fmt.Sprint("s", i), c.entry))
			}
			writeFile(b, filepath.Join(cwd, ".mcp.json"), `{"mcpServers": {`+strings.Join(entries, ",")+`}}`, 0o644)
			var total time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				cmd := exec.Command(zotBin(b), "-p", "--no-session", "--provider", "anthropic", "--base-url", srv.URL, "--api-key", "k", "hi")
				cmd.Dir = cwd
				cmd.Env = []string{"ZOT_HOME=" + home, "HOME=" + home, "PATH=" + os.Getenv("PATH")}
				start := time.Now()
				if err := cmd.Start(); err != nil {
					b.Fatal(err)
				}
				total += (<-arrived).Sub(start)
				if err := cmd.Wait(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms-to-first-request")
		})
	}
}

// BenchmarkMCPToolCallStdio is the round trip of a trivial tools/call over
// stdio, through the tool the model would call.
func BenchmarkMCPToolCallStdio(b *testing.B) {
	servers := map[string]struct{ entry, tool, args string }{
		"fake-python": {fakeServer(b, "normal", "", ""), "mcp__s__echo", `{"text":"hi"}`},
	}
	if bin, why := findRealMCPServer("mcp-server-everything"); why == "" {
		servers["everything-node"] = struct{ entry, tool, args string }{realServerEntry(bin), "mcp__s__echo", `{"message":"hi"}`}
	}
	for name, s := range servers {
		b.Run(name, func(b *testing.B) {
			home := b.TempDir()
			writeFile(b, filepath.Join(home, "mcp.json"), `{"mcpServers": {"s": `+s.entry+`}}`, 0o644)
			reg := NewToolRegistry()
			servers, problems := loadMCPConfigs(MCPSources{Home: home})
			m := NewMCPManager(MCPConfig{Home: home, Cwd: b.TempDir(), Servers: servers, Problems: problems})
			m.Start(context.Background(), reg)
			defer m.Shutdown(context.Background())
			m.waitSettled(context.Background())
			tool, ok := reg.Lookup(s.tool)
			if !ok {
				b.Fatalf("no %s: %+v", s.tool, m.Status())
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := tool.Run(context.Background(), json.RawMessage(s.args), func(string) {}); r.IsError {
					b.Fatal(textOf(r))
				}
			}
			b.StopTimer() // not the shutdown
		})
	}
}
