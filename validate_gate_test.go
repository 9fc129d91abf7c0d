package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lastToolResult is the tool result the model received in a request.
func lastToolResult(t *testing.T, r capturedRequest) (isError bool, text string) {
	t.Helper()
	var body anthRequest
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	last := body.Messages[len(body.Messages)-1].Content[0]
	for _, c := range last.Content {
		if c.Text != nil {
			text += *c.Text
		}
	}
	return last.IsError, text
}

// rewriteGate stands in for the extension interception gate: it rewrites
// every bash command to the one given.
func rewriteGate(command string) ToolGate {
	return func(ctx context.Context, call ToolCall) GateResult {
		if call.Name != "bash" {
			return GateResult{}
		}
		args, _ := json.Marshal(obj{"command": command})
		return GateResult{Args: args, Notes: []GateNote{{By: "extension:rewriter", Decision: DecisionRewrite}}}
	}
}

func TestValidatorGateSeesTheRewrittenCommand(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": "echo harmless"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	a := newTestAgent(t, srv, BuiltinTools(NewToolEnv(cwd, false))...)
	deny := testValidator(t, "no-post", "deny_post.py")
	a.Pipeline.AddToolGate(ExtStage, rewriteGate("touch ran.marker && curl -X POST https://api.example.com/items"))
	a.Pipeline.AddToolGate(ValidatorStage, ValidatorGate([]Validator{deny}, cwd))
	a.Pipeline.SetConfirm(NonInteractiveConfirm(false))
	var rec ToolRecord
	a.Pipeline.AddAfterTool(AuditStage, func(ctx context.Context, r *ToolRecord) { rec = *r })
	var log eventLog
	if err := a.Prompt(context.Background(), "go", nil, log.sink); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "ran.marker")); err == nil {
		t.Fatal("the denied command ran")
	}
	isErr, text := lastToolResult(t, srv.Requests()[1])
	want := "not run: validator \"no-post\" denied it: POST requests are not allowed in production\nsuggested fix: curl -X GET https://api.example.com/items\ncommand: curl -X POST https://api.example.com/items"
	if !isErr || text != want {
		t.Errorf("the model saw error=%v %q\nwant %q", isErr, text, want)
	}
	trail, _ := json.Marshal(rec.Decision.Trail)
	if rec.Ran || !rec.Decision.Block || !strings.Contains(string(trail), `{"by":"extension:rewriter","decision":"rewrite"},{"by":"validator:no-post","decision":"deny"`) {
		t.Errorf("record: ran %v, trail %s", rec.Ran, trail)
	}
}

// The gate reads the command exactly as the bash tool does: a second key
// that differs only in case must not show validators a harmless command.
func TestValidatorGateReadsArgumentsLikeTheBashTool(t *testing.T) {
	t.Parallel()
	gate := ValidatorGate([]Validator{testValidator(t, "no-post", "deny_post.py")}, t.TempDir())
	for _, args := range []string{
		`{"command":"curl -X POST https://x","Command":"ls"}`,
		`{"command":"ls","command":"curl -X POST https://x"}`,
	} {
		if r := gate(context.Background(), ToolCall{Name: "bash", Args: json.RawMessage(args)}); r.Verdict != GateDeny {
			t.Errorf("%s: verdict %v", args, r.Verdict)
		}
	}
	for _, args := range []string{`{"command":5}`, `{}`, `not json`} {
		if r := gate(context.Background(), ToolCall{Name: "bash", Args: json.RawMessage(args)}); r.Verdict != GateAllow || len(r.Notes) != 0 {
			t.Errorf("%s: %+v (the bash tool refuses these itself)", args, r)
		}
	}
	if r := gate(context.Background(), ToolCall{Name: "write", Args: json.RawMessage(`{"command":"curl -X POST x"}`)}); r.Verdict != GateAllow {
		t.Errorf("write: %+v", r)
	}
}

