package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests against MCP servers nobody here wrote: the reference filesystem and
// everything servers from npm. testdata/mcp/install-servers.sh installs
// them into $ZOT_MCP_SERVERS, else os.UserCacheDir()/zot-mcp-servers.
// Without them the tests skip; with ZOT_MCP_REQUIRE_SERVERS set (CI, after
// installing) they fail instead.

var mcpSkipNotice sync.Once

// findRealMCPServer returns the path of an installed server's executable,
// or why there is none.
func findRealMCPServer(name string) (bin, why string) {
	dir := os.Getenv("ZOT_MCP_SERVERS")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		dir = filepath.Join(cache, "zot-mcp-servers")
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", "node is not installed"
	}
	bin = filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Sprintf("%s is not installed in %s", name, dir)
	}
	return bin, ""
}

// realMCPServer returns the path of an installed server's executable, or
// skips the test loudly.
func realMCPServer(t testing.TB, name string) string {
	t.Helper()
	bin, why := findRealMCPServer(name)
	skipUnlessInstalled(t, &mcpSkipNotice, why, "ZOT_MCP_REQUIRE_SERVERS", "the MCP tests against real servers", "install-servers.sh", "ZOT_MCP_SERVERS")
	return bin
}

// skipUnlessInstalled fails the test when why says what is missing and
// requireVar is set (CI installed it), else skips it with a notice, once
// per notice, naming the testdata/mcp script that installs it into the
// directory dirVar names. The notice goes to the terminal go test was run
// from as well as to stderr: go test ./... shows a passing package's
// output to no one.
func skipUnlessInstalled(t testing.TB, notice *sync.Once, why, requireVar, what, script, dirVar string) {
	t.Helper()
	if why == "" {
		return
	}
	if os.Getenv(requireVar) != "" {
		t.Fatalf("%s is set but %s", requireVar, why)
	}
	notice.Do(func() {
		msg := fmt.Sprintf("\n!!! SKIPPING %s: %s.\n!!! Install with: sh testdata/mcp/%s [DIR] (and set %s=DIR for another DIR)\n\n", what, why, script, dirVar)
		fmt.Fprint(os.Stderr, msg)
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			tty.WriteString(strings.ReplaceAll(msg, "\n", "\r\n")) // the terminal may be in raw mode
			tty.Close()
		}
	})
	skipMissing(t, "SKIPPED: %s; run sh testdata/mcp/%s", why, script)
}

