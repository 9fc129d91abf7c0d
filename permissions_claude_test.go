package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClaudeBashRuleGrammar(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec, text string
		want       bool
	}{
		{"npm run test:*", "npm run test", true},
		{"npm run test:*", "npm run test --watch", true},
		{"npm run test:*", "npm run testing", false},
		{"rm:*", "rm -rf x", true},
		{"rm:*", "rm", true},
		{"rm:*", "rmdir x", false},
		{"rm:*", "rm.sh x", false},
		{"curl http://site.com/:*", "curl http://site.com/x", true},
		{"curl http://site.com/:*", "curl https://site.com/x", false},
		{"git * main", "git checkout main", true},
		{"git * main", "git merge main", true},
		{"git * main", "git checkout dev", false},
		{"ls *", "ls -la", true},
		{"ls *", "ls", true},
		{"ls *", "lsof", false},
		{"ls*", "lsof", true},
		{"ls*", "ls -la", true},
		{"* --version", "node --version", true},
		{"* --version", "node --help", false},
		{"npm build", "npm build", true},
		{"npm build", "npm build:dev", false},
		{"npm build", "npm build x", false},
		{`echo \*`, "echo *", true},
		{`echo \*`, "echo x", false},
		{"go test *", "go test ./...", true},
	} {
		if got := claudeBashMatch(tc.spec, tc.text); got != tc.want {
			t.Errorf("Bash(%s) on %q: %v, want %v", tc.spec, tc.text, got, tc.want)
		}
	}
}

func TestClaudePathRulesAreGitignoreStyle(t *testing.T) {
	t.Parallel()
	c := &claudeRules{cwd: "/proj", home: "/home/u"}
	for _, tc := range []struct {
		spec, path string
		want       bool
	}{
		{"./.env", "/proj/.env", true},
		{"./.env", "/proj/sub/.env", true}, // no slash: any depth
		{".env", "/proj/.env", true},
		{"./.env", "/proj/.envrc", false},
		{"./.env", "/other/.env", false},
		{"*.env", "/proj/a.env", true},
		{"*.env", "/proj/x/b.env", true},
		{"/src/**/*.ts", "/proj/src/a.ts", true},
		{"/src/**/*.ts", "/proj/src/x/y.ts", true},
		{"/src/**/*.ts", "/proj/lib/a.ts", false},
		{"//etc/passwd", "/etc/passwd", true},
		{"//etc/passwd", "/proj/etc/passwd", false},
		{"/etc/passwd", "/etc/passwd", false}, // one slash: the project's etc/
		{"/etc/passwd", "/proj/etc/passwd", true},
		{"~/.ssh/**", "/home/u/.ssh/id_rsa", true},
		{"~/.ssh/**", "/proj/.ssh/id_rsa", false},
		{"./secrets/**", "/proj/secrets/a/b", true},
		{"docs/**", "/proj/docs/a.md", true},
		{"docs/**", "/proj/x/docs/a.md", false}, // a slash anchors it
		{"./build", "/proj/build/out.js", true}, // a directory covers its files
		{"./build/", "/proj/build/out.js", true},
		{"secret?.txt", "/proj/secret1.txt", true},
		{"[ab].txt", "/proj/c.txt", false},
		{"**", "/proj/anything", true},
	} {
		if got := c.pathMatch(tc.spec, tc.path); got != tc.want {
			t.Errorf("Read(%s) on %s: %v, want %v", tc.spec, tc.path, got, tc.want)
		}
	}
}

// claudeFixture lays out settings files and loads the rules.
type claudeFixture struct {
	t                    *testing.T
	home, cwd, managed   string
	approved             bool
	rules                *PermissionRules
	user, project, local map[string]any
	managedFiles         map[string]map[string]any
}

func newClaudeFixture(t *testing.T) *claudeFixture {
	dir := t.TempDir()
	f := &claudeFixture{t: t, home: filepath.Join(dir, "home"), cwd: filepath.Join(dir, "proj"), managed: filepath.Join(dir, "managed")}
	os.MkdirAll(f.home, 0o755)
	os.MkdirAll(f.cwd, 0o755)
	return f
}

func writeJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func perms(kv ...any) map[string]any {
	p := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return map[string]any{"permissions": p}
}

