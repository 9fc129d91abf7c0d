package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// End-to-end tests of Claude Code hooks: the built binary, a replayed
// model, real hook scripts in the run's ./.claude/settings.json.

// claudeSettings writes the project's hook settings, and trusts the
// project as a user who wrote them would (zot trust --yes).
func claudeSettings(t *testing.T, z *zotRun, hooks obj) {
	t.Helper()
	writeSettings(t, filepath.Join(z.cwd, ".claude", "settings.json"), hooks)
	if stdout, stderr, code := z.run("trust", "--yes"); code != 0 {
		t.Fatalf("zot trust --yes: exit %d\n%s%s", code, stdout, stderr)
	}
}

func requestText(t *testing.T, r capturedRequest) string {
	t.Helper()
	return string(r.Body)
}

func TestHooksEndToEndGuardRewriteAndFeedback(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	notes := filepath.Join(z.cwd, "notes.txt")
	os.WriteFile(notes, []byte("alpha\nbeta\n"), 0o644)
	os.MkdirAll(filepath.Join(z.cwd, "precious"), 0o755)
	claudeSettings(t, z, obj{
		"UserPromptSubmit": []obj{group("", shHook(t, "context.sh", "ticket ZOT-9 is open"))},
		"PreToolUse": []obj{
			group("Bash", shHook(t, "block-rm.sh")),
			group("Edit", specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{
				"hookEventName": "PreToolUse", "permissionDecision": "allow",
				"updatedInput": obj{"file_path": notes, "old_string": "beta", "new_string": "BETA"},
			}}})),
		},
		"PostToolUse": []obj{group("Edit|Write", specHook(t, obj{"stdout": obj{"hookSpecificOutput": obj{"hookEventName": "PostToolUse", "additionalContext": "formatter: notes.txt is clean"}}}))},
	})
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "rm -rf precious"}),
		toolStep("t2", "edit", obj{"path": "notes.txt", "edits": []obj{{"oldText": "beta", "newText": "gamma"}}}),
		replayStep{Events: anthropicEvents(gen{Text: "Done."})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--claude-hooks", "tidy", "up")...)
	if code != 0 || stdout != "Done.\n" || stderr != "" {
		t.Fatalf("exit %d stdout %q stderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "precious")); err != nil {
		t.Errorf("rm -rf ran: %v", err)
	}
	if b, _ := os.ReadFile(notes); string(b) != "alpha\nBETA\n" {
		t.Errorf("notes.txt = %q: the hook's updatedInput was not used", b)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d", len(reqs))
	}
	for i, want := range []string{
		`ticket ZOT-9 is open`,
		`"tool_use_id":"t1","content":[{"type":"text","text":"refused by block-rm.sh: rm -rf is not allowed here"}],"is_error":true`,
		`PostToolUse hook: formatter: notes.txt is clean`,
	} {
		if !strings.Contains(requestText(t, reqs[i]), want) {
			t.Errorf("request %d lacks %s:\n%s", i, want, truncate(requestText(t, reqs[i]), 3000))
		}
	}
	// The model's own call stays in the transcript; only what ran changed.
	if !strings.Contains(requestText(t, reqs[2]), `"newText":"gamma"`) {
		t.Errorf("the transcript lost the model's arguments")
	}
}

func TestHooksAreOffUnlessTurnedOn(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	claudeSettings(t, z, obj{"PreToolUse": []obj{group("Bash", shHook(t, "block-rm.sh"))}})
	precious := filepath.Join(z.cwd, "precious")
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "rm -rf precious"}), replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	run := func(args ...string) bool {
		os.MkdirAll(precious, 0o755)
		if _, stderr, code := z.run(append(append(anthropicFlags(srv), "-p", "go"), args...)...); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		_, err := os.Stat(precious)
		return err == nil
	}
	if run() {
		t.Errorf("a repository's settings file ran a hook without the user's say")
	}
	if !run("--claude-hooks") {
		t.Errorf("--claude-hooks did not run the hook")
	}
	os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"provider":"anthropic","claude_hooks":true}`), 0o600)
	if !run() {
		t.Errorf(`"claude_hooks": true in config.json did not turn hooks on`)
	}
	os.WriteFile(filepath.Join(z.home, "config.json"), []byte(`{"claude_hooks":"yes"}`), 0o600)
	os.MkdirAll(precious, 0o755)
	_, stderr, _ := z.run(append(anthropicFlags(srv), "-p", "go")...)
	if !strings.Contains(stderr, `"claude_hooks" must be true or false; hooks stay off`) {
		t.Errorf("stderr %q", stderr)
	}
}

func TestHooksEndToEndStopLoopIsLimited(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	rec := filepath.Join(t.TempDir(), "stop.jsonl")
	claudeSettings(t, z, obj{"Stop": []obj{group("", shHook(t, "keep-going.sh", rec))}})
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "I am done."})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--claude-hooks", "finish")...)
	if code != 0 || stdout != "I am done.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("requests = %d, want 1 + 3 continuations", len(reqs))
	}
	if n := strings.Count(requestText(t, reqs[3]), "keep going: the tests are not green yet"); n != 3 {
		t.Errorf("the last request holds the hook's message %d times", n)
	}
	var active []any
	for _, in := range readRecords(t, rec) {
		active = append(active, in["stop_hook_active"])
	}
	if jsonOf(active) != "[false,true,true]" { // the fourth stop is not asked about
		t.Errorf("stop_hook_active = %s", jsonOf(active))
	}
}

func TestHooksEndToEndPromptRefused(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	claudeSettings(t, z, obj{"UserPromptSubmit": []obj{group("", specHook(t, obj{"stderr": "no deploys on Fridays\x1b]0;pwned\x07", "exit": 2}))}})
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "deployed"})})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "--json", "--claude-hooks", "deploy")...)
	if code != 1 || !strings.Contains(stderr, "prompt refused: no deploys on Fridays") || strings.ContainsRune(stderr, 0x1b) || len(srv.Requests()) != 0 {
		t.Fatalf("exit %d requests %d stderr %q", code, len(srv.Requests()), stderr)
	}
	if !strings.Contains(stdout, `{"type":"turn_end","stop":"error","error":"no deploys on Fridays`) || strings.Contains(stdout, `"user_message"`) {
		t.Errorf("events: %s", stdout)
	}
}

