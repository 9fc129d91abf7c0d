package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// searchTree writes a small project: sources beside a .git, a binary
// file, an executable, a symlink to a directory outside, and returns the
// search tools on it.
func searchTree(t *testing.T, jail bool) (dir, outside string, env *ToolEnv, tools map[string]Tool) {
	t.Helper()
	root := t.TempDir()
	dir, outside = filepath.Join(root, "proj"), filepath.Join(root, "outside")
	for name, body := range map[string]string{
		"main.go":            "package main\n\nfunc main() { Hello() }\n",
		"cmd/tool/x.go":      "package tool\n// Hello here too\n",
		"cmd/tool/x_test.go": "package tool\n",
		"docs/a.md":          "hello in lower case\n",
		".git/config":        "Hello from git\n",
		"run.sh":             "#!/bin/sh\n",
		"blob.bin":           "Hello\x00binary",
	} {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "run.sh"), 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("Hello secret\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	env = NewToolEnv(dir, jail)
	tools = map[string]Tool{}
	for _, tool := range SearchTools(env) {
		tools[tool.Name()] = tool
	}
	return dir, outside, env, tools
}

func TestSearchToolsResults(t *testing.T) {
	t.Parallel()
	_, _, _, tools := searchTree(t, false)
	for _, tc := range []struct {
		tool string
		args obj
		want string // the whole result
	}{
		{"grep", obj{"pattern": "Hello"}, "cmd/tool/x.go:2:// Hello here too\nmain.go:3:func main() { Hello() }\n[1 binary file skipped]"},
		{"grep", obj{"pattern": "hello", "ignore_case": true, "glob": "*.md"}, "docs/a.md:1:hello in lower case"},
		{"grep", obj{"pattern": "Hello", "path": "main.go"}, "main.go:3:func main() { Hello() }"},
		{"grep", obj{"pattern": "Hello", "path": "cmd"}, "cmd/tool/x.go:2:// Hello here too"},
		{"grep", obj{"pattern": "nowhere"}, "No lines match nowhere in . (6 files searched).\n[1 binary file skipped]"},
		{"find", obj{"pattern": "*.go"}, "cmd/tool/x.go\ncmd/tool/x_test.go\nmain.go"},
		{"find", obj{"pattern": "cmd/**/*_test.go"}, "cmd/tool/x_test.go"},
		{"find", obj{"pattern": "*.{md,sh}"}, "docs/a.md\nrun.sh*"},
		{"find", obj{"pattern": "tool", "path": "cmd"}, "cmd/tool/"},
		{"ls", obj{}, ".git/\nblob.bin\ncmd/\ndocs/\nlink@\nmain.go\nrun.sh*"},
		{"ls", obj{"path": "cmd/tool"}, "x.go\nx_test.go"},
	} {
		if got := text(call(t, tools[tc.tool], tc.args)); got != tc.want {
			t.Errorf("%s %v:\n%s\nwant:\n%s", tc.tool, tc.args, got, tc.want)
		}
	}
	for _, tc := range []struct {
		tool string
		args obj
		want string
	}{
		{"grep", obj{"pattern": "(?=x)"}, "RE2"},
		{"grep", obj{"pattern": ""}, "must not be empty"},
		{"grep", obj{"pattern": "x", "path": "blob.bin"}, "looks binary"},
		{"grep", obj{"pattern": "x", "glob": "/abs"}, "absolute"},
		{"find", obj{"pattern": "*", "path": "main.go"}, "not a directory"},
		{"ls", obj{"path": "missing"}, "no such file or directory"},
	} {
		r := call(t, tools[tc.tool], tc.args)
		if !r.IsError || !strings.Contains(text(r), tc.want) {
			t.Errorf("%s %v: %v %q, want an error with %q", tc.tool, tc.args, r.IsError, text(r), tc.want)
		}
	}
}

// A search lists a symlink as one and never goes through it, so what is
// outside where it started is not found; $ZOT_HOME is never entered; the
// jail refuses a start outside the working directory.
func TestSearchToolsNeitherFollowLinksNorEnterZotHome(t *testing.T) {
	t.Parallel()
	dir, outside, env, tools := searchTree(t, true)
	home := filepath.Join(dir, "zothome")
	os.MkdirAll(home, 0o700)
	os.WriteFile(filepath.Join(home, "auth.json"), []byte(`{"key":"Hello-sk"}`), 0o600)
	env.Private = []string{home}
	for _, tc := range []struct {
		tool string
		args obj
	}{
		{"grep", obj{"pattern": "secret|sk"}},
		{"find", obj{"pattern": "*.{txt,json}"}},
		{"ls", obj{"path": "zothome"}},
		{"ls", obj{"path": "link"}},
		{"grep", obj{"pattern": "x", "path": outside}},
		{"find", obj{"pattern": "*", "path": "link"}},
	} {
		got := text(call(t, tools[tc.tool], tc.args))
		if strings.Contains(got, "secret") && !strings.Contains(got, "No lines match") || strings.Contains(got, "auth.json") || strings.Contains(got, "Hello-sk") {
			t.Errorf("%s %v reached what it must not:\n%s", tc.tool, tc.args, got)
		}
	}
}

// The limits hold on a tree bigger than they are, with a note saying
// which stopped the call.
func TestSearchToolsAreBounded(t *testing.T) {
	t.Parallel()
	dir, _, _, tools := searchTree(t, false)
	many := filepath.Join(dir, "many")
	os.Mkdir(many, 0o755)
	for i := range findMaxResults + 20 {
		os.WriteFile(filepath.Join(many, fmt.Sprintf("f%04d.txt", i)), []byte("match\n"), 0o644)
	}
	long := "match\n"
	os.WriteFile(filepath.Join(dir, "long.log"), []byte(strings.Repeat(long, grepMaxMatches+50)), 0o644)

	r := text(call(t, tools["grep"], obj{"pattern": "match", "path": "long.log"}))
	if n := strings.Count(r, "long.log:"); n != grepMaxMatches || !strings.Contains(r, fmt.Sprintf("[stopped: %d matches", grepMaxMatches)) {
		t.Errorf("grep gave %d matches:\n%s", n, r[max(0, len(r)-300):])
	}
	wide := strings.Repeat("match ", 100) + "\n"
	os.WriteFile(filepath.Join(dir, "wide.log"), []byte(strings.Repeat(wide, grepMaxMatches)), 0o644)
	r = text(call(t, tools["grep"], obj{"pattern": "match", "path": "wide.log"}))
	if len(r) > searchMaxBytes+200 || !strings.Contains(r, "[stopped: the result reached 16.0 KiB") {
		t.Errorf("grep of wide lines: %d bytes, ends %q", len(r), r[max(0, len(r)-200):])
	}
	r = text(call(t, tools["find"], obj{"pattern": "*.txt"}))
	if n := strings.Count(r, ".txt\n"); n != findMaxResults || !strings.Contains(r, fmt.Sprintf("[stopped: %d paths", findMaxResults)) {
		t.Errorf("find gave %d paths, ends %q", n, r[max(0, len(r)-200):])
	}
	r = text(call(t, tools["ls"], obj{"path": "many"}))
	if n := strings.Count(r, ".txt\n"); n != lsMaxEntries || !strings.Contains(r, "[20 more entries not shown") {
		t.Errorf("ls gave %d entries, ends %q", n, r[max(0, len(r)-200):])
	}
}

// Claude Code's Read rules judge where a search starts (the gate) and
// every path it meets beneath (ReadVerdict): denied paths vanish, asked
// ones are counted.
func TestSearchToolsFollowTheReadRules(t *testing.T) {
	t.Parallel()
	f := newClaudeFixture(t)
	f.user = perms("deny", []string{"Read(./secrets/**)", "Read(**/*.pem)"}, "ask", []string{"Read(./.env)"})
	f.load()
	for name, body := range map[string]string{"secrets/db.txt": "TOKEN=1", "certs/k.pem": "TOKEN=2", ".env": "TOKEN=3", "ok.txt": "TOKEN=4"} {
		os.MkdirAll(filepath.Dir(filepath.Join(f.cwd, name)), 0o755)
		os.WriteFile(filepath.Join(f.cwd, name), []byte(body), 0o600)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"grep", map[string]any{"pattern": "x", "path": "secrets"}, "deny"},
		{"find", map[string]any{"pattern": "*", "path": "secrets/"}, "deny"},
		{"ls", map[string]any{"path": ".env"}, "ask"},
		{"ls", map[string]any{}, ""}, // no rule has a say
	} {
		a, ok := f.tool(tc.tool, tc.args)
		if string(a.Status) != tc.want || ok != (tc.want != "") {
			t.Errorf("%s %v: %+v (%v), want %q", tc.tool, tc.args, a, ok, tc.want)
		}
	}
	env := NewToolEnv(f.cwd, false)
	env.ReadRule = f.rules.ReadVerdict
	tools := map[string]Tool{}
	for _, tool := range SearchTools(env) {
		tools[tool.Name()] = tool
	}
	if got, want := text(call(t, tools["grep"], obj{"pattern": "TOKEN"})), "ok.txt:1:TOKEN=4\n[1 path left out: the permission rules ask before reading them; read one with read to be asked]"; got != want {
		t.Errorf("grep:\n%s\nwant:\n%s", got, want)
	}
	if got, want := text(call(t, tools["ls"], obj{})), "certs/\nok.txt\n[1 path left out: the permission rules ask before reading them; read one with read to be asked]"; got != want {
		t.Errorf("ls:\n%s\nwant:\n%s", got, want)
	}
}

