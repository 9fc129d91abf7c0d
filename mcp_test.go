package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// mcpHarness runs an MCPManager in-process against servers configured in a
// private $ZOT_HOME/mcp.json, recording what OnStatus said.
type mcpHarness struct {
	t    *testing.T
	home string
	cwd  string
	reg  *ToolRegistry
	m    *MCPManager

	mu       sync.Mutex
	statuses []string
}

// newMCPHarness writes servers (name → JSON entry) to mcp.json and starts
// them, after set (if any) changed the manager's configuration; Shutdown
// runs at cleanup.
func newMCPHarness(t *testing.T, servers map[string]string, set ...func(*MCPConfig)) *mcpHarness {
	t.Helper()
	return newMCPHarnessIn(t, t.TempDir(), servers, set...)
}

// newMCPHarnessIn is newMCPHarness with home as $ZOT_HOME.
func newMCPHarnessIn(t *testing.T, home string, servers map[string]string, set ...func(*MCPConfig)) *mcpHarness {
	t.Helper()
	h := &mcpHarness{t: t, home: home, cwd: t.TempDir(), reg: NewToolRegistry()}
	var entries []string
	for name, e := range servers {
		entries = append(entries, fmt.Sprintf("%q: %s", name, e))
	}
	writeFile(t, filepath.Join(h.home, "mcp.json"), `{"mcpServers": {`+strings.Join(entries, ",")+`}}`, 0o644)
	configs, problems := loadMCPConfigs(MCPSources{Home: h.home, Cwd: h.cwd})
	cfg := MCPConfig{Home: h.home, Cwd: h.cwd, Servers: configs, Problems: problems, OnStatus: func(server, level, msg string) {
		h.mu.Lock()
		h.statuses = append(h.statuses, server+" "+level+": "+msg)
		h.mu.Unlock()
	}}
	for _, f := range set {
		f(&cfg)
	}
	h.m = NewMCPManager(cfg)
	h.m.Start(context.Background(), h.reg)
	t.Cleanup(func() { h.m.Shutdown(context.Background()) })
	return h
}

func (h *mcpHarness) said() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.statuses...)
}

// tool waits for a tool to be registered.
func (h *mcpHarness) tool(name string) Tool {
	h.t.Helper()
	var tool Tool
	waitFor(h.t, "tool "+name, func() bool {
		tool, _ = h.reg.Lookup(name)
		return tool != nil
	})
	return tool
}

func (h *mcpHarness) settle() []MCPServerStatus {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	h.m.waitSettled(ctx)
	return h.m.Status()
}

// fakeServerBin is testdata/mcp/fakeserver, built.
func fakeServerBin(t testing.TB) string { return mcpTestdataBin(t, "fakeserver") }

// mcpTestdataBin is the Go program in testdata/mcp/<name>, built once a
// run (buildGo).
func mcpTestdataBin(t testing.TB, name string) string {
	t.Helper()
	src, err := filepath.Abs(filepath.Join("testdata", "mcp", name))
	if err != nil {
		t.Fatal(err)
	}
	return buildGo(t, src)
}

// fakeServer is the mcp.json entry of testdata/mcp/fakeserver in a mode;
// state is its state directory; extra adds fields to the entry.
func fakeServer(t testing.TB, mode, state, extra string) string {
	command, _ := json.Marshal(fakeServerBin(t))
	args, _ := json.Marshal([]string{mode, state})
	e := fmt.Sprintf(`{"command": %s, "args": %s`, command, args)
	if extra != "" {
		e += ", " + extra
	}
	return e + "}"
}

