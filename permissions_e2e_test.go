package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The real binary with the rules users already wrote: Claude Code's
// ~/.claude/settings.json and runok.yml. The attacker is the model: each
// test has it call a tool the rules forbid and checks that the tool did
// not run and that the model was told why.

// toolResultSent runs zot -p with a model that calls one tool and then
// answers; it returns the text zot sent back as the tool's result.
func toolResultSent(t *testing.T, z *zotRun, tool string, args obj, flags ...string) (result, stderr string) {
	t.Helper()
	srv := startReplay(t, toolStep("c1", tool, args), replayStep{Events: anthropicEvents(gen{Text: "done"})})
	_, stderr, code := z.run(append(append(anthropicFlags(srv), flags...), "-p", "go")...)
	if code != 0 {
		t.Fatalf("zot -p: exit %d\n%s", code, stderr)
	}
	reqs := srv.Requests()
	if len(reqs) < 2 {
		t.Fatalf("the model was asked %d times\n%s", len(reqs), stderr)
	}
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &body); err != nil || len(body.Messages) == 0 {
		t.Fatalf("request: %v", err)
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Content json.RawMessage `json:"content"`
	}
	json.Unmarshal(body.Messages[len(body.Messages)-1].Content, &blocks)
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			return s, stderr
		}
		var parts []struct{ Text string }
		json.Unmarshal(b.Content, &parts)
		for _, p := range parts {
			result += p.Text
		}
		return result, stderr
	}
	t.Fatalf("no tool_result in %s", reqs[1].Body)
	return "", ""
}

func userSettings(t *testing.T, z *zotRun, v any) {
	t.Helper()
	writeJSONFile(t, filepath.Join(z.home, ".claude", "settings.json"), v)
}

func TestClaudeDenyStopsABashCommandAlsoAsTheSecondPart(t *testing.T) {
	t.Parallel()
	for _, line := range []string{"rm keep.txt", "echo a && rm keep.txt", "echo a; sudo rm keep.txt", "echo $(rm keep.txt)"} {
		t.Run(line, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			userSettings(t, z, perms("deny", []string{"Bash(rm:*)"}, "allow", []string{"Bash(echo:*)", "Bash(sudo:*)"}))
			os.WriteFile(filepath.Join(z.cwd, "keep.txt"), []byte("x"), 0o644)
			result, _ := toolResultSent(t, z, "bash", obj{"command": line})
			if _, err := os.Stat(filepath.Join(z.cwd, "keep.txt")); err != nil {
				t.Errorf("the file is gone: %v", err)
			}
			if !strings.Contains(result, "not run: denied by claude-code rule deny Bash(rm:*) ("+filepath.Join(z.home, ".claude", "settings.json")+")") {
				t.Errorf("the model was told:\n%s", result)
			}
		})
	}
}

func TestClaudeReadDenyStopsTheReadTool(t *testing.T) {
	t.Parallel()
	for _, path := range []string{".env", "sub/../.env", "innocent.txt"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			userSettings(t, z, perms("deny", []string{"Read(./.env)"}))
			os.WriteFile(filepath.Join(z.cwd, ".env"), []byte("API_KEY=sk-very-secret"), 0o600)
			os.Symlink(".env", filepath.Join(z.cwd, "innocent.txt"))
			os.Mkdir(filepath.Join(z.cwd, "sub"), 0o755)
			result, _ := toolResultSent(t, z, "read", obj{"path": path})
			if strings.Contains(result, "sk-very-secret") || !strings.Contains(result, "deny Read(./.env)") {
				t.Errorf("the model got:\n%s", result)
			}
		})
	}
}

