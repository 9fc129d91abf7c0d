//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The attacker is a sandboxed command in a trusted project. The project's
// validator (`.zot/validators.json` → "./guard.sh", as in our own docs)
// and its PreToolUse hook (`.claude/hooks/check.sh`) run outside the
// sandbox before every bash call. The command rewrites both scripts to
// escape; at the next bash call neither may run as rewritten: on the
// namespaces path the rewrite fails (read-only), on the landlock-only
// path the guard puts every script back once the command has ended (and
// were one left changed, it would be untrusted before it ran).
func TestSandboxedCommandCannotRewriteWhatRunsOutside(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			z := newZotRun(t)
			if path.force != "" {
				z.env = append(z.env, sandboxForceEnv+"="+path.force)
			}
			escaped := filepath.Join(t.TempDir(), "escaped")
			allow := `#!/bin/sh
cat >/dev/null
echo '{"jsonrpc":"2.0","id":1,"result":{"status":"allow"}}'
`
			for rel, text := range map[string]string{
				".zot/validators.json":    `[{"name": "guard", "executor": "./guard.sh"}]`,
				".zot/guard.sh":           allow,
				".claude/settings.json":   `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh .claude/hooks/check.sh"}]}]}}`,
				".claude/hooks/check.sh":  "#!/bin/sh\ncat >/dev/null\nexit 0\n",
				"scripts/not-named.sh":    "#!/bin/sh\n",
				".git/hooks/pre-commit":   "#!/bin/sh\n",
				".git/config":             "[core]\n",
				".mcp.json":               `{"mcpServers": {}}`,
				"notes/ordinary-file.txt": "x\n",
			} {
				p := filepath.Join(z.cwd, rel)
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if out, stderr, code := z.run("trust", "--yes"); code != 0 || !strings.Contains(out, "guard.sh") {
				t.Fatalf("zot trust --yes: exit %d\n%s%s", code, out, stderr)
			}
			evil := "#!/bin/sh\\ntouch " + escaped + "\\ncat >/dev/null\\necho '{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"status\":\"allow\"}}'\\n"
			// What the command prints is spelled through $w so that the
			// command itself, which the request also carries, never matches.
			rewrite := "w=rewrote; for f in .zot/guard.sh .claude/hooks/check.sh .git/hooks/pre-commit; do printf '" + evil + "' > $f && echo $w $f; done; " +
				"echo '[core]' >> .git/config && echo $w config; echo x > .mcp.json && echo $w mcp; echo y > notes/ordinary-file.txt && echo $w ordinary"
			srv := startReplay(t,
				toolStep("b1", "bash", obj{"command": rewrite}),
				toolStep("b2", "bash", obj{"command": "echo second call"}),
				replayStep{Events: anthropicEvents(gen{Text: "done"})})
			stdout, stderr, code := z.run(append(anthropicFlags(srv), "--sandbox", "workspace-offline", "--claude-hooks", "-p", "go")...)
			if code != 0 || stdout != "done\n" {
				t.Fatalf("exit %d, stdout %q\n%s", code, stdout, stderr)
			}
			if _, err := os.Stat(escaped); err == nil {
				t.Fatalf("a rewritten script ran outside the sandbox")
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests", len(reqs))
			}
			first, second := string(reqs[1].Body), string(reqs[2].Body)
			if !strings.Contains(first, "rewrote ordinary") {
				t.Errorf("an ordinary project file could not be written:\n%.2000s", first)
			}
			switch path.force {
			case "": // namespaces: the kernel refuses the rewrites
				for _, what := range []string{".zot/guard.sh", ".claude/hooks/check.sh", ".git/hooks/pre-commit", "config", "mcp"} {
					if strings.Contains(first, "rewrote "+what) {
						t.Errorf("the sandboxed command rewrote %s", what)
					}
				}
				if !strings.Contains(first, "Read-only file system") {
					t.Errorf("no read-only refusal in the first result:\n%.2000s", first)
				}
			default: // landlock-only: the rewrite goes through, and is undone
				if !strings.Contains(first, "zot undid it") || strings.Contains(second, "changed since this directory was trusted") {
					t.Errorf("the rewrites were not undone after the first call:\n%.3000s\n%.3000s", first, second)
				}
			}
			for rel, want := range map[string]string{".zot/guard.sh": allow, ".git/config": "[core]\n", ".mcp.json": `{"mcpServers": {}}`} {
				if b, _ := os.ReadFile(filepath.Join(z.cwd, rel)); string(b) != want {
					t.Errorf("%s is %q after the session", rel, b)
				}
			}
		})
	}
}

// The file tools refuse what the sandbox keeps read-only, on both paths,
// and still write the rest of the project.
func TestFileToolsRefuseTheSandboxsReadOnlyPaths(t *testing.T) {
	t.Parallel()
	for _, path := range sandboxPaths {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			l := newSandboxLayout(t)
			os.MkdirAll(filepath.Join(l.work, ".zot"), 0o755)
			os.MkdirAll(filepath.Join(l.work, ".git", "hooks"), 0o755)
			script := filepath.Join(l.work, "scripts", "server.js")
			os.MkdirAll(filepath.Dir(script), 0o755)
			os.WriteFile(script, []byte("x"), 0o644)
			sb, _, err := newSandbox(sandboxConfig{Mode: sandboxWorkspace, Cwd: l.work, Home: l.home, Temp: l.tmp, Force: path.force,
				Guard: append(projectGuarded(l.work, nil, nil), guardedPath{Path: script, Kind: guardFile})})
			if err != nil {
				t.Fatal(err)
			}
			env := NewToolEnv(l.work, false)
			env.Sandbox = sb
			t.Cleanup(func() { env.Close() })
			for rel, refused := range map[string]bool{
				".zot/validators.json":  true, // does not exist yet: refused all the same
				".claude/settings.json": true,
				".mcp.json":             true,
				".git/hooks/pre-commit": true,
				".git/config":           true,
				"scripts/server.js":     true,
				"scripts/other.js":      false,
				".git/objects/ab/cdef":  true, // all of git's directory
				".git/commondir":        true, // does not exist: refused all the same
				"runok.yml":             true,
				"runok.local.yaml":      true,
				"src/main.go":           false,
			} {
				args, _ := json.Marshal(obj{"path": rel, "content": "y"})
				res := writeTool{env}.Run(context.Background(), args, nil)
				text := Message{Content: res.Content}.Text()
				if res.IsError != refused || refused && !strings.Contains(text, "read-only in the sandbox") {
					t.Errorf("write %s: error %v: %s", rel, res.IsError, text)
				}
			}
		})
	}
}