// startEverythingHTTP runs the reference everything server over
// Streamable HTTP and returns its URL; it skips loudly when it is not
// installed.
func startEverythingHTTP(t *testing.T) string {
	bin := realMCPServer(t, "mcp-server-everything")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p, err := startProc(procSpec{argv: []string{bin, "streamableHttp"}, env: envNoSecrets, addEnv: []string{fmt.Sprintf("PORT=%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop(killGrace)
		p.Reap()
	})
	waitFor(t, "the everything server to listen", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

func realServerEntry(bin string, args ...string) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"command": %q, "args": %s}`, bin, a)
}

func TestMCPRealFilesystemServer(t *testing.T) {
	t.Parallel()
	bin := realMCPServer(t, "mcp-server-filesystem")
	h := newMCPHarness(t, map[string]string{"fs": realServerEntry(bin, ".")})
	writeFile(t, filepath.Join(h.cwd, "notes.txt"), "kiwi and mango\n", 0o644)
	r := mcpRun(t, h.tool("mcp__fs__read_file"), `{"path": "notes.txt"}`)
	if r.IsError || !strings.Contains(textOf(r), "kiwi and mango") {
		t.Errorf("read_file = %+v", r)
	}
	// The server asked for roots and now allows the session cwd only.
	r = mcpRun(t, h.tool("mcp__fs__read_file"), `{"path": "/etc/hostname"}`)
	if !r.IsError || !strings.Contains(textOf(r), "outside allowed directories") {
		t.Errorf("read outside the root = %+v", r)
	}
	r = mcpRun(t, h.tool("mcp__fs__list_allowed_directories"), `{}`)
	if !strings.Contains(textOf(r), h.cwd) {
		t.Errorf("allowed directories = %q, want the session cwd", textOf(r))
	}
	r = mcpRun(t, h.tool("mcp__fs__read_file"), `{"nope": 1}`)
	if !r.IsError {
		t.Errorf("bad arguments gave %+v", r)
	}
	if st := h.settle(); st[0].Tools < 10 {
		t.Errorf("status = %+v", st[0])
	}
}

func TestMCPRealEverythingServer(t *testing.T) {
	t.Parallel()
	bin := realMCPServer(t, "mcp-server-everything")
	h := newMCPHarness(t, map[string]string{"every": realServerEntry(bin)})
	if r := mcpRun(t, h.tool("mcp__every__echo"), `{"message": "hello"}`); textOf(r) != "Echo: hello" {
		t.Errorf("echo = %+v", r)
	}
	if r := mcpRun(t, h.tool("mcp__every__get-sum"), `{"a": 2, "b": 40}`); !strings.Contains(textOf(r), "42") {
		t.Errorf("get-sum = %+v", r)
	}
	r := mcpRun(t, h.tool("mcp__every__get-tiny-image"), `{}`)
	var image *Block
	for i, b := range r.Content {
		if b.Type == "image" {
			image = &r.Content[i]
		}
	}
	if image == nil || image.MimeType != "image/png" || base64Len(image.Data) < 100 {
		t.Errorf("get-tiny-image = %+v", r.Content)
	}
	var progress []string
	r = h.tool("mcp__every__trigger-long-running-operation").Run(context.Background(), json.RawMessage(`{"duration": 0.3, "steps": 3}`),
		func(l string) { progress = append(progress, l) })
	if r.IsError || strings.Join(progress, "|") != "(1/3)|(2/3)|(3/3)" {
		t.Errorf("long-running: %q, progress %q", textOf(r), progress)
	}
	if r := mcpRun(t, h.tool("mcp__every__get-roots-list"), `{}`); !strings.Contains(textOf(r), "file://"+h.cwd) {
		t.Errorf("get-roots-list = %q", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__every__get-structured-content"), `{"location": "Chicago"}`); !strings.Contains(textOf(r), `"temperature"`) {
		t.Errorf("get-structured-content = %q", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__every__get-resource-reference"), `{"resourceType": "Text", "resourceId": 1}`); !strings.Contains(textOf(r), "[resource demo://resource/") {
		t.Errorf("get-resource-reference = %q", textOf(r))
	}
	// Neither reference server pages tools/list; the paged flow is
	// TestMCPPaginationFollowsNextCursor's. Here: one page, no cursor.
	if st := h.settle(); st[0].Tools < 12 {
		t.Errorf("status = %+v", st[0])
	}
}

// The everything server's own Streamable HTTP transport: sessions, SSE
// streams with progress, DELETE at exit.
func TestMCPRealEverythingServerOverHTTP(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"web": fmt.Sprintf(`{"type": "http", "url": %q}`, startEverythingHTTP(t))})
	if r := mcpRun(t, h.tool("mcp__web__echo"), `{"message": "over http"}`); textOf(r) != "Echo: over http" {
		t.Errorf("echo = %+v", r)
	}
	var progress []string
	r := h.tool("mcp__web__trigger-long-running-operation").Run(context.Background(), json.RawMessage(`{"duration": 0.3, "steps": 2}`),
		func(l string) { progress = append(progress, l) })
	if r.IsError || strings.Join(progress, "|") != "(1/2)|(2/2)" {
		t.Errorf("long-running: %q, progress %q", textOf(r), progress)
	}
	if r := mcpRun(t, h.tool("mcp__web__get-roots-list"), `{}`); !strings.Contains(textOf(r), "file://"+h.cwd) {
		t.Errorf("get-roots-list over HTTP = %q", textOf(r))
	}
}

// replayAfter is a replay provider whose first answer waits until ready()
// holds: a model's first reply comes after local servers started, and the
// test must not race them.
func replayAfter(t *testing.T, ready func() bool, steps ...replayStep) *replayServer {
	return replayAfterHook(t, ready, nil, steps...)
}

// replayAfterHook is replayAfter that also calls before, when given, ahead
// of each request, with the number of requests answered before it. The
// hook is set before the server starts: a handler changed while it serves
// races with whatever connects meanwhile.
func replayAfterHook(t *testing.T, ready func() bool, before func(r *http.Request, answered int), steps ...replayStep) *replayServer {
	rs := &replayServer{steps: steps}
	var once sync.Once
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			deadline := time.Now().Add(20 * time.Second)
			for !ready() && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		})
		if before != nil {
			before(r, len(rs.Requests()))
		}
		rs.serve(w, r)
	}))
	t.Cleanup(rs.Close)
	return rs
}

func TestMCPEndToEndModelReadsAFileThroughMCP(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "notes.txt"), "kiwi and mango\n", 0o644)
	fs := fakeServer(t, "normal", t.TempDir(), "")
	if bin, why := findRealMCPServer("mcp-server-filesystem"); why == "" {
		fs = realServerEntry(bin, ".")
	} else {
		t.Logf("%s: testdata/mcp/fakeserver plays fs", why)
	}
	writeFile(t, filepath.Join(z.cwd, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"fs": %s, "broken": {"command": "/nonexistent/zot-test"}}}`, fs), 0o644)
	logs := filepath.Join(z.home, "logs")
	srv := replayAfter(t, func() bool {
		fsLog, _ := os.ReadFile(filepath.Join(logs, "mcp-fs.log"))
		brokenLog, _ := os.ReadFile(filepath.Join(logs, "mcp-broken.log"))
		return strings.Contains(string(fsLog), "ready,") && strings.Contains(string(brokenLog), "no such file")
	},
		toolStep("t1", "mcp__fs__read_file", obj{"path": "notes.txt"}),
		replayStep{Events: anthropicEvents(gen{Text: "It says kiwi."})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--trust-project", "-p", "what is in notes.txt?")...)
	if code != 0 || stdout != "It says kiwi.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `zot: mcp server "broken": start /nonexistent/zot-test in `+z.cwd) {
		t.Errorf("the failing server was not reported: %q", stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests = %d", len(reqs))
	}
	var body anthRequest
	json.Unmarshal(reqs[1].Body, &body)
	last := body.Messages[len(body.Messages)-1].Content[0]
	if last.ToolUseID != "t1" || last.IsError || len(last.Content) == 0 || last.Content[0].Text == nil || !strings.Contains(*last.Content[0].Text, "kiwi and mango") {
		t.Errorf("tool result sent to the model: %s", truncate(string(reqs[1].Body), 2000))
	}
	if !strings.Contains(string(reqs[1].Body), `"name":"mcp__fs__read_file"`) {
		t.Errorf("the second request does not offer mcp__fs__read_file")
	}
}

func TestMCPEndToEndProgressInJSONMode(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, "servers.json"), fmt.Sprintf(`{"mcpServers": {"fake": %s}}`, fakeServer(t, "normal", t.TempDir(), "")), 0o644)
	log := filepath.Join(z.home, "logs", "mcp-fake.log")
	srv := replayAfter(t, func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "ready,")
	},
		toolStep("t1", "mcp__fake__progress", obj{}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "--no-mcp", "--mcp-config", "servers.json", "go")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var progress []string
	for _, line := range strings.Split(stdout, "\n") {
		var ev struct{ Type, ID, Text string }
		json.Unmarshal([]byte(line), &ev)
		if ev.Type == "tool_progress" && ev.ID == "t1" {
			progress = append(progress, ev.Text)
		}
	}
	if strings.Join(progress, "|") != "step 1 (1/3)|step 2 (2/3)|step 3 (3/3)" {
		t.Errorf("tool_progress = %q\n%s", progress, stdout)
	}
}