// Through the binary: the tools are off unless asked for, and a Read deny
// rule stops a grep as it stops a read.
func TestSearchToolsThroughTheBinary(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	os.WriteFile(filepath.Join(z.cwd, "a.txt"), []byte("needle\n"), 0o644)
	result, _ := toolResultSent(t, z, "grep", obj{"pattern": "needle"})
	if !strings.Contains(result, "unknown tool") {
		t.Errorf("grep without --tools:\n%s", result)
	}
	result, _ = toolResultSent(t, z, "grep", obj{"pattern": "needle"}, "--tools", "read,grep")
	if result != "a.txt:1:needle" {
		t.Errorf("grep with --tools read,grep:\n%s", result)
	}
	z2 := newZotRun(t)
	os.WriteFile(filepath.Join(z2.home, "config.json"), []byte(`{"search_tools": true}`), 0o600)
	os.MkdirAll(filepath.Join(z2.cwd, "private"), 0o755)
	os.WriteFile(filepath.Join(z2.cwd, "private", "k.txt"), []byte("needle\n"), 0o644)
	userSettings(t, z2, perms("deny", []string{"Read(./private/**)"}))
	if result, _ = toolResultSent(t, z2, "grep", obj{"pattern": "needle", "path": "private"}); !strings.Contains(result, "deny Read(./private/**)") {
		t.Errorf("grep of a denied directory:\n%s", result)
	}
	if result, _ = toolResultSent(t, z2, "find", obj{"pattern": "*.txt"}); !strings.HasPrefix(result, "No paths under . match") {
		t.Errorf("find beside a denied directory:\n%s", result)
	}
}
