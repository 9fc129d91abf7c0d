package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// acpProc is the built binary serving `zot acp`, driven by a minimal
// JSON-RPC client: requests get ids, the agent's requests are answered by
// onRequest, and everything zot writes is kept in order.
type acpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *strings.Builder

	mu        sync.Mutex
	cond      *sync.Cond
	lines     []acpLine
	done      bool
	nextID    int
	sent      map[string]string // the method of each request id sent
	onRequest func(method string, params json.RawMessage) (any, *acpError)
}

// acpLine is one message zot wrote.
type acpLine struct {
	Raw    string
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acpError       `json:"error"`
}

// update is a session/update's update object, decoded loosely.
func (l acpLine) update() map[string]any {
	var p struct {
		Update map[string]any `json:"update"`
	}
	json.Unmarshal(l.Params, &p)
	return p.Update
}

// acpAgentCapabilities is what initialize's answer says zot offers.
type acpAgentCapabilities struct {
	LoadSession         bool                       `json:"loadSession"`
	SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
	PromptCapabilities  map[string]bool            `json:"promptCapabilities"`
}

// initialize opens the connection as an editor that offers nothing, and
// returns what zot offers.
func (p *acpProc) initialize() acpAgentCapabilities {
	p.t.Helper()
	var init struct {
		AgentCapabilities acpAgentCapabilities `json:"agentCapabilities"`
	}
	if err := json.Unmarshal(p.mustCall("initialize", obj{"protocolVersion": 1, "clientCapabilities": obj{}}), &init); err != nil {
		p.t.Fatalf("initialize: %v", err)
	}
	return init.AgentCapabilities
}

func startACPProc(t *testing.T, z *zotRun, args ...string) *acpProc {
	t.Helper()
	cmd := z.cmd(append([]string{"acp"}, args...)...)
	cmd.Stdin = nil
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := newACPClient(t, stdin, stdout)
	p.cmd = cmd
	cmd.Stderr = lockedWriter{&p.mu, p.stderr}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return p
}

// newACPClient is the test's client on an agent's stdin and stdout.
func newACPClient(t *testing.T, stdin io.WriteCloser, stdout io.Reader) *acpProc {
	p := &acpProc{t: t, stdin: stdin, stderr: &strings.Builder{}, sent: map[string]string{}}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(p.checkSchema)
	// Owned by the test; ends when the agent closes its stdout.
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			var l acpLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				l.Method = "BAD LINE"
			}
			l.Raw = sc.Text()
			if l.Method != "" && len(l.ID) > 0 {
				go p.answer(l) // the agent's request: answered beside the reader
			}
			p.mu.Lock()
			p.lines = append(p.lines, l)
			p.cond.Broadcast()
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.done = true
		p.cond.Broadcast()
		p.mu.Unlock()
	}()
	return p
}

// errNoAnswer, returned by onRequest, leaves the agent's request
// unanswered: an editor whose user looks away.
var errNoAnswer any = new(int)

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (p *acpProc) answer(l acpLine) {
	p.mu.Lock()
	h := p.onRequest
	p.mu.Unlock()
	var result any = struct{}{}
	var e *acpError
	if h != nil {
		result, e = h(l.Method, l.Params)
	} else {
		e = &acpError{Code: acpMethodNotFound, Message: "not offered"}
	}
	if result == errNoAnswer {
		return
	}
	if e != nil {
		p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": l.ID, "error": e})
		return
	}
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": l.ID, "result": result})
}

func (p *acpProc) sendJSON(v any) {
	b, _ := json.Marshal(v)
	p.send(string(b))
}

func (p *acpProc) send(line string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	io.WriteString(p.stdin, line+"\n")
}

// request sends a request and returns its id.
func (p *acpProc) request(method string, params any) string {
	p.mu.Lock()
	p.nextID++
	id := fmt.Sprint(p.nextID)
	p.sent[id] = method
	p.mu.Unlock()
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	return id
}

// waitFor returns the first line from index from on that matches, and
// the index after it.
func (p *acpProc) waitFor(from int, what string, match func(acpLine) bool) (acpLine, int) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	timer := time.AfterFunc(30*time.Second, func() { p.mu.Lock(); p.cond.Broadcast(); p.mu.Unlock() })
	defer timer.Stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := from; ; i++ {
		for i >= len(p.lines) {
			if p.done || time.Now().After(deadline) {
				p.t.Fatalf("no %s; zot wrote:\n%s\nstderr:\n%s", what, p.rawLocked(), p.stderr)
			}
			p.cond.Wait()
		}
		if p.lines[i].Method == "BAD LINE" {
			p.t.Fatalf("zot wrote a line that is not JSON: %q", p.lines[i].Raw)
		}
		if match(p.lines[i]) {
			return p.lines[i], i + 1
		}
	}
}

