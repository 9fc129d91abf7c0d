package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Approvals for embedders through the real binary: an rpc client that
// said hello with "approvals": true, and --json with --approvals-stdin.
// The rules are a user's Claude Code settings that allow echo, so any
// other command meets Claude Code's default ask.

// approvalRequest is an approval_request event as a client reads it.
type approvalRequest struct {
	Type       string          `json:"type"`
	ApprovalID string          `json:"approval_id"`
	Tool       string          `json:"tool"`
	Args       json.RawMessage `json:"args"`
	Reason     string          `json:"reason"`
	Rule       string          `json:"rule"`
	Diff       string          `json:"diff"`
	Always     string          `json:"always"`
}

func readApproval(t *testing.T, o rpcOut) approvalRequest {
	t.Helper()
	var a approvalRequest
	if err := json.Unmarshal([]byte(o.Raw), &a); err != nil || a.ApprovalID == "" {
		t.Fatalf("approval_request %s: %v", o.Raw, err)
	}
	return a
}

// toolResultTexts is what zot sent the model as tool results, request by
// request.
func toolResultTexts(srv *replayServer) string {
	var all strings.Builder
	for _, r := range srv.Requests() {
		all.Write(r.Body)
	}
	return all.String()
}

func approvalsZot(t *testing.T) *zotRun {
	z := newZotRun(t)
	userSettings(t, z, perms("allow", []string{"Bash(echo:*)"}))
	return z
}

func TestRPCApprovalsAllowRunsDenyTellsTheModel(t *testing.T) {
	t.Parallel()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "touch made.txt"}), textStep("made"),
		toolStep("t2", "bash", obj{"command": "touch refused.txt"}), textStep("refused"),
		toolStep("t3", "write", obj{"path": "notes.txt", "content": "alpha\nbeta\n"}), textStep("written"))
	z := approvalsZot(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"id":"h","type":"hello","approvals":true}`)
	if r := p.until(isResponse("h")); !strings.Contains(r[len(r)-1].Raw, `"approvals":true`) {
		t.Errorf("hello = %s", r[len(r)-1].Raw)
	}

	p.send(`{"id":"p1","type":"prompt","message":"make it"}`)
	got := p.until(isType("approval_request"))
	a := readApproval(t, got[len(got)-1])
	if a.Tool != "bash" || !strings.Contains(string(a.Args), "touch made.txt") || a.Rule != "rules:claude-code" || !strings.Contains(a.Reason, "no Claude Code rule allows it") || a.Always != "`touch made.txt *`" {
		t.Errorf("request %+v", a)
	}
	p.send(`{"id":"a1","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"allow"}`)
	// The response and the run's done, in whichever order they come.
	var answered, done bool
	for _, o := range p.until(func(o rpcOut) bool {
		answered = answered || isResponse("a1")(o)
		done = done || o.Type == "done"
		return answered && done
	}) {
		if isResponse("a1")(o) && !o.Success {
			t.Errorf("approve: %s", o.Raw)
		}
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}

	p.send(`{"id":"p2","type":"prompt","message":"again"}`)
	got = p.until(isType("approval_request"))
	a = readApproval(t, got[len(got)-1])
	p.send(`{"id":"a2","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"deny","message":"use the write tool instead"}`)
	p.until(isType("done"))
	if _, err := os.Stat(filepath.Join(z.cwd, "refused.txt")); err == nil {
		t.Error("the denied command ran")
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "use the write tool instead") {
		t.Errorf("the model was not told the client's message:\n%s", sent)
	}

	// A write's question carries the diff it would make; "always" for a
	// write (edits in this directory) is answered too.
	os.WriteFile(filepath.Join(z.cwd, "notes.txt"), []byte("alpha\n"), 0o644)
	p.send(`{"id":"p3","type":"prompt","message":"write"}`)
	got = p.until(isType("approval_request"))
	a = readApproval(t, got[len(got)-1])
	if a.Tool != "write" || !strings.Contains(a.Diff, "+beta") || a.Always != "file edits in this directory" {
		t.Errorf("write request %+v", a)
	}
	p.send(`{"id":"a3","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"always"}`)
	p.until(isType("done"))
	if data, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(data) != "alpha\nbeta\n" {
		t.Errorf("notes.txt = %q", data)
	}
}