func TestMCPCommandLine(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeFile(t, filepath.Join(z.cwd, ".mcp.json"), fmt.Sprintf(`{"mcpServers": {"fake": %s, "off": {"command": "x", "disabled": true}, "bad": {"url": "ftp://x"}}}`,
		fakeServer(t, "normal", t.TempDir(), "")), 0o644)
	z.run("trust", "--yes")
	tests := []struct {
		args           []string
		code           int
		stdout, stderr string
	}{
		{[]string{"mcp", "call", "fake", "echo", `{"text":"hi"}`}, 0, "hi\n", ""},
		{[]string{"mcp", "call", "fake", "mcp__fake__echo", `{"text":"\u001b[31mred\u0007"}`}, 0, "red␇\n", ""},
		{[]string{"mcp", "call", "fake", "fail"}, 1, "it went wrong\n", ""},
		{[]string{"mcp", "call", "fake", "progress"}, 0, "done\n", "progress: step 1 (1/3)\nprogress: step 2 (2/3)\nprogress: step 3 (3/3)\n"},
		{[]string{"mcp", "call", "fake", "nope"}, 1, "", `zot mcp call: server "fake" has no tool "nope"; it has: ask, big, change,`},
		{[]string{"mcp", "call", "fake", "echo", "[1]"}, 2, "", "the arguments must be a JSON object"},
		{[]string{"mcp", "tools", "missing"}, 1, "", `zot mcp: no server "missing" is configured`},
		{[]string{"mcp", "tools", "bad"}, 1, "", `zot mcp: server "bad" is invalid: ` + filepath.Join(z.cwd, ".mcp.json") + `: server "bad": url ftp://x is not an http:// or https:// URL`},
		{[]string{"mcp", "frobnicate"}, 2, "", "Usage:"},
		{[]string{"mcp", "list", "--bogus"}, 2, "", "unknown flag --bogus"},
	}
	for _, tt := range tests {
		stdout, stderr, code := z.run(tt.args...)
		if code != tt.code || !strings.HasPrefix(stdout, tt.stdout) || !strings.Contains(stderr, tt.stderr) {
			t.Errorf("zot %q: exit %d stdout %q stderr %q; want %d, %q, %q", tt.args, code, stdout, stderr, tt.code, tt.stdout, tt.stderr)
		}
	}
	stdout, _, _ := z.run("mcp", "tools", "fake")
	if !strings.Contains(stdout, "mcp__fake__echo\n  Echo the text back.\n  input schema: {\n") {
		t.Errorf("tools:\n%s", stdout)
	}
	stdout, _, code := z.run("mcp", "list", "--json")
	var list []MCPServerStatus
	if err := json.Unmarshal([]byte(stdout), &list); err != nil || code != 0 {
		t.Fatalf("list --json: %v %s", err, stdout)
	}
	states := map[string]string{}
	for _, s := range list {
		states[s.Name] = fmt.Sprintf("%s %s %s %d", s.Transport, s.State, s.Protocol, s.Tools)
	}
	if states["fake"] != "stdio ready 2025-11-25 12" || states["off"] != "stdio disabled  0" || states["bad"] != " invalid  0" {
		t.Errorf("list --json states = %v", states)
	}
	stdout, _, _ = z.run("mcp", "list")
	if !strings.HasPrefix(stdout, "NAME") || !strings.Contains(stdout, "fake                 stdio  ready     2025-11-25    12  "+filepath.Join(z.cwd, ".mcp.json")) {
		t.Errorf("list:\n%s", stdout)
	}
}