func compactJSON(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func textOf(r ToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func mcpRun(t *testing.T, tool Tool, args string) ToolResult {
	t.Helper()
	return tool.Run(context.Background(), json.RawMessage(args), func(string) {})
}

func readState(dir, name string) string {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	return string(b)
}

// fakeServerGone reports whether the fake server whose pid is in dir is gone.
func fakeServerGone(dir string) bool {
	var pid int
	fmt.Sscan(readState(dir, "pid"), &pid)
	return pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
}

// noGoroutineLeak returns a check that the goroutines started since are
// gone.
func noGoroutineLeak(t *testing.T) func() {
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		waitFor(t, fmt.Sprintf("goroutines back to %d", before), func() bool { return runtime.NumGoroutine() <= before })
	}
}

func TestMCPToolsJoinTheRegistryAndCallsWork(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	checkLeaks := noGoroutineLeak(t)
	state := t.TempDir()
	t.Setenv("ZOT_TEST_FAKE_ENV", "from-the-environment")
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", state, `"env": {"FAKE_ENV": "${ZOT_TEST_FAKE_ENV}"}`)})
	echo := h.tool("mcp__fake__echo")
	if echo.Description() != "Echo the text back." || compactJSON(echo.Schema()) != `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}` {
		t.Errorf("description %q schema %s", echo.Description(), echo.Schema())
	}
	if r := mcpRun(t, echo, `{"text":"hi there"}`); r.IsError || textOf(r) != "hi there" || r.Details != "mcp server fake" {
		t.Errorf("echo = %+v", r)
	}
	if r := mcpRun(t, h.tool("mcp__fake__env"), `{}`); textOf(r) != h.cwd+" from-the-environment" {
		t.Errorf("env = %q, want the session cwd and the expanded variable", textOf(r))
	}
	if r := mcpRun(t, h.tool("mcp__fake__fail"), `{}`); !r.IsError || textOf(r) != "it went wrong" {
		t.Errorf("isError result = %+v", r)
	}
	st := h.settle()
	if len(st) != 1 || st[0].State != "ready" || st[0].Tools != 12 || st[0].Transport != "stdio" {
		t.Errorf("status = %+v", st)
	}
	if said := h.said(); len(said) != 1 || said[0] != "fake info: ready, 12 tools" {
		t.Errorf("OnStatus = %q", said)
	}
	log, _ := os.ReadFile(filepath.Join(h.home, "logs", "mcp-fake.log"))
	for _, want := range []string{"fake server normal starting", "server log [info] fake: hello from the fake server", "ready, 12 tools"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	if strings.Contains(string(log), "from-the-environment") {
		t.Errorf("the log shows an expanded value:\n%s", log)
	}
	h.m.Shutdown(context.Background())
	if !fakeServerGone(state) {
		t.Errorf("the server outlived Shutdown")
	}
	checkLeaks()
}

func TestMCPPaginationFollowsNextCursor(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"paged": fakeServer(t, "paged", t.TempDir(), "")})
	h.tool("mcp__paged__env") // the last page
	if st := h.settle(); st[0].Tools != 12 {
		t.Errorf("tools = %d, want all 12 of 6 pages", st[0].Tools)
	}
}

// TestMCPCrashRestartsOnTheNextCallThenAtMostOncePerMinute: the first crash
// is followed by the restart zot promises, however soon after the start it
// came; a crash within a minute of that restart waits out the minute, and
// the report and the refusal both say until when.
func TestMCPCrashRestartsOnTheNextCallThenAtMostOncePerMinute(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", state, `"timeout_ms": 600000`)})
	crash, echo := h.tool("mcp__fake__crash"), h.tool("mcp__fake__echo")
	crashAndReport := func(promise string) string {
		t.Helper()
		r := mcpRun(t, crash, `{}`) // the 10-minute timeout would fail the test first
		if !r.IsError || !strings.Contains(textOf(r), "server exited (exit status 3)") {
			t.Fatalf("crash result = %q", textOf(r))
		}
		var report string
		waitFor(t, "the crash report", func() bool {
			for _, s := range h.said() {
				if strings.Contains(s, "fake error: exited unexpectedly (exit status 3); "+promise) {
					report = s
				}
			}
			return report != ""
		})
		return report
	}

	crashAndReport("it restarts on its next tool call (log: ")
	if r := mcpRun(t, echo, `{"text":"again"}`); r.IsError || textOf(r) != "again" {
		t.Fatalf("call after the first crash = %q", textOf(r))
	}

	report := crashAndReport("restarted less than a minute ago, it restarts on its first tool call after ")
	r := mcpRun(t, echo, `{"text":"again"}`)
	if !r.IsError || !strings.Contains(textOf(r), "zot restarts a crashed server at most once a minute (the last restart was at ") {
		t.Fatalf("call within the minute = %q", textOf(r))
	}
	_, after, _ := strings.Cut(report, "first tool call after ")
	_, tryAfter, _ := strings.Cut(textOf(r), "try again after ")
	if len(after) < 8 || len(tryAfter) < 8 || after[:8] != tryAfter[:8] {
		t.Errorf("the report says after %q, the refusal after %q", after, tryAfter)
	}

	h.m.restartEvery = 0 // the minute has passed
	if r = mcpRun(t, echo, `{"text":"again"}`); r.IsError || textOf(r) != "again" {
		t.Fatalf("call after the minute = %q", textOf(r))
	}
	if calls := readState(state, "calls"); calls != "crash\necho\ncrash\necho\n" {
		t.Errorf("calls the servers saw = %q", calls)
	}
	if st := h.m.Status(); st[0].State != "ready" {
		t.Errorf("state = %s", st[0].State)
	}
}