func (f *claudeFixture) load() *PermissionRules {
	if f.user != nil {
		writeJSONFile(f.t, filepath.Join(f.home, ".claude", "settings.json"), f.user)
	}
	if f.project != nil {
		writeJSONFile(f.t, filepath.Join(f.cwd, ".claude", "settings.json"), f.project)
	}
	if f.local != nil {
		writeJSONFile(f.t, filepath.Join(f.cwd, ".claude", "settings.local.json"), f.local)
	}
	for name, v := range f.managedFiles {
		writeJSONFile(f.t, filepath.Join(f.managed, name), v)
	}
	src := PermissionSources{Cwd: f.cwd, UserHome: f.home, ManagedDir: f.managed}
	if f.approved {
		src.Approved = func(PermissionLoosening) bool { return true }
	}
	f.rules = LoadPermissionRules(src)
	return f.rules
}

func (f *claudeFixture) bash(line string) ValidationReport {
	return CheckCommandLineRules(context.Background(), nil, f.rules, line, f.cwd)
}

func (f *claudeFixture) tool(name string, args map[string]any) (RuleAnswer, bool) {
	b, _ := json.Marshal(args)
	return f.rules.toolAnswer(ToolCall{Name: name, Args: b}, f.cwd)
}

func TestClaudeDenyThenAskThenAllowFirstMatchWins(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("allow", []string{"Bash(git *)", "Bash(aws s3 ls)"}, "ask", []string{"Bash(git push:*)"}, "deny", []string{"Bash(aws *)", "Bash(git push --force:*)"})
	f.load()
	for line, want := range map[string]string{
		"git status":                 "allow",
		"git push origin":            "ask",   // ask before allow, whatever the specificity
		"git push --force":           "deny",  // deny before ask
		"aws s3 ls":                  "deny",  // a broad deny has no exceptions
		"echo hi":                    "ask",   // no rule: the default mode asks
		"git status && echo hi":      "ask",   // every part must be allowed
		"git status && aws s3 ls":    "deny",  // a deny on any part
		"echo $(git push origin)":    "ask",   // found inside $( )
		"sudo git push --force":      "deny",  // and through sudo
		"F=--force; git push $F":     "deny",  // the value the line assigns
		"F=x; git status $F":         "allow", // the splitter knows F: git status x
		"read F; git status $F":      "ask",   // never allowed on its literal $F
		"git status \"$HOME\"":       "allow", // a variable the line does not assign
		"timeout 5 git push --force": "deny",
	} {
		if r := f.bash(line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s (%+v)", line, r.Decision, want, r.Rules)
		}
	}
}

func TestClaudeManagedSettingsCannotBeLoosened(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.managedFiles = map[string]map[string]any{
		"managed-settings.json":           perms("deny", []string{"Bash(curl:*)"}, "disableBypassPermissionsMode", "disable"),
		"managed-settings.d/10-ask.json":  perms("ask", []string{"Bash(wget:*)"}),
		"managed-settings.d/20-only.json": {"allowManagedPermissionRulesOnly": true},
	}
	f.user = perms("allow", []string{"Bash(curl:*)", "Bash(wget:*)", "Bash(ls)"}, "defaultMode", "bypassPermissions")
	f.load()
	for line, want := range map[string]string{
		"curl https://x": "deny",
		"wget https://x": "ask",
		"ls":             "ask", // the user's allow does not apply, nor bypassPermissions
	} {
		if r := f.bash(line); string(r.Decision) != want {
			t.Errorf("%q: %s, want %s (%+v)", line, r.Decision, want, r.Rules)
		}
	}
}

// The attacker is a repository: its settings allow what it likes. Until
// the directory is trusted, only its deny and ask rules apply.
func TestClaudeProjectAllowRulesWaitForTrust(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{false, true} {
		f := newClaudeFixture(t)
		f.approved = trusted
		f.project = perms("allow", []string{"Bash(curl:*)", "Edit"}, "deny", []string{"Bash(rm:*)"}, "defaultMode", "bypassPermissions")
		f.local = perms("ask", []string{"Bash(git push:*)"})
		rules := f.load()
		want := map[string]string{"curl x": "ask", "rm x": "deny", "git push": "ask", "ls": "ask"}
		if trusted {
			want["curl x"], want["ls"] = "allow", "allow" // bypassPermissions
		}
		for line, w := range want {
			if r := f.bash(line); string(r.Decision) != w {
				t.Errorf("trusted %v: %q: %s, want %s", trusted, line, r.Decision, w)
			}
		}
		// Both files are trust's (their content is what the user trusts);
		// only the first withholds anything.
		if len(rules.Loosening) != 2 || !rules.Loosening[0].Loosens || !strings.Contains(rules.Loosening[0].Summary, "allow Bash(curl:*)") || !strings.Contains(rules.Loosening[0].Summary, "defaultMode bypassPermissions") || rules.Loosening[1].Loosens {
			t.Errorf("loosening: %+v", rules.Loosening)
		}
	}
}

