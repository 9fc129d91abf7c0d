package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func bashCall(line string) ToolCall {
	args, _ := json.Marshal(map[string]string{"command": line})
	return ToolCall{ID: "c", Name: ToolBash, Args: args}
}

// defaultAsk is the ask of Claude Code's default mode: an allow ends it.
var defaultAsk = []GateNote{{By: "rules:claude-code", Decision: DecisionAsk, Reason: "no Claude Code rule allows it", AllowEnds: true}}

// TestCommandPrefixIsNameAndFirstNonFlagWord: the prefix is the command's
// words up to its first non-flag word, one per simple command the splitter
// finds, and none at all for a line an approval cannot be sure about.
func TestCommandPrefixIsNameAndFirstNonFlagWord(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	for line, want := range map[string][]string{
		"go test ./...":               {"go test"},
		"go test -run X ./...":        {"go test"},
		"git push origin main":        {"git push"},
		"ls -la":                      {"ls -la"},
		"ls":                          {"ls"},
		"go test ./... && go vet .":   {"go test", "go vet"},
		"go test; rm -rf build":       {"go test", "rm -rf build"},
		"git log $(git push origin)":  {"git push", "git log"}, // the command inside $( ) too
		"go test; rm -rf ~":           nil,                     // ~ is not a plain word: no prefix at all
		"sudo go test ./...":          nil,                     // found inside a wrapper
		"GOFLAGS=-x go test ./...":    nil,                     // given variables
		"F=test; go $F":               nil,
		"eval 'go test'":              nil, // the splitter cannot follow it
		"go \"$(cat name)\"":          nil,
		"bash -c 'go test'":           nil,
		"go test ./... | tee 'a:b'":   nil, // a word the rule syntax cannot hold
		"go test ./... | tee log.txt": {"go test", "tee log.txt"},
	} {
		q := newSessionApprovals(cwd, nil, splitForApproval).offer(bashCall(line), defaultAsk)
		if !slices.Equal(q.Prefixes, want) {
			t.Errorf("%q: offers %q, want %q", line, q.Prefixes, want)
		}
	}
}

// TestDontAskAgainIsOfferedOnlyWhereAnAllowEndsTheAsk: an ask rule, a
// validator, the splitter or a hook asked: nothing but yes or no.
func TestDontAskAgainIsOfferedOnlyWhereAnAllowEndsTheAsk(t *testing.T) {
	t.Parallel()
	s := newSessionApprovals(t.TempDir(), nil, splitForApproval)
	for _, asks := range [][]GateNote{
		{{By: "rules:claude-code", Decision: DecisionAsk, Reason: "ask Bash(go test:*)"}},
		{{By: "validator:guard", Decision: DecisionAsk}},
		{{By: "rules:runok", Decision: DecisionAsk}},
		{defaultAsk[0], {By: "hooks", Decision: DecisionAsk}},
		nil,
	} {
		if o := s.offer(bashCall("go test ./..."), asks); o.any() {
			t.Errorf("asks %v: offered %v", asks, o)
		}
		s.remember(approvalOffer{Prefixes: []string{"go test"}})
		if what, ok := s.covers(bashCall("go test ./..."), asks); ok {
			t.Errorf("asks %v: an earlier yes (%s) ended an ask an allow cannot end", asks, what)
		}
	}
}

// TestSessionPrefixCoversOnlyWhatItSays: after "don't ask again for `go
// test *`", each part of a line must be under an allowed prefix; a model
// cannot widen it with ;, &&, $( ), a wrapper, variables or a longer word.
func TestSessionPrefixCoversOnlyWhatItSays(t *testing.T) {
	t.Parallel()
	s := newSessionApprovals(t.TempDir(), nil, splitForApproval)
	s.remember(approvalOffer{Prefixes: []string{"go test"}})
	for line, want := range map[string]bool{
		"go test ./...":              true,
		"go test":                    true,
		"go  test -run 'X Y' ./...":  true,
		"go test ./... && go test .": true,
		"go test; rm -rf ~":          false,
		"go test && rm x":            false,
		"go test $(rm x)":            false,
		"go testing":                 false,
		"go vet ./...":               false,
		"go -C /tmp test":            false,
		"sudo go test":               false,
		"GOFLAGS=-exec=x go test":    false,
		"eval go test":               false,
		"/usr/bin/go test":           false,
		"go test\nrm x":              false,
		// A redirection that writes a file or opens a socket is not part
		// of what was approved; /dev/null and 2>&1 are.
		"go test > ~/.bashrc":             false,
		"go test 2>.git/hooks/pre-commit": false,
		"go test >&/dev/tcp/127.0.0.1/9":  false,
		"go test </dev/tcp/127.0.0.1/9":   false,
		"go test >out.txt":                false,
		"go test ./... 2>&1 >/dev/null":   true,
		"go test ./... &>/dev/null":       true,
		"cat <<EOF\nx\nEOF\ngo test":      false, // cat is no go test
		"go test <<EOF\nx\nEOF":           true,
		"cd .. && go test":                false, // not in the directory the approval is for
		"cd /; go test":                   false,
		"go test \"$\\\n(rm x)\"":         false,
	} {
		if _, got := s.covers(bashCall(line), defaultAsk); got != want {
			t.Errorf("%q: covered %v, want %v", line, got, want)
		}
	}
}

