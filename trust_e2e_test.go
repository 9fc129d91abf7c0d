package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The attacker here is a repository: a cloned directory whose .mcp.json
// server, .zot/extensions/x extension, .zot/validators.json executor and
// .claude/settings.json hook each leave a marker when they start
// (testdata/trust). Until the user trusts the directory, no mode and no
// management command may leave one.

var trustMarkers = []string{"mcp", "extension", "validator", "hook"}

// layTrustFixture lays testdata/trust out in dir as a repository would.
func layTrustFixture(t *testing.T, dir string) {
	t.Helper()
	for src, dst := range map[string]string{
		"mark.sh":         "mark.sh",
		"mcp.json":        ".mcp.json",
		"extension.json":  ".zot/extensions/x/extension.json",
		"ext.sh":          ".zot/extensions/x/ext.sh",
		"validators.json": ".zot/validators.json",
		"settings.json":   ".claude/settings.json",
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "trust", src))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, dst)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// markers are the markers the fixture's programs left in dir.
func markers(dir string) []string {
	var out []string
	for _, m := range trustMarkers {
		if _, err := os.Stat(filepath.Join(dir, ".markers", m)); err == nil {
			out = append(out, m)
		}
	}
	return out
}

// bashThenDone is a model that runs one bash command (so the validators
// are asked) and answers.
func bashThenDone(t *testing.T) *replayServer {
	return startReplay(t, toolStep("b1", "bash", obj{"command": "echo hi"}), replayStep{Events: anthropicEvents(gen{Text: "done"})})
}

func TestUntrustedProjectStartsNothingInAnyMode(t *testing.T) {
	t.Parallel()
	run := func(t *testing.T, z *zotRun, args ...string) (string, string) {
		t.Helper()
		stdout, stderr, code := z.run(args...)
		if code != 0 {
			t.Errorf("zot %s: exit %d (skipping untrusted programs is not a failure)\n%s", strings.Join(args, " "), code, stderr)
		}
		return stdout, stderr
	}
	skipped := func(t *testing.T, stderr string) {
		t.Helper()
		lines := 0
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, "not started") {
				lines++
				for _, want := range []string{"mcp srv", "extension x", "validator v", "hook SessionStart", "zot trust ", "--trust-project"} {
					if !strings.Contains(l, want) {
						t.Errorf("the skipped line lacks %q: %s", want, l)
					}
				}
			}
		}
		if lines != 1 {
			t.Errorf("want one line naming what was skipped, got %d:\n%s", lines, stderr)
		}
	}
	cases := map[string]func(t *testing.T, z *zotRun){
		"print": func(t *testing.T, z *zotRun) {
			_, stderr := run(t, z, append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "-p", "hi")...)
			skipped(t, stderr)
		},
		"json": func(t *testing.T, z *zotRun) {
			stdout, stderr := run(t, z, append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "--json", "hi")...)
			skipped(t, stderr)
			if !strings.Contains(stdout, `{"type":"ext_notify","extension":"trust","level":"warn","message":"not started: `) {
				t.Errorf("no trust event:\n%s", stdout)
			}
		},
		"rpc": func(t *testing.T, z *zotRun) {
			z.stdin = `{"type":"prompt","message":"hi"}` + "\n"
			stdout, stderr := run(t, z, append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "--rpc")...)
			skipped(t, stderr)
			if !strings.Contains(stdout, `"extension":"trust"`) || !strings.Contains(stdout, `"type":"done"`) {
				t.Errorf("no trust notification, or the prompt did not run:\n%s", stdout)
			}
		},
		"mcp list": func(t *testing.T, z *zotRun) {
			stdout, _ := run(t, z, "mcp", "list")
			if !strings.Contains(stdout, "untrusted (zot trust)") {
				t.Errorf("zot mcp list:\n%s", stdout)
			}
		},
		"mcp tools and call": func(t *testing.T, z *zotRun) {
			for _, args := range [][]string{{"mcp", "tools", "srv"}, {"mcp", "call", "srv", "t"}} {
				_, stderr, code := z.run(args...)
				if code != exitFailure || !strings.Contains(stderr, "untrusted (zot trust)") {
					t.Errorf("zot %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
				}
			}
		},
		"ext list": func(t *testing.T, z *zotRun) {
			stdout, _ := run(t, z, "ext", "list")
			if !strings.Contains(stdout, "not used: untrusted (zot trust)") {
				t.Errorf("zot ext list:\n%s", stdout)
			}
		},
		"validate": func(t *testing.T, z *zotRun) {
			_, stderr := run(t, z, "validate", "--", "ls")
			if !strings.Contains(stderr, "validators.json: not used: untrusted (zot trust)") {
				t.Errorf("zot validate stderr:\n%s", stderr)
			}
		},
		"skills list": func(t *testing.T, z *zotRun) { run(t, z, "skills", "list") },
		"trust --list and a no": func(t *testing.T, z *zotRun) {
			run(t, z, "trust", "--list")
			z.stdin = "n\n"
			stdout, _, code := z.run("trust")
			if code != exitFailure || !strings.Contains(stdout, "not trusted") {
				t.Errorf("zot trust answered no: exit %d\n%s", code, stdout)
			}
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			layTrustFixture(t, z.cwd)
			c(t, z)
			if m := markers(z.cwd); len(m) > 0 {
				t.Errorf("an untrusted project's programs started: %v", m)
			}
			if _, err := os.Stat(filepath.Join(z.home, "trust.json")); err == nil {
				t.Errorf("trust was recorded without a yes")
			}
		})
	}
}