func TestClaudeReadAndEditRulesGateTheFileTools(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("deny", []string{"Read(./.env)", "Edit(./protected/**)"}, "allow", []string{"Read", "Edit(./src/**)"})
	f.load()
	os.WriteFile(filepath.Join(f.cwd, ".env"), []byte("SECRET=1"), 0o600)
	os.Symlink(".env", filepath.Join(f.cwd, "innocent.txt"))
	os.MkdirAll(filepath.Join(f.cwd, "src"), 0o755)
	os.Symlink("../protected", filepath.Join(f.cwd, "src", "p"))
	for _, tc := range []struct {
		tool, path, want string
	}{
		{"read", ".env", "deny"},
		{"read", filepath.Join(f.cwd, ".env"), "deny"},
		{"read", "innocent.txt", "deny"}, // a link to .env is .env
		{"read", "README.md", "allow"},
		{"write", "protected/a.txt", "deny"},
		{"edit", "protected/b.txt", "deny"},
		{"write", "src/ok.go", "allow"},
		{"write", "src/p/x.txt", "deny"}, // src/ allows, but the link leads to protected/
		{"write", "notes.txt", "ask"},    // no rule: file edits ask
	} {
		a, ok := f.tool(tc.tool, map[string]any{"path": tc.path, "content": "x"})
		if !ok || string(a.Status) != tc.want {
			t.Errorf("%s %s: %+v (%v), want %s", tc.tool, tc.path, a, ok, tc.want)
		}
	}
}

// The attacker is a model that names a file by its real path where the
// project or the home directory is reached through a link: a deny rule
// written from ./ or ~/ covers the file under either name.
func TestClaudePathRulesHoldWhereTheProjectIsALink(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	realCwd, realHome := f.cwd+"-real", f.home+"-real"
	for link, real := range map[string]string{f.cwd: realCwd, f.home: realHome} {
		if err := os.Rename(link, real); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
	}
	f.user = perms("deny", []string{"Read(./.env)", "Edit(./.env)", "Read(~/.ssh/**)"}, "allow", []string{"Read", "Edit"})
	f.load()
	os.WriteFile(filepath.Join(realCwd, ".env"), []byte("SECRET=1"), 0o600)
	os.MkdirAll(filepath.Join(realHome, ".ssh"), 0o700)
	os.WriteFile(filepath.Join(realHome, ".ssh", "id_rsa"), []byte("key"), 0o600)
	for _, tc := range []struct{ tool, path, want string }{
		{"read", filepath.Join(realCwd, ".env"), "deny"},
		{"read", filepath.Join(f.cwd, ".env"), "deny"},
		{"edit", filepath.Join(realCwd, ".env"), "deny"},
		{"read", filepath.Join(realHome, ".ssh", "id_rsa"), "deny"},
		{"read", filepath.Join(realCwd, "README.md"), "allow"},
	} {
		a, ok := f.tool(tc.tool, map[string]any{"path": tc.path, "oldText": "x", "newText": "y"})
		if !ok || string(a.Status) != tc.want {
			t.Errorf("%s %s: %+v (%v), want %s", tc.tool, tc.path, a, ok, tc.want)
		}
	}
}

func TestClaudeMCPAndSkillRules(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("deny", []string{"mcp__github__delete_repo", "Skill(danger)"}, "allow", []string{"mcp__github", "mcp__fs__*", "Skill"})
	f.load()
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"mcp__github__delete_repo", nil, "deny"},
		{"mcp__github__list_issues", nil, "allow"},
		{"mcp__fs__read", nil, "allow"},
		{"mcp__other__x", nil, "ask"},
		{"skill", map[string]any{"name": "danger"}, "deny"},
		{"skill", map[string]any{"name": "review"}, "allow"},
	} {
		a, ok := f.tool(tc.tool, tc.args)
		if !ok || string(a.Status) != tc.want {
			t.Errorf("%s %v: %+v (%v), want %s", tc.tool, tc.args, a, ok, tc.want)
		}
	}
}

