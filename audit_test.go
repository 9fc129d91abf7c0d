package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

func TestAuditLogRecordsEachKindOfCall(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	withValidators(t, home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}})
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo allowed"}),
		toolStep("t2", "bash", obj{"command": "echo original"}),
		toolStep("t3", "bash", obj{"command": "rm -rf /tmp/nothing-here"}),
		toolStep("t4", "bash", obj{"command": "curl -X POST https://api.example.com"}),
		toolStep("t5", "nosuch", obj{}),
		toolStep("t6", "bash", obj{"command": "echo harmless"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	a := newTestAgent(t, srv, BuiltinTools(NewToolEnv(cwd, false))...)
	s := &setup{home: home, cwd: cwd, agent: a, session: NewSession(home, cwd, "anthropic", "test")}
	guard := func(ctx context.Context, call ToolCall) GateResult {
		a := parseToolArgs("bash", call.Args)
		switch command := a.str("command"); {
		case command == "echo original":
			return GateResult{Args: json.RawMessage(`{"command":"echo rewritten"}`), Notes: []GateNote{{By: "extension:guard", Decision: DecisionRewrite}}}
		case command == "echo harmless":
			return GateResult{Args: json.RawMessage(`{"command":"curl -X POST https://api.example.com"}`), Notes: []GateNote{{By: "extension:guard", Decision: DecisionRewrite}}}
		case strings.HasPrefix(command, "rm "):
			return GateResult{Verdict: GateDeny, Reason: "guard: no rm", Notes: []GateNote{{By: "extension:guard", Decision: DecisionBlock, Reason: "no rm"}}}
		}
		return GateResult{}
	}
	a.Pipeline.AddToolGate(ExtStage, guard)
	s.guardTools()
	a.Pipeline.SetConfirm(NonInteractiveConfirm(false))
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}

	lines := auditLines(t, home)
	if len(lines) != 6 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, e := range lines {
		if e.Session != s.session.Meta.ID || e.Cwd != cwd || e.PID != os.Getpid() || e.Time == "" {
			t.Errorf("%s: session %q cwd %q pid %d time %q", e.CallID, e.Session, e.Cwd, e.PID, e.Time)
		}
	}
	decisions := func(e auditEntry) string {
		b, _ := json.Marshal(e.Decisions)
		return string(b)
	}
	allowed, rewritten, blocked, denied, failed, rewrittenThenDenied := lines[0], lines[1], lines[2], lines[3], lines[4], lines[5]
	if allowed.Outcome != "ran" || *allowed.ExitCode != 0 || allowed.IsError || allowed.Executed != nil || decisions(allowed) != "[]" || string(allowed.Args) != `{"command":"echo allowed"}` {
		t.Errorf("allowed: %+v", allowed)
	}
	if rewritten.Outcome != "ran" || string(rewritten.Args) != `{"command":"echo original"}` || string(rewritten.Executed) != `{"command":"echo rewritten"}` ||
		decisions(rewritten) != `[{"by":"extension:guard","decision":"rewrite"}]` {
		t.Errorf("rewritten: %+v", rewritten)
	}
	if blocked.Outcome != "blocked" || blocked.Reason != "guard: no rm" || blocked.ExitCode != nil || decisions(blocked) != `[{"by":"extension:guard","decision":"block","reason":"no rm"}]` {
		t.Errorf("blocked: %+v", blocked)
	}
	if denied.Outcome != "blocked" || !strings.Contains(denied.Reason, "POST requests are not allowed") ||
		!strings.HasPrefix(decisions(denied), `[{"by":"validator:no-post","decision":"deny","reason":"POST requests are not allowed in production\nsuggested fix:`) {
		t.Errorf("denied: %+v %s", denied, decisions(denied))
	}
	if failed.Tool != "nosuch" || failed.Outcome != "error" || !failed.IsError || !strings.Contains(failed.Reason, `unknown tool "nosuch"`) {
		t.Errorf("unknown tool: %+v", failed)
	}
	if rewrittenThenDenied.Outcome != "blocked" || string(rewrittenThenDenied.Args) != `{"command":"echo harmless"}` ||
		string(rewrittenThenDenied.Executed) != `{"command":"curl -X POST https://api.example.com"}` {
		t.Errorf("rewritten, then denied: the line must show what was denied: %+v", rewrittenThenDenied)
	}
}