// TestRPCApprovalsAConfusedClientIsRefused: an unknown id, an unknown
// decision, a second answer: each an error, and the call does not run.
func TestRPCApprovalsAConfusedClientIsRefused(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch made.txt"}), textStep("ok"))
	z := approvalsZot(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"id":"h","type":"hello","approvals":true}`)
	p.until(isResponse("h"))
	p.send(`{"id":"p","type":"prompt","message":"make it"}`)
	got := p.until(isType("approval_request"))
	a := readApproval(t, got[len(got)-1])
	// In this order: the last is a second answer, after the unknown
	// decision refused the call.
	done := false
	for i, line := range []string{
		`{"id":"x0","type":"approve","approval_id":"approval-77","decision":"allow"}`,
		`{"id":"x1","type":"approve","decision":"allow"}`,
		`{"id":"x2","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"yes please"}`,
		`{"id":"x3","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"allow"}`,
	} {
		id := fmt.Sprintf("x%d", i)
		p.send(line)
		r := p.until(isResponse(id))
		if r[len(r)-1].Success {
			t.Errorf("%s was taken: %s", line, r[len(r)-1].Raw)
		}
		for _, o := range r {
			done = done || o.Type == "done"
		}
	}
	if !done { // the refused run may have ended before the last response
		p.until(isType("done"))
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil {
		t.Error("the command ran")
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, `an unknown decision \"yes please\" counts as no`) {
		t.Errorf("the model was told:\n%s", sent)
	}
}

// TestRPCWithoutApprovalsIsRefusedAsBefore: a client that did not opt in
// gets no approval_request and today's refusal.
func TestRPCWithoutApprovalsIsRefusedAsBefore(t *testing.T) {
	t.Parallel()
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch made.txt"}), textStep("ok"))
	z := approvalsZot(t)
	p := startRPCProc(t, z, append([]string{"rpc"}, anthropicFlags(srv)...)...)
	p.send(`{"id":"h","type":"hello"}`)
	if r := p.until(isResponse("h")); strings.Contains(r[len(r)-1].Raw, "approvals") {
		t.Errorf("hello = %s", r[len(r)-1].Raw)
	}
	p.send(`{"id":"p","type":"prompt","message":"make it"}`)
	for _, o := range p.until(isType("done")) {
		if o.Type == "approval_request" {
			t.Errorf("a client that did not opt in was asked: %s", o.Raw)
		}
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil {
		t.Error("the command ran")
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "declined by non-interactive mode (pass --approve-asks to allow)") {
		t.Errorf("the model was told:\n%s", sent)
	}
}

// TestJSONApprovalsStdin: --json --approvals-stdin asks on stdout and
// reads the answer on stdin; a silent reader is refused at the timeout;
// without the flag, the ask is refused as before.
func TestJSONApprovalsStdin(t *testing.T) {
	t.Parallel()
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch made.txt"}), textStep("ok"))
		z := approvalsZot(t)
		p := startRPCProc(t, z, append(anthropicFlags(srv), "--json", "--approvals-stdin", "make", "it")...)
		got := p.until(isType("approval_request"))
		a := readApproval(t, got[len(got)-1])
		p.send(`{"type":"approve","approval_id":"` + a.ApprovalID + `","decision":"allow"}`)
		p.until(isType("done"))
		if code := p.wait(); code != 0 {
			t.Errorf("exit %d: %s", code, p.stderr)
		}
		if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err != nil {
			t.Errorf("the allowed command did not run: %v", err)
		}
	})
	t.Run("silence", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch made.txt"}), textStep("ok"))
		z := approvalsZot(t)
		p := startRPCProc(t, z, append(anthropicFlags(srv), "--json", "--approvals-stdin", "--approval-timeout", "50ms", "make", "it")...)
		p.until(isType("done"))
		if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil {
			t.Error("the command ran without an answer")
		}
		if sent := toolResultTexts(srv); !strings.Contains(sent, "did not answer within 50ms") {
			t.Errorf("the model was told:\n%s", sent)
		}
	})
	t.Run("not opted in", func(t *testing.T) {
		t.Parallel()
		srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch made.txt"}), textStep("ok"))
		z := approvalsZot(t)
		stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "make", "it")...)
		if code != 0 || strings.Contains(stdout, "approval_request") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		if sent := toolResultTexts(srv); !strings.Contains(sent, "declined by non-interactive mode") {
			t.Errorf("the model was told:\n%s", sent)
		}
	})
	t.Run("usage", func(t *testing.T) {
		t.Parallel()
		_, stderr, code := newZotRun(t).run("-p", "--approvals-stdin", "hi")
		if code != 2 || !strings.Contains(stderr, "--approvals-stdin reads approve commands on stdin: use it with --json") {
			t.Errorf("exit %d: %s", code, stderr)
		}
	})
}

// TestSavedApprovalInALaterRun (issue 34 §11): a "don't ask again" saved
// for `rm -rf build/ *` lets a later zot -p run rm -rf build/ and nothing
// its characters merely start (build/../victim), and saving it changed
// nothing in the project: the trusted project's own allow rule still
// applies.
func TestSavedApprovalInALaterRun(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	writeJSONFile(t, filepath.Join(z.cwd, ".claude", "settings.json"), perms("allow", []string{"Bash(touch:*)"}))
	if out, stderr, code := z.run("trust", "--yes"); code != 0 {
		t.Fatalf("zot trust --yes: exit %d\n%s%s", code, out, stderr)
	}
	for _, d := range []string{"build", "victim"} {
		os.MkdirAll(filepath.Join(z.cwd, d), 0o755)
		os.WriteFile(filepath.Join(z.cwd, d, "keep"), []byte("x"), 0o644)
	}
	if err := saveApprovalPrefixes(savedApprovalsPath(z.home), z.cwd, [][]string{{"rm", "-rf", "build/"}}); err != nil {
		t.Fatal(err)
	}
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "rm -rf build/../victim"}),
		toolStep("t2", "bash", obj{"command": "rm -rf build/"}),
		toolStep("t3", "bash", obj{"command": "touch trusted-rule.txt"}),
		textStep("done"))
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "clean")...)
	if code != 0 || stdout != "done\n" {
		t.Fatalf("exit %d stdout %q\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "victim", "keep")); err != nil {
		t.Errorf("build/../victim ran under the saved `rm -rf build/ *`: %v", err)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "build")); err == nil {
		t.Error("rm -rf build/ did not run")
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "trusted-rule.txt")); err != nil {
		t.Errorf("the project's own allow rule no longer applies: %v\n%s", err, stderr)
	}
	lines := auditLines(t, z.home)
	if len(lines) != 3 || lines[0].Outcome != "blocked" || lines[1].Outcome != "ran" {
		t.Fatalf("audit %+v", lines)
	}
	found := false
	for _, d := range lines[1].Decisions {
		found = found || strings.Contains(d.By, "approved earlier (`rm -rf build/ *`; saved for this directory)")
	}
	if !found {
		t.Errorf("the audit log does not say the saved answer allowed it: %+v", lines[1].Decisions)
	}
}