func TestHooksEndToEndContinueFalseEndsThePrompt(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	claudeSettings(t, z, obj{"PostToolUse": []obj{group("Bash", specHook(t, obj{"stdout": obj{"continue": false, "stopReason": "budget spent for today"}}))}})
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "echo hi"}), replayStep{Events: anthropicEvents(gen{Text: "never"})})
	_, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--claude-hooks", "go")...)
	if code != 1 || !strings.Contains(stderr, "budget spent for today") || len(srv.Requests()) != 1 {
		t.Fatalf("exit %d requests %d stderr %q", code, len(srv.Requests()), stderr)
	}
}

func TestHooksEndToEndSessionLifecycle(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	rec := filepath.Join(t.TempDir(), "end.jsonl")
	claudeSettings(t, z, obj{
		"SessionStart": []obj{group("startup", shHook(t, "context.sh", "house rules: tabs")), group("resume", shHook(t, "context.sh", "welcome back"))},
		"SessionEnd":   []obj{group("", specHook(t, obj{"record": rec}))},
	})
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "hi"})})
	for _, args := range [][]string{{}, {"-c"}} {
		if _, stderr, code := z.run(append(append(anthropicFlags(srv), "-p", "--claude-hooks", "hello"), args...)...); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	reqs := srv.Requests()
	var first, second anthRequest
	json.Unmarshal(reqs[0].Body, &first)
	json.Unmarshal(reqs[1].Body, &second)
	if s := jsonOf(first.System); !strings.Contains(s, "house rules: tabs") || strings.Contains(s, "welcome back") {
		t.Errorf("startup system prompt: %s", truncate(s, 2000))
	}
	if s := jsonOf(second.System); !strings.Contains(s, "welcome back") || strings.Contains(s, "house rules") {
		t.Errorf("resume system prompt: %s", truncate(s, 2000))
	}
	ends := readRecords(t, rec)
	if len(ends) != 2 || ends[0]["reason"] != "other" || ends[0]["session_id"] != ends[1]["session_id"] {
		t.Fatalf("SessionEnd inputs %v", ends)
	}
	path, _ := ends[0]["transcript_path"].(string)
	if _, err := os.Stat(path); err != nil || !strings.HasPrefix(path, filepath.Join(z.home, "sessions")) || !strings.Contains(path, ends[0]["session_id"].(string)) {
		t.Errorf("transcript_path %q: %v", path, err)
	}
}

func TestHooksRPCNotesAreEvents(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	claudeSettings(t, z, obj{"PreToolUse": []obj{group("Bash", specHook(t, obj{"stdout": obj{"systemMessage": "bash is watched"}}))}})
	srv := startReplay(t, toolStep("t1", "bash", obj{"command": "true"}), replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	p := startRPCProc(t, z, append([]string{"rpc", "--claude-hooks"}, anthropicFlags(srv)...)...)
	p.send(`{"type":"prompt","message":"go"}`)
	found := false
	for _, o := range p.until(isType("done")) {
		found = found || o.Raw == `{"type":"ext_notify","extension":"hooks","level":"warn","message":"PreToolUse hook: bash is watched"}`
	}
	if !found {
		t.Errorf("no ext_notify for the hook's systemMessage")
	}
	p.stdin.Close()
	if code := p.wait(); code != 0 {
		t.Errorf("exit %d: %s", code, p.stderr)
	}
}