// The attacker is a model that runs an approved command elsewhere: the
// approvals are for the working directory, and cd .. leaves it.
func TestCommandApprovalsHoldInsideTheirDirectory(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, "sub"), 0o755)
	s := newSessionApprovals(cwd, nil, splitForApproval)
	s.remember(approvalOffer{Prefixes: []string{"cd", "rm -rf build/"}})
	for line, want := range map[string]bool{
		"rm -rf build/":                   true,
		"cd sub && rm -rf build/":         true,
		"cd .. && rm -rf build/":          false,
		"cd /; rm -rf build/":             false,
		"cd " + cwd + " && rm -rf build/": true,
	} {
		if _, got := s.covers(bashCall(line), defaultAsk); got != want {
			t.Errorf("%q: covered %v, want %v", line, got, want)
		}
	}
}

// TestEditApprovalsLastTheSessionInsideTheDirectory: "don't ask again"
// for edits covers edit and write inside the working directory, not a path
// outside it or one a link takes outside.
func TestEditApprovalsLastTheSessionInsideTheDirectory(t *testing.T) {
	t.Parallel()
	cwd, outside := t.TempDir(), t.TempDir()
	os.Symlink(outside, filepath.Join(cwd, "out"))
	s := newSessionApprovals(cwd, nil, splitForApproval)
	call := func(tool, path string) ToolCall {
		args, _ := json.Marshal(map[string]any{"path": path, "content": "x", "oldText": "a", "newText": "b"})
		return ToolCall{Name: tool, Args: args}
	}
	if o := s.offer(call(ToolEdit, "a.go"), defaultAsk); !o.Edits {
		t.Fatalf("no edit offer: %+v", o)
	}
	if o := s.offer(call(ToolEdit, "a.go"), []GateNote{{By: "rules:claude-code", Decision: DecisionAsk}}); o.any() {
		t.Errorf("an ask rule's edit offered %+v", o)
	}
	s.remember(approvalOffer{Edits: true})
	for path, want := range map[string]bool{
		"a.go": true, "new/dir/b.go": true, filepath.Join(cwd, "c.go"): true,
		"../x.go": false, filepath.Join(outside, "d.go"): false, "out/e.go": false, "out": false,
	} {
		for _, tool := range []string{ToolEdit, ToolWrite} {
			if _, got := s.covers(call(tool, path), defaultAsk); got != want {
				t.Errorf("%s %s: covered %v, want %v", tool, path, got, want)
			}
		}
	}
	if _, ok := s.covers(bashCall("ls"), defaultAsk); ok {
		t.Error("edits approved a command")
	}
}

// "Don't ask again for file edits in this directory" never covers what
// programs outside zot read or run (issue 34 §5): git's directory, .zot/,
// .claude/, .mcp.json, the rule files, what a validator runs — not as an
// offer, not as an earlier answer.
func TestEditApprovalsNeverCoverGuardedPaths(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, ".git", "hooks"), 0o755)
	os.WriteFile(filepath.Join(cwd, "guard.sh"), []byte("#!/bin/sh\n"), 0o755)
	real, _ := filepath.EvalSymlinks(cwd)
	s := newSessionApprovals(cwd, nil, splitForApproval)
	s.guarded = guardedBy(projectGuarded(cwd, []trustEntry{{Files: []string{filepath.Join(real, "guard.sh")}}}, nil))
	call := func(path string) ToolCall {
		args, _ := json.Marshal(map[string]any{"path": path, "content": "x"})
		return ToolCall{Name: ToolWrite, Args: args}
	}
	s.remember(approvalOffer{Edits: true})
	for path, want := range map[string]bool{
		"src/a.go": true, ".gitignore": true,
		".git/config": false, ".git/hooks/pre-commit": false, ".git/commondir": false,
		".zot/validators.json": false, ".claude/settings.local.json": false, ".mcp.json": false,
		"runok.yml": false, "runok.local.yaml": false, "guard.sh": false,
	} {
		if _, got := s.covers(call(path), defaultAsk); got != want {
			t.Errorf("%s: covered %v, want %v", path, got, want)
		}
		if o := s.offer(call(path), defaultAsk); o.Edits != want {
			t.Errorf("%s: offered %+v", path, o)
		}
	}
}