// TestMCPCrashIsSeenWhileAChildHoldsStdout: a child the server started keeps
// its stdout open after it exits; the exit must still fail the call at once,
// and the child, which ignores SIGTERM, must be gone before the server
// restarts, or when zot shuts down.
func TestMCPCrashIsSeenWhileAChildHoldsStdout(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "orphan", state, `"timeout_ms": 600000`)})
	crash, echo := h.tool("mcp__fake__crash"), h.tool("mcp__fake__echo")
	crashLeavingAChild := func() (child int) {
		t.Helper()
		// Only a missed exit waits this long: the call's own timeout is 10 minutes.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		before := readState(state, "child")
		r := crash.Run(ctx, json.RawMessage(`{}`), func(string) {})
		fmt.Sscan(strings.TrimPrefix(readState(state, "child"), before), &child)
		if child > 0 {
			t.Cleanup(func() { syscall.Kill(child, syscall.SIGKILL) })
		}
		if !r.IsError || !strings.Contains(textOf(r), "server exited (exit status 4)") {
			t.Fatalf("crash result = %q", textOf(r))
		}
		if child == 0 {
			t.Fatal("the server noted no child")
		}
		waitFor(t, "the server to be marked exited", func() bool { return h.m.Status()[0].State == "exited" })
		return child
	}

	child := crashLeavingAChild()
	if r := mcpRun(t, echo, `{"text":"again"}`); r.IsError || textOf(r) != "again" {
		t.Fatalf("call after the crash = %q", textOf(r))
	}
	if !processGone(child) {
		t.Error("the crashed server's child outlived its restart")
	}

	child = crashLeavingAChild()
	h.m.Shutdown(context.Background())
	if !processGone(child) {
		t.Error("the crashed server's child outlived Shutdown")
	}
}

// TestMCPServerThatClosesStdoutIsStopped: a server that closes its stdout
// but keeps running can answer nothing more; its calls fail and it is
// stopped, to be restarted like a crashed one.
func TestMCPServerThatClosesStdoutIsStopped(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "mute", state, `"timeout_ms": 600000`)})
	crash := h.tool("mcp__fake__crash")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := crash.Run(ctx, json.RawMessage(`{}`), func(string) {})
	if !r.IsError || !strings.Contains(textOf(r), "server closed its stdout") {
		t.Fatalf("result = %q", textOf(r))
	}
	waitFor(t, "the server to be stopped", func() bool { return fakeServerGone(state) })
	waitFor(t, "the report", func() bool {
		for _, s := range h.said() {
			if strings.Contains(s, "fake error: exited unexpectedly (closed its stdout while running, so zot stopped it: signal: terminated)") {
				return true
			}
		}
		return false
	})
	if st := h.m.Status()[0]; st.State != "exited" {
		t.Errorf("state = %s", st.State)
	}
}

func TestMCPServerThatNeverInitializesFailsWithoutBlocking(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"mute": fakeServer(t, "noinit", state, `"startup_timeout_ms": 3000`)})
	waitFor(t, "the configuration to load", func() bool { return len(h.m.Status()) == 1 })
	if st := h.m.Status(); st[0].State != "starting" {
		t.Fatalf("Start waited for the server: state %s", st[0].State)
	}
	st := h.settle()
	if st[0].State != "failed" || !strings.Contains(st[0].Error, "no answer to initialize within 3s (raise startup_timeout_ms in "+filepath.Join(h.home, "mcp.json")) {
		t.Errorf("status = %+v", st[0])
	}
	waitFor(t, "the process to stop", func() bool { return fakeServerGone(state) })
	said := h.said()
	if len(said) != 1 || !strings.HasPrefix(said[0], "mute error: no answer to initialize") || !strings.Contains(said[0], "mcp-mute.log") {
		t.Errorf("OnStatus = %q", said)
	}
}

func TestMCPUnsupportedProtocolVersionStopsTheServer(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"old": fakeServer(t, "oldversion", state, "")})
	st := h.settle()
	if st[0].State != "failed" || !strings.Contains(st[0].Error, `the server speaks MCP protocol version "1999-01-01"; zot speaks 2026-07-28, 2025-11-25, 2025-06-18`) {
		t.Errorf("status = %+v", st[0])
	}
	waitFor(t, "the process to stop", func() bool { return fakeServerGone(state) })
	if len(h.reg.List()) != 0 {
		t.Errorf("tools of a refused server were registered")
	}
}