func TestClaudeEditDenyStopsWriteAndEdit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tool string
		args obj
	}{
		{"write", obj{"path": "protected/new.txt", "content": "pwned"}},
		{"write", obj{"path": "protected/old.txt", "content": "pwned"}},
		{"edit", obj{"path": "protected/old.txt", "edits": []any{obj{"oldText": "original", "newText": "pwned"}}}},
		{"write", obj{"path": "/ABS/protected/old.txt", "content": "pwned"}},
	} {
		t.Run(tc.tool+" "+tc.args["path"].(string), func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			userSettings(t, z, perms("deny", []string{"Edit(./protected/**)"}, "allow", []string{"Edit"}))
			os.MkdirAll(filepath.Join(z.cwd, "protected"), 0o755)
			os.WriteFile(filepath.Join(z.cwd, "protected", "old.txt"), []byte("original"), 0o644)
			args := obj{}
			for k, v := range tc.args {
				args[k] = v
			}
			args["path"] = strings.Replace(args["path"].(string), "/ABS", z.cwd, 1)
			result, _ := toolResultSent(t, z, tc.tool, args)
			if !strings.Contains(result, "deny Edit(./protected/**)") {
				t.Errorf("the model got:\n%s", result)
			}
			if b, _ := os.ReadFile(filepath.Join(z.cwd, "protected", "old.txt")); string(b) != "original" {
				t.Errorf("old.txt is now %q", b)
			}
			if _, err := os.Stat(filepath.Join(z.cwd, "protected", "new.txt")); err == nil {
				t.Error("new.txt was written")
			}
		})
	}
}

func TestClaudeAskRuleIsRefusedInPrintModeWithItsReason(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	userSettings(t, z, perms("ask", []string{"Bash(touch:*)"}, "allow", []string{"Bash"}))
	result, _ := toolResultSent(t, z, "bash", obj{"command": "touch made.txt"})
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil {
		t.Error("the command ran")
	}
	if !strings.Contains(result, "not run: confirmation required (rules:claude-code: claude-code rule ask Bash(touch:*)") ||
		!strings.Contains(result, "declined by non-interactive mode (pass --approve-asks to allow)") {
		t.Errorf("the model was told:\n%s", result)
	}
	// --approve-asks answers yes.
	toolResultSent(t, z, "bash", obj{"command": "touch made.txt"}, "--approve-asks")
	if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err != nil {
		t.Errorf("--approve-asks: the command did not run: %v", err)
	}
}

// The attacker is a repository: its .claude/settings.json and runok.yml
// allow what it likes. Until the user trusts the directory nothing they
// allow runs without asking; after zot trust it does.
func TestProjectLooseningRulesDoNothingUntilTrusted(t *testing.T) {
	t.Parallel()
	for name, lay := range map[string]func(dir string){
		"claude": func(dir string) {
			writeJSONFile(t, filepath.Join(dir, ".claude", "settings.json"), perms("allow", []string{"Bash(touch:*)"}))
		},
		"runok": func(dir string) {
			os.WriteFile(filepath.Join(dir, "runok.yml"), []byte("rules:\n  - allow: 'touch *'\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			lay(z.cwd)
			result, stderr := toolResultSent(t, z, "bash", obj{"command": "touch made.txt"})
			if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err == nil || !strings.Contains(result, "confirmation required") {
				t.Fatalf("untrusted: the project's allow applied (%v):\n%s", err, result)
			}
			if !strings.Contains(stderr, "permission ") || !strings.Contains(stderr, "zot trust") {
				t.Errorf("nothing said what waits for trust:\n%s", stderr)
			}
			out, errOut, code := z.run("trust", "--yes")
			if code != 0 || !strings.Contains(out+errOut, "touch") {
				t.Fatalf("zot trust: exit %d\n%s%s", code, out, errOut)
			}
			result, _ = toolResultSent(t, z, "bash", obj{"command": "touch made.txt"})
			if _, err := os.Stat(filepath.Join(z.cwd, "made.txt")); err != nil {
				t.Errorf("trusted: the command did not run:\n%s", result)
			}
		})
	}
}

func TestRulesThatCanNeverMatchAreReportedAtStart(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	userSettings(t, z, perms("deny", []string{"bash(rm:*)", "Write(./secrets/**)"}, "allow", []string{"Bash"}))
	_, stderr := toolResultSent(t, z, "bash", obj{"command": "true"})
	for _, want := range []string{`deny bash(rm:*): can never match`, `deny Write(./secrets/**): can never match`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	out, _, code := z.run("validate", "--check")
	if code != exitFailure || !strings.Contains(out, "never: ") || !strings.Contains(out, filepath.Join(z.home, ".claude", "settings.json")) {
		t.Errorf("zot validate --check: exit %d\n%s", code, out)
	}
}

// runok's documentation (runokDocRows) gives runok's decisions through
// zot validate, the real binary: exit 0 allow, 1 deny, 3 ask. Every row
// is checked through the gate's own check in TestRunokDocumentationTable;
// here the binary answers the first row of each decision of each
// configuration (72 starts of zot instead of 207).
func TestRunokDocumentationExamplesThroughZotValidate(t *testing.T) {
	t.Parallel()
	exit := map[string]int{"allow": 0, "deny": 1, "ask": 3}
	for name, config := range runokDocConfigs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			dir := filepath.Join(z.home, ".config", "runok")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "runok.yml"), []byte(config), 0o644)
			asked := map[string]bool{}
			for _, row := range runokDocRows {
				if row.config != name || asked[row.want] {
					continue
				}
				asked[row.want] = true
				out, stderr, code := z.run("validate", "--", row.line)
				if code != exit[row.want] {
					t.Errorf("%q: exit %d, want %d (%s)\n%s%s", row.line, code, exit[row.want], row.want, out, stderr)
				}
				if !strings.Contains(out, "decision: "+row.want) {
					t.Errorf("%q: no decision line:\n%s", row.line, out)
				}
			}
		})
	}
}