// A call the model made but an abort kept from running is in the log too.
func TestAuditLogRecordsCallsAbortedBeforeTheyRan(t *testing.T) {
	t.Parallel()
	home, cwd := t.TempDir(), t.TempDir()
	srv := startReplay(t, replayStep{Events: anthropicEvents(
		gen{ToolID: "t1", ToolName: "stop", ToolArgs: `{}`},
		gen{ToolID: "t2", ToolName: "bash", ToolArgs: `{"command":"echo never"}`})})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := &funcTool{name: "stop", run: func(context.Context, json.RawMessage) ToolResult { cancel(); return textResult("stopping") }}
	a := newTestAgent(t, srv, append(BuiltinTools(NewToolEnv(cwd, false)), stop)...)
	s := &setup{home: home, cwd: cwd, agent: a}
	s.guardTools()
	if err := a.Prompt(ctx, "go", nil, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	lines := auditLines(t, home)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per call", len(lines))
	}
	if e := lines[1]; e.CallID != "t2" || e.Outcome != "error" || !strings.Contains(e.Reason, "aborted by the user before it ran") {
		t.Errorf("aborted call: %+v", e)
	}
}

// Lines written at once by goroutines and by two zot processes sharing
// the log are each whole.
func TestAuditLogWholeLinesFromConcurrentWriters(t *testing.T) {
	t.Parallel()
	const perProcess, goroutines, perGoroutine = 20, 16, 150
	padding := strings.Repeat("p", 6000)
	z1 := newZotRun(t)
	z2 := newZotRun(t)
	z2.home = z1.home
	var runs []chan error
	for _, z := range []*zotRun{z1, z2} {
		var steps []replayStep
		for i := 0; i < perProcess; i++ {
			steps = append(steps, bigToolStep(fmt.Sprintf("t%d", i), "bash", obj{"command": "true # " + padding}))
		}
		srv := startReplay(t, append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})...)
		cmd := z.cmd(append(anthropicFlags(srv), "-p", "--no-session", "go")...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() {
			err := cmd.Wait()
			if err != nil {
				err = fmt.Errorf("%v: %s", err, out.String())
			}
			done <- err
		}()
		runs = append(runs, done)
	}
	l := &AuditLog{Path: filepath.Join(z1.home, "logs", "audit.jsonl"), Cwd: "/"}
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < perGoroutine; i++ {
				args, _ := json.Marshal(obj{"content": strings.Repeat(string(rune('a'+g)), 1000*(i%30))})
				if err := l.Record(&ToolRecord{Call: ToolCall{ID: fmt.Sprintf("g%d-%d", g, i), Name: "write", Args: args}, Ran: true}); err != nil {
					t.Error(err)
				}
			}
		}(g)
	}
	wg.Wait()
	for _, done := range runs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	lines := auditLines(t, z1.home) // fails on any torn line
	counts := map[string]int{}
	for _, e := range lines {
		counts[e.Tool]++
	}
	if counts["bash"] != 2*perProcess || counts["write"] != goroutines*perGoroutine {
		t.Errorf("counts %v", counts)
	}
}

func TestAuditLogCutsHugeArguments(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "logs", "audit.jsonl")
	args, _ := json.Marshal(obj{"path": "big.txt", "content": strings.Repeat("é", 1<<19)})
	l := &AuditLog{Path: path}
	if err := l.Record(&ToolRecord{Call: ToolCall{ID: "w", Name: "write", Args: args}, Ran: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if len(b) > 2*auditMaxArgs {
		t.Errorf("line of %d bytes", len(b))
	}
	var e auditEntry
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	var head string
	sum := sha256.Sum256(args)
	if json.Unmarshal(e.Args, &head) != nil || !strings.HasPrefix(head, `{"content":"éé`) || !strings.HasSuffix(head, "… [truncated]") ||
		e.ArgsCut == nil || e.ArgsCut.Bytes != len(args) || e.ArgsCut.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("args %.80s… cut %+v", e.Args, e.ArgsCut)
	}

	// Arguments cut off mid-stream are not JSON; they are kept as a string.
	l.Record(&ToolRecord{Call: ToolCall{ID: "c", Name: "bash", Args: json.RawMessage(`{"command":"ec`)}})
	lines := strings.Split(strings.TrimSpace(string(mustRead(t, path))), "\n")
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil || string(e.Args) != `"{\"command\":\"ec"` {
		t.Errorf("cut-off args %s: %v", e.Args, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAuditLogTightensAnOpenMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path, []byte("{\"earlier\":true}\n"), 0o644)
	l := &AuditLog{Path: path}
	if err := l.Record(&ToolRecord{Call: ToolCall{ID: "x", Name: "read"}}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %o", st.Mode().Perm())
	}
	if lines := strings.Split(strings.TrimSpace(string(mustRead(t, path))), "\n"); len(lines) != 2 || lines[0] != `{"earlier":true}` {
		t.Errorf("the log was not appended to: %q", lines)
	}
}

func TestAuditLogThatCannotBeWrittenWarnsOnce(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "logs"), []byte("a file where the directory should be"), 0o644)
	var stderr bytes.Buffer
	a := &Agent{Log: func(format string, args ...any) { fmt.Fprintf(&stderr, "zot: "+format+"\n", args...) }}
	hook := (&setup{home: home, cwd: home, agent: a}).auditHook()
	for i := 0; i < 3; i++ {
		hook(context.Background(), &ToolRecord{Call: ToolCall{ID: "x", Name: "read"}})
	}
	if n := strings.Count(stderr.String(), "zot: audit log:"); n != 1 || !strings.Contains(stderr.String(), "--no-audit turns the log off") {
		t.Errorf("%d warnings: %q", n, stderr.String())
	}
}