// TestSavedApprovalMatchesExactlyTheWordsShown (issue 34 §11): "don't
// ask again" for `rm -rf build/ *`, saved, allows in a later run what the
// dialog showed, word for word — not rm -rf build/../../../home, which a
// Claude Code rule Bash(rm -rf build/:*) would — and is kept in the
// user's own file, so the project and its trust do not change.
func TestSavedApprovalMatchesExactlyTheWordsShown(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	path := savedApprovalsPath(home)
	first := newSessionApprovals(dir, nil, splitForApproval).withSaved(path, nil)
	o := first.offer(bashCall("rm -rf build/"), defaultAsk)
	if o.Describe() != "`rm -rf build/ *`" {
		t.Fatalf("offered %q", o.Describe())
	}
	for range 2 {
		if where, err := first.Save(o); err != nil || where != path {
			t.Fatalf("save: %q, %v", where, err)
		}
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("%s: %v, want mode 0600", path, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the project changed: %v", entries)
	}
	prefixes, problems := readSavedApprovals(path, dir)
	if len(problems) > 0 || len(prefixes) != 1 || !slices.Equal(prefixes[0], []string{"rm", "-rf", "build/"}) {
		t.Fatalf("read back %q, %v", prefixes, problems)
	}
	later := newSessionApprovals(dir, nil, splitForApproval).withSaved(path, prefixes)
	for line, want := range map[string]bool{
		"rm -rf build/":                true,
		"rm -rf build/ dist":           true,
		"rm -rf build/../../../home":   false,
		"rm -rf build/..":              false,
		"rm -rf build":                 false,
		`rm -rf "build/ /home"`:        false,
		"rm -rf build/$(echo ../..)":   false,
		"rm -rf build/ && rm -rf /":    false,
		"rm -r -f build/":              false,
		"cd .. && rm -rf build/":       false,
		"sudo rm -rf build/":           false,
		"HOME=/ rm -rf build/":         false,
		"rm -rf build/ $(rm -rf /tmp)": false,
	} {
		what, got := later.covers(bashCall(line), defaultAsk)
		if got != want {
			t.Errorf("%q: covered %v (%s), want %v", line, got, what, want)
		}
		if got && what != "approved earlier (`rm -rf build/ *`; saved for this directory)" {
			t.Errorf("%q: covered by %q", line, what)
		}
	}
	if _, ok := newSessionApprovals(t.TempDir(), nil, splitForApproval).withSaved(path, nil).covers(bashCall("rm -rf build/"), defaultAsk); ok {
		t.Error("another directory's session is covered")
	}
	other, _ := readSavedApprovals(path, t.TempDir())
	if len(other) != 0 {
		t.Errorf("another directory reads %q", other)
	}
	// A file zot cannot read is left as it is, and nothing of it applies.
	bad := filepath.Join(t.TempDir(), "approvals.json")
	os.WriteFile(bad, []byte(`{"projects": [`), 0o600)
	if _, err := newSessionApprovals(dir, nil, splitForApproval).withSaved(bad, nil).Save(o); err == nil {
		t.Error("a broken file was overwritten")
	}
	if data, _ := os.ReadFile(bad); string(data) != `{"projects": [` {
		t.Errorf("broken file now %q", data)
	}
	if got, problems := readSavedApprovals(bad, dir); got != nil || len(problems) != 1 {
		t.Errorf("a broken file gave %q, %q", got, problems)
	}
	os.WriteFile(bad, []byte(`{"projects": {"`+savedApprovalsKey(dir)+`": {"commands": [["go", "test"], ["rm", "$(x)"], []]}}}`), 0o600)
	if got, problems := readSavedApprovals(bad, dir); len(got) != 1 || len(problems) != 2 {
		t.Errorf("entries zot would not have offered: kept %q, problems %q", got, problems)
	}
}

// Users' own Claude Code rules keep Claude Code's meaning: a prefix of
// characters after a non-word character.
func TestClaudeCodePrefixRulesKeepTheirMeaning(t *testing.T) {
	t.Parallel()
	home, dir := t.TempDir(), t.TempDir()
	writeJSONFile(t, filepath.Join(home, ".claude", "settings.json"), perms("allow", []string{"Bash(rm -rf build/:*)"}))
	rules := LoadPermissionRules(PermissionSources{Cwd: dir, UserHome: home})
	for line, want := range map[string]GateDecision{"rm -rf build/x": DecisionAllow, "rm -rf build/../x": DecisionAllow, "rm -rf buildx": DecisionAsk} {
		if r := CheckCommandLineRules(context.Background(), nil, rules, line, dir); r.Decision != want {
			t.Errorf("%s: %s, want %s", line, r.Decision, want)
		}
	}
}

// TestApprovalBrokerFailsClosed: a client that answers an unknown id, an
// unknown decision, twice, or never, or a run that ends first: the call
// is refused; only a well-formed allow or always for a waiting question
// lets it run.
func TestApprovalBrokerFailsClosed(t *testing.T) {
	t.Parallel()
	sent := make(chan approvalRequestEvent, 8)
	b := newApprovalBroker(time.Hour, func(e approvalRequestEvent) { sent <- e })
	s := newSessionApprovals(t.TempDir(), nil, splitForApproval)
	confirm := s.Confirm(b.ask)
	type result struct {
		ok bool
		by string
	}
	run := func(ctx context.Context, line string) chan result {
		out := make(chan result, 1)
		go func() {
			ok, by := confirm(ctx, bashCall(line), defaultAsk)
			out <- result{ok, by}
		}()
		return out
	}

	done := run(context.Background(), "go test ./...")
	e := <-sent
	if e.Type != EventApprovalRequest || e.Tool != ToolBash || e.Rule != "rules:claude-code" || e.Always != "`go test *`" || !strings.Contains(string(e.Args), "go test ./...") {
		t.Errorf("request %+v", e)
	}
	if err := b.answer("approval-999", approvalAnswer{Decision: ApprovalAllow}); err == nil {
		t.Error("an unknown approval_id was taken")
	}
	if err := b.answer(e.ApprovalID, approvalAnswer{Decision: "ALLOW"}); err == nil || !strings.Contains(err.Error(), "unknown decision") {
		t.Errorf("unknown decision: %v", err)
	}
	if r := <-done; r.ok {
		t.Errorf("an unknown decision allowed the call (%s)", r.by)
	}
	if err := b.answer(e.ApprovalID, approvalAnswer{Decision: ApprovalAllow}); err == nil {
		t.Error("a second answer was taken")
	}

	done = run(context.Background(), "go test ./...")
	e = <-sent
	b.answer(e.ApprovalID, approvalAnswer{Decision: ApprovalDeny, Message: "use go vet first"})
	if r := <-done; r.ok || !strings.Contains(r.by, "use go vet first") {
		t.Errorf("deny with a message: %+v", r)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done = run(ctx, "go test ./...")
	e = <-sent
	cancel()
	if r := <-done; r.ok {
		t.Error("a run that ended was allowed")
	}
	if err := b.answer(e.ApprovalID, approvalAnswer{Decision: ApprovalAllow}); err == nil {
		t.Error("an answer after the run ended was taken")
	}

	quick := newApprovalBroker(time.Millisecond, func(approvalRequestEvent) {})
	if ok, by := s.Confirm(quick.ask)(context.Background(), bashCall("go test"), defaultAsk); ok || !strings.Contains(by, "did not answer within") {
		t.Errorf("silence: %v %s", ok, by)
	}

	// always: this call and the next go test run, a different line asks.
	done = run(context.Background(), "go test ./...")
	b.answer((<-sent).ApprovalID, approvalAnswer{Decision: ApprovalAlways})
	if r := <-done; !r.ok {
		t.Fatalf("always refused: %s", r.by)
	}
	if r := <-run(context.Background(), "go test -run X ."); !r.ok || !strings.Contains(r.by, "earlier this session") {
		t.Errorf("the next go test: %+v", r)
	}
	done = run(context.Background(), "go test; rm -rf build")
	e = <-sent
	if e.Always != "`go test *`, `rm -rf build *`" {
		t.Errorf("compound line offers %q", e.Always)
	}
	b.answer(e.ApprovalID, approvalAnswer{Decision: ApprovalDeny})
	<-done
}