// The quick start as the page writes it extends a remote preset, which zot
// never fetches: its deny and ask rules decide, and what the preset would
// allow is asked, saying so.
func TestRunokQuickStartAsWritten(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	dir := filepath.Join(z.home, ".config", "runok")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "runok.yml"), []byte(`
# ~/.config/runok/runok.yml
extends:
  - 'github:fohte/runok-presets/base@v1'

rules:
  # Ask before pushing
  - ask: 'git push *'

  # Never allow force push
  - deny: 'git push -f|--force *'
    message: 'Force push is not allowed.'
    fix_suggestion: 'git push --force-with-lease'

defaults:
  action: ask
`), 0o644)
	for line, want := range map[string]int{"git status": exitAsk, "git push --force origin main": exitFailure, "git push origin main": exitAsk} {
		out, _, code := z.run("validate", "--", line)
		if code != want {
			t.Errorf("%q: exit %d, want %d\n%s", line, code, want, out)
		}
	}
	out, _, _ := z.run("validate", "--", "git push --force origin main")
	for _, want := range []string{
		fmt.Sprintf("runok: deny — rule deny: 'git push -f|--force *' (%s:11)", filepath.Join(dir, "runok.yml")),
		"Force push is not allowed.",
		"suggested fix: git push --force-with-lease",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("zot validate lacks %q:\n%s", want, out)
		}
	}
	out, _, code := z.run("validate", "--check")
	if code != exitFailure || !strings.Contains(out, "github:fohte/runok-presets/base@v1") || !strings.Contains(out, "zot never fetches") {
		t.Errorf("zot validate --check: exit %d\n%s", code, out)
	}
}

// Managed settings cannot be loosened by the user's own file; the test
// hook ZOT_TEST_MANAGED_SETTINGS_DIR stands for /etc/claude-code.
func TestManagedSettingsThroughTheBinary(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	managed := filepath.Join(t.TempDir(), "claude-code")
	writeJSONFile(t, filepath.Join(managed, "managed-settings.json"), perms("deny", []string{"Bash(curl:*)"}))
	writeJSONFile(t, filepath.Join(managed, "managed-settings.d", "50-ask.json"), perms("ask", []string{"Bash(wget:*)"}))
	userSettings(t, z, perms("allow", []string{"Bash(curl:*)", "Bash(wget:*)"}))
	z.env = append(z.env, claudeManagedDirEnv+"="+managed)
	for line, want := range map[string]int{"curl https://x": exitFailure, "wget https://x": exitAsk} {
		out, _, code := z.run("validate", "--", line)
		if code != want || !strings.Contains(out, managed) {
			t.Errorf("%q: exit %d, want %d\n%s", line, code, want, out)
		}
	}
	out, _, code := z.run("validate", "--check", "--json")
	var check struct {
		RuleFiles []string `json:"rule_files"`
		OK        bool     `json:"ok"`
	}
	if err := json.Unmarshal([]byte(out), &check); err != nil || code != 0 || !check.OK || len(check.RuleFiles) != 3 {
		t.Errorf("zot validate --check --json: exit %d, %v\n%s", code, err, out)
	}
}