// auditRun runs zot once with the given tool calls and a closing answer.
func auditRun(t *testing.T, z *zotRun, steps ...replayStep) (stderr string) {
	t.Helper()
	srv := startReplay(t, append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})...)
	_, stderr, _ = z.run(append(anthropicFlags(srv), "-p", "--no-session", "go")...)
	return stderr
}

// What a kill -9 in the middle of an append leaves — the start of a line,
// no newline — is found by the next append and put aside as a "torn"
// record holding its text: the next line is whole, every line is JSON,
// and zot says what it found.
func TestAuditLogReplacesALineAKillCutOff(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	path := filepath.Join(z.home, "logs", "audit.jsonl")
	auditRun(t, z, toolStep("t1", "bash", obj{"command": "echo first"}))
	whole := mustRead(t, path)
	cut := whole[:len(whole)/2] // the kernel stopped the write(2) here
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(cut)
	f.Close()

	stderr := auditRun(t, z, toolStep("t2", "bash", obj{"command": "echo second"}))
	if !strings.Contains(stderr, "audit log: the last line of "+path+" was cut off ("+strconv.Itoa(len(cut))+" bytes") {
		t.Errorf("zot did not say what it repaired: %s", stderr)
	}
	noTornLines(t, path)
	lines := auditLines(t, z.home)
	sum := sha256.Sum256(cut)
	if len(lines) != 3 || lines[0].CallID != "t1" || lines[2].CallID != "t2" || lines[1].Outcome != "torn" || lines[1].Torn == nil ||
		lines[1].Torn.Text != string(cut) || lines[1].Torn.Bytes != len(cut) || lines[1].Torn.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("lines %+v", lines)
	}
}

// On a full disk a line that does not fit is not left half-written: the
// append is cut off again, zot warns, and once there is room the next line
// starts on a line of its own.
func TestAuditLogOnAFullDiskKeepsNoPartialLine(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	logs := filepath.Join(z.home, "logs")
	how := smallDisk(t, z, logs, 8<<10)
	big := strings.Repeat("x", 20<<10) // the line is cut at 16 KiB of arguments: about 17 KiB
	stderr := auditRun(t, z, bigToolStep("t1", "bash", obj{"command": "true # " + big}))
	if !strings.Contains(stderr, "audit log: append to "+filepath.Join(logs, "audit.jsonl")) {
		t.Fatalf("%s: no warning: %s", how, stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(logs, "audit.jsonl")); len(b) != 0 {
		t.Fatalf("%s: the log kept %d bytes of a line that did not fit", how, len(b))
	}
	os.Remove(filepath.Join(logs, "filler"))
	z.wrap = nil
	auditRun(t, z, toolStep("t2", "bash", obj{"command": "echo fits"}))
	noTornLines(t, filepath.Join(logs, "audit.jsonl"))
	if lines := auditLines(t, z.home); len(lines) != 1 || lines[0].CallID != "t2" {
		t.Errorf("%s: lines %+v", how, lines)
	}
}

// zot killed (-9) while it appends calls with big arguments, at a few
// moments: the run after it finds the log whole — at most a torn record
// where a line was cut — and every line is JSON. bench/kill9.sh runs 100
// such trials.
func TestAuditLogSurvivesKill9DuringAppends(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("y", 16<<10)
	for _, after := range []int{1, 4, 9} {
		z := newZotRun(t)
		path := filepath.Join(z.home, "logs", "audit.jsonl")
		var steps []replayStep
		for i := 0; i < 40; i++ {
			steps = append(steps, bigToolStep(fmt.Sprintf("t%d", i), "nosuch", obj{"pad": big}))
		}
		srv := startReplay(t, append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})...)
		cmd := z.cmd(append(anthropicFlags(srv), "-p", "--no-session", "go")...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("%d lines in the audit log", after), func() bool {
			b, _ := os.ReadFile(path)
			return bytes.Count(b, []byte("\n")) >= after
		})
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		auditRun(t, z, toolStep("last", "bash", obj{"command": "echo after"}))
		noTornLines(t, path)
		if lines := auditLines(t, z.home); len(lines) < after+1 || lines[len(lines)-1].CallID != "last" {
			t.Errorf("kill after %d lines: %d lines, the last %+v", after, len(lines), lines[len(lines)-1])
		}
	}
}