func (p *acpProc) rawLocked() string {
	var b strings.Builder
	for _, l := range p.lines {
		b.WriteString(l.Raw + "\n")
	}
	return b.String()
}

// call sends a request and waits for its response.
func (p *acpProc) call(method string, params any) acpLine {
	p.t.Helper()
	id := p.request(method, params)
	l, _ := p.waitFor(0, "answer to "+method, func(l acpLine) bool { return l.Method == "" && string(l.ID) == id })
	return l
}

func (p *acpProc) mustCall(method string, params any) json.RawMessage {
	p.t.Helper()
	l := p.call(method, params)
	if l.Error != nil {
		p.t.Fatalf("%s: error %d %s\nstderr:\n%s", method, l.Error.Code, l.Error.Message, p.stderrText())
	}
	return l.Result
}

func (p *acpProc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// updates are the session updates written so far.
func (p *acpProc) updates() []map[string]any {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []map[string]any
	for _, l := range p.lines {
		if l.Method == "session/update" {
			out = append(out, l.update())
		}
	}
	return out
}

// newSession initializes (with caps) and opens a session in cwd.
func (p *acpProc) newSession(cwd string, caps any) string {
	p.t.Helper()
	p.mustCall("initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": caps})
	var r struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(p.mustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}), &r)
	if r.SessionID == "" {
		p.t.Fatal("session/new gave no sessionId")
	}
	return r.SessionID
}

func promptParams(session, text string) map[string]any {
	return map[string]any{"sessionId": session, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// TestACPAnswersBadInputPerJSONRPCAndGoesOn sends what a broken client
// would: each gets its JSON-RPC error and zot answers the next request.
func TestACPAnswersBadInputPerJSONRPCAndGoesOn(t *testing.T) {
	t.Parallel()
	slow := anthropicEvents(gen{Text: "slow"})
	srv := startReplay(t, replayStep{Events: slow, HangAfter: len(slow) - 2}, textStep("second answer"))
	z := newZotRun(t)
	p := startACPProc(t, z, anthropicFlags(srv)...)
	errorOf := func(line, what string) *acpError {
		t.Helper()
		p.send(line)
		l, _ := p.waitFor(0, what, func(l acpLine) bool { return l.Error != nil && strings.Contains(l.Raw, what) })
		return l.Error
	}
	if e := errorOf(`{"jsonrpc":"2.0","id":1,"method":"initialize"`, "parse error"); e.Code != acpParseError {
		t.Errorf("malformed JSON: %+v", e)
	}
	if e := errorOf(`[1,2]`, "invalid request"); e.Code != acpInvalidRequest {
		t.Errorf("an array: %+v", e)
	}
	if e := errorOf(`{"jsonrpc":"2.0","id":"u","method":"zot/nothing","params":{}}`, "method not found"); e.Code != acpMethodNotFound {
		t.Errorf("unknown method: %+v", e)
	}
	p.send(`{"jsonrpc":"2.0","method":"zot/unknown-notification"}`) // ignored: no answer to a notification
	session := p.newSession(z.cwd, map[string]any{})
	if l := p.call("session/prompt", promptParams("nope", "hi")); l.Error == nil || l.Error.Code != acpNotFound {
		t.Errorf("unknown session id: %s", l.Raw)
	}
	if l := p.call("session/set_mode", map[string]any{"sessionId": session, "modeId": "yolo"}); l.Error == nil || l.Error.Code != acpInvalidParams {
		t.Errorf("unknown mode: %s", l.Raw)
	}
	if l := p.call("session/prompt", map[string]any{"sessionId": session, "prompt": []any{}}); l.Error == nil || l.Error.Code != acpInvalidParams {
		t.Errorf("an empty prompt: %s", l.Raw)
	}
	// Echoed, the id would make zot's line invalid JSON.
	if e := errorOf("{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"zot/nothing\"}", "string of UTF-8"); e.Code != acpInvalidRequest {
		t.Errorf("an id that is not UTF-8: %+v", e)
	}

	first := p.request("session/prompt", promptParams(session, "take your time"))
	p.waitFor(0, "the first prompt's text", func(l acpLine) bool {
		u := l.update()
		return u["sessionUpdate"] == "agent_message_chunk"
	})
	second := p.call("session/prompt", promptParams(session, "and this?"))
	if second.Error == nil || !strings.Contains(second.Error.Message, "already running a prompt") {
		t.Errorf("a second prompt while one runs: %s", second.Raw)
	}
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": session}})
	l, _ := p.waitFor(0, "the first prompt's answer", func(l acpLine) bool { return string(l.ID) == first && l.Method == "" })
	if !strings.Contains(string(l.Result), `"cancelled"`) {
		t.Errorf("a cancelled prompt answered %s", l.Raw)
	}
	var r struct {
		StopReason string `json:"stopReason"`
	}
	json.Unmarshal(p.mustCall("session/prompt", promptParams(session, "again")), &r)
	if r.StopReason != "end_turn" {
		t.Errorf("the prompt after a cancel stopped with %q", r.StopReason)
	}
}

// TestACPClientGoneLeavesNothingRunning closes zot's stdin while a command
// runs: zot exits, and the command's process is gone too.
func TestACPClientGoneLeavesNothingRunning(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo $$ > pid.txt; exec sleep 300"}), textStep("done"))
	z := newZotRun(t)
	p := startACPProc(t, z, append(anthropicFlags(srv), "--mcp-config", writeMCPConfig(t, z))...)
	session := p.newSession(z.cwd, map[string]any{})
	p.mustCall("session/set_mode", map[string]any{"sessionId": session, "modeId": "bypassPermissions"})
	p.request("session/prompt", promptParams(session, "sleep"))
	var pid int
	waitFor(t, "the command to start", func() bool {
		b, _ := os.ReadFile(filepath.Join(z.cwd, "pid.txt"))
		fmt.Sscan(string(b), &pid)
		return pid != 0
	})
	p.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("zot exited with %v; stderr:\n%s", err, p.stderrText())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("zot did not exit after its client went away; stderr:\n%s", p.stderrText())
	}
	var mcpPid int
	b, _ := os.ReadFile(filepath.Join(z.home, "pid"))
	fmt.Sscan(string(b), &mcpPid)
	for what, pid := range map[string]int{"the command": pid, "the MCP server": mcpPid} {
		if pid == 0 {
			t.Errorf("%s never started", what)
		} else if err := syscall.Kill(pid, 0); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Errorf("%s (pid %d) outlived zot", what, pid)
		}
	}
}