func TestMCPGarbageLinesAreLoggedAndSkipped(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"noisy": fakeServer(t, "garbage", t.TempDir(), "")})
	if r := mcpRun(t, h.tool("mcp__noisy__echo"), `{"text":"still fine"}`); textOf(r) != "still fine" {
		t.Fatalf("echo = %q", textOf(r))
	}
	log, _ := os.ReadFile(filepath.Join(h.home, "logs", "mcp-noisy.log"))
	for _, want := range []string{
		"skipped a bad message on stdout: not a JSON object", "Starting server on stdio",
		"skipped a bad message on stdout: empty batch",
		`skipped a bad message on stdout: "jsonrpc" must be "2.0"`,
		"dropped a response to unknown or finished request 999",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestMCPListChangedRelists(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", t.TempDir(), "")})
	if _, ok := h.reg.Lookup("mcp__fake__added"); ok {
		t.Fatal("added exists before the change")
	}
	mcpRun(t, h.tool("mcp__fake__change"), `{}`)
	h.tool("mcp__fake__added")
}

func TestMCPHugeResultIsCutForTheModel(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", t.TempDir(), "")})
	r := mcpRun(t, h.tool("mcp__fake__big"), `{}`)
	text := textOf(r)
	if r.IsError || len(text) > mcpMaxText+100 || !strings.HasPrefix(text, "xxxx") || !strings.HasSuffix(text, "[output cut: over 100 KB]") {
		t.Errorf("result: error=%v, %d bytes, ends %q", r.IsError, len(text), text[max(0, len(text)-40):])
	}
	// The session goes on.
	if r := mcpRun(t, h.tool("mcp__fake__echo"), `{"text":"after"}`); textOf(r) != "after" {
		t.Errorf("echo after = %q", textOf(r))
	}
}

func TestMCPServerRequestsGetAnswers(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", t.TempDir(), "")})
	r := mcpRun(t, h.tool("mcp__fake__ask"), `{}`)
	var replies []struct {
		ID     any             `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *jsonrpcError   `json:"error"`
	}
	if err := json.Unmarshal([]byte(textOf(r)), &replies); err != nil || len(replies) != 3 {
		t.Fatalf("replies %q: %v", textOf(r), err)
	}
	wantRoots := fmt.Sprintf(`{"roots":[{"name":%q,"uri":"file://%s"}]}`, filepath.Base(h.cwd), h.cwd)
	if replies[0].ID != "s1" || compactJSON(replies[0].Result) != wantRoots {
		t.Errorf("roots/list reply = %v %s, want %s", replies[0].ID, replies[0].Result, wantRoots)
	}
	if replies[1].ID != float64(2) || replies[1].Error == nil || replies[1].Error.Code != rpcMethodNotFound ||
		replies[1].Error.Message != "zot does not support sampling/createMessage" {
		t.Errorf("sampling reply = %+v", replies[1])
	}
	if replies[2].ID != "s3" || compactJSON(replies[2].Result) != "{}" {
		t.Errorf("ping reply = %+v", replies[2])
	}
}

func TestMCPProgressReachesTheCallbackAndStopsWithTheResult(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", t.TempDir(), "")})
	var mu sync.Mutex
	var lines []string
	returned := false
	r := h.tool("mcp__fake__progress").Run(context.Background(), json.RawMessage(`{}`), func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if returned {
			t.Errorf("progress %q after the result", line)
		}
		lines = append(lines, line)
	})
	mu.Lock()
	returned = true
	got := strings.Join(lines, "|")
	mu.Unlock()
	if textOf(r) != "done" || got != "step 1 (1/3)|step 2 (2/3)|step 3 (3/3)" {
		t.Errorf("result %q progress %q", textOf(r), got)
	}
}

func TestMCPAbortAndTimeoutSendCancelled(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", state, `"timeout_ms": 400`)})
	slow := h.tool("mcp__fake__slow")
	r := mcpRun(t, slow, `{}`)
	if !r.IsError || !strings.Contains(textOf(r), "did not answer slow within 400ms and was told to cancel it (timeout_ms in") {
		t.Errorf("timeout result = %q", textOf(r))
	}
	waitFor(t, "the timeout's cancellation", func() bool { return strings.HasSuffix(readState(state, "cancelled"), " timed out\n") })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan ToolResult)
	go func() { done <- slow.Run(ctx, json.RawMessage(`{}`), func(string) {}) }()
	waitFor(t, "the second call to arrive", func() bool { return readState(state, "calls") == "slow\nslow\n" })
	cancel()
	if r := <-done; !r.IsError || !strings.Contains(textOf(r), "aborted; mcp server fake was told to cancel slow") {
		t.Errorf("abort result = %q", textOf(r))
	}
	waitFor(t, "the abort's cancellation", func() bool {
		return strings.HasSuffix(readState(state, "cancelled"), " aborted by the user\n")
	})
}

func TestMCPShutdownKillsAServerThatIgnoresStdinAndSIGTERM(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"stubborn": fakeServer(t, "stubborn", state, "")})
	h.tool("mcp__stubborn__echo")
	h.m.Shutdown(context.Background())
	if !fakeServerGone(state) {
		t.Errorf("the server outlived Shutdown")
	}
	if st := h.m.Status(); st[0].State != "stopped" {
		t.Errorf("state = %s", st[0].State)
	}
	if r := mcpRun(t, h.tool("mcp__stubborn__echo"), `{"text":"x"}`); !r.IsError || !strings.Contains(textOf(r), "is stopped") {
		t.Errorf("call after Shutdown = %q", textOf(r))
	}
}

func TestMCPToolsFilterGlob(t *testing.T) {
	t.Parallel()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", t.TempDir(), "")})
	h.reg.SetSource("builtin", BuiltinTools(NewToolEnv(h.cwd, false)))
	h.tool("mcp__fake__echo")
	h.reg.SetFilter(toolFilter([]string{"read", "mcp__fake__e*"}))
	var names []string
	for _, tool := range h.reg.List() {
		names = append(names, tool.Name())
	}
	if got := strings.Join(names, ","); got != "mcp__fake__echo,mcp__fake__elicit,mcp__fake__env,read" {
		t.Errorf("--tools read,mcp__fake__e* gives %s", got)
	}
}

// An interceptor sees MCP calls like any other: a gate that blocks mcp__*
// keeps the call from reaching the server.
func TestMCPCallsPassThroughTheGateChain(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", state, "")})
	h.tool("mcp__fake__echo")
	srv := startReplay(t,
		toolStep("c1", "mcp__fake__echo", obj{"text": "blocked?"}),
		replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	p, _ := testProvider(t, "anthropic", srv.URL)
	a := NewAgent(p, "claude-sonnet-4-5", h.reg)
	var seen []ToolCall
	a.Pipeline.AddToolGate(ExtStage, func(ctx context.Context, call ToolCall) GateResult {
		seen = append(seen, call)
		if ok, _ := filepath.Match("mcp__*", call.Name); ok {
			return GateResult{Verdict: GateDeny, Reason: "no MCP today", Notes: []GateNote{{By: "extension:guard", Decision: DecisionBlock}}}
		}
		return GateResult{}
	})
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	res := log.ofType("tool_result")
	if len(seen) != 1 || seen[0].Name != "mcp__fake__echo" || len(res) != 1 || !res[0].IsError || (Message{Content: res[0].Content}).Text() != "no MCP today" {
		t.Errorf("gate saw %+v; results %+v", seen, res)
	}
	if calls := readState(state, "calls"); calls != "" {
		t.Errorf("the server was called: %q", calls)
	}
}

// TestMCPConfigPrecedenceAndBadEntries is not parallel: it sets an
// environment variable a server's config expands.
func TestMCPConfigPrecedenceAndBadEntries(t *testing.T) {
	home, cwd, extra := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("ZOT_TEST_TOKEN", "s3cret-token")
	writeFile(t, filepath.Join(home, "mcp.json"), `{"mcpServers": {
		"shared": {"command": "global"},
		"global-only": {"url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${ZOT_TEST_TOKEN}"}}
	}}`, 0o644)
	writeFile(t, filepath.Join(cwd, ".mcp.json"), `{"mcpServers": {
		"shared": {"command": "project"},
		"dotmcp": {"command": "dot", "args": ["${ZOT_TEST_UNSET_VAR:-fallback}"]},
		"nocommand": {"args": ["x"]},
		"unset": {"command": "x", "env": {"T": "${ZOT_TEST_UNSET_VAR}"}},
		"sse": {"type": "sse", "url": "https://example.invalid/sse"},
		"badtimeout": {"command": "x", "timeout_ms": -5},
		"leak": {"url": "https://user:pw@example.test/p/${ZOT_TEST_TOKEN}?key=${ZOT_TEST_TOKEN}"},
		"off": {"command": "x", "disabled": true}
	}}`, 0o644)
	writeFile(t, filepath.Join(cwd, ".zot", "mcp.json"), `{"mcpServers": {"shared": {"command": "zotproject"}}}`, 0o644)
	writeFile(t, filepath.Join(extra, "a.json"), `{"mcpServers": {"flag": {"command": "a"}}}`, 0o644)
	writeFile(t, filepath.Join(extra, "b.json"), `{"mcpServers": {"flag": {"command": "b"}}}`, 0o644)
	writeFile(t, filepath.Join(extra, "broken.json"), `{"mcpServers": `, 0o644)

	cfg := MCPSources{Home: home, Cwd: cwd, Files: []string{filepath.Join(extra, "a.json"), filepath.Join(extra, "b.json"), filepath.Join(extra, "broken.json"), filepath.Join(extra, "missing.json")}}
	configs, problems := loadMCPConfigs(cfg)
	got := map[string]mcpServerConfig{}
	for _, c := range configs {
		got[c.Name] = c
	}
	checks := map[string]string{"shared": "zotproject", "flag": "b", "dotmcp": "dot", "off": "x"}
	for name, cmd := range checks {
		if got[name].RawCommand != cmd {
			t.Errorf("%s: command %q, want %q", name, got[name].RawCommand, cmd)
		}
	}
	if a := got["dotmcp"].Args; len(a) != 1 || a[0] != "fallback" {
		t.Errorf("${VAR:-default} = %q", a)
	}
	if h := got["global-only"].Headers["Authorization"]; h != "Bearer s3cret-token" || got["global-only"].Type != "http" {
		t.Errorf("header = %q", h)
	}
	if !got["off"].Disabled {
		t.Errorf("disabled entry not kept as disabled")
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.msg)
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		filepath.Join(extra, "broken.json") + ": not valid JSON",
		filepath.Join(extra, "missing.json") + ": no such file or directory (skipped)",
		filepath.Join(cwd, ".mcp.json") + `: server "nocommand": neither "command"`,
		`server "unset": env.T: ${ZOT_TEST_UNSET_VAR} is not set (skipped)`,
		`server "sse": type "sse" (the old HTTP+SSE transport) is not supported`,
		`server "badtimeout": timeout_ms must be`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	if strings.Contains(all, "s3cret") || strings.Contains(fmt.Sprint(got["leak"].target()), "s3cret") {
		t.Errorf("a secret leaked: %s / %s", all, got["leak"].target())
	}
	if got["leak"].target() != "https://example.test/p/${ZOT_TEST_TOKEN}" {
		t.Errorf("leak target = %q", got["leak"].target())
	}

	configs, _ = loadMCPConfigs(MCPSources{Home: home, Cwd: cwd, SkipDefault: true, Files: []string{filepath.Join(extra, "a.json")}})
	if len(configs) != 1 || configs[0].Name != "flag" {
		t.Errorf("--no-mcp with --mcp-config: %+v", configs)
	}
}

func TestMCPToolNames(t *testing.T) {
	t.Parallel()
	tests := []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"my.server", "admin.tools.list", "mcp__my_server__admin_tools_list"},
		{"x", "naïve tool", "mcp__x__na_ve_tool"},
	}
	for _, tt := range tests {
		if got := mcpToolName(tt.server, tt.tool); got != tt.want {
			t.Errorf("mcpToolName(%q, %q) = %q, want %q", tt.server, tt.tool, got, tt.want)
		}
	}
	long1 := mcpToolName("server", strings.Repeat("a", 80)+"1")
	long2 := mcpToolName("server", strings.Repeat("a", 80)+"2")
	if len(long1) != mcpMaxToolName || long1 == long2 || !strings.HasPrefix(long1, "mcp__server__aaa") {
		t.Errorf("long names %q %q", long1, long2)
	}
}

func TestMCPResultConversion(t *testing.T) {
	t.Parallel()
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
	tests := []struct {
		name, raw string
		want      []Block
		isError   bool
	}{
		{"text", `{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`, []Block{TextBlock("a"), TextBlock("b")}, false},
		{"image", `{"content":[{"type":"image","data":"` + png + `","mimeType":"image/png"}]}`, []Block{{Type: "image", MimeType: "image/png", Data: png}}, false},
		{"svg image", `{"content":[{"type":"image","data":"PHN2Zy8+","mimeType":"image/svg+xml"}]}`, []Block{TextBlock("[image/svg+xml image, 6 bytes: a type the model cannot see]")}, false},
		{"bad base64", `{"content":[{"type":"image","data":"!!!","mimeType":"image/png"}]}`, []Block{TextBlock("[image/png image: not valid base64]")}, false},
		{"embedded text resource", `{"content":[{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"body"}}]}`, []Block{TextBlock("[resource file:///a.txt]\nbody")}, false},
		{"embedded blob", `{"content":[{"type":"resource","resource":{"uri":"file:///a.bin","mimeType":"application/octet-stream","blob":"AAEC"}}]}`, []Block{TextBlock("[binary resource file:///a.bin, application/octet-stream, 3 bytes: not shown]")}, false},
		{"resource link", `{"content":[{"type":"resource_link","uri":"file:///m.rs","name":"m.rs","mimeType":"text/x-rust","description":"entry"}]}`, []Block{TextBlock("[resource m.rs file:///m.rs text/x-rust] entry")}, false},
		{"audio", `{"content":[{"type":"audio","data":"AAAA","mimeType":"audio/wav"}]}`, []Block{TextBlock("[audio audio/wav, 3 bytes: not shown]")}, false},
		{"structured only", `{"content":[],"structuredContent":{"t":22.5}}`, []Block{TextBlock(`{"t":22.5}`)}, false},
		{"structured beside text", `{"content":[{"type":"text","text":"22.5"}],"structuredContent":{"t":22.5}}`, []Block{TextBlock("22.5")}, false},
		{"error", `{"content":[{"type":"text","text":"bad date"}],"isError":true}`, []Block{TextBlock("bad date")}, true},
		{"empty error", `{"isError":true}`, []Block{TextBlock("the tool failed without saying why")}, true},
		{"empty", `{}`, []Block{TextBlock("(no output)")}, false},
		{"unknown type", `{"content":[{"type":"hologram"}]}`, []Block{TextBlock(`[content of type "hologram": not shown]`)}, false},
		{"not an object", `[1]`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := mcpResult("s", json.RawMessage(tt.raw))
			if r.IsError != tt.isError {
				t.Errorf("IsError = %v", r.IsError)
			}
			if tt.want == nil {
				return
			}
			got, _ := json.Marshal(r.Content)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				t.Errorf("content\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestMCPDecodeRPC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		kind jsonrpcKind
		err  string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, jsonrpcRequest, ""},
		{`{"jsonrpc":"2.0","id":"a","method":"roots/list","params":{}}`, jsonrpcRequest, ""},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`, jsonrpcNotification, ""},
		{`{"jsonrpc":"2.0","id":null,"method":"x"}`, jsonrpcNotification, ""},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, jsonrpcResponse, ""},
		{`{"jsonrpc":"2.0","id":3,"result":null}`, jsonrpcResponse, ""},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, jsonrpcResponse, ""},
		{`{"jsonrpc":"2.0","id":3,"result":{},"error":{"code":1,"message":"x"}}`, 0, "both"},
		{`{"jsonrpc":"2.0","result":{}}`, 0, `a result without an "id"`},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"m"}`, 0, `"id" must be a string or an integer`},
		{`{"jsonrpc":"2.0","id":1.5,"result":{}}`, 0, `"id" must be`},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, 0, `"method" is empty`},
		{`{"jsonrpc":"2.0","method":"m","params":3}`, 0, `"params" must be`},
		{`{"id":1,"result":{}}`, 0, `"jsonrpc" must be "2.0"`},
		{`{"jsonrpc":"2.0","id":1}`, 0, "neither"},
		{`{"jsonrpc":"2.0","id":1,"error":"boom"}`, 0, `bad "error" object`},
		{`[]`, 0, "empty batch"},
		{`  `, 0, "empty message"},
		{`nope`, 0, "not a JSON object"},
	}
	for _, tt := range tests {
		msgs, err := decodeRPC([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("decodeRPC(%s) error = %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(msgs) != 1 || msgs[0].Kind != tt.kind {
			t.Errorf("decodeRPC(%s) = %+v, %v", tt.in, msgs, err)
		}
	}
	msgs, err := decodeRPC([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]`))
	if err != nil || len(msgs) != 2 || msgs[0].Kind != jsonrpcResponse || msgs[1].Kind != jsonrpcNotification {
		t.Errorf("batch = %+v, %v", msgs, err)
	}
	if id, ok := ourID(json.RawMessage(`"17"`)); !ok || id != 17 {
		t.Errorf(`ourID("17") = %d %v`, id, ok)
	}
}