func TestClaudeRulesThatCanNeverMatchAreReported(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("deny", []string{"bash(rm:*)", "Bsah(rm)", "Write(./x)", "Bash(git add . && git commit:*)", "Read(.env:*)", "Read(/etc/passwd)", "Bash(npm:* run)", "WebFetch(domain:example.com)", "Edit(./ok/**)", "Bash(unclosed"})
	rules := f.load()
	var got []string
	for _, p := range rules.Problems {
		got = append(got, p.Level+": "+p.Msg)
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{
		`never: deny bash(rm:*): can never match: Claude Code has no tool "bash" (did you mean Bash? tool names are case-sensitive)`,
		`never: deny Bsah(rm): can never match: Claude Code has no tool "Bsah" (did you mean Bash?)`,
		"never: deny Write(./x): can never match: Claude Code applies Edit(…) path rules",
		`never: deny Bash(git add . && git commit:*): can never match: rules are matched against each simple command`,
		"never: deny Read(.env:*): can never match: `:*` is Bash's prefix form",
		"never: deny Read(/etc/passwd): probably never matches: a path starting with one / is relative to the project",
		"never: deny Bash(npm:* run): `:*` is a prefix only at the end",
		"note: deny WebFetch(domain:example.com): not applicable: zot has no WebFetch tool",
		"never: deny Bash(unclosed: can never match: the ( is not closed",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("missing %q in:\n%s", want, all)
		}
	}
	if strings.Contains(all, "Edit(./ok/**)") {
		t.Errorf("a good rule reported:\n%s", all)
	}
	for _, p := range rules.StartupProblems() {
		if strings.Contains(p.Msg, "WebFetch") {
			t.Errorf("not-applicable rules wait for zot validate --check: %s", p)
		}
	}
}

// A settings file that does not parse fails closed: none of its allows
// apply, and the Claude Code source still asks.
func TestClaudeBrokenSettingsFileFailsClosed(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	path := filepath.Join(f.home, ".claude", "settings.json")
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("{\"permissions\": {\"allow\": [\"Bash\"],\n}"), 0o644)
	rules := f.load()
	if r := f.bash("ls"); r.Decision != "ask" {
		t.Errorf("ls: %s", r.Decision)
	}
	if len(rules.Problems) == 0 || rules.Problems[0].Line != 2 || rules.Problems[0].Level != problemError {
		t.Errorf("problems: %+v", rules.Problems)
	}
}

// With no settings file holding a rule and no runok.yml, the gate is
// not armed: exactly the behaviour without rules.
func TestNoRulesFilesMeanNoRules(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = map[string]any{"model": "opus", "hooks": map[string]any{}}
	if f.load().Active() {
		t.Error("a settings file without permissions armed the rules")
	}
	if r := f.bash("rm -rf /tmp/x"); r.Decision != "allow" || len(r.Rules) != 0 {
		t.Errorf("%+v", r)
	}
}

// A settings file zot cannot read holds rules nobody knows — here the
// managed deny of rm, broken by a trailing comma. The user's broad allow
// must not let rm through, nor a read its unknown Read deny might cover:
// while the file is broken, what would run unasked is asked.
func TestClaudeUnreadableSettingsAskInsteadOfAllowing(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("allow", []string{"Bash(*)", "Read(**)"}, "defaultMode", "bypassPermissions")
	os.MkdirAll(f.managed, 0o755)
	os.WriteFile(filepath.Join(f.managed, "managed-settings.json"), []byte(`{"permissions": {"deny": ["Bash(rm:*)", "Read(./.env)"],}}`), 0o644)
	f.load()
	for _, line := range []string{"rm -rf /x", "ls"} {
		if r := f.bash(line); r.Decision != "ask" {
			t.Errorf("%q with the managed settings unreadable: %s, want ask (%+v)", line, r.Decision, r.Rules)
		}
	}
	if a, ok := f.tool("read", map[string]any{"path": ".env"}); !ok || a.Status != "ask" || !strings.Contains(a.Message+a.Note+a.Rule, "cannot be read") {
		t.Errorf("read .env with the managed settings unreadable: %+v %v, want ask naming the file", a, ok)
	}
	if p := problemsText(f.rules); !strings.Contains(p, "managed-settings.json") || !strings.Contains(p, "asked until it is fixed") {
		t.Errorf("problems:\n%s", p)
	}
}