// writeMCPConfig names the fake MCP server in a config file, so that a
// server process runs beside the session too.
func writeMCPConfig(t *testing.T, z *zotRun) string {
	t.Helper()
	path := filepath.Join(z.home, "mcp-test.json")
	b, _ := json.Marshal(obj{"mcpServers": obj{"fake": obj{"command": fakeServerBin(t), "args": []string{"normal", z.home}}}})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestACPPermissionsCancelTimeoutAndAlways answers the editor's
// permission requests as a user would, and not at all: a cancel while one
// waits ends the turn cancelled, silence past --approval-timeout is a
// reject, and "allow always" covers the command's prefix for the rest of
// the session.
func TestACPPermissionsCancelTimeoutAndAlways(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("c1", "bash", obj{"command": "touch cancelled.marker"}),
		toolStep("s1", "bash", obj{"command": "touch silent.marker"}), textStep("The editor said nothing."),
		toolStep("a1", "bash", obj{"command": "touch always.marker"}),
		toolStep("a2", "bash", obj{"command": "touch always.marker again.marker"}),
		textStep("Both ran."))
	z := newZotRun(t)
	p := startACPProc(t, z, append(anthropicFlags(srv), "--approval-timeout", "1s")...)
	var mu sync.Mutex
	var asked []string
	answer := errNoAnswer
	p.onRequest = func(method string, params json.RawMessage) (any, *acpError) {
		var r struct {
			ToolCall struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolCall"`
		}
		json.Unmarshal(params, &r)
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.ToolCall.ToolCallID)
		return answer, nil
	}
	session := p.newSession(z.cwd, map[string]any{})
	stopOf := func(l acpLine) string {
		var r struct {
			StopReason string `json:"stopReason"`
		}
		json.Unmarshal(l.Result, &r)
		return r.StopReason
	}

	id := p.request("session/prompt", promptParams(session, "cancel me"))
	p.waitFor(0, "the permission request", func(l acpLine) bool { return l.Method == "session/request_permission" })
	p.sendJSON(map[string]any{"jsonrpc": "2.0", "method": "session/cancel", "params": map[string]any{"sessionId": session}})
	l, _ := p.waitFor(0, "the cancelled prompt's answer", func(l acpLine) bool { return string(l.ID) == id && l.Method == "" })
	if stopOf(l) != "cancelled" {
		t.Errorf("a cancel during a permission request: %s", l.Raw)
	}

	if stop := stopOf(p.call("session/prompt", promptParams(session, "nobody answers"))); stop != "end_turn" {
		t.Errorf("the silent editor's prompt stopped %q", stop)
	}
	if body := string(srv.Requests()[2].Body); !strings.Contains(body, "did not answer within 1s") {
		t.Errorf("the model was not told of the timeout: %s", body)
	}

	mu.Lock()
	answer = map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-always"}}
	mu.Unlock()
	if stop := stopOf(p.call("session/prompt", promptParams(session, "always"))); stop != "end_turn" {
		t.Errorf("the always prompt stopped %q", stop)
	}
	for marker, want := range map[string]bool{"cancelled.marker": false, "silent.marker": false, "always.marker": true, "again.marker": true} {
		if _, err := os.Stat(filepath.Join(z.cwd, marker)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", marker, err == nil, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(asked, " ") != "c1 s1 a1" {
		t.Errorf("the editor was asked about %q, want c1 s1 a1 (a2 is under a1's prefix)", asked)
	}
}