// issue34Forms are issue 34's eight ways to run git push past allow
// git, deny git push: each word a rule would see is not the word that runs.
var issue34Forms = []string{
	"git push${NOPE} origin main",
	"git ${x:-push} origin main",
	"git pu$(echo)sh origin main",
	"git $(echo push)",
	"git `echo push`",
	"echo push | xargs git",
	"printf 'push\\n' | xargs -I{} git {}",
	"bash -c 'git $1' x push",
}

// issue34Rules writes allow git (and the helpers the forms use), deny git
// push, as the user's own rules in one dialect.
func issue34Rules(t *testing.T, z *zotRun, dialect string) {
	t.Helper()
	helpers := []string{"git", "echo", "printf", "xargs", "bash"}
	if dialect == claudeCodeSource {
		var allow []string
		for _, h := range helpers {
			allow = append(allow, "Bash("+h+":*)")
		}
		userSettings(t, z, perms("allow", allow, "deny", []string{"Bash(git push:*)"}))
		return
	}
	yml := "rules:\n"
	for _, h := range helpers {
		yml += "  - allow: '" + h + " *'\n"
	}
	yml += "  - deny: 'git push *'\n"
	dir := filepath.Join(z.home, ".config", "runok")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "runok.yml"), []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestIssue34FormsAskThroughZotValidate(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{claudeCodeSource, "runok"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			issue34Rules(t, z, dialect)
			for _, line := range issue34Forms {
				stdout, stderr, code := z.run("validate", "--json", "--", line)
				var r ValidationReport
				if err := json.Unmarshal([]byte(stdout), &r); err != nil {
					t.Fatalf("%q: %v\n%s%s", line, err, stdout, stderr)
				}
				var why []string
				for _, a := range r.Rules {
					if a.Status == DecisionAsk {
						why = append(why, a.Rule+" "+a.Note)
					}
				}
				if code != exitAsk || r.Decision != DecisionAsk || !strings.Contains(strings.Join(why, "\n"), "git push") {
					t.Errorf("%q: exit %d, decision %s, asks %q; want an ask naming the git push rule\n%s", line, code, r.Decision, why, stdout)
				}
			}
			for line, want := range map[string]int{"git push origin main": exitFailure, "git push $x": exitFailure, `git status "$(echo x)"`: exitOK, "git log $x": exitOK} {
				if _, _, code := z.run("validate", "--", line); code != want {
					t.Errorf("%q: exit %d, want %d", line, code, want)
				}
			}
		})
	}
}

// TestIssue34FormsDoNotRunThroughTheGate has the model send the eight
// forms to a real zot -p, with a git on PATH that records what it ran:
// only the control call, git status, may reach it.
func TestIssue34FormsDoNotRunThroughTheGate(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{claudeCodeSource, "runok"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			issue34Rules(t, z, dialect)
			bin, ran := t.TempDir(), filepath.Join(t.TempDir(), "git-ran")
			shim := "#!/bin/sh\necho \"$*\" >> " + shellQuote(ran) + "\n"
			if err := os.WriteFile(filepath.Join(bin, "git"), []byte(shim), 0o755); err != nil {
				t.Fatal(err)
			}
			z.env = append(z.env, "PATH="+bin+":"+os.Getenv("PATH"))
			var steps []replayStep
			for i, line := range append(slices.Clone(issue34Forms), "git status") {
				steps = append(steps, toolStep(fmt.Sprintf("t%d", i), "bash", obj{"command": line}))
			}
			steps = append(steps, replayStep{Events: anthropicEvents(gen{Text: "done"})})
			srv := startReplay(t, steps...)
			stdout, stderr, code := z.run(append(anthropicFlags(srv), "-p", "push it")...)
			if code != 0 || stdout != "done\n" {
				t.Fatalf("exit %d stdout %q stderr %s", code, stdout, stderr)
			}
			got, err := os.ReadFile(ran)
			if err != nil || string(got) != "status\n" {
				t.Errorf("git ran %q (%v), want only the control call, status", got, err)
			}
			lines := auditLines(t, z.home)
			if len(lines) != len(issue34Forms)+1 {
				t.Fatalf("%d audit lines for %d calls", len(lines), len(issue34Forms)+1)
			}
			for i, line := range issue34Forms {
				if lines[i].Outcome != "blocked" {
					t.Errorf("%q: outcome %s, want blocked (%+v)", line, lines[i].Outcome, lines[i].Decisions)
				}
			}
		})
	}
}