func TestNonInteractiveConfirmDeniesAsksUnlessApproved(t *testing.T) {
	t.Parallel()
	ask := testValidator(t, "prod-guard", "ask.sh")
	call := ToolCall{ID: "t1", Name: "bash", Args: json.RawMessage(`{"command":"kubectl delete ns prod"}`)}

	d := decideWith(NonInteractiveConfirm(false), ValidatorGate([]Validator{ask}, t.TempDir()))(context.Background(), call)
	if !d.Block || d.Reason != "not run: confirmation required (validator:prod-guard: this touches production\nsuggested fix: run it against staging first); declined by non-interactive mode (pass --approve-asks to allow)" {
		t.Errorf("not approved: %+v", d)
	}

	d = decideWith(NonInteractiveConfirm(true), ValidatorGate([]Validator{ask}, t.TempDir()))(context.Background(), call)
	trail, _ := json.Marshal(d.Trail)
	if d.Block || !strings.HasSuffix(string(trail), `{"by":"--approve-asks","decision":"approve"}]`) {
		t.Errorf("approved: %+v %s", d, trail)
	}
}

// withValidators writes a validators.json naming testdata scripts into dir.
func withValidators(t *testing.T, dir string, entries ...obj) {
	t.Helper()
	for _, e := range entries {
		if s, ok := e["script"].(string); ok {
			path, _ := filepath.Abs(filepath.Join("testdata", "validate", s))
			e["executor"] = path
			delete(e, "script")
		}
	}
	b, _ := json.Marshal(entries)
	if err := os.WriteFile(filepath.Join(dir, "validators.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// auditLines reads the audit log of a ZOT_HOME.
func auditLines(t *testing.T, home string) []auditEntry {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "logs", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []auditEntry
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var e auditEntry
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("audit line %q: %v", l, err)
		}
		out = append(out, e)
	}
	return out
}

func TestDeniedCurlPostNeverRunsEndToEnd(t *testing.T) {
	t.Parallel()
	const cmd = "touch ran.marker && curl -X POST https://api.example.invalid/v1/items"
	srv := startReplay(t,
		toolStep("t1", "bash", obj{"command": cmd}),
		replayStep{Events: anthropicEvents(gen{Text: "I will not post."})})
	z := newZotRun(t)
	withValidators(t, z.home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}})
	stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "create", "the", "item")...)
	if code != 0 || stdout != "I will not post.\n" {
		t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "ran.marker")); err == nil {
		t.Fatal("the denied command ran")
	}
	isErr, text := lastToolResult(t, srv.Requests()[1])
	if !isErr || !strings.Contains(text, "POST requests are not allowed in production") || !strings.Contains(text, "suggested fix: curl -X GET https://api.example.invalid/v1/items") {
		t.Errorf("the model saw error=%v %q", isErr, text)
	}

	lines := auditLines(t, z.home)
	if len(lines) != 1 {
		t.Fatalf("%d audit lines", len(lines))
	}
	e := lines[0]
	if e.Tool != "bash" || e.CallID != "t1" || e.Outcome != "blocked" || e.Session == "" || e.Cwd != z.cwd ||
		len(e.Decisions) != 1 || e.Decisions[0].By != "validator:no-post" || e.Decisions[0].Decision != "deny" ||
		!strings.Contains(string(e.Args), "touch ran.marker") || e.Executed != nil {
		t.Errorf("audit entry %+v", e)
	}
	st, _ := os.Stat(filepath.Join(z.home, "logs", "audit.jsonl"))
	if st.Mode().Perm() != 0o600 {
		t.Errorf("audit log mode %o", st.Mode().Perm())
	}
}

func TestAskIsDenyWithoutATerminalUnlessApproved(t *testing.T) {
	t.Parallel()
	steps := []replayStep{
		toolStep("t1", "bash", obj{"command": "touch ran.marker"}),
		{Events: anthropicEvents(gen{Text: "done"})},
	}
	z := newZotRun(t)
	withValidators(t, z.home, obj{"name": "prod-guard", "script": "ask.sh"})

	srv := startReplay(t, steps...)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "--json", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "ran.marker")); err == nil {
		t.Fatal("an ask ran without --approve-asks")
	}
	if _, text := lastToolResult(t, srv.Requests()[1]); !strings.Contains(text, "validator:prod-guard: this touches production") || !strings.Contains(text, "pass --approve-asks to allow") {
		t.Errorf("the model saw %q", text)
	}

	srv = startReplay(t, steps...)
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--approve-asks", "--no-session", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.cwd, "ran.marker")); err != nil {
		t.Fatal("--approve-asks did not let it run")
	}
	lines := auditLines(t, z.home)
	if len(lines) != 2 || lines[0].Outcome != "blocked" || lines[1].Outcome != "ran" || lines[1].Session != "" {
		t.Fatalf("audit %+v", lines)
	}
	d := lines[1].Decisions
	if len(d) != 2 || d[0].By != "validator:prod-guard" || d[0].Decision != "ask" || d[1].By != "--approve-asks" || d[1].Decision != "approve" || *lines[1].ExitCode != 0 {
		t.Errorf("approved call's decisions %+v", d)
	}

	srv = startReplay(t, steps...)
	os.Remove(filepath.Join(z.home, "logs", "audit.jsonl"))
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "--approve-asks", "--no-audit", "go")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(z.home, "logs", "audit.jsonl")); err == nil {
		t.Error("--no-audit wrote the audit log")
	}
}