func TestTrustYesRunsTheProjectAndAChangeUntrustsIt(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	layTrustFixture(t, z.cwd)
	stdout, stderr, code := z.run("trust", "--yes")
	if code != 0 || !strings.Contains(stdout, `MCP server "srv" (.mcp.json): sh ./mark.sh mcp [sets SRV_TOKEN]`) {
		t.Fatalf("zot trust --yes: exit %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stdout, "secret-value") {
		t.Errorf("an env value was shown:\n%s", stdout)
	}
	b, _ := os.ReadFile(filepath.Join(z.home, "trust.json"))
	if st, _ := os.Stat(filepath.Join(z.home, "trust.json")); st == nil || st.Mode().Perm() != 0o600 || strings.Contains(string(b), "secret-value") {
		t.Errorf("trust.json: mode %v, holds the secret: %v", st, strings.Contains(string(b), "secret-value"))
	}
	if _, stderr, code := z.run(append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "-p", "hi")...); code != 0 || strings.Contains(stderr, "not started") {
		t.Fatalf("trusted run: exit %d\n%s", code, stderr)
	}
	z.run("mcp", "list") // waits until the server has started
	if m := markers(z.cwd); !slices.Equal(m, trustMarkers) {
		t.Fatalf("a trusted project's programs should run: markers %v", m)
	}

	// The extension's exec file changes: a changed program.
	os.RemoveAll(filepath.Join(z.cwd, ".markers"))
	ext := filepath.Join(z.cwd, ".zot", "extensions", "x", "ext.sh")
	f, _ := os.OpenFile(ext, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("# and something else\n")
	f.Close()
	_, stderr, code = z.run(append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "-p", "hi")...)
	if code != 0 || !strings.Contains(stderr, "1 of them new or changed") {
		t.Errorf("after a change: exit %d\n%s", code, stderr)
	}
	z.run("mcp", "list")
	if m := markers(z.cwd); len(m) > 0 {
		t.Errorf("a changed project ran before it was trusted again: %v", m)
	}
	z.stdin = "n\n"
	stdout, _, _ = z.run("trust")
	if !strings.Contains(stdout, `(changed) extension "x"`) || strings.Contains(stdout, `(changed) MCP`) {
		t.Errorf("zot trust should show what changed:\n%s", stdout)
	}

	// A new command line in .mcp.json: new, and shown as such.
	z.run("trust", "--yes")
	os.WriteFile(filepath.Join(z.cwd, ".mcp.json"), []byte(`{"mcpServers": {"srv": {"command": "sh", "args": ["./mark.sh", "mcp", "again"]}}}`), 0o644)
	stdout, _, _ = z.run("trust")
	if !strings.Contains(stdout, `(changed) MCP server "srv" (.mcp.json): sh ./mark.sh mcp again`) {
		t.Errorf("a changed command line:\n%s", stdout)
	}
	if stdout, _, _ := z.run("mcp", "list"); !strings.Contains(stdout, "untrusted (zot trust)") {
		t.Errorf("zot mcp list after a change:\n%s", stdout)
	}

	if stdout, _, code := z.run("trust", "--revoke"); code != 0 || !strings.Contains(stdout, "revoked") {
		t.Errorf("revoke: exit %d %s", code, stdout)
	}
	if stdout, _, _ := z.run("trust", "--list"); !strings.Contains(stdout, "no trusted directories") {
		t.Errorf("after revoke:\n%s", stdout)
	}
}