// A path zot cannot resolve (a symlink loop) could be any file: the rules
// that cover it are unknown, so even a broad allow asks.
func TestClaudeUnresolvablePathAsks(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("allow", []string{"Read(**)", "Edit(**)"})
	f.load()
	os.Symlink("loop", filepath.Join(f.cwd, "loop"))
	for _, tool := range []string{"read", "write"} {
		if a, ok := f.tool(tool, map[string]any{"path": "loop/x", "content": "x"}); !ok || a.Status != "ask" {
			t.Errorf("%s of a path through a symlink loop: %+v %v, want ask", tool, a, ok)
		}
	}
}

// The attacker is a repository whose settings set a default mode that
// asks where the user's denies (issue 34 §4): an untrusted project may
// only make the mode stricter — dontAsk, then default and plan, then
// acceptEdits, then bypassPermissions.
func TestClaudeProjectModeOnlyTightensUntrusted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		user, project string
		trusted       bool
		want          string // for a Bash command no rule matches
	}{
		{"dontAsk", "default", false, "deny"},
		{"dontAsk", "plan", false, "deny"},
		{"dontAsk", "acceptEdits", false, "deny"},
		{"dontAsk", "bypassPermissions", false, "deny"},
		{"dontAsk", "default", true, "ask"}, // a trusted project's mode wins, as in Claude Code
		{"default", "dontAsk", false, "deny"},
		{"acceptEdits", "default", false, "ask"},
		{"", "bypassPermissions", false, "ask"},
	} {
		f := newClaudeFixture(t)
		f.user = perms("allow", []string{"Bash(ls)"}, "defaultMode", tc.user)
		f.local = perms("defaultMode", tc.project)
		f.approved = tc.trusted
		f.load()
		if r := f.bash("curl https://example.com"); string(r.Decision) != tc.want {
			t.Errorf("user %q, project %q, trusted %v: %s, want %s (%+v)", tc.user, tc.project, tc.trusted, r.Decision, tc.want, r.Rules)
		}
	}
}

// acceptEdits accepts edits in the working directory, but never of what
// programs outside zot read or run: those ask (issue 34 §5).
func TestClaudeAcceptEditsNeverCoversGuardedPaths(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("allow", []string{"Bash(git status)"}, "defaultMode", "acceptEdits")
	writeJSONFile(t, filepath.Join(f.home, ".claude", "settings.json"), f.user)
	os.MkdirAll(filepath.Join(f.cwd, ".git"), 0o755)
	real, _ := filepath.EvalSymlinks(f.cwd)
	guarded := projectGuarded(f.cwd, nil, nil)
	f.rules = LoadPermissionRules(PermissionSources{Cwd: real, UserHome: f.home, ManagedDir: f.managed, Guarded: guardedBy(guarded)})
	for path, want := range map[string]string{
		"src/main.go":                 "allow",
		".git/config":                 "ask",
		".git/hooks/pre-commit":       "ask",
		".zot/validators.json":        "ask",
		".claude/settings.local.json": "ask",
		".mcp.json":                   "ask",
		"runok.yml":                   "ask",
	} {
		a, ok := f.tool("write", map[string]any{"path": path, "content": "x"})
		if !ok || string(a.Status) != want {
			t.Errorf("write %s: %v %s, want %s (%s)", path, ok, a.Status, want, a.Note)
		}
	}
}

// FuzzClaudeSettingsFile: the attacker is a cloned repository, which
// writes .claude/settings.json whole (fuzzRulesFile says what holds).
func FuzzClaudeSettingsFile(f *testing.F) {
	fuzzRulesFile(f, "home/proj/sub/.claude/settings.json", [][2]string{
		{`{"permissions":{"allow":["Bash(npm run test:*)","Read(./src/**)"],"deny":["Bash(curl:*)","Read(./.env)"],"ask":["Bash(git push:*)"],"defaultMode":"acceptEdits"}}`, "npm run test -- x"},
		{`{"permissions":{"deny":["Bash(rm -rf *)","Bash(","WebFetch(domain:example.com)","Edit(//etc/**)"],"additionalDirectories":["../x"]}}`, "rm -rf /"},
		{`{"permissions":{"allow":["Bash"],"deny":[1,null,""]},"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"x"}]}]}}`, "ls | wc -l"},
	})
}