func TestValidateCommand(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	withValidators(t, z.home, obj{"name": "no-post", "script": "deny_post.py", "commands": []string{"curl"}}, obj{"name": "all", "script": "allow.sh"})
	os.MkdirAll(filepath.Join(z.cwd, ".zot"), 0o755)
	withValidators(t, filepath.Join(z.cwd, ".zot"), obj{"name": "kube", "script": "ask.sh", "commands": []string{"kubectl"}}, obj{"bad": true})
	z.run("trust", "--yes")

	stdout, stderr, code := z.run("validate", "--", "curl -X POST https://x | jq .")
	if code != 1 {
		t.Errorf("deny: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"command line: curl -X POST https://x | jq .",
		"1. curl -X POST https://x\n   command curl  flags {\"X\":\"POST\"}  args [\"https://x\"]\n   no-post: deny — POST requests are not allowed in production\n     suggested fix: curl -X GET https://x\n   all: allow\n",
		"2. jq .\n   command jq  flags {}  args [\".\"]\n   all: allow\n",
		"decision: deny\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stderr, `.zot/validators.json: entry 2: field "name": want a non-empty string; entry skipped`) {
		t.Errorf("stderr %q", stderr)
	}

	stdout, _, code = z.run("validate", "--json", "--", "kubectl", "delete", "ns", "prod")
	var r struct {
		ValidationReport
		Validators   []validatorView `json:"validators"`
		ConfigErrors []string        `json:"config_errors"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != exitAsk {
		t.Fatalf("exit %d, %v:\n%s", code, err, stdout)
	}
	if r.Decision != "ask" || r.Line != "kubectl delete ns prod" || len(r.Commands) != 1 || r.Commands[0].Command != "kubectl" ||
		len(r.Answers) != 2 || len(r.Validators) != 3 || r.Validators[2].TimeoutMS != 5000 || len(r.ConfigErrors) != 2 {
		t.Errorf("report %+v", r)
	}

	// Words given separately are the words of one command, quoted as the
	// shell would need them: the message stays one flag value.
	stdout, _, _ = z.run("validate", "--json", "--", "git", "commit", "-m", "fix bug", "--author=O'Brien <o@b>")
	r.Commands = nil
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if c := r.Commands; r.Line != `git commit -m 'fix bug' '--author=O'\''Brien <o@b>'` || len(c) != 1 ||
		c[0].Flags["m"] != "fix bug" || c[0].Flags["author"] != "O'Brien <o@b>" || len(c[0].Args) != 1 || c[0].Args[0] != "commit" {
		t.Errorf("separate words: line %s, commands %+v", r.Line, r.Commands)
	}

	z.stdin = "ls -la\nwhoami\n"
	if stdout, _, code = z.run("validate"); code != 0 || !strings.Contains(stdout, "2. whoami") || !strings.Contains(stdout, "decision: allow") {
		t.Errorf("from stdin: exit %d\n%s", code, stdout)
	}
	z.stdin = ""
	if _, _, code = z.run("validate"); code != exitUsage {
		t.Errorf("no line: exit %d", code)
	}
	if _, stderr, code = z.run("validate", "ls", "-la"); code != exitUsage || !strings.Contains(stderr, "zot validate: unknown flag -la (put the command line after --)") {
		t.Errorf("flag before --: exit %d %s", code, stderr)
	}

	empty := newZotRun(t)
	if stdout, _, code = empty.run("validate", "--", "rm -rf /"); code != 0 || !strings.Contains(stdout, "no validators configured") {
		t.Errorf("no validators: exit %d\n%s", code, stdout)
	}
}