// The attacker is a repository that sets a default mode or runok default
// that asks, where the user's own denies (issue 34 §4). In CI, with
// --approve-asks, an ask runs: the project's setting must not turn the
// user's deny into one.
func TestProjectCannotTurnTheUsersDenyIntoAnAsk(t *testing.T) {
	t.Parallel()
	for name, setUp := range map[string]func(z *zotRun){
		"claude defaultMode": func(z *zotRun) {
			userSettings(t, z, perms("defaultMode", "dontAsk", "allow", []string{"Bash(echo:*)"}))
			writeJSONFile(t, filepath.Join(z.cwd, ".claude", "settings.local.json"), perms("defaultMode", "default"))
		},
		"runok defaults.action": func(z *zotRun) {
			cfg := t.TempDir()
			z.env = append(z.env, "XDG_CONFIG_HOME="+cfg)
			os.MkdirAll(filepath.Join(cfg, "runok"), 0o755)
			os.WriteFile(filepath.Join(cfg, "runok", "runok.yml"), []byte("defaults:\n  action: deny\nrules:\n  - allow: 'echo *'\n"), 0o644)
			os.WriteFile(filepath.Join(z.cwd, "runok.yml"), []byte("defaults:\n  action: ask\n"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			setUp(z)
			result, stderr := toolResultSent(t, z, "bash", obj{"command": "touch pwned"}, "--approve-asks")
			if _, err := os.Stat(filepath.Join(z.cwd, "pwned")); err == nil {
				t.Fatalf("the command the user's default denies ran:\n%s\n%s", result, stderr)
			}
			if !strings.Contains(result, "not run: denied") {
				t.Errorf("the model was told:\n%s", result)
			}
		})
	}
}

// The attacker is the model under the user's acceptEdits (issue 34 §5): it
// writes .git/config with core.fsmonitor, then runs `git status`, which
// the user's rules allow — and which would run the planted command. The
// write is no edit acceptEdits accepts: it asks, and with nobody to ask
// it is refused.
func TestAcceptEditsDoesNotLetTheModelPlantGitConfig(t *testing.T) {
	t.Parallel()
	needGit(t)
	z := newZotRun(t)
	escaped := filepath.Join(t.TempDir(), "escaped")
	gitIn(t, z.cwd, "init", "-q")
	userSettings(t, z, perms("defaultMode", "acceptEdits", "allow", []string{"Bash(git status)"}))
	srv := startReplay(t,
		toolStep("w1", "write", obj{"path": ".git/config", "content": "[core]\n\tfsmonitor = touch " + escaped + "; false\n"}),
		toolStep("w2", "write", obj{"path": "notes.txt", "content": "accepted\n"}),
		toolStep("b1", "bash", obj{"command": "git status"}),
		replayStep{Events: anthropicEvents(gen{Text: "done"})})
	if _, stderr, code := z.run(append(anthropicFlags(srv), "-p", "go")...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(escaped); err == nil {
		t.Fatal("git status ran the command the model planted in .git/config")
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, ".git", "config")); strings.Contains(string(b), "fsmonitor") {
		t.Errorf(".git/config was written:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(z.cwd, "notes.txt")); string(b) != "accepted\n" {
		t.Errorf("acceptEdits no longer accepts an ordinary edit: %q", b)
	}
	_, first := lastToolResult(t, srv.Requests()[1])
	if !strings.Contains(first, "never of") || !strings.Contains(first, ".git") {
		t.Errorf("the model was told:\n%s", first)
	}
}

// needGit skips, loudly, a test that needs git.
func needGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		skipMissing(t, "TEST SKIPPED: git is not installed (.ci/run installs it); the sandbox's guard of what git runs is not tested")
	}
}

// gitIn runs git in dir as the user would, outside any sandbox, and
// returns its output.
func gitIn(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