// TestACPServerInProcess runs the agent in the test's own process (so the
// race detector sees it) through a prompt whose command the editor
// allows, a cancel, and the end of the input, after which Serve returns
// and every session is closed.
func TestACPServerInProcess(t *testing.T) {
	if !runsAlone(t) {
		return
	}
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo in-process"}), textStep("Ran it."))
	o := modeTestHome(t)
	o.baseURL = srv.URL
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	closed := 0
	agent := newACPServer(acpConfig{Home: os.Getenv("ZOT_HOME"), Persist: true,
		MissingKey: func() (string, string, bool) { return "", "", false },
		Open: func(ctx context.Context, req acpOpenRequest) (*acpBackend, error) {
			b, err := openACPSession(ctx, o, req, io.Discard)
			if err == nil {
				inner := b.Close
				b.Close = func() { closed++; inner() }
			}
			return b, err
		}}, outW)
	served := make(chan error, 1)
	go func() { served <- agent.Serve(context.Background(), inR); outW.Close() }()
	p := newACPClient(t, inW, outR)
	p.onRequest = func(method string, _ json.RawMessage) (any, *acpError) {
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}, nil
	}
	session := p.newSession(o.cwd, map[string]any{})
	if r := string(p.mustCall("session/prompt", promptParams(session, "run it"))); !strings.Contains(r, "end_turn") {
		t.Errorf("the prompt answered %s", r)
	}
	l, _ := p.waitFor(0, "the command's output", func(l acpLine) bool {
		return l.update()["status"] == "completed" && strings.Contains(l.Raw, "in-process")
	})
	if !strings.Contains(l.Raw, `"toolCallId":"t1"`) {
		t.Errorf("the command's result: %s", l.Raw)
	}
	inW.Close()
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if closed != 1 {
		t.Errorf("%d sessions closed, want 1", closed)
	}
}

// TestACPAuthenticateWhenTheKeyIsMissing: without a key, initialize offers
// the one way in, session/new answers auth_required, and authenticate
// succeeds once the user has saved a key — which never crosses the wire.
func TestACPAuthenticateWhenTheKeyIsMissing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	p := startACPProc(t, z, "--provider", "anthropic")
	var init struct {
		AuthMethods []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		} `json:"authMethods"`
	}
	json.Unmarshal(p.mustCall("initialize", map[string]any{"protocolVersion": 1}), &init)
	if len(init.AuthMethods) != 1 || !strings.Contains(init.AuthMethods[0].Description, "ANTHROPIC_API_KEY") {
		t.Fatalf("auth methods %+v", init.AuthMethods)
	}
	if l := p.call("session/new", map[string]any{"cwd": z.cwd, "mcpServers": []any{}}); l.Error == nil || l.Error.Code != acpAuthRequired {
		t.Errorf("session/new without a key: %s", l.Raw)
	}
	method := map[string]any{"methodId": init.AuthMethods[0].ID}
	if l := p.call("authenticate", method); l.Error == nil || l.Error.Code != acpAuthRequired {
		t.Errorf("authenticate before the key is saved: %s", l.Raw)
	}
	if err := os.WriteFile(filepath.Join(z.home, "auth.json"), []byte(`{"anthropic":{"api_key":"sk-saved-key"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p.mustCall("authenticate", method)
	p.mustCall("session/new", map[string]any{"cwd": z.cwd, "mcpServers": []any{}})
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Contains(p.rawLocked()+p.stderr.String(), "sk-saved-key") {
		t.Error("the key reached the wire or the log")
	}
}

func TestACPFenceCannotBeClosedByItsText(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]string{
		"ls -la":            "```sh\nls -la\n```",
		"echo ```\n![x](y)": "````sh\necho ```\n![x](y)\n````",
		"a ````` b\n":       "``````sh\na ````` b\n``````",
	} {
		if got := acpFence(text, "sh"); got != want {
			t.Errorf("acpFence(%q) = %q, want %q", text, got, want)
		}
	}
}