func TestTrustProjectFlagTrustsOneRunAndRecordsNothing(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	layTrustFixture(t, z.cwd)
	if _, stderr, code := z.run(append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "--trust-project", "-p", "hi")...); code != 0 || strings.Contains(stderr, "not started") {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if m := markers(z.cwd); !slices.Equal(m, []string{"extension", "validator", "hook"}) && !slices.Equal(m, trustMarkers) {
		t.Errorf("--trust-project should run the project's programs: markers %v", m)
	}
	if _, err := os.Stat(filepath.Join(z.home, "trust.json")); err == nil {
		t.Errorf("--trust-project recorded trust")
	}
	os.RemoveAll(filepath.Join(z.cwd, ".markers"))
	z.run("mcp", "list")
	if m := markers(z.cwd); len(m) > 0 {
		t.Errorf("the next run without the flag ran them: %v", m)
	}
}

func TestCorruptTrustFileMeansUntrustedAndIsKept(t *testing.T) {
	t.Parallel()
	z := newZotRun(t)
	layTrustFixture(t, z.cwd)
	z.run("trust", "--yes")
	path := filepath.Join(z.home, "trust.json")
	os.WriteFile(path, []byte(`{"version": 1, "projects": {`), 0o600)
	_, stderr, code := z.run(append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "-p", "hi")...)
	if code != 0 || !strings.Contains(stderr, "warning: "+path+" is not a trust file") || !strings.Contains(stderr, "not started") {
		t.Errorf("exit %d\n%s", code, stderr)
	}
	if m := markers(z.cwd); len(m) > 0 {
		t.Errorf("programs ran with an unreadable trust.json: %v", m)
	}
	if b, _ := os.ReadFile(path); string(b) != `{"version": 1, "projects": {` {
		t.Errorf("trust.json was rewritten without the user's action: %q", b)
	}
	if _, _, code := z.run("trust", "--yes"); code != 0 {
		t.Fatalf("zot trust --yes over a corrupt file: exit %d", code)
	}
	if b, _ := os.ReadFile(path + ".bad"); string(b) != `{"version": 1, "projects": {` {
		t.Errorf("the corrupt file was not kept: %q", b)
	}

	// A trust.json that other users may write trusts nothing.
	os.Chmod(path, 0o666)
	if stdout, _, _ := z.run("mcp", "list"); !strings.Contains(stdout, "untrusted (zot trust)") {
		t.Errorf("a world-writable trust.json was believed:\n%s", stdout)
	}
}

func TestConcurrentTrustKeepsEveryEntry(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	var dirs []string
	for i := range 40 {
		d := filepath.Join(t.TempDir(), fmt.Sprint("p", i))
		os.MkdirAll(d, 0o755)
		os.WriteFile(filepath.Join(d, ".mcp.json"), []byte(`{"mcpServers": {"s": {"command": "true"}}}`), 0o644)
		dirs = append(dirs, d)
	}
	var wg sync.WaitGroup
	for _, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			z := &zotRun{t: t, home: home, cwd: d}
			if stdout, stderr, code := z.run("trust", "--yes", d); code != 0 {
				t.Errorf("zot trust --yes %s: exit %d\n%s%s", d, code, stdout, stderr)
			}
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(filepath.Join(home, "trust.json"))
	var tf trustFile
	if err != nil || json.Unmarshal(b, &tf) != nil {
		t.Fatalf("trust.json is not valid JSON: %v\n%s", err, b)
	}
	for _, d := range dirs {
		key, _ := trustKey(d)
		if tf.Projects[key] == nil {
			t.Errorf("entry for %s lost", d)
		}
	}
}

