package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// One run outside the sandbox, offered where someone answers: rpc's
// client and ACP's editor are asked, -p is not unless --approve-asks (the
// TUI's dialog: TestTUISandboxRefusalOffersOneRunOutside). Linux: the
// workspace sandbox of sandboxed-auto is the kernel's.

// outsideTarget is a file outside everything the workspace sandbox lets
// z's commands write.
func outsideTarget(t *testing.T, z *zotRun) string {
	z.env = append(z.env, "TMPDIR="+t.TempDir()) // so that the target's directory is outside
	return filepath.Join(t.TempDir(), "f")
}

func TestPrintRunsOutsideTheSandboxOnlyWithApproveAsks(t *testing.T) {
	t.Parallel()
	for _, approve := range []bool{false, true} {
		name := "nobody asked"
		flags := []string{"--mode", "sandboxed-auto"}
		if approve {
			name, flags = "--approve-asks", append(flags, "--approve-asks")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			target := outsideTarget(t, z)
			result, stderr := toolResultSent(t, z, "bash", obj{"command": "touch " + target}, flags...)
			// Run outside, the result is that run's, with a note saying why.
			told := "[sandbox workspace refused this"
			if approve {
				told = "[the sandbox refused this command, and --approve-asks let it run once outside the sandbox"
			}
			if !strings.Contains(result, told) {
				t.Errorf("the model was not told %q:\n%s\nstderr: %s", told, result, stderr)
			}
			if fileExists(target) != approve {
				t.Errorf("ran outside: %v, want %v:\n%s\nstderr: %s", fileExists(target), approve, result, stderr)
			}
		})
	}
}

func TestRPCClientIsOfferedARunOutsideTheSandbox(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	target := outsideTarget(t, z)
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch " + target}), textStep("Over."))
	p := startRPCProc(t, z, append([]string{"rpc", "--mode", "sandboxed-auto"}, anthropicFlags(srv)...)...)
	p.send(`{"id":"h","type":"hello","approvals":true}`)
	p.until(isResponse("h"))
	p.send(`{"id":"p","type":"prompt","message":"touch it"}`)
	got := p.until(isType("approval_request"))
	a := readApproval(t, got[len(got)-1])
	if a.Tool != "bash" || !strings.Contains(a.Reason, "sandbox workspace refused this") || !strings.Contains(a.Reason, "outside the sandbox") {
		t.Errorf("the offer: %+v", a)
	}
	if fileExists(target) {
		t.Fatal("the command wrote outside the sandbox before the client was asked")
	}
	p.send(`{"id":"a","type":"approve","approval_id":"` + a.ApprovalID + `","decision":"allow"}`)
	p.until(isType("done"))
	ranOutsideOnce(t, target, srv)
}

func TestACPEditorIsOfferedARunOutsideTheSandbox(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	target := outsideTarget(t, z)
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "touch " + target}), textStep("Over."))
	p := startACPProc(t, z, anthropicFlags(srv)...)
	var mu sync.Mutex
	var asked []string
	wroteEarly := false
	p.onRequest = func(method string, params json.RawMessage) (any, *acpError) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, string(params))
		wroteEarly = wroteEarly || fileExists(target)
		return map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "allow-once"}}, nil
	}
	session := p.newSession(z.cwd, map[string]any{})
	p.mustCall("session/set_mode", map[string]any{"sessionId": session, "modeId": "sandboxed-auto"})
	p.mustCall("session/prompt", promptParams(session, "touch it"))
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 1 || !strings.Contains(asked[0], "sandbox workspace refused this") || !strings.Contains(asked[0], "outside the sandbox") {
		t.Errorf("the editor was asked %d times:\n%s", len(asked), strings.Join(asked, "\n"))
	}
	if wroteEarly {
		t.Error("the command wrote outside the sandbox before the editor was asked")
	}
	ranOutsideOnce(t, target, srv)
}

// The run outside is a question like any other: a PermissionRequest hook
// that denies it stops it, though --approve-asks would have said yes and
// the hook was never asked about the run inside.
func TestRunOutsideTheSandboxPassesTheGatesAgain(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	target := outsideTarget(t, z)
	deny := obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "PermissionRequest", "decision": obj{"behavior": "deny", "message": "never outside"}}}}
	claudeSettings(t, z, obj{"PermissionRequest": []obj{group("Bash", specHook(t, deny))}})
	result, stderr := toolResultSent(t, z, "bash", obj{"command": "touch " + target}, "--mode", "sandboxed-auto", "--approve-asks", "--claude-hooks")
	if fileExists(target) {
		t.Error("the hook denied the run outside, and it happened")
	}
	if !strings.Contains(result, "[sandbox workspace refused this") || !strings.Contains(result, "[not run outside the sandbox: not run: never outside]") {
		t.Errorf("the model was told:\n%s\nstderr: %s", result, stderr)
	}
}

// ranOutsideOnce checks that an allowed run outside the sandbox happened
// and that the model was told so.
func ranOutsideOnce(t *testing.T, target string, srv *replayServer) {
	t.Helper()
	if !fileExists(target) {
		t.Error("allowed, the run outside did not happen")
	}
	if sent := toolResultTexts(srv); !strings.Contains(sent, "let it run once outside the sandbox") {
		t.Errorf("the model was not told of the run outside:\n%s", sent)
	}
}