func FuzzDecodeRPC(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse"}}`,
		`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]`,
		`{"jsonrpc":"2.0","id":1e3,"result":1}`,
		"", "[", "null", `{"jsonrpc":"2.0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		msgs, err := decodeRPC(data)
		if err != nil {
			if msgs != nil {
				t.Fatal("messages with an error")
			}
			return
		}
		if len(msgs) == 0 {
			t.Fatal("no messages and no error")
		}
		for _, m := range msgs {
			switch m.Kind {
			case jsonrpcRequest:
				if m.Method == "" || len(m.ID) == 0 {
					t.Fatalf("request without method or id: %+v", m)
				}
			case jsonrpcNotification:
				if m.Method == "" {
					t.Fatalf("notification without method")
				}
			case jsonrpcResponse:
				if (m.Result == nil) == (m.Error == nil) {
					t.Fatalf("response needs exactly one of result and error: %+v", m)
				}
			default:
				t.Fatalf("kind %d", m.Kind)
			}
		}
	})
}

// TestMCPExpandVars is not parallel: ${VAR} expands from the environment,
// which it sets.
func TestMCPExpandVars(t *testing.T) {
	t.Setenv("ZOT_X", "ex")
	t.Setenv("ZOT_EMPTY", "")
	tests := []struct{ in, want, err string }{
		{"plain $HOME text", "plain $HOME text", ""},
		{"a${ZOT_X}b${ZOT_X}", "aexbex", ""},
		{"${ZOT_EMPTY}", "", ""},
		{"${ZOT_EMPTY:-d}", "d", ""},
		{"${ZOT_NOPE_NOPE:-}", "", ""},
		{"${ZOT_NOPE_NOPE}", "", "${ZOT_NOPE_NOPE} is not set"},
		{"${ZOT_X", "", "without its closing }"},
		{"${1X}", "", "not a variable name"},
	}
	for _, tt := range tests {
		got, err := expandVars(tt.in, nil)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("expandVars(%q) error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("expandVars(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// TestMCPTornWriteRestartsTheServer: a message cut off part-way (the server
// stopped reading, the call timed out) must not be glued to the next one;
// the server is stopped and the next calls get a fresh one.
func TestMCPTornWriteRestartsTheServer(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	h := newMCPHarness(t, map[string]string{"fake": fakeServer(t, "normal", state, "")})
	deaf, echo := h.tool("mcp__fake__deaf"), h.tool("mcp__fake__echo")
	deafCtx, stopDeaf := context.WithCancel(context.Background())
	defer stopDeaf()
	go deaf.Run(deafCtx, json.RawMessage(`{}`), func(string) {}) // ends with stopDeaf or the server
	waitFor(t, "the server to stop reading", func() bool { return readState(state, "deaf") != "" })

	// Long enough for a loaded machine to start writing the call, which
	// then fills the pipe and is cut midway; a call cut before its first
	// byte tears nothing, and the test would wait out the call timeout.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 1<<20)})
	if r := echo.Run(ctx, big, func(string) {}); !r.IsError {
		t.Fatalf("a call the server never read succeeded: %s", truncate(textOf(r), 200))
	}
	cancel()
	h.m.restartEvery = 0 // the minute has passed
	waitFor(t, "a restarted server to answer", func() bool {
		r := mcpRun(t, echo, `{"text":"after"}`)
		return !r.IsError && strings.Contains(textOf(r), "after")
	})
}

// FuzzMCPConfigEntry: the attacker is a repository, which writes the
// entries of its .mcp.json. No entry panics; one accepted runs a command
// or reaches a URL, as its type says.
func FuzzMCPConfigEntry(f *testing.F) {
	for _, s := range []string{
		`{"command":"npx","args":["-y","@x/server","${HOME}/a"],"env":{"K":"${K:-d}"}}`,
		`{"type":"http","url":"https://h.example/mcp","headers":{"Authorization":"Bearer ${TOKEN}"},"oauth":{"clientId":"c","scopes":["a"]}}`,
		`{"type":"sse","url":"http://127.0.0.1:1/sse","timeout":5}`,
		`{"command":"","args":[1]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, err := parseMCPEntry("s", raw, map[string]string{"HOME": "/h"})
		if err == nil && (c.Type == "stdio") == (c.Command == "") {
			t.Fatalf("accepted %+v", c)
		}
	})
}