// The TUI asks before anything of the project starts; each answer does
// what it says.
func TestTUITrustDialog(t *testing.T) {
	t.Parallel()
	needTmux(t)
	srv := startReplay(t, replayStep{Events: anthropicEvents(gen{Text: "ok"})})
	waitMarkers := func(t *testing.T, dir string, want []string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		missing := func() bool {
			have := markers(dir)
			return slices.ContainsFunc(want, func(m string) bool { return !slices.Contains(have, m) })
		}
		for missing() {
			if time.Now().After(deadline) {
				t.Fatalf("markers %v, want %v", markers(dir), want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, c := range []struct {
		name   string
		keys   []string
		status int
		ran    []string
	}{
		{"trust", []string{"Up", "Enter"}, 0, []string{"extension", "hook"}},
		// The repository changes its hook while the dialog is open: the
		// user trusted what was shown, not that.
		{"changed while asking", []string{"Up", "Enter"}, 0, []string{"extension"}},
		{"continue without", []string{"Enter"}, 0, nil},
		{"quit", []string{"Down", "Enter"}, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			layTrustFixture(t, z.cwd)
			tm := startTUI(t, z, append(anthropicFlags(srv), "--claude-hooks")...)
			screen := tm.waitFor("continue without them")
			for _, want := range []string{"(new) MCP server \"srv\" (.mcp.json): sh ./mark.sh mcp", "(new) extension \"x\"", "(new) validator \"v\"", "(new) hook \"SessionStart #1\"", "trust this directory and run them", "quit"} {
				if !strings.Contains(screen, want) {
					t.Errorf("the dialog lacks %q:\n%s", want, screen)
				}
			}
			if m := markers(z.cwd); len(m) > 0 {
				t.Errorf("started before the answer: %v", m)
			}
			if c.name == "changed while asking" {
				os.WriteFile(filepath.Join(z.cwd, ".claude", "settings.json"), []byte(`{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "sh ./mark.sh hook; true"}]}]}}`), 0o644)
			}
			tm.keys(c.keys...)
			if c.name == "quit" {
				tm.checkExit(c.status)
			} else {
				tm.waitScreen("the dialog to close", func(s string) bool { return !strings.Contains(s, "continue without them") })
				if c.ran != nil {
					waitMarkers(t, z.cwd, c.ran)
				}
				tm.exitAndCheck()
			}
			if c.name == "changed while asking" {
				if m := markers(z.cwd); slices.Contains(m, "hook") {
					t.Errorf("a hook changed after the dialog showed it ran")
				}
				return
			}
			tf, err := loadTrustFile(z.home)
			if recorded := len(tf.Projects) > 0; err != nil || recorded != (c.name == "trust") {
				t.Errorf("trust recorded: %v (%v)", recorded, err)
			}
			if declined := len(tf.Declined) > 0; declined != (c.name == "continue without") {
				t.Errorf("\"continue without them\" recorded: %v", declined)
			}
			if c.ran == nil {
				if m := markers(z.cwd); len(m) > 0 {
					t.Errorf("started after %q: %v", c.name, m)
				}
			}
		})
	}
}

// A collection of skills cloned to ~/.claude/skills/<repo>, or any other
// repository under ~/.claude or $ZOT_HOME, opened as a project, is a
// project: its MCP server, validator, extension and hook run only once
// the user trusted it.
func TestClonesUnderTheUsersDirectoriesRunNothingUntilTrusted(t *testing.T) {
	t.Parallel()
	for name, under := range map[string]string{
		"~/.claude/skills/repo":  ".claude/skills/repo",
		"~/.claude":              ".claude",
		"$ZOT_HOME/plugins/repo": "zot/plugins/repo",
		"$ZOT_HOME/extensions":   "zot/extensions/repo",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			z.env = append(z.env, "ZOT_HOME="+filepath.Join(z.home, "zot"))
			z.cwd = filepath.Join(z.home, under)
			os.MkdirAll(z.cwd, 0o755)
			layTrustFixture(t, z.cwd)
			_, stderr, code := z.run(append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "-p", "hi")...)
			z.run("mcp", "list")
			if m := markers(z.cwd); code != 0 || len(m) > 0 || !strings.Contains(stderr, "not started") {
				t.Fatalf("an untrusted clone under %s ran %v (exit %d)\n%s", name, m, code, stderr)
			}
			if _, _, code := z.run("trust", "--yes"); code != 0 {
				t.Fatalf("zot trust --yes: exit %d", code)
			}
			if _, stderr, code := z.run(append(anthropicFlags(bashThenDone(t)), "--claude-hooks", "-p", "hi")...); code != 0 || strings.Contains(stderr, "not started") {
				t.Fatalf("trusted: exit %d\n%s", code, stderr)
			}
			z.run("mcp", "list")
			if m := markers(z.cwd); !slices.Equal(m, trustMarkers) {
				t.Errorf("once trusted, the clone's programs should run: %v", m)
			}
		})
	}
}
